package primary

import (
	"bytes"
	"context"
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
	"github.com/dirsvc/dirsvc/fhir"
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
	// assertionType and assertion are a client assertion (RFC 7521 section 4.2), which
	// authenticates the client instead of a secret.
	assertionType, assertion string
	basic                    bool
}

// asserted reports whether the client authenticates with an assertion.
func (tr *tokenRequest) asserted() bool { return tr.assertionType != "" || tr.assertion != "" }

var tokenParams = []string{"grant_type", "client_id", "client_secret", "scope", "directory", "client_assertion_type", "client_assertion"}

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
		clientSecret: params["client_secret"], scope: params["scope"], directory: params["directory"],
		assertionType: params["client_assertion_type"], assertion: params["client_assertion"]}
	if r.Header.Get("Authorization") != "" {
		id, secret, ok := r.BasicAuth()
		if !ok {
			return nil, &tokenError{http.StatusUnauthorized, OAuthError{"invalid_client", "the Authorization header is not HTTP Basic credentials"}}
		}
		if tr.clientSecret != "" || tr.asserted() {
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
	case tr.asserted() && tr.clientSecret != "":
		return nil, invalidRequest("authenticate the client one way: a client secret or a client assertion, not both")
	case tr.asserted():
		return tr, nil
	case tr.clientID == "" || tr.clientSecret == "":
		return nil, &tokenError{http.StatusUnauthorized, OAuthError{"invalid_client", "client authentication is required"}}
	}
	return tr, nil
}

// client returns the client the request authenticates: by its assertion, or by its ID and secret.
func (a *Access) client(ctx context.Context, tr *tokenRequest) (*dirsvc.Client, error) {
	if !tr.asserted() {
		c, err := a.authenticate(ctx, tr.clientID, tr.clientSecret)
		if errors.Is(err, errBadClient) {
			return nil, &tokenError{http.StatusUnauthorized, OAuthError{"invalid_client", "client authentication failed"}}
		}
		return c, err
	}
	switch {
	case tr.assertionType != dirsvc.ClientAssertionType:
		return nil, badAssertion("client_assertion_type must be " + dirsvc.ClientAssertionType)
	case tr.assertion == "":
		return nil, badAssertion("client_assertion is required with client_assertion_type")
	}
	return a.authenticateAssertion(ctx, tr.assertion, tr.clientID)
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
	c, err := a.client(r.Context(), tr)
	if err != nil {
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
	scopes, aliases, err := grantedScopes(tr.scope, g.Scopes)
	if err != nil {
		return nil, err
	}
	raw, t, err := a.issue(r.Context(), c, g, dirsvc.NormalScopes(scopes))
	if err != nil {
		return nil, err
	}
	return &TokenResponse{AccessToken: raw, TokenType: "Bearer", ExpiresIn: int(TokenLifetime.Seconds()),
		Scope: strings.Join(append([]string{t.Scope}, aliases...), " "), Directory: t.Directory, Sandbox: t.Sandbox}, nil
}

// grantedScopes returns the directory scopes a token request's scope parameter asks of a grant that
// holds held (all of them when it names none), and the SMART system scopes it names, each once, in
// its order (dirsvc.ParseSystemScope): each stands for the directory scopes it needs, which the grant
// must hold. The access token carries the directory scopes; the token response names the SMART
// scopes too, as granted, for the SMART clients that look for the ones they asked for.
func grantedScopes(param string, held []string) (scopes, aliases []string, err error) {
	if param == "" {
		return held, nil, nil
	}
	var (
		direct []string
		smart  []dirsvc.SystemScope
	)
	for _, f := range strings.Fields(param) {
		if dirsvc.ValidScope(f) {
			direct = append(direct, f)
			continue
		}
		sc, err := dirsvc.ParseSystemScope(f, fhir.Types)
		switch {
		case errors.Is(err, dirsvc.ErrUnsupportedSystemScope) || err != nil && strings.HasPrefix(f, "system/"):
			return nil, nil, &tokenError{http.StatusBadRequest, OAuthError{"invalid_scope", unsupportedSystemScope}}
		case err != nil:
			return nil, nil, &tokenError{http.StatusBadRequest, OAuthError{"invalid_scope", unknownScope}}
		}
		if !slices.Contains(aliases, f) {
			smart, aliases = append(smart, sc), append(aliases, f)
		}
	}
	scopes = dirsvc.NormalScopes(direct)
	for _, s := range scopes {
		if !slices.Contains(held, s) {
			return nil, nil, &tokenError{http.StatusBadRequest, OAuthError{"invalid_scope", "the scope " + s + " is not granted to this client"}}
		}
	}
	for i, sc := range smart {
		gives, missing := sc.Needs(held)
		if missing != "" {
			// The alias is one this service takes (a known type, fixed permissions): naming it
			// repeats nothing the caller could choose freely.
			return nil, nil, &tokenError{http.StatusBadRequest, OAuthError{"invalid_scope",
				"the scope " + aliases[i] + " needs " + missing + ", which is not granted to this client"}}
		}
		scopes = append(scopes, gives...)
	}
	return scopes, aliases, nil
}

// unsupportedSystemScope describes a SMART scope this service does not take, without repeating it.
var unsupportedSystemScope = "SMART scopes are taken as system/{type}.{r, s or rs} (or .read), with * or one of the types " +
	strings.Join(fhir.Types, " ") + ": the service is read-only and has no patient or user context"

// writeOAuth writes a token endpoint answer as every part of the service does (edge.WriteOAuth).
func writeOAuth(w http.ResponseWriter, status int, v any) { edge.WriteOAuth(w, status, v) }
