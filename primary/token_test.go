package primary_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/edge"
	"github.com/dirsvc/dirsvc/edge/edgetest"
	"github.com/dirsvc/dirsvc/primary"
)

// authService is the primary's token endpoint and the edge's reads over one real store, as
// `dirsvc serve` wires them, on 127.0.0.1.
type authService struct {
	*httptest.Server
	store  *dirdb.Store
	access *primary.Access
}

func newAuthService(tb testing.TB, now func() time.Time) *authService {
	tb.Helper()
	return newAuthServiceWith(tb, now, nil)
}

// smallPrimary returns a real store in a temporary folder holding the small test directory, its
// server key (kept in the folder), and the primary's partner access over it (now nil for the clock).
func smallPrimary(tb testing.TB, now func() time.Time) (*dirdb.Store, []byte, *primary.Access) {
	tb.Helper()
	ctx := context.Background()
	dir := tb.TempDir()
	store, err := dirdb.Open(ctx, dir)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { store.Close() })
	f, err := os.Open(filepath.Join("..", "testdata", "small.ndjson"))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if _, _, err := primary.Import(ctx, store, f); err != nil {
		tb.Fatal(err)
	}
	key, err := primary.LoadServerKey(ctx, store, primary.ServerKeyConfig{Path: filepath.Join(dir, "server.key")})
	if err != nil {
		tb.Fatal(err)
	}
	access, err := primary.NewAccess(ctx, store, key, now)
	if err != nil {
		tb.Fatal(err)
	}
	return store, key, access
}

