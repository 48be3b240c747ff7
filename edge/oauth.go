package edge

import (
	"encoding/json"
	"net/http"

	"github.com/dirsvc/dirsvc"
)

// OAuthError is an error body of the token endpoint (RFC 6749 section 5.2). The specification
// (section 7, item 2) gives every error of the token endpoint this body, whichever part of the
// service refuses the request: the token handler, or the guard and the edge in front of it.
type OAuthError struct {
	Error       string `json:"error"`
	Description string `json:"error_description,omitempty"`
}

// oauthCodes are the OAuth error codes of the domain errors the guard and the edge answer the token
// endpoint with. RFC 6749 has no code for a rate limit: temporarily_unavailable (section 4.1.2.1, in
// the OAuth Extensions Error Registry) says "try again later", which is what Retry-After says when;
// the status (429 or 503) tells the two apart.
var oauthCodes = map[string]string{
	dirsvc.ERateLimited: "temporarily_unavailable",
	dirsvc.EUnavailable: "temporarily_unavailable",
	dirsvc.EInternal:    "server_error",
}

// oauthErrorOf returns the OAuth error body of a domain error answered at the token endpoint; a code
// without an OAuth counterpart is an invalid request. The description is the domain error's message,
// which is written for the client.
func oauthErrorOf(e *dirsvc.Error) OAuthError {
	code, ok := oauthCodes[e.Code]
	if !ok {
		code = "invalid_request"
	}
	return OAuthError{Error: code, Description: e.Message}
}

// WriteOAuth writes an answer of the token endpoint, v being a token response or an OAuthError:
// never stored by any cache (RFC 6749 section 5.1), and a failed client authentication names the
// scheme to use (section 5.2). Headers set before, such as Retry-After, are kept.
func WriteOAuth(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status, body = http.StatusInternalServerError, []byte(`{"error":"server_error"}`)
	}
	h := w.Header()
	h[keyContentType] = contentTypeJSON
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
	if status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Basic realm="dirsvc", charset="UTF-8"`)
	}
	w.WriteHeader(status)
	w.Write(body)
}
