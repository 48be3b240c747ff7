package primary

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/edge"
)

// Token request limits of section 8.
const (
	maxClientID     = 100
	maxClientSecret = 200
	maxScope        = 500
	maxTokenBody    = 8 << 10
)

// TokenResponse is the answer to a successful token request (RFC 6749 section 5.1), with the
// directory the token is for and whether it is a sandbox token.
type TokenResponse struct {
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type"`
	ExpiresIn   int    `json:"expires_in"`
	Scope       string `json:"scope"`
	Directory   string `json:"directory"`
	Sandbox     bool   `json:"sandbox"`
}

// OAuthError is an error body of the token endpoint (RFC 6749 section 5.2), of the same shape as
// edge.OAuthError, which the guard and the edge answer the endpoint's refusals with (its fields are
// given in order here, which vet allows only for a type of this package).
type OAuthError struct {
	Error       string `json:"error"`
	Description string `json:"error_description,omitempty"`
}

// tokenError is a failed token request: the status and the OAuth error body.
type tokenError struct {
	status int
	body   OAuthError
}

func (e *tokenError) Error() string { return e.body.Error + ": " + e.body.Description }

func invalidRequest(desc string) *tokenError {
	return &tokenError{http.StatusBadRequest, OAuthError{"invalid_request", desc}}
}

// unknownScope is the description of a scope parameter naming a scope that does not exist. It names
// the scopes there are, never the caller's words: an error body that echoes its input can be made
// to carry anything.
var unknownScope = "scope names a scope that does not exist: scopes are separated by spaces, each one of " +
	strings.Join(dirsvc.AllScopes, " ")

// repeatedMember describes a JSON body with a member given more than once. It names a token
// parameter, and no other member: those are the caller's words.
func repeatedMember(name string) string {
	if slices.Contains(tokenParams, name) {
		return name + " is given more than once"
	}
	return "a member of the JSON body is given more than once"
}

// tokenRequest is a token request's parameters.
type tokenRequest struct {
	grantType, clientID, clientSecret, scope, directory string
	basic                                               bool
}

var tokenParams = []string{"grant_type", "client_id", "client_secret", "scope", "directory"}

// jsonObject reads a JSON object's members, and names a member given more than once (which
// json.Unmarshal would take the last of, silently): a request that says two things is refused, as a
// form with a parameter twice is.
func jsonObject(body []byte) (members map[string]json.RawMessage, dup string, err error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, "", errors.New("not an object")
	}
	members = map[string]json.RawMessage{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, "", err
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, "", err
		}
		if _, ok := members[key]; ok && dup == "" {
			dup = key
		}
		members[key] = v
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil, "", errors.New("not an object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, "", errors.New("more after the object")
	}
	return members, dup, nil
}

