package primary_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
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

// clientKey is a client's key pair as a SMART Backend Services client keeps it: the private key
// signs its assertions, the public half is registered with the service as a JWK.
type clientKey struct {
	kid, alg string
	priv     crypto.Signer
}

// RSA keys take long to make: the tests share two, made once.
var (
	rsaKeysOnce sync.Once
	rsaKeys     [2]*rsa.PrivateKey
)

func rsaKey(tb testing.TB, i int) *rsa.PrivateKey {
	tb.Helper()
	rsaKeysOnce.Do(func() {
		for j := range rsaKeys {
			k, err := rsa.GenerateKey(rand.Reader, 2048)
			if err != nil {
				panic(err)
			}
			rsaKeys[j] = k
		}
	})
	return rsaKeys[i]
}

// newClientKey returns a key for alg: an RSA key (the first or, with other, the second of the shared
// ones) or an EC key of the algorithm's curve.
func newClientKey(tb testing.TB, alg, kid string, other bool) *clientKey {
	tb.Helper()
	k := &clientKey{kid: kid, alg: alg}
	switch alg[:2] {
	case "RS", "PS":
		i := 0
		if other {
			i = 1
		}
		k.priv = rsaKey(tb, i)
	case "ES":
		curve := elliptic.P256()
		if alg == "ES384" {
			curve = elliptic.P384()
		}
		p, err := ecdsa.GenerateKey(curve, rand.Reader)
		if err != nil {
			tb.Fatal(err)
		}
		k.priv = p
	}
	return k
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// jwk returns the key's public half as a JWK.
func (k *clientKey) jwk() map[string]any {
	switch p := k.priv.Public().(type) {
	case *rsa.PublicKey:
		return map[string]any{"kty": "RSA", "kid": k.kid, "n": b64(p.N.Bytes()), "e": b64(big.NewInt(int64(p.E)).Bytes())}
	case *ecdsa.PublicKey:
		raw, _ := p.Bytes()
		size := (len(raw) - 1) / 2
		return map[string]any{"kty": "EC", "kid": k.kid, "crv": p.Curve.Params().Name, "x": b64(raw[1 : 1+size]), "y": b64(raw[1+size:])}
	}
	return nil
}

// jwks returns the key set of keys, as the service reads a registration.
func jwks(tb testing.TB, keys ...*clientKey) *dirsvc.JWKS {
	tb.Helper()
	var list []map[string]any
	for _, k := range keys {
		list = append(list, k.jwk())
	}
	raw, _ := json.Marshal(map[string]any{"keys": list})
	set, err := dirsvc.ParseJWKS(raw)
	if err != nil {
		tb.Fatalf("the key set is refused: %v", err)
	}
	return set
}

// sign makes a signed JWT of the claims, its header alg, kid and typ JWT changed by header (a nil
// value leaves the member out).
func (k *clientKey) sign(tb testing.TB, header, claims map[string]any) string {
	tb.Helper()
	h := map[string]any{"alg": k.alg, "kid": k.kid, "typ": "JWT"}
	for name, v := range header {
		if v == nil {
			delete(h, name)
		} else {
			h[name] = v
		}
	}
	hb, _ := json.Marshal(h)
	cb, _ := json.Marshal(claims)
	signed := b64(hb) + "." + b64(cb)
	return signed + "." + b64(signWith(tb, k.alg, k.priv, []byte(signed)))
}

func signWith(tb testing.TB, alg string, priv crypto.Signer, signed []byte) []byte {
	tb.Helper()
	hash, digest := crypto.SHA256, sha256.Sum256(signed)
	d := digest[:]
	if strings.HasSuffix(alg, "384") {
		d384 := sha512.Sum384(signed)
		hash, d = crypto.SHA384, d384[:]
	}
	var (
		sig []byte
		err error
	)
	switch p := priv.(type) {
	case *rsa.PrivateKey:
		if alg[:2] == "PS" {
			sig, err = rsa.SignPSS(rand.Reader, p, hash, d, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
		} else {
			sig, err = rsa.SignPKCS1v15(rand.Reader, p, hash, d)
		}
	case *ecdsa.PrivateKey:
		var r, s *big.Int
		r, s, err = ecdsa.Sign(rand.Reader, p, d)
		size := (p.Curve.Params().BitSize + 7) / 8
		sig = make([]byte, 2*size)
		if err == nil {
			r.FillBytes(sig[:size])
			s.FillBytes(sig[size:])
		}
	}
	if err != nil {
		tb.Fatal(err)
	}
	return sig
}

// claims returns the claims of a good assertion of client id for the token endpoint aud: expiring
// in four minutes, with a new jti.
func claims(id, aud string) map[string]any {
	now := time.Now().Unix()
	jti := make([]byte, 12)
	rand.Read(jti)
	return map[string]any{"iss": id, "sub": id, "aud": aud, "exp": now + 240, "iat": now, "jti": hex.EncodeToString(jti)}
}

// with returns a copy of m with the members of changes (a nil value removes the member).
func with(m map[string]any, changes map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	for k, v := range changes {
		if v == nil {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out
}

// keyClient creates a client of the small directory holding scopes, with keys and no secret.
func (a *authService) keyClient(tb testing.TB, keys *dirsvc.JWKS, scopes ...string) string {
	tb.Helper()
	c, secret, err := a.access.CreateClient(context.Background(), primary.NewClient{Name: "backend", Directory: "small",
		Grants: []dirsvc.Grant{{Directory: "small", Tier: dirsvc.Partner, Scopes: scopes, Limit: dirsvc.DefaultPartnerLimit}},
		Keys:   keys, NoSecret: true})
	if err != nil {
		tb.Fatal(err)
	}
	if secret != "" {
		tb.Fatal("a client made without a secret was given one")
	}
	return c.ID
}

// assertionParams are the token request's parameters of an assertion.
func assertionParams(assertion string) url.Values {
	return url.Values{"client_assertion_type": {dirsvc.ClientAssertionType}, "client_assertion": {assertion}, "directory": {"small"}}
}

// tokenAnswer is a token endpoint's answer as a test reads it.
type tokenAnswer struct {
	status int
	header http.Header
	body   []byte
	err    primary.OAuthError
}

// postToken sends a form of the client credentials grant to the token endpoint through a client
// that checks the answer against the OpenAPI document.
func postToken(tb testing.TB, endpoint string, form url.Values, header ...string) tokenAnswer {
	tb.Helper()
	form = withParam(form, "grant_type", "client_credentials")
	req, _ := http.NewRequest("POST", endpoint, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := (&http.Client{Transport: edgetest.NewChecker(tb).Transport(tb, http.DefaultTransport)}).Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	ans := tokenAnswer{status: resp.StatusCode, header: resp.Header, body: body}
	if resp.StatusCode != http.StatusOK {
		if err := json.Unmarshal(body, &ans.err); err != nil {
			tb.Errorf("the refusal is not an OAuth error body: %s", body)
		}
	}
	return ans
}

// readFHIR reads a FHIR search of the small directory with an access token.
func readFHIR(tb testing.TB, base, token, query string) *http.Response {
	tb.Helper()
	req, _ := http.NewRequest("GET", base+"/v1/d/small/fhir/"+query, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Transport: edgetest.NewChecker(tb).Transport(tb, http.DefaultTransport)}).Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// TestPrivateKeyJWTClientsGetTokensThatRead: a client that registered a public key and has no
// secret gets a token with an assertion signed by it, through a standard OAuth client, for each
// algorithm offered (RS384 and ES384 first, as SMART Backend Services require), and reads FHIR with
// it.
func TestPrivateKeyJWTClientsGetTokensThatRead(t *testing.T) {
	a := newAuthService(t, nil)
	for _, alg := range dirsvc.ClientAssertionAlgorithms {
		t.Run(alg, func(t *testing.T) {
			key := newClientKey(t, alg, "key-"+alg, false)
			id := a.keyClient(t, jwks(t, key), dirsvc.ScopeGraphRead, dirsvc.ScopeSearchRead)
			cfg := clientcredentials.Config{ClientID: id, TokenURL: a.URL + edge.TokenPath, AuthStyle: oauth2.AuthStyleInParams,
				EndpointParams: assertionParams(key.sign(t, nil, claims(id, a.access.TokenEndpoint()))), Scopes: []string{"system/*.rs"}}
			tok, err := cfg.Token(httpContext(t))
			if err != nil {
				t.Fatal(err)
			}
			if got, want := tok.Extra("scope"), "graph:read system/*.rs"; got != want {
				t.Errorf("scope %q, want %q", got, want)
			}
			if resp := readFHIR(t, a.URL, tok.AccessToken, "HealthcareService?_count=2"); resp.StatusCode != 200 || resp.Header.Get("X-DIR-Audience") != "partner" {
				t.Errorf("a FHIR search with the token: %d %q", resp.StatusCode, resp.Header.Get("X-DIR-Audience"))
			}
		})
	}
}

// TestBadClientAssertionsAreRefused: every assertion that is not a fresh one of the client's own,
// signed with one of its keys by an algorithm offered, for this token endpoint, within five minutes,
// is refused with 401 invalid_client and an OAuth error body that repeats nothing of it; and the
// client's good assertions work after all of them.
func TestBadClientAssertionsAreRefused(t *testing.T) {
	a := newAuthService(t, nil)
	rs := newClientKey(t, "RS384", "rs-1", false)
	es := newClientKey(t, "ES384", "es-1", false)
	ctx := context.Background()
	// The client has a secret and keys, so an HMAC signed with its secret can be tried.
	c, secret, err := a.access.CreateClient(ctx, primary.NewClient{Name: "both", Directory: "small",
		Grants: []dirsvc.Grant{{Directory: "small", Tier: dirsvc.Partner, Scopes: []string{dirsvc.ScopeGraphRead}, Limit: dirsvc.DefaultPartnerLimit}},
		Keys:   jwks(t, rs, es)})
	if err != nil || secret == "" {
		t.Fatalf("a client with keys and a secret: %v", err)
	}
	id, aud := c.ID, a.access.TokenEndpoint()
	secretOnly, _ := a.client(t, dirsvc.ScopeGraphRead)
	revoked := a.keyClient(t, jwks(t, rs), dirsvc.ScopeGraphRead)
	if err := a.access.Revoke(ctx, revoked); err != nil {
		t.Fatal(err)
	}
	now := time.Now().Unix()
	good := func() map[string]any { return claims(id, aud) }
	hmacSigned := func() string {
		hb, _ := json.Marshal(map[string]any{"alg": "HS256", "typ": "JWT"})
		cb, _ := json.Marshal(good())
		signed := b64(hb) + "." + b64(cb)
		m := hmac.New(sha256.New, []byte(secret))
		m.Write([]byte(signed))
		return signed + "." + b64(m.Sum(nil))
	}
	unsigned := func() string {
		hb, _ := json.Marshal(map[string]any{"alg": "none", "typ": "JWT"})
		cb, _ := json.Marshal(good())
		return b64(hb) + "." + b64(cb) + "."
	}
	parts := func(s string) []string { return strings.Split(s, ".") }
	rawHeader := func(header string) string {
		p := parts(rs.sign(t, nil, good()))
		signed := b64([]byte(header)) + "." + p[1]
		return signed + "." + b64(signWith(t, "RS384", rs.priv, []byte(signed)))
	}
	replayed := rs.sign(t, nil, good())
	if ans := postToken(t, a.URL+edge.TokenPath, assertionParams(replayed)); ans.status != 200 {
		t.Fatalf("the first use of an assertion: %d %s", ans.status, ans.body)
	}
	other := newClientKey(t, "RS384", "rs-1", true)
	stranger := newClientKey(t, "ES384", "canary-kid", false)
	// What some refusals say, so each is refused for its own fault; a fault found once the client was
	// looked up is a failed authentication and no more.
	reasons := map[string]string{
		"a replayed jti": "used before", "an expired assertion": "expired", "an exp more than 5 minutes ahead": "5 minutes ahead",
		"the FHIR base as aud": "aud", "the issuer as aud": "aud", "a token endpoint of another host as aud": "aud",
		"two audiences": "aud", "alg none": "alg", "HS256 signed with the client secret": "alg", "RS512": "alg",
		"a jku": "jku", "a future nbf": "nbf", "sub another than iss": "sub",
		"an unknown client": "client authentication failed", "a revoked client": "client authentication failed",
		"an unknown kid": "client authentication failed", "a different key under a registered kid": "client authentication failed",
		"a changed claim": "client authentication failed", "the assertion of a client without keys": "client authentication failed",
	}
	for _, c := range []struct {
		name      string
		assertion string
		params    url.Values // beside the assertion's
	}{
		{"a replayed jti", replayed, nil},
		{"an expired assertion", rs.sign(t, nil, with(good(), map[string]any{"exp": now - 120, "iat": now - 300})), nil},
		{"an exp more than 5 minutes ahead", rs.sign(t, nil, with(good(), map[string]any{"exp": now + 10*60})), nil},
		{"no exp", rs.sign(t, nil, with(good(), map[string]any{"exp": nil})), nil},
		{"an exp that is not a number", rs.sign(t, nil, with(good(), map[string]any{"exp": "soon"})), nil},
		{"a future nbf", rs.sign(t, nil, with(good(), map[string]any{"nbf": now + 200})), nil},
		{"a future iat", rs.sign(t, nil, with(good(), map[string]any{"iat": now + 200})), nil},
		{"no jti", rs.sign(t, nil, with(good(), map[string]any{"jti": nil})), nil},
		{"the FHIR base as aud", rs.sign(t, nil, with(good(), map[string]any{"aud": edge.DefaultBaseURL + "/v1/d/small/fhir"})), nil},
		{"the issuer as aud", rs.sign(t, nil, with(good(), map[string]any{"aud": edge.DefaultBaseURL})), nil},
		{"a token endpoint of another host as aud", rs.sign(t, nil, with(good(), map[string]any{"aud": a.URL + edge.TokenPath})), nil},
		{"two audiences", rs.sign(t, nil, with(good(), map[string]any{"aud": []string{aud, "https://other.example/token"}})), nil},
		{"no aud", rs.sign(t, nil, with(good(), map[string]any{"aud": nil})), nil},
		{"sub another than iss", rs.sign(t, nil, with(good(), map[string]any{"sub": secretOnly})), nil},
		{"another client's assertion signed with this client's key", rs.sign(t, nil, with(good(), map[string]any{"iss": secretOnly, "sub": secretOnly})), nil},
		{"an unknown client", rs.sign(t, nil, with(good(), map[string]any{"iss": "dirp_nobody", "sub": "dirp_nobody"})), nil},
		{"a revoked client", rs.sign(t, nil, claims(revoked, aud)), nil},
		{"an unknown kid", stranger.sign(t, nil, good()), nil},
		{"a different key under a registered kid", other.sign(t, nil, good()), nil},
		{"no kid, and a key that is not registered", other.sign(t, map[string]any{"kid": nil}, good()), nil},
		{"an EC kid with an RSA algorithm", rs.sign(t, map[string]any{"kid": "es-1"}, good()), nil},
		{"alg none", unsigned(), nil},
		{"HS256 signed with the client secret", hmacSigned(), nil},
		{"RS512", rawHeader(`{"alg":"RS512","kid":"rs-1"}`), nil},
		{"typ at+jwt", rs.sign(t, map[string]any{"typ": "at+jwt"}, good()), nil},
		{"a jku", rs.sign(t, map[string]any{"jku": "https://127.0.0.1/jwks"}, good()), nil},
		{"a crit header", rs.sign(t, map[string]any{"crit": []string{"exp"}}, good()), nil},
		{"a header with alg twice", rawHeader(`{"alg":"none","alg":"RS384","kid":"rs-1"}`), nil},
		{"a header that is not JSON", rawHeader(`{"alg":"RS384",`), nil},
		{"two parts", strings.Join(parts(rs.sign(t, nil, good()))[:2], "."), nil},
		{"four parts", rs.sign(t, nil, good()) + ".e30", nil},
		{"padded base64", rs.sign(t, nil, good()) + "=", nil},
		{"a signature that is not base64url", rs.sign(t, nil, good())[:40] + ".*.*", nil},
		{"a changed claim", func() string {
			p := parts(es.sign(t, nil, good()))
			cb, _ := json.Marshal(with(good(), map[string]any{"exp": now + 250}))
			return p[0] + "." + b64(cb) + "." + p[2]
		}(), nil},
		{"a client_id other than iss", rs.sign(t, nil, good()), url.Values{"client_id": {secretOnly}}},
		{"another assertion type", rs.sign(t, nil, good()), url.Values{"client_assertion_type": {"urn:ietf:params:oauth:client-assertion-type:saml2-bearer"}}},
		{"an assertion type without an assertion", "", nil},
		{"the assertion of a client without keys", rs.sign(t, nil, claims(secretOnly, aud)), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			form := assertionParams(c.assertion)
			if c.assertion == "" {
				form.Del("client_assertion")
			}
			for k, v := range c.params {
				form[k] = v
			}
			ans := postToken(t, a.URL+edge.TokenPath, form)
			if ans.status != http.StatusUnauthorized || ans.err.Error != "invalid_client" || ans.err.Description == "" {
				t.Fatalf("%d %s, want 401 invalid_client", ans.status, ans.body)
			}
			if ans.header.Get("WWW-Authenticate") == "" || ans.header.Get("Cache-Control") != "no-store" {
				t.Errorf("WWW-Authenticate %q, Cache-Control %q", ans.header.Get("WWW-Authenticate"), ans.header.Get("Cache-Control"))
			}
			if want := reasons[c.name]; !strings.Contains(ans.err.Description, want) {
				t.Errorf("error_description %q, want it to say %q", ans.err.Description, want)
			}
			if strings.Contains(string(ans.body), "canary") || strings.Contains(string(ans.body), "nobody") {
				t.Errorf("the answer repeats the assertion: %s", ans.body)
			}
		})
	}
	t.Run("a replay is told as such", func(t *testing.T) {
		if ans := postToken(t, a.URL+edge.TokenPath, assertionParams(replayed)); !strings.Contains(ans.err.Description, "used before") {
			t.Errorf("a replay: %d %s", ans.status, ans.body)
		}
	})
	// Two ways of authenticating at once are a bad request.
	for name, header := range map[string][]string{
		"an assertion and a secret in the body": nil,
		"an assertion and HTTP Basic":           {"Authorization", "Basic " + base64.StdEncoding.EncodeToString([]byte(id+":"+secret))},
	} {
		t.Run(name, func(t *testing.T) {
			form := assertionParams(rs.sign(t, nil, good()))
			if header == nil {
				form.Set("client_id", id)
				form.Set("client_secret", secret)
			}
			if ans := postToken(t, a.URL+edge.TokenPath, form, header...); ans.status != http.StatusBadRequest || ans.err.Error != "invalid_request" {
				t.Errorf("%d %s, want 400 invalid_request", ans.status, ans.body)
			}
		})
	}
	// The client's own good assertions still work, with each key, with or without client_id and kid.
	for name, form := range map[string]url.Values{
		"RS384":                  assertionParams(rs.sign(t, nil, good())),
		"ES384":                  assertionParams(es.sign(t, nil, good())),
		"ES384 without a kid":    assertionParams(es.sign(t, map[string]any{"kid": nil, "typ": nil}, good())),
		"RS384 with a client_id": withParam(assertionParams(rs.sign(t, nil, good())), "client_id", id),
		"aud as an array of one": assertionParams(rs.sign(t, nil, with(good(), map[string]any{"aud": []string{aud}}))),
	} {
		t.Run("good: "+name, func(t *testing.T) {
			if ans := postToken(t, a.URL+edge.TokenPath, form); ans.status != http.StatusOK {
				t.Errorf("%d %s", ans.status, ans.body)
			}
		})
	}
}

// withParam returns a copy of v with the parameter name set to value.
func withParam(v url.Values, name, value string) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = vs
	}
	out.Set(name, value)
	return out
}

// TestAssertionReplaysAreRefusedAfterARestart: the jti of an accepted assertion is kept in the
// platform file until the assertion has expired, so the primary refuses a replay after a restart;
// once it has expired, its record is dropped.
func TestAssertionReplaysAreRefusedAfterARestart(t *testing.T) {
	ctx := context.Background()
	store, key, access := smallPrimary(t, nil)
	root := store.Root()
	rs := newClientKey(t, "RS384", "rs-1", false)
	c, _, err := access.CreateClient(ctx, primary.NewClient{Name: "backend", Directory: "small", NoSecret: true, Keys: jwks(t, rs),
		Grants: []dirsvc.Grant{{Directory: "small", Tier: dirsvc.Partner, Scopes: []string{dirsvc.ScopeGraphRead}, Limit: dirsvc.DefaultPartnerLimit}}})
	if err != nil {
		t.Fatal(err)
	}
	serve := func(store *dirdb.Store, access *primary.Access) *httptest.Server {
		srv := edge.New(edge.Config{Catalog: store, Keys: store, AnonymousLimits: edge.Limits{PerMinute: 1 << 20, PerDay: 1 << 20}})
		if err := (&primary.Server{Edge: srv, Access: access}).Mount(); err != nil {
			t.Fatal(err)
		}
		return httptest.NewServer(srv)
	}
	assertion := rs.sign(t, nil, claims(c.ID, access.TokenEndpoint()))
	first := serve(store, access)
	if ans := postToken(t, first.URL+edge.TokenPath, assertionParams(assertion)); ans.status != 200 {
		t.Fatalf("first use: %d %s", ans.status, ans.body)
	}
	first.Close()
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}

	store, err = dirdb.Open(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	key2, err := primary.LoadServerKey(ctx, store, primary.ServerKeyConfig{Path: filepath.Join(root, "server.key")})
	if err != nil || string(key2) != string(key) {
		t.Fatalf("the server key after the restart: %v", err)
	}
	access, err = primary.NewAccess(ctx, store, key2, nil)
	if err != nil {
		t.Fatal(err)
	}
	second := serve(store, access)
	defer second.Close()
	if ans := postToken(t, second.URL+edge.TokenPath, assertionParams(assertion)); ans.status != 401 || ans.err.Error != "invalid_client" {
		t.Errorf("the replay after a restart: %d %s", ans.status, ans.body)
	}
	if ans := postToken(t, second.URL+edge.TokenPath, assertionParams(rs.sign(t, nil, claims(c.ID, access.TokenEndpoint())))); ans.status != 200 {
		t.Errorf("a new assertion after the restart: %d %s", ans.status, ans.body)
	}

	// The store keeps a jti until its expiry: refused before, dropped once a later use comes after it.
	exp := time.Now().Add(time.Minute).Unix()
	for i, c := range []struct {
		jti       string
		expires   int64
		now       int64
		wantFresh bool
	}{
		{"j1", exp, exp - 60, true},
		{"j1", exp, exp - 1, false},
		{"j2", exp + 600, exp + 1, true}, // drops j1, expired
		{"j1", exp + 600, exp + 2, true},
	} {
		fresh, err := store.UseAssertionID(ctx, "dirc_x", c.jti, c.expires, c.now)
		if err != nil || fresh != c.wantFresh {
			t.Errorf("use %d of %s: fresh %v, %v; want %v", i, c.jti, fresh, err, c.wantFresh)
		}
	}
}

// TestSystemScopesAreAliasesThatNeverWiden: SMART system scopes are taken as aliases of the
// directory scopes the grant holds; the token carries the directory scopes, the answer names the
// SMART ones too; an alias whose scope the grant lacks is refused, never narrowed, and never gives
// more than the grant.
func TestSystemScopesAreAliasesThatNeverWiden(t *testing.T) {
	a := newAuthService(t, nil)
	reader, readerSecret := a.client(t, dirsvc.ScopeGraphRead, dirsvc.ScopeSearchRead)
	searcher, searcherSecret := a.client(t, dirsvc.ScopeSearchRead)
	full, fullSecret := a.client(t, dirsvc.ScopeGraphRead, dirsvc.ScopeFeedRead, dirsvc.ScopeExportRun, dirsvc.ScopePractitionersRead, dirsvc.ScopeLeadershipRead)
	type client struct{ id, secret string }
	r, s, f := client{reader, readerSecret}, client{searcher, searcherSecret}, client{full, fullSecret}
	ok := []struct {
		c         client
		scope     string
		wantScope string // of the answer
		wantClaim string // of the access token
	}{
		{r, "system/*.rs", "graph:read system/*.rs", "graph:read"},
		{r, "system/*.read", "graph:read system/*.read", "graph:read"},
		{r, "system/HealthcareService.rs", "graph:read system/HealthcareService.rs", "graph:read"},
		{r, "system/Practitioner.r", "graph:read system/Practitioner.r", "graph:read"},
		{r, "search:read system/Organization.read system/Organization.read", "search:read graph:read system/Organization.read", "search:read graph:read"},
		{f, "system/*.rs", "graph:read export:run practitioners:read system/*.rs", "graph:read export:run practitioners:read"},
		{f, "system/*.r", "graph:read system/*.r", "graph:read"},
		{f, "system/Practitioner.rs", "graph:read practitioners:read system/Practitioner.rs", "graph:read practitioners:read"},
		{f, "system/*.rs leadership:read", "graph:read export:run practitioners:read leadership:read system/*.rs", "graph:read export:run practitioners:read leadership:read"},
		{f, "system/PractitionerRole.s system/Endpoint.rs system/Location.read", "graph:read system/PractitionerRole.s system/Endpoint.rs system/Location.read", "graph:read"},
	}
	for _, c := range ok {
		t.Run(c.scope, func(t *testing.T) {
			tok, err := a.config(c.c.id, c.c.secret, "small", oauth2.AuthStyleInHeader, strings.Fields(c.scope)...).Token(httpContext(t))
			if err != nil {
				t.Fatal(err)
			}
			if got := tok.Extra("scope"); got != c.wantScope {
				t.Errorf("scope %q, want %q", got, c.wantScope)
			}
			payload, _ := base64.RawURLEncoding.DecodeString(strings.Split(tok.AccessToken, ".")[1])
			var claim struct{ Scope string }
			if json.Unmarshal(payload, &claim); claim.Scope != c.wantClaim {
				t.Errorf("the token's scope claim %q, want %q", claim.Scope, c.wantClaim)
			}
		})
	}
	t.Run("a token of system/*.rs reads what graph:read reads, and searches no practitioners without practitioners:read", func(t *testing.T) {
		tok, err := a.config(reader, readerSecret, "small", oauth2.AuthStyleInHeader, "system/*.rs").Token(httpContext(t))
		if err != nil {
			t.Fatal(err)
		}
		if resp := readFHIR(t, a.URL, tok.AccessToken, "HealthcareService?_count=1"); resp.StatusCode != 200 {
			t.Errorf("HealthcareService search: %d", resp.StatusCode)
		}
		if resp := readFHIR(t, a.URL, tok.AccessToken, "Practitioner?_count=1"); resp.StatusCode != 403 {
			t.Errorf("Practitioner search without practitioners:read: %d, want 403", resp.StatusCode)
		}
	})
	refused := []struct {
		c       client
		scope   string
		mention string // the description names it
	}{
		{r, "system/Practitioner.rs", "practitioners:read"},
		{r, "system/Practitioner.s", "practitioners:read"},
		{s, "system/*.rs", "graph:read"},
		{s, "system/HealthcareService.r", "graph:read"},
		{f, "system/*.cruds", ""},
		{f, "system/*.write", ""},
		{f, "system/*.*", ""},
		{f, "system/*.sr", ""},
		{f, "system/*", ""},
		{f, "system/HealthcareService.rs?category=canary", ""},
		{f, "system/Patient.rs", ""},
		{f, "patient/*.rs", ""},
		{f, "user/HealthcareService.rs", ""},
		{f, "canary/*.rs", ""},
	}
	for _, c := range refused {
		t.Run("refused: "+c.scope, func(t *testing.T) {
			_, err := a.config(c.c.id, c.c.secret, "small", oauth2.AuthStyleInHeader, c.scope).Token(httpContext(t))
			re := retrieveError(t, err)
			if re.Response.StatusCode != 400 || re.ErrorCode != "invalid_scope" || !strings.Contains(re.ErrorDescription, c.mention) {
				t.Errorf("%d %s", re.Response.StatusCode, re.Body)
			}
			if strings.Contains(string(re.Body), "canary") || strings.Contains(string(re.Body), "Patient") {
				t.Errorf("the answer repeats the scope asked for: %s", re.Body)
			}
		})
	}
}

// TestAccessRequestKeysWaitForApproval: a partner asks for access with the public keys it will sign
// with (jwks); the keys wait with the request, so until the operators approve it they authenticate
// nothing (a stolen secret cannot plant a key unseen); a key set that is not one is refused naming
// jwks.
func TestAccessRequestKeysWaitForApproval(t *testing.T) {
	p := newPortalService(t, "small", edge.DefaultSignupLimits)
	ctx := context.Background()
	partner, secret, err := p.access.CreateClient(ctx, primary.NewClient{Name: "Partner"})
	if err != nil {
		t.Fatal(err)
	}
	key := newClientKey(t, "ES384", "partner-1", false)
	set, _ := json.Marshal(map[string]any{"keys": []any{key.jwk()}})
	b := p.browser(t, "192.0.2.10")
	ask := func(body string) reply {
		return b.do(t, "POST", p.URL+edge.AccessRequestsPath, "application/json", body,
			"Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(partner.ID)+":"+url.QueryEscape(secret))))
	}
	private := key.jwk()
	private["d"] = b64(key.priv.(*ecdsa.PrivateKey).D.Bytes())
	privateSet, _ := json.Marshal(map[string]any{"keys": []any{private}})
	if r := ask(`{"directory":"small","scopes":["graph:read"],"jwks":` + string(privateSet) + `}`); r.status != 400 || !strings.Contains(r.body, `"jwks"`) ||
		strings.Contains(r.body, private["d"].(string)) {
		t.Errorf("a key set with a private key: %d %s", r.status, r.body)
	}
	r := ask(`{"directory":"small","scopes":["graph:read"],"jwks":` + string(set) + `}`)
	var got dirsvc.AccessRequest
	if r.status != http.StatusCreated || json.Unmarshal([]byte(r.body), &got) != nil || got.Keys == nil || got.Keys.Keys[0].Kid != "partner-1" {
		t.Fatalf("access request with keys: %d %s", r.status, r.body)
	}
	stored, err := p.store.AccessRequest(ctx, got.ID)
	if err != nil || stored.Keys == nil || stored.Keys.Keys[0].X != key.jwk()["x"] {
		t.Fatalf("the stored request: %+v, %v", stored, err)
	}
	c, _, err := p.store.Client(ctx, partner.ID)
	if err != nil || c.Keys != nil {
		t.Fatalf("the client has keys before the request is approved: %+v, %v", c, err)
	}
	// Approved (as dirsvc clients approve does: the grant, then the request's keys), the keys sign.
	if err := p.access.Grant(ctx, partner.ID, dirsvc.Grant{Directory: "small", Tier: dirsvc.Partner,
		Scopes: []string{dirsvc.ScopeGraphRead}, Limit: dirsvc.DefaultPartnerLimit}); err != nil {
		t.Fatal(err)
	}
	if ans := postToken(t, p.URL+edge.TokenPath, assertionParams(key.sign(t, nil, claims(partner.ID, p.access.TokenEndpoint())))); ans.status != 401 {
		t.Errorf("an assertion before the keys are installed: %d %s", ans.status, ans.body)
	}
	if err := p.access.SetKeys(ctx, partner.ID, stored.Keys); err != nil {
		t.Fatal(err)
	}
	if ans := postToken(t, p.URL+edge.TokenPath, assertionParams(key.sign(t, nil, claims(partner.ID, p.access.TokenEndpoint())))); ans.status != 200 {
		t.Errorf("an assertion once the keys are installed: %d %s", ans.status, ans.body)
	}
	// A client of keys alone keeps them: removing them would leave it no way to authenticate.
	backend, _, err := p.access.CreateClient(ctx, primary.NewClient{Name: "Backend", NoSecret: true, Keys: stored.Keys})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.access.SetKeys(ctx, backend.ID, nil); dirsvc.ErrorCode(err) != dirsvc.EInvalid {
		t.Errorf("removing the keys of a client without a secret: %v", err)
	}
	if _, _, err := p.access.CreateClient(ctx, primary.NewClient{Name: "Nothing", NoSecret: true}); dirsvc.ErrorCode(err) != dirsvc.EInvalid {
		t.Errorf("a client with neither a secret nor keys: %v", err)
	}
}
