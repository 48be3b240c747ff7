package export

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/edge"
)

// The export routes (section 4.5), served on the primary (edges forward them). Requesting, listing
// and reading exports need a partner client's access token with export:run in the path's directory;
// a client sees its own exports only (another's answers as a missing one). Downloads need only the
// signed link.

// maxBody caps a request body.
const maxBody = 16 << 10

// API serves the export routes of a Service. Token returns the caller's verified access token (nil
// without one); WriteError writes an error as the service's problem answers (an OperationOutcome on
// the FHIR routes).
type API struct {
	Service    *Service
	Token      func(r *http.Request) *dirsvc.AccessToken
	WriteError func(w http.ResponseWriter, r *http.Request, err error)
}

// caller checks the request's token: a partner client (a tier above public) with export:run.
func (a *API) caller(r *http.Request) (*dirsvc.AccessToken, error) {
	t := a.Token(r)
	if t == nil || t.Tier == dirsvc.Public {
		return nil, dirsvc.Errorf(dirsvc.EForbiddenScope, "Exports need a partner client's access token with the scope %s.", dirsvc.ScopeExportRun)
	}
	if !t.HasScope(dirsvc.ScopeExportRun) {
		return nil, dirsvc.Errorf(dirsvc.EForbiddenScope, "This needs the scope %s.", dirsvc.ScopeExportRun)
	}
	return t, nil
}

// newJob returns the job of a request by the caller t: it reads as t may read now.
func newJob(r *http.Request, t *dirsvc.AccessToken) *job {
	return &job{Export: Export{Directory: r.PathValue("dir")}, ClientID: t.ClientID, Viewer: t.Viewer(),
		Leaders:       t.HasScope(dirsvc.ScopeLeadershipRead) && t.Tier != dirsvc.Public,
		Practitioners: t.HasScope(dirsvc.ScopePractitionersRead)}
}

// start checks the caller's bound of unfinished exports and the directory, then records and
// queues the job.
func (a *API) start(r *http.Request, j *job) error {
	if _, err := a.Service.cfg.Catalog.Reader(r.Context(), j.Directory); err != nil {
		return err
	}
	n, err := a.Service.unfinished(j.Directory, j.ClientID)
	if err != nil {
		return err
	}
	if n >= MaxUnfinished {
		return dirsvc.Errorf(dirsvc.ERateLimited, "You have %d exports queued or running in this directory: wait for one to end.", n)
	}
	return a.Service.create(j)
}