// newAuthServiceWith is newAuthService with the server's configuration changed by configure; tokens
// name the configured base URL as their issuer, as `dirsvc serve` wires it.
func newAuthServiceWith(tb testing.TB, now func() time.Time, configure func(*edge.Config)) *authService {
	tb.Helper()
	store, _, access := smallPrimary(tb, now)
	access.SandboxDirectory = "small"
	cfg := edge.Config{Catalog: store, Keys: store, AnonymousLimits: edge.Limits{PerMinute: 1 << 20, PerDay: 1 << 20}}
	if configure != nil {
		configure(&cfg)
		access.Issuer = cfg.BaseURL
	}
	srv := edge.New(cfg)
	if err := (&primary.Server{Edge: srv, Access: access}).Mount(); err != nil {
		tb.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	tb.Cleanup(ts.Close)
	return &authService{Server: ts, store: store, access: access}
}

// client creates a client of the small directory with the scopes.
func (a *authService) client(tb testing.TB, scopes ...string) (id, secret string) {
	tb.Helper()
	c, secret, err := a.access.CreateClient(context.Background(), primary.NewClient{Name: "test", Directory: "small",
		Grants: []dirsvc.Grant{{Directory: "small", Tier: dirsvc.Partner, Scopes: scopes, Limit: dirsvc.DefaultPartnerLimit}}})
	if err != nil {
		tb.Fatal(err)
	}
	return c.ID, secret
}

func (a *authService) config(id, secret, dir string, style oauth2.AuthStyle, scopes ...string) *clientcredentials.Config {
	cfg := &clientcredentials.Config{ClientID: id, ClientSecret: secret, TokenURL: a.URL + edge.TokenPath,
		Scopes: scopes, AuthStyle: style}
	if dir != "" {
		cfg.EndpointParams = url.Values{"directory": {dir}}
	}
	return cfg
}

// httpContext makes the oauth2 package use a client that checks every answer against the OpenAPI
// document.
func httpContext(tb testing.TB) context.Context {
	return context.WithValue(context.Background(), oauth2.HTTPClient,
		&http.Client{Transport: edgetest.NewChecker(tb).Transport(tb, http.DefaultTransport)})
}

func TestClientCredentialsObtainTokensThatRead(t *testing.T) {
	a := newAuthService(t, nil)
	id, secret := a.client(t, dirsvc.ScopeGraphRead, dirsvc.ScopeSearchRead)
	for name, style := range map[string]oauth2.AuthStyle{"HTTP Basic": oauth2.AuthStyleInHeader, "body": oauth2.AuthStyleInParams} {
		t.Run(name, func(t *testing.T) {
			ctx := httpContext(t)
			cfg := a.config(id, secret, "small", style, dirsvc.ScopeGraphRead)
			tok, err := cfg.Token(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if tok.Extra("directory") != "small" || tok.Extra("sandbox") != false || tok.Extra("scope") != "graph:read" ||
				time.Until(tok.Expiry) > primary.TokenLifetime || time.Until(tok.Expiry) < primary.TokenLifetime-time.Minute {
				t.Errorf("token response: directory %v sandbox %v scope %v expires in %v", tok.Extra("directory"),
					tok.Extra("sandbox"), tok.Extra("scope"), time.Until(tok.Expiry))
			}
			resp, err := cfg.Client(ctx).Get(a.URL + "/v1/d/small/services/svc_gp?view=brief")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 || resp.Header.Get("X-DIR-Audience") != "partner" || resp.Header.Get("Cache-Control") != "private, no-store" {
				t.Errorf("read with the token: %d audience %q Cache-Control %q", resp.StatusCode,
					resp.Header.Get("X-DIR-Audience"), resp.Header.Get("Cache-Control"))
			}
		})
	}
}

// retrieveError returns the OAuth error of a failed token request.
func retrieveError(t *testing.T, err error) *oauth2.RetrieveError {
	t.Helper()
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) {
		t.Fatalf("want an OAuth error answer, got %v", err)
	}
	return re
}

func TestFailedTokenRequestsGetTheirAnswer(t *testing.T) {
	a := newAuthService(t, nil)
	id, secret := a.client(t, dirsvc.ScopeGraphRead)
	revoked, revokedSecret := a.client(t, dirsvc.ScopeGraphRead)
	if err := a.access.Revoke(context.Background(), revoked); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name              string
		cfg               *clientcredentials.Config
		status            int
		code              string
		wwwAuthentication bool
	}{
		{"wrong secret", a.config(id, secret+"x", "small", oauth2.AuthStyleInHeader), 401, "invalid_client", true},
		{"wrong secret in the body", a.config(id, secret+"x", "small", oauth2.AuthStyleInParams), 401, "invalid_client", true},
		{"unknown client", a.config("dirp_nobody", secret, "small", oauth2.AuthStyleInHeader), 401, "invalid_client", true},
		{"revoked client", a.config(revoked, revokedSecret, "small", oauth2.AuthStyleInHeader), 401, "invalid_client", true},
		{"unknown scope", a.config(id, secret, "small", oauth2.AuthStyleInHeader, "everything"), 400, "invalid_scope", false},
		{"scope not granted", a.config(id, secret, "small", oauth2.AuthStyleInHeader, dirsvc.ScopePractitionersRead), 400, "invalid_scope", false},
		{"another directory", a.config(id, secret, "demo", oauth2.AuthStyleInHeader), 400, "invalid_request", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.cfg.Token(httpContext(t))
			re := retrieveError(t, err)
			if re.Response.StatusCode != c.status || re.ErrorCode != c.code {
				t.Errorf("%d %q, want %d %q", re.Response.StatusCode, re.ErrorCode, c.status, c.code)
			}
			if got := re.Response.Header.Get("WWW-Authenticate") != ""; got != c.wwwAuthentication {
				t.Errorf("WWW-Authenticate %q", re.Response.Header.Get("WWW-Authenticate"))
			}
			if re.Response.Header.Get("Cache-Control") != "no-store" {
				t.Errorf("Cache-Control %q", re.Response.Header.Get("Cache-Control"))
			}
		})
	}
}

