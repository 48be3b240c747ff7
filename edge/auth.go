package edge

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dirsvc/dirsvc"
)

// Keys are the public token keys a node verifies access tokens with.
type Keys interface {
	dirsvc.TokenKeys
	// PublicKeys returns every key tokens may be signed with, for the JWKS.
	PublicKeys() dirsvc.KeySet
}

type tokenKey struct{}

// tokenFrom returns the verified access token of the request, or nil for an anonymous caller.
// AccessTokenOf returns the verified access token of a request the server guards (a route under
// /v1/d/), or nil for an anonymous caller: the primary's own routes read their caller with it.
func AccessTokenOf(r *http.Request) *dirsvc.AccessToken { return tokenFrom(r.Context()) }

func tokenFrom(ctx context.Context) *dirsvc.AccessToken {
	t, _ := ctx.Value(tokenKey{}).(*dirsvc.AccessToken)
	return t
}

// clientLimitKey is what a partner client is limited by: its limit in one directory.
type clientLimitKey struct{ client, directory string }

// pathDirectory returns the directory slug of a /v1/d/{dir}/... path, or "".
func pathDirectory(path string) string {
	rest, ok := strings.CutPrefix(path, "/v1/d/")
	if !ok {
		return ""
	}
	dir, _, _ := strings.Cut(rest, "/")
	return dir
}

// guarded reports whether a path is limited and authenticated: the directory API and the token
// endpoint (where the client address is the only key before a client has authenticated).
func guarded(path string) bool { return strings.HasPrefix(path, "/v1/d/") || path == TokenPath }

// TokenPath is the address of the token endpoint (served on the primary).
const TokenPath = "/oauth/token"

// guard verifies the caller's access token, refuses a client of another directory, and applies the
// caller's rate limit: the grant's per client and directory, else the anonymous one per address.
// Responses vary by Authorization, so a shared cache never answers a client with an anonymous copy.
// On an edge it also limits every request it forwards to the primary, whatever the path: outside
// the directory API and the token endpoint (the admin API, say) a bearer token is not an access
// token, and the caller counts as anonymous, per address.
func (s *Server) guard(next http.Handler) http.Handler {
	anonPolicy := []string{policyOf(s.cfg.AnonymousLimits)}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		api := guarded(r.URL.Path)
		if !api && !s.forwards(r) {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h[keyVary] = varyAPI
		now := s.cfg.Now()
		var (
			tok     *verified
			tokErr  error
			d       decision
			present = api && r.Header.Get("Authorization") != "" && r.URL.Path != TokenPath
		)
		if present {
			tok, tokErr = s.verify(r)
		}
		if tok != nil {
			d = s.clients.takeN(clientLimitKey{tok.ClientID, tok.Directory}, tok.Limit, now, s.costOf(r))
			h[keyRateLimitPolicy] = tok.policy
			h[keyCacheControl] = privateNoStore
		} else {
			d = s.anonymous.takeN(s.clientKey(r), s.cfg.AnonymousLimits, now, s.costOf(r))
			h[keyRateLimitPolicy] = anonPolicy
		}
		if !d.ok {
			if tok != nil {
				s.limitedBy(LimitClient)
			} else {
				s.limitedBy(LimitAnonymous)
			}
			secs := int(math.Ceil(d.retryAfter.Seconds()))
			h.Set("Retry-After", strconv.Itoa(secs))
			h[keyRateLimit] = []string{`"minute";r=0;t=` + strconv.Itoa(secs)}
			h.Set("Cache-Control", "no-store")
			s.error(w, r, dirsvc.Errorf(dirsvc.ERateLimited, "Too many requests: try again in %d seconds.", secs))
			return
		}
		// Every answer from here, refusals included, gets RateLimit as it writes its header.
		sw := &shareableWriter{ResponseWriter: w, limit: d}
		if present && tok == nil {
			h.Set("WWW-Authenticate", `Bearer realm="dirsvc", error="invalid_token"`)
			h.Set("Cache-Control", "no-store")
			s.error(sw, r, dirsvc.Errorf(dirsvc.EInvalidToken, "The access token is not valid: get a new one.").With(tokErr))
			return
		}
		if tok != nil {
			if dir := pathDirectory(r.URL.Path); dir != "" && dir != tok.Directory {
				s.error(sw, r, dirsvc.Errorf(dirsvc.EForbiddenScope, "The access token is for another directory."))
				return
			}
			r = r.WithContext(context.WithValue(r.Context(), tokenKey{}, tok.AccessToken))
		}
		next.ServeHTTP(sw, r)
	})
}

// rateLimit is the RateLimit header's value of a decision.
func (d decision) rateLimit() string {
	return `"` + d.policy + `";r=` + strconv.Itoa(d.remaining) + ";t=" + strconv.Itoa(int(math.Ceil(d.reset.Seconds())))
}

// shareableWriter gives an answer the RateLimit header when it writes its header, unless shared
// caches may keep the answer (Cache-Control public: anonymous reads): such a copy is served to every
// client behind the cache, and RateLimit tells one client where it stands. RateLimit-Policy is on
// every answer: for anonymous callers it is the same for every client. Answers to clients are
// private and carry both; so do refusals (429, never stored), which also carry Retry-After.
type shareableWriter struct {
	http.ResponseWriter
	limit decision
	wrote bool
}

