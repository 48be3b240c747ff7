package primary

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/edge"
)

// AccessRequestBody is the body of an access request (POST /v1/access-requests).
type AccessRequestBody struct {
	Directory              string   `json:"directory"`
	Scopes                 []string `json:"scopes"`
	PractitionerListReason string   `json:"practitionerListReason,omitempty"`
	// JWKS is the public keys the client asks to authenticate with (private_key_jwt), a JSON Web
	// Key Set read by dirsvc.ParseJWKS; they replace its keys when the request is approved.
	JWKS json.RawMessage `json:"jwks,omitempty"`
}

// HandleAccessRequest records a partner client's request for access to a directory: the client
// authenticates with its ID and secret (HTTP Basic, form-encoded as at the token endpoint), and the
// request waits in the operators' queue (dirsvc clients requests); public keys it carries (jwks) are
// installed on the client when it is approved. 201 with the request; 401 when
// the client fails to authenticate; 403 for a sandbox client; 400 naming a field that is wrong; 404
// for a directory the service does not publish.
func (s *Portal) HandleAccessRequest(w http.ResponseWriter, r *http.Request) {
	id, secret, ok := r.BasicAuth()
	if ok {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	}
	if !ok || len(id) > maxClientID || len(secret) > maxClientSecret {
		s.unauthorized(w, r)
		return
	}
	c, err := s.Access.authenticate(r.Context(), id, secret)
	if errors.Is(err, errBadClient) {
		s.unauthorized(w, r)
		return
	} else if err != nil {
		s.Edge.WriteError(w, r, err)
		return
	}
	body, err := readAccessRequest(w, r)
	if err != nil {
		s.Edge.WriteError(w, r, err)
		return
	}
	if !dirsvc.ValidSlug(body.Directory) {
		s.Edge.WriteError(w, r, dirsvc.InvalidParam("directory", "name the directory by its slug"))
		return
	}
	if _, err := s.Edge.Directory(r.Context(), body.Directory); err != nil {
		s.Edge.WriteError(w, r, err)
		return
	}
	req := &dirsvc.AccessRequest{Client: c.ID, Directory: body.Directory, Scopes: body.Scopes,
		PractitionerListReason: strings.TrimSpace(body.PractitionerListReason)}
	if len(body.JWKS) > 0 { // a null is refused as the body is read (dirsvc.DecodeJSON)
		if req.Keys, err = dirsvc.ParseJWKS(body.JWKS); err != nil {
			s.Edge.WriteError(w, r, err)
			return
		}
	}
	if len(req.Scopes) == 0 {
		s.Edge.WriteError(w, r, dirsvc.InvalidParam("scopes", "name the scopes you need"))
		return
	}
	if err := s.Access.RequestAccess(r.Context(), req); err != nil {
		s.Edge.WriteError(w, r, err)
		return
	}
	if !s.replicated(w, r) {
		return
	}
	b, err := json.Marshal(req)
	if err != nil {
		s.Edge.WriteError(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusCreated)
	w.Write(b)
}

// maxAccessRequestBody bounds an access request's body: a key set and the rest.
const maxAccessRequestBody = dirsvc.MaxJWKSSize + 8<<10

// readAccessRequest reads an access request's JSON body (edge.ReadJSON): an object with the members
// of AccessRequestBody and no other, each once.
func readAccessRequest(w http.ResponseWriter, r *http.Request) (*AccessRequestBody, error) {
	body := &AccessRequestBody{}
	if err := edge.ReadJSON(w, r, maxAccessRequestBody, body); err != nil {
		return nil, err
	}
	if len(body.Scopes) > len(dirsvc.AllScopes) {
		return nil, dirsvc.InvalidParam("scopes", "name each scope once")
	}
	return body, nil
}

func (s *Portal) unauthorized(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("WWW-Authenticate", `Basic realm="dirsvc", charset="UTF-8"`)
	s.Edge.WriteError(w, r, dirsvc.Errorf(dirsvc.EInvalidToken, "Client authentication failed: send the client ID and secret as HTTP Basic credentials."))
}