func TestTokenRequestsAreParsedStrictly(t *testing.T) {
	a := newAuthService(t, nil)
	id, secret := a.client(t, dirsvc.ScopeGraphRead)
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(id)+":"+url.QueryEscape(secret)))
	// RFC 6749 2.3.1: the ID and secret are form-encoded inside Basic; an encoded letter must decode.
	escapedID := "%" + strings.ToUpper(hexByte(id[0])) + id[1:]
	escapedBasic := "Basic " + base64.StdEncoding.EncodeToString([]byte(escapedID+":"+secret))
	form := "application/x-www-form-urlencoded"
	for _, c := range []struct {
		name, method, ctype, auth, body string
		status                          int
		code                            string
	}{
		{"form with Basic", "POST", form, basic, "grant_type=client_credentials", 200, ""},
		{"form-encoded Basic credentials", "POST", form, escapedBasic, "grant_type=client_credentials", 200, ""},
		{"JSON body", "POST", "application/json", "", `{"grant_type":"client_credentials","client_id":"` + id + `","client_secret":"` + secret + `","directory":"small"}`, 200, ""},
		{"no grant type", "POST", form, basic, "scope=graph:read", 400, "invalid_request"},
		{"another grant type", "POST", form, basic, "grant_type=password", 400, "unsupported_grant_type"},
		{"grant type twice", "POST", form, basic, "grant_type=client_credentials&grant_type=client_credentials", 400, "invalid_request"},
		{"both Basic and a body secret", "POST", form, basic, "grant_type=client_credentials&client_secret=" + secret, 400, "invalid_request"},
		{"no credentials", "POST", form, "", "grant_type=client_credentials", 401, "invalid_client"},
		{"client_id too long", "POST", form, "", "grant_type=client_credentials&client_secret=x&client_id=" + strings.Repeat("a", 101), 400, "invalid_request"},
		{"client_secret too long", "POST", form, "", "grant_type=client_credentials&client_id=" + id + "&client_secret=" + strings.Repeat("a", 201), 400, "invalid_request"},
		{"scope too long", "POST", form, basic, "grant_type=client_credentials&scope=" + strings.Repeat("a", 501), 400, "invalid_request"},
		{"a bad directory slug", "POST", form, basic, "grant_type=client_credentials&directory=Not%20A%20Slug", 400, "invalid_request"},
		{"JSON with a number", "POST", "application/json", basic, `{"grant_type":1}`, 400, "invalid_request"},
		// Two secrets in one JSON body: JSON readers take the first or the last; the request is refused.
		{"JSON with a member twice", "POST", "application/json", "", `{"grant_type":"client_credentials","client_id":"` + id + `","client_secret":"wrong","client_secret":"` + secret + `","directory":"small"}`, 400, "invalid_request"},
		{"JSON with more after the object", "POST", "application/json", basic, `{"grant_type":"client_credentials"} {}`, 400, "invalid_request"},
		{"plain text", "POST", "text/plain", basic, "grant_type=client_credentials", 400, "invalid_request"},
		{"a body past 8 KiB", "POST", form, basic, "grant_type=client_credentials&x=" + strings.Repeat("a", 9000), 400, "invalid_request"},
		{"GET", "GET", form, basic, "", 405, "invalid_request"},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest(c.method, a.URL+edge.TokenPath, strings.NewReader(c.body))
			req.Header.Set("Content-Type", c.ctype)
			if c.auth != "" {
				req.Header.Set("Authorization", c.auth)
			}
			resp, err := (&http.Client{Transport: edgetest.NewChecker(t).Transport(t, http.DefaultTransport)}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.status || c.code != "" && !strings.Contains(string(body), `"error":"`+c.code+`"`) {
				t.Errorf("%d %s, want %d %s", resp.StatusCode, body, c.status, c.code)
			}
		})
	}
}

func hexByte(b byte) string {
	return strings.ToLower(string("0123456789abcdef"[b>>4]) + string("0123456789abcdef"[b&15]))
}