func (w *shareableWriter) WriteHeader(status int) {
	if !w.wrote {
		w.wrote = true
		if h := w.ResponseWriter.Header(); !shareable(h) {
			h[keyRateLimit] = []string{w.limit.rateLimit()}
		}
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *shareableWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// FlushError writes the header first, as Write does, for http.ResponseController.
func (w *shareableWriter) FlushError() error {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *shareableWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// shareable reports whether an answer's Cache-Control lets shared caches keep it.
func shareable(h http.Header) bool {
	for _, v := range h[keyCacheControl] {
		for v != "" {
			var d string
			d, v, _ = strings.Cut(v, ",")
			if d = strings.TrimSpace(d); strings.EqualFold(d, "public") || len(d) >= 8 && strings.EqualFold(d[:8], "s-maxage") {
				return true
			}
		}
	}
	return false
}

func policyOf(l Limits) string {
	return fmt.Sprintf(`"minute";q=%d;w=60, "day";q=%d;w=86400`, l.PerMinute, l.PerDay)
}

// verified is an access token whose signature has been checked, with its RateLimit-Policy value.
type verified struct {
	*dirsvc.AccessToken
	policy []string
}

// tokenCache keeps tokens already verified, by their exact text, until they expire: a client sends
// the same token for many requests, and checking an Ed25519 signature costs several times what the
// rest of a read does. Only a token that passed the whole check is kept, and its expiry is checked
// on every use.
type tokenCache struct {
	mu sync.RWMutex
	m  map[string]*verified
}

// maxCachedTokens bounds the cache; when full it starts again empty.
const maxCachedTokens = 10_000

func (c *tokenCache) get(raw string, now time.Time) *verified {
	c.mu.RLock()
	v := c.m[raw]
	c.mu.RUnlock()
	if v == nil || v.Expires <= now.Unix() {
		return nil
	}
	return v
}

func (c *tokenCache) put(raw string, v *verified) {
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxCachedTokens {
		c.m = make(map[string]*verified)
	}
	c.m[raw] = v
	c.mu.Unlock()
}

// verify checks the request's bearer token.
func (s *Server) verify(r *http.Request) (*verified, error) {
	scheme, raw, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return nil, fmt.Errorf("authorization scheme %q: %w", scheme, dirsvc.ErrInvalidToken)
	}
	if s.cfg.Keys == nil {
		return nil, fmt.Errorf("no token keys configured: %w", dirsvc.ErrInvalidToken)
	}
	raw = strings.TrimSpace(raw)
	now := s.cfg.Now()
	if v := s.tokens.get(raw, now); v != nil {
		if !dirsvc.Honoured(v.AccessToken, s.cfg.Keys) {
			return nil, fmt.Errorf("signing key retired or client's tokens cut off: %w", dirsvc.ErrInvalidToken)
		}
		return v, nil
	}
	t, err := dirsvc.VerifyToken(raw, s.cfg.Keys, s.cfg.BaseURL, now)
	if err != nil {
		return nil, err
	}
	v := &verified{AccessToken: t, policy: []string{policyOf(t.Limit)}}
	s.tokens.put(raw, v)
	return v, nil
}

// viewer returns who the caller is as a reader of the request's directory, after checking that a
// client holds scope (which may be empty for operations every client may call). Anonymous callers
// read as the public tier; the guard has already refused a client of another directory.
func (s *Server) viewer(r *http.Request, scope string) (dirsvc.Viewer, error) {
	t := tokenFrom(r.Context())
	if t == nil {
		return dirsvc.Viewer{Audience: dirsvc.Public}, nil
	}
	if scope != "" && !t.HasScope(scope) {
		return dirsvc.Viewer{}, dirsvc.Errorf(dirsvc.EForbiddenScope, "This needs the scope %s.", scope)
	}
	return t.Viewer(), nil
}

// audience returns the tier the caller is served as: its token's, or public without one.
func audience(r *http.Request) dirsvc.Audience {
	if t := tokenFrom(r.Context()); t != nil {
		return t.Tier
	}
	return dirsvc.Public
}

// JWKSPath is where the public token keys are published.
const JWKSPath = "/oauth/jwks.json"

// jwk is an Ed25519 public key as a JSON Web Key (RFC 8037).
type jwk struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Kid string `json:"kid"`
	Alg string `json:"alg"`
	Use string `json:"use"`
}

func (s *Server) handleGetJWKS(w http.ResponseWriter, r *http.Request) {
	keys := []jwk{}
	if s.cfg.Keys != nil {
		set := s.cfg.Keys.PublicKeys()
		ids := make([]string, 0, len(set))
		for id := range set {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids {
			keys = append(keys, jwk{Kty: "OKP", Crv: "Ed25519", X: base64.RawURLEncoding.EncodeToString(set[id]),
				Kid: id, Alg: "EdDSA", Use: "sig"})
		}
	}
	body, err := json.Marshal(map[string][]jwk{"keys": keys})
	if err != nil {
		s.error(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/jwk-set+json")
	h.Set("Cache-Control", "public, max-age=300")
	w.Write(body)
}