// parseTokenRequest reads a form or JSON body and the client's HTTP Basic credentials.
func parseTokenRequest(w http.ResponseWriter, r *http.Request) (*tokenRequest, error) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		return nil, invalidRequest("send the parameters as application/x-www-form-urlencoded or application/json")
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxTokenBody))
	if err != nil {
		return nil, invalidRequest("the request body is too large")
	}
	params := map[string]string{}
	switch mt {
	case "application/x-www-form-urlencoded":
		form, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, invalidRequest("the form body is malformed")
		}
		for _, p := range tokenParams {
			switch vs := form[p]; len(vs) {
			case 0:
			case 1:
				params[p] = vs[0]
			default:
				return nil, invalidRequest(p + " is given more than once")
			}
		}
	case "application/json":
		raw, dup, err := jsonObject(body)
		if err != nil {
			return nil, invalidRequest("the JSON body must be an object")
		} else if dup != "" {
			return nil, invalidRequest(repeatedMember(dup))
		}
		for _, p := range tokenParams {
			if v, ok := raw[p]; ok {
				var s string
				if err := json.Unmarshal(v, &s); err != nil {
					return nil, invalidRequest(p + " must be a string")
				}
				params[p] = s
			}
		}
	default:
		return nil, invalidRequest("send the parameters as application/x-www-form-urlencoded or application/json")
	}
	tr := &tokenRequest{grantType: params["grant_type"], clientID: params["client_id"],
		clientSecret: params["client_secret"], scope: params["scope"], directory: params["directory"]}
	if r.Header.Get("Authorization") != "" {
		id, secret, ok := r.BasicAuth()
		if !ok {
			return nil, &tokenError{http.StatusUnauthorized, OAuthError{"invalid_client", "the Authorization header is not HTTP Basic credentials"}}
		}
		if tr.clientSecret != "" {
			return nil, invalidRequest("authenticate the client one way: HTTP Basic or the body, not both")
		}
		// RFC 6749 section 2.3.1: the client ID and secret are form-encoded before Basic encoding.
		uid, err1 := url.QueryUnescape(id)
		usecret, err2 := url.QueryUnescape(secret)
		if err1 != nil || err2 != nil {
			return nil, &tokenError{http.StatusUnauthorized, OAuthError{"invalid_client", "the Basic credentials are not form-encoded"}}
		}
		if tr.clientID != "" && tr.clientID != uid {
			return nil, invalidRequest("client_id differs from the HTTP Basic credentials")
		}
		tr.clientID, tr.clientSecret, tr.basic = uid, usecret, true
	}
	switch {
	case tr.grantType == "":
		return nil, invalidRequest("grant_type is required")
	case tr.grantType != "client_credentials":
		return nil, &tokenError{http.StatusBadRequest, OAuthError{"unsupported_grant_type", "only client_credentials is supported"}}
	case len(tr.clientID) > maxClientID:
		return nil, invalidRequest("client_id is at most " + strconv.Itoa(maxClientID) + " characters")
	case len(tr.clientSecret) > maxClientSecret:
		return nil, invalidRequest("client_secret is at most " + strconv.Itoa(maxClientSecret) + " characters")
	case len(tr.scope) > maxScope:
		return nil, invalidRequest("scope is at most " + strconv.Itoa(maxScope) + " characters")
	case tr.directory != "" && !dirsvc.ValidSlug(tr.directory):
		return nil, invalidRequest("directory is not a directory slug")
	case tr.clientID == "" || tr.clientSecret == "":
		return nil, &tokenError{http.StatusUnauthorized, OAuthError{"invalid_client", "client authentication is required"}}
	}
	return tr, nil
}

// HandleToken is the token endpoint: OAuth 2.0 client credentials (RFC 6749 section 4.4).
func (a *Access) HandleToken(log *slog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		resp, err := a.token(w, r)
		if err != nil {
			var te *tokenError
			if !errors.As(err, &te) {
				log.Error("token request failed", "err", err)
				te = &tokenError{http.StatusInternalServerError, OAuthError{"server_error", "the token could not be issued"}}
			}
			writeOAuth(w, te.status, te.body)
			return
		}
		writeOAuth(w, http.StatusOK, resp)
	}
}

func (a *Access) token(w http.ResponseWriter, r *http.Request) (*TokenResponse, error) {
	tr, err := parseTokenRequest(w, r)
	if err != nil {
		return nil, err
	}
	c, err := a.authenticate(r.Context(), tr.clientID, tr.clientSecret)
	if errors.Is(err, errBadClient) {
		return nil, &tokenError{http.StatusUnauthorized, OAuthError{"invalid_client", "client authentication failed"}}
	} else if err != nil {
		return nil, err
	}
	var g *dirsvc.Grant
	switch {
	case tr.directory != "":
		g = c.Grant(tr.directory)
	case len(c.Grants) == 1:
		g = &c.Grants[0]
	default:
		return nil, invalidRequest("directory is required: name the directory the token is for")
	}
	if g == nil {
		return nil, invalidRequest("the client has no access to this directory")
	}
	scopes := g.Scopes
	if tr.scope != "" {
		asked, err := dirsvc.ParseScopes(tr.scope)
		if err != nil {
			return nil, &tokenError{http.StatusBadRequest, OAuthError{"invalid_scope", unknownScope}}
		}
		for _, s := range asked {
			if !slices.Contains(g.Scopes, s) {
				return nil, &tokenError{http.StatusBadRequest, OAuthError{"invalid_scope", "the scope " + s + " is not granted to this client"}}
			}
		}
		scopes = asked
	}
	raw, t, err := a.issue(r.Context(), c, g, dirsvc.NormalScopes(scopes))
	if err != nil {
		return nil, err
	}
	return &TokenResponse{AccessToken: raw, TokenType: "Bearer", ExpiresIn: int(TokenLifetime.Seconds()),
		Scope: t.Scope, Directory: t.Directory, Sandbox: t.Sandbox}, nil
}

// writeOAuth writes a token endpoint answer as every part of the service does (edge.WriteOAuth).
func writeOAuth(w http.ResponseWriter, status int, v any) { edge.WriteOAuth(w, status, v) }