func TestExpiredTokensAreRefused(t *testing.T) {
	// A token endpoint whose clock is 20 minutes behind issues tokens that have already expired.
	a := newAuthService(t, func() time.Time { return time.Now().Add(-primary.TokenLifetime - 5*time.Minute) })
	id, secret := a.client(t, dirsvc.ScopeGraphRead)
	ctx := httpContext(t)
	cfg := a.config(id, secret, "small", oauth2.AuthStyleInHeader)
	tok, err := cfg.Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", a.URL+"/v1/d/small/services/svc_gp", nil)
	tok.SetAuthHeader(req)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "invalid_token") {
		t.Errorf("an expired token: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
}

func TestSandboxClientsWorkAtOnceWithoutExplicitScopes(t *testing.T) {
	a := newAuthService(t, nil)
	c, secret, err := a.access.CreateClient(context.Background(), primary.NewClient{Name: "sign-up", Sandbox: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(c.ID, dirsvc.PartnerClientPrefix) {
		t.Errorf("a sandbox client's ID %q is not a partner-organisation ID", c.ID)
	}
	ctx := httpContext(t)
	tok, err := a.config(c.ID, secret, "", oauth2.AuthStyleInHeader).Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if tok.Extra("sandbox") != true || tok.Extra("directory") != "small" {
		t.Errorf("sandbox token response: sandbox %v directory %v", tok.Extra("sandbox"), tok.Extra("directory"))
	}
	for _, s := range dirsvc.ExplicitScopes {
		if strings.Contains(tok.Extra("scope").(string), s) {
			t.Errorf("the sandbox holds %s", s)
		}
		_, err := a.config(c.ID, secret, "small", oauth2.AuthStyleInHeader, s).Token(ctx)
		if re := retrieveError(t, err); re.ErrorCode != "invalid_scope" {
			t.Errorf("asking the sandbox for %s: %q", s, re.ErrorCode)
		}
	}
	// The sandbox limit is low and comes with every response.
	resp, err := a.config(c.ID, secret, "", oauth2.AuthStyleInHeader).Client(ctx).Get(a.URL + "/v1/d/small/services")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if want := `"minute";q=30;w=60, "day";q=1000;w=86400`; resp.StatusCode != 200 || resp.Header.Get("RateLimit-Policy") != want {
		t.Errorf("sandbox read: %d RateLimit-Policy %q, want %q", resp.StatusCode, resp.Header.Get("RateLimit-Policy"), want)
	}
	// A grant with an explicit scope can never be given to the sandbox.
	g := a.access.SandboxGrant()
	g.Scopes = append(g.Scopes, dirsvc.ScopePractitionersRead)
	if err := g.Validate(); err == nil {
		t.Error("a sandbox grant with practitioners:read is valid")
	}
}

func TestRotatedSecretsReplaceTheOldOne(t *testing.T) {
	a := newAuthService(t, nil)
	id, old := a.client(t, dirsvc.ScopeGraphRead)
	fresh, err := a.access.RotateSecret(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	ctx := httpContext(t)
	if _, err := a.config(id, fresh, "small", oauth2.AuthStyleInHeader).Token(ctx); err != nil {
		t.Errorf("the new secret: %v", err)
	}
	_, err = a.config(id, old, "small", oauth2.AuthStyleInHeader).Token(ctx)
	if re := retrieveError(t, err); re.Response.StatusCode != 401 {
		t.Errorf("the old secret: %d", re.Response.StatusCode)
	}
	// The store keeps no secret, only its MAC.
	raw, err := os.ReadFile(filepath.Join(a.store.Root(), "platform.db"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), fresh) || strings.Contains(string(raw), old) {
		t.Error("platform.db holds a client secret")
	}
}

func TestAccessRequestsNeedAReasonForPractitioners(t *testing.T) {
	a := newAuthService(t, nil)
	id, _ := a.client(t, dirsvc.ScopeGraphRead)
	ctx := context.Background()
	req := &dirsvc.AccessRequest{Client: id, Directory: "small", Scopes: []string{dirsvc.ScopePractitionersRead}}
	if err := a.access.RequestAccess(ctx, req); dirsvc.ErrorCode(err) != dirsvc.EInvalid {
		t.Fatalf("a request for practitioners:read without a reason: %v", err)
	}
	req.PractitionerListReason = "We route referrals to named clinicians."
	if err := a.access.RequestAccess(ctx, req); err != nil {
		t.Fatal(err)
	}
	got, err := a.store.AccessRequest(ctx, req.ID)
	if err != nil || got.PractitionerListReason != req.PractitionerListReason || got.Status != "pending" {
		t.Fatalf("stored request %+v, %v", got, err)
	}
	// Only a live client asks.
	if err := a.access.Revoke(ctx, id); err != nil {
		t.Fatal(err)
	}
	for _, client := range []string{id, "dirp_nobody"} {
		r := &dirsvc.AccessRequest{Client: client, Directory: "small", Scopes: []string{dirsvc.ScopeGraphRead}}
		if err := a.access.RequestAccess(ctx, r); !errors.Is(err, dirsvc.ErrNotFound) {
			t.Errorf("a request of %s: %v", client, err)
		}
	}
}

// TestADirectoryClientBelongsToItsDirectoryForLife removes a directory client's only grant and
// grants it another directory: refused, as while it held its grant; its own directory may grant it
// again.
func TestADirectoryClientBelongsToItsDirectoryForLife(t *testing.T) {
	ctx := context.Background()
	a := newAuthService(t, nil)
	id, _ := a.client(t, dirsvc.ScopeGraphRead)
	other := dirsvc.Grant{Directory: "other", Tier: dirsvc.Partner, Scopes: []string{dirsvc.ScopeGraphRead}, Limit: dirsvc.DefaultPartnerLimit}
	if err := a.access.Grant(ctx, id, other); err == nil {
		t.Fatal("a directory client was granted another directory while it held its own grant")
	}
	if err := a.store.RemoveGrant(ctx, id, "small"); err != nil {
		t.Fatal(err)
	}
	if err := a.access.Grant(ctx, id, other); err == nil || dirsvc.ErrorCode(err) != dirsvc.EInvalid {
		t.Fatalf("a directory client without grants was granted another directory: %v", err)
	}
	c, _, err := a.store.Client(ctx, id)
	if err != nil || c.Directory != "small" || len(c.Grants) != 0 {
		t.Fatalf("the client after the refusal: %+v, %v", c, err)
	}
	own := other
	own.Directory = "small"
	if err := a.access.Grant(ctx, id, own); err != nil {
		t.Errorf("its own directory could not grant it again: %v", err)
	}
}

// TestTokenEndpointRefusalsAreOAuthErrors: over the rate limit the token endpoint answers 429 with
// Retry-After and an OAuth error body (specification section 7, item 2), which an OAuth client reads
// as such; it was a problem+json body before.
func TestTokenEndpointRefusalsAreOAuthErrors(t *testing.T) {
	a := newAuthServiceWith(t, nil, func(c *edge.Config) { c.AnonymousLimits = edge.Limits{PerMinute: 1, PerDay: 100} })
	id, secret := a.client(t, dirsvc.ScopeGraphRead)
	cfg := a.config(id, secret, "small", oauth2.AuthStyleInHeader)
	if _, err := cfg.Token(httpContext(t)); err != nil {
		t.Fatalf("the first request of the minute: %v", err)
	}
	_, err := cfg.Token(httpContext(t))
	re := retrieveError(t, err)
	if got, want := re.Response.StatusCode, http.StatusTooManyRequests; got != want {
		t.Fatalf("status %d, want %d: %s", got, want, re.Body)
	}
	h := re.Response.Header
	if got, want := h.Get("Content-Type"), "application/json"; got != want {
		t.Errorf("Content-Type %q, want %q: %s", got, want, re.Body)
	}
	if got, want := re.ErrorCode, "temporarily_unavailable"; got != want {
		t.Errorf("error %q, want %q: %s", got, want, re.Body)
	}
	if re.ErrorDescription == "" {
		t.Errorf("no error_description: %s", re.Body)
	}
	if secs, err := strconv.Atoi(h.Get("Retry-After")); err != nil || secs < 1 || secs > 60 {
		t.Errorf("Retry-After %q, want 1 to 60 seconds", h.Get("Retry-After"))
	}
	if h.Get("Cache-Control") != "no-store" || h.Get("Pragma") != "no-cache" {
		t.Errorf("Cache-Control %q, Pragma %q", h.Get("Cache-Control"), h.Get("Pragma"))
	}
}

// TestTokenErrorsNeverEchoTheRequest: an unknown scope, or a JSON member given twice, is refused
// without repeating what the caller sent (an error body that echoes its input can be made to carry
// anything, up to the 500 characters of a scope).
func TestTokenErrorsNeverEchoTheRequest(t *testing.T) {
	a := newAuthService(t, nil)
	id, secret := a.client(t, dirsvc.ScopeGraphRead)
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(id)+":"+url.QueryEscape(secret)))
	echo := "canary-echo-x<script>alert(1)</script>" + strings.Repeat("y", 400)
	for _, c := range []struct {
		name, ctype, body, code string
	}{
		{"an unknown scope", "application/x-www-form-urlencoded",
			"grant_type=client_credentials&directory=small&scope=" + url.QueryEscape("graph:read "+echo), "invalid_scope"},
		{"an unknown scope of a JSON body", "application/json",
			`{"grant_type":"client_credentials","directory":"small","scope":"` + echo + `"}`, "invalid_scope"},
		{"an unknown JSON member given twice", "application/json",
			`{"grant_type":"client_credentials","` + echo + `":1,"` + echo + `":2}`, "invalid_request"},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", a.URL+edge.TokenPath, strings.NewReader(c.body))
			req.Header.Set("Content-Type", c.ctype)
			req.Header.Set("Authorization", basic)
			resp, err := (&http.Client{Transport: edgetest.NewChecker(t).Transport(t, http.DefaultTransport)}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var e primary.OAuthError
			if err := json.Unmarshal(body, &e); err != nil || resp.StatusCode != http.StatusBadRequest || e.Error != c.code {
				t.Fatalf("%d %s, want 400 %s", resp.StatusCode, body, c.code)
			}
			if strings.Contains(string(body), "canary") || strings.Contains(string(body), "yyyy") || strings.Contains(string(body), "alert(1)") {
				t.Errorf("the answer echoes the request: %s", body)
			}
			if e.Description == "" {
				t.Errorf("no error_description: %s", body)
			}
		})
	}
}

// TestTokenIssuerIsTheBaseURLWhateverTheHost asks for a token with a forged Host header: the token's
// iss is the configured base URL, never the Host, and nodes of that base URL accept it.
func TestTokenIssuerIsTheBaseURLWhateverTheHost(t *testing.T) {
	const base = "https://directory.example.org"
	a := newAuthServiceWith(t, nil, func(c *edge.Config) { c.BaseURL = base })
	id, secret := a.client(t, dirsvc.ScopeGraphRead)
	req, _ := http.NewRequest("POST", a.URL+edge.TokenPath, strings.NewReader("grant_type=client_credentials&directory=small"))
	req.Host = "attacker.example"
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var tr primary.TokenResponse
	if err := json.Unmarshal(body, &tr); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	parts := strings.Split(tr.AccessToken, ".")
	if len(parts) != 3 {
		t.Fatalf("access token %q is not a JWS", tr.AccessToken)
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims struct {
		Issuer string `json:"iss"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatal(err)
	}
	if got, want := claims.Issuer, base; got != want {
		t.Errorf("iss %q, want the base URL %q (the request's Host was attacker.example)", got, want)
	}
	read, _ := http.NewRequest("GET", a.URL+"/v1/d/small/services/svc_gp?view=brief", nil)
	read.Header.Set("Authorization", "Bearer "+tr.AccessToken)
	got, err := http.DefaultClient.Do(read)
	if err != nil {
		t.Fatal(err)
	}
	got.Body.Close()
	if got.StatusCode != http.StatusOK {
		t.Errorf("reading with the token at a node of the base URL: %d", got.StatusCode)
	}
}