// owned returns the path's export if it is the caller's; any other answers as missing.
func (a *API) owned(r *http.Request, t *dirsvc.AccessToken) (*job, error) {
	j, err := a.Service.find(r.Context(), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	if j.ClientID != t.ClientID || j.Directory != r.PathValue("dir") {
		return nil, dirsvc.ErrNotFound
	}
	return j, nil
}

// view returns an export as its client sees it: with signed links to the files once it succeeded.
func (a *API) view(j *job) Export {
	e := j.Export
	e.Files = slices.Clone(j.Files)
	if e.Files == nil {
		e.Files = []File{}
	}
	if j.Status == dirsvc.ExportSucceeded {
		exp := a.Service.linkExpiry(j)
		for i := range e.Files {
			e.Files[i].URL = a.Service.link(j.ID, e.Files[i].Name, exp)
			e.Files[i].LinkExpiresAt = &exp
		}
	}
	return e
}

// linkExpiry returns when links given now to an export's files expire: LinkLifetime from now, and
// never after the files are removed. Whole seconds, as the link carries them.
func (s *Service) linkExpiry(j *job) time.Time {
	exp := s.cfg.Now().Add(LinkLifetime).UTC().Truncate(time.Second)
	if j.ExpiresAt != nil && j.ExpiresAt.Before(exp) {
		exp = j.ExpiresAt.UTC().Truncate(time.Second)
	}
	return exp
}

// readRequest reads a JSON export request (edge.ReadOptionalJSON: an empty body asks for everything),
// refusing unknown fields and values, naming the field at fault. A body of null, or a member of null,
// is refused too (dirsvc.DecodeJSON), never read as every format or record type.
func readRequest(w http.ResponseWriter, r *http.Request) (dirsvc.ExportRequest, error) {
	var req dirsvc.ExportRequest
	if _, err := edge.ReadOptionalJSON(w, r, maxBody, &req); err != nil {
		if errors.As(err, new(*time.ParseError)) {
			return req, dirsvc.InvalidParam("since", "since must be a date-time such as 2026-01-31T00:00:00Z")
		}
		return req, err // an empty body asks for everything
	}
	if len(req.Formats) > len(dirsvc.ExportFormats) {
		return req, dirsvc.InvalidParam("formats", "formats names each format at most once")
	}
	for _, f := range req.Formats {
		if !slices.Contains(dirsvc.ExportFormats, f) {
			return req, dirsvc.InvalidParam("formats", "formats are csv, json, fhir-ndjson and hsds")
		}
	}
	if len(req.Types) > len(dirsvc.ExportKinds) {
		return req, dirsvc.InvalidParam("types", "types names each record type at most once")
	}
	for _, k := range req.Types {
		if !slices.Contains(dirsvc.ExportKinds, k) {
			return req, dirsvc.InvalidParam("types", "types are organisation, location, service, practitioner and role")
		}
	}
	return req, nil
}

// HandleCreate starts an export of the path's directory (POST /v1/d/{dir}/exports).
func (a *API) HandleCreate(w http.ResponseWriter, r *http.Request) {
	t, err := a.caller(r)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	req, err := readRequest(w, r)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	j := newJob(r, t)
	j.Request = req
	if err := a.start(r, j); err != nil {
		a.WriteError(w, r, err)
		return
	}
	w.Header().Set("Location", a.Service.cfg.BaseURL+"/v1/d/"+j.Directory+"/exports/"+j.ID)
	edge.WriteNoStoreJSON(w, http.StatusAccepted, a.view(j))
}

// ExportList is the answer of the export list.
type ExportList struct {
	Items []Export `json:"items"`
}

// HandleList answers the caller's recent exports in the directory, newest first.
func (a *API) HandleList(w http.ResponseWriter, r *http.Request) {
	t, err := a.caller(r)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	if len(r.URL.Query()) > 0 {
		for name := range r.URL.Query() {
			a.WriteError(w, r, dirsvc.InvalidParam(name, "the export list takes no parameters"))
			return
		}
	}
	js, err := a.Service.listed(r.Context())
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	list := ExportList{Items: []Export{}}
	for _, j := range js {
		if j.Directory == r.PathValue("dir") && j.ClientID == t.ClientID && !j.Bulk && len(list.Items) < MaxListed {
			list.Items = append(list.Items, a.view(j))
		}
	}
	edge.WriteNoStoreJSON(w, http.StatusOK, list)
}

// HandleGet answers one of the caller's exports, with signed links to its files once it succeeded.
func (a *API) HandleGet(w http.ResponseWriter, r *http.Request) {
	t, err := a.caller(r)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	j, err := a.owned(r, t)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	edge.WriteNoStoreJSON(w, http.StatusOK, a.view(j))
}

// errLink is the answer to a link that is not one the service signed, or has expired.
var errLink = dirsvc.Errorf(dirsvc.EForbiddenScope, "The download link is invalid or has expired: read the export again for a new one.")

// errGone is the answer to a link to a file that is no longer kept.
var errGone = &dirsvc.Error{Code: dirsvc.ENotFound, Message: "The file is no longer available."}

// contentType returns the media type of a file of an export.
func contentType(name string) string {
	if ct := contentTypes[filepath.Ext(name)]; ct != "" {
		return ct
	}
	return "application/octet-stream"
}

// contentTypes are the media types of the files, by their names' endings.
var contentTypes = map[string]string{
	".csv": "text/csv; charset=utf-8", ".json": "application/json", ".ndjson": "application/fhir+ndjson",
	".txt": "text/plain; charset=utf-8",
}

// HandleFile serves a file of an export through its signed link (GET /v1/exports/{id}/files/{name}).
func (a *API) HandleFile(w http.ResponseWriter, r *http.Request) {
	id, name := r.PathValue("id"), r.PathValue("name")
	q := r.URL.Query()
	for k := range q {
		if k != "expires" && k != "sig" {
			a.WriteError(w, r, dirsvc.InvalidParam(k, "a download link takes only expires and sig"))
			return
		}
	}
	valid, current := a.Service.verify(id, name, q.Get("expires"), q.Get("sig"), a.Service.cfg.Now())
	if !valid || !current || len(q["expires"]) != 1 || len(q["sig"]) != 1 {
		a.WriteError(w, r, errLink)
		return
	}
	// Signed by the service: the name is one of the export's files.
	j, err := a.Service.find(r.Context(), id)
	if errors.Is(err, dirsvc.ErrNotFound) || err == nil && (j.Status != dirsvc.ExportSucceeded || !hasFile(j, name)) {
		a.WriteError(w, r, errGone)
		return
	} else if err != nil {
		a.WriteError(w, r, err)
		return
	}
	if err := a.Service.granted(r.Context(), j); errors.Is(err, errAccessChanged) {
		a.WriteError(w, r, errLink)
		return
	} else if err != nil {
		a.WriteError(w, r, err)
		return
	}
	f, err := a.Service.openFile(r.Context(), id, name)
	if errors.Is(err, os.ErrNotExist) {
		a.WriteError(w, r, errGone)
		return
	} else if err != nil {
		a.WriteError(w, r, err)
		return
	}
	defer f.Close()
	h := w.Header()
	h.Set("Content-Type", contentType(name))
	h.Set("Cache-Control", "private, no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Disposition", `attachment; filename="`+name+`"`)
	http.ServeContent(w, r, name, f.ModTime(), f)
}

// hasFile reports whether name is one of an export's files.
func hasFile(j *job, name string) bool {
	return slices.ContainsFunc(j.Files, func(f File) bool { return f.Name == name })
}
