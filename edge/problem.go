package edge

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/fhir"
)

// Problem is an RFC 9457 problem details body. Code repeats the problem type's last segment so
// clients can switch on it.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Code   string `json:"code"`
	Detail string `json:"detail,omitempty"`
	Param  string `json:"param,omitempty"`
}

// eMethodNotAllowed is the code of a request whose path a route serves, but not with its method. It
// is the edge's own: no domain operation fails with it.
const eMethodNotAllowed = "method-not-allowed"

// problemKinds maps domain error codes to status and title.
var problemKinds = map[string]struct {
	status int
	title  string
}{
	dirsvc.ENotFound:       {http.StatusNotFound, "Not found"},
	dirsvc.EGone:           {http.StatusGone, "Gone"},
	dirsvc.EInvalid:        {http.StatusBadRequest, "Invalid parameter"},
	dirsvc.EInvalidToken:   {http.StatusUnauthorized, "Invalid access token"},
	dirsvc.EForbiddenScope: {http.StatusForbidden, "Forbidden"},
	dirsvc.EForbidden:      {http.StatusForbidden, "Forbidden"},
	dirsvc.EMirrored:       {http.StatusConflict, "Mirrored record"},
	dirsvc.EConflict:       {http.StatusConflict, "Conflict"},
	dirsvc.EUnprocessable:  {http.StatusUnprocessableEntity, "Unprocessable"},
	dirsvc.ERateLimited:    {http.StatusTooManyRequests, "Too many requests"},
	dirsvc.EInternal:       {http.StatusInternalServerError, "Internal error"},
	dirsvc.EUnavailable:    {http.StatusServiceUnavailable, "Unavailable"},
	eMethodNotAllowed:      {http.StatusMethodNotAllowed, "Method not allowed"},
	eTooLarge:              {http.StatusRequestEntityTooLarge, "Request body too large"},
	eUnsupportedMedia:      {http.StatusUnsupportedMediaType, "Unsupported media type"},
	fhir.ENotAcceptable:    {http.StatusNotAcceptable, "Not acceptable"},

	// Its answer carries Retry-After (storageRefused).
	dirsvc.EInsufficientStorage: {http.StatusInsufficientStorage, "Insufficient storage"},
}

// ProblemTypeBase prefixes problem type URIs; the code follows it.
const ProblemTypeBase = "/problems/"

// error writes err as a problem, or at the token endpoint as an OAuth error body. The client sees only
// the domain error's message; any other error is logged and answered as a plain 500.
func (s *Server) error(w http.ResponseWriter, r *http.Request, err error) {
	if overBudget(r) && !errors.As(err, new(*dirsvc.Error)) {
		s.log.Warn("an expensive request ran out of its time budget", "method", r.Method, "path", r.URL.Path)
		s.shedFor(ShedBudget)
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Cache-Control", "no-store")
		err = dirsvc.Errorf(dirsvc.EUnavailable, "The request took too long: try again, or ask for less (fewer filters, a smaller limit).")
	} else if r.Context().Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		// The client went away (or the server is stopping): nobody reads an answer, and it is no
		// failure of the service.
		s.log.Debug("request ended by its client", "method", r.Method, "path", r.URL.Path)
		return
	}
	var e *dirsvc.Error
	if dirsvc.InsufficientStorage(err) {
		e = s.storageRefused(w, r, err)
	} else if !errors.As(err, &e) || problemKinds[e.Code].status == 0 {
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		e = dirsvc.Errorf(dirsvc.EInternal, "The service could not answer this request.")
	} else if e.Code == dirsvc.EInternal {
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	} else if e.Code == dirsvc.EUnavailable && e.Unwrap() != nil {
		s.unavailableFor(w, r, e)
	}
	k := problemKinds[e.Code]
	if k.status == http.StatusUnauthorized && w.Header().Get("WWW-Authenticate") == "" {
		// Every 401 says how to authenticate (RFC 9110 section 11.6.1); the routes that take other
		// credentials than a client's access token set their own challenge before.
		w.Header().Set("WWW-Authenticate", `Bearer realm="dirsvc"`)
	}
	if r.URL.Path == TokenPath {
		// The token endpoint answers OAuth error bodies (specification section 7, item 2), its
		// refusals by the guard and the edge (429, 503) too.
		WriteOAuth(w, k.status, oauthErrorOf(e))
		return
	}
	if isFHIRPath(r.URL.Path) {
		s.writeOutcome(w, e, k.status)
		return
	}
	p := Problem{Type: ProblemTypeBase + e.Code, Title: k.title, Status: k.status, Code: e.Code,
		Detail: e.Message, Param: e.Param}
	body, merr := json.Marshal(p)
	if merr != nil {
		s.log.Error("encode problem", "err", merr)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("X-Content-Type-Options", "nosniff")
	if h.Get("Cache-Control") == "" {
		h.Set("Cache-Control", "no-store")
	}
	w.WriteHeader(k.status)
	w.Write(body)
}

// handleNotFound answers a request no route serves. When routes serve its path with other methods
// it answers 405 naming them in Allow (which routes exist is no secret; which records do is, and the
// answer is the same whatever record the path names). Otherwise it answers as a missing record.
func (s *Server) handleNotFound(w http.ResponseWriter, r *http.Request) {
	if allow := s.allowed(r); len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		s.error(w, r, dirsvc.Errorf(eMethodNotAllowed, "This address answers only %s.", strings.Join(allow, ", ")))
		return
	}
	s.error(w, r, dirsvc.ErrNotFound)
}

// routeMethods are the methods the routes of the service are registered with (HEAD is served with
// GET); allowed asks the mux about each.
var routeMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// allowed returns the methods of the routes that serve the request's path, other than the catch-all
// route that answers the rest.
func (s *Server) allowed(r *http.Request) []string {
	var allow []string
	probe := *r
	for _, m := range routeMethods {
		probe.Method = m
		if _, pattern := s.mux.Handler(&probe); pattern != "" && pattern != "/" {
			allow = append(allow, m)
		}
	}
	return allow
}

// WriteError answers a request of another part of the service (the primary's routes mounted with
// Handle) with err as a problem, as the read routes answer theirs.
func (s *Server) WriteError(w http.ResponseWriter, r *http.Request, err error) { s.error(w, r, err) }
