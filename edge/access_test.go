package edge_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/edge"
)

// keyRing is the token keys of the test servers: one Ed25519 key, known to every server.
type keyRing struct {
	kid  string
	priv ed25519.PrivateKey
	set  dirsvc.KeySet
}

func (k *keyRing) TokenKey(kid string) (ed25519.PublicKey, bool) { return k.set.TokenKey(kid) }
func (k *keyRing) PublicKeys() dirsvc.KeySet                     { return k.set }
func (k *keyRing) TokensValidFrom(string) int64                  { return 0 }

var testKeys = func() *keyRing {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	return &keyRing{kid: "test-key", priv: priv, set: dirsvc.KeySet{"test-key": pub}}
}()

// grant describes the token a test client holds.
type grant struct {
	dir       string
	tier      dirsvc.Audience
	scopes    string
	narrowing dirsvc.Narrowing
	limit     dirsvc.RateLimit
	client    string
	issued    time.Time // zero: now
	expires   time.Time // zero: ten minutes after issued
	issuer    string    // the server's base URL; zero: edge.DefaultBaseURL
}

// token signs an access token for the grant, as the primary's token endpoint would.
func token(tb testing.TB, g grant) string {
	tb.Helper()
	now := g.issued
	if now.IsZero() {
		now = time.Now()
	}
	if g.limit == (dirsvc.RateLimit{}) {
		g.limit = dirsvc.RateLimit{PerMinute: 1 << 30, PerDay: 1 << 30}
	}
	if g.client == "" {
		g.client = "dirp_test"
	}
	if g.expires.IsZero() {
		g.expires = now.Add(10 * time.Minute)
	}
	if g.issuer == "" {
		g.issuer = edge.DefaultBaseURL
	}
	t := &dirsvc.AccessToken{Issuer: g.issuer, Subject: g.client, Directory: g.dir, ClientID: g.client,
		IssuedAt: now.Unix(), Expires: g.expires.Unix(), ID: "jti", Scope: g.scopes, Tier: g.tier,
		Narrowing: g.narrowing, Limit: g.limit}
	raw, err := dirsvc.SignToken(t, testKeys.kid, testKeys.priv)
	if err != nil {
		tb.Fatal(err)
	}
	return raw
}

// getAs reads a path with a bearer token ("" for an anonymous read).
func (s *testServer) getAs(tb testing.TB, tok, path string) response {
	tb.Helper()
	if tok == "" {
		return s.get(tb, path)
	}
	return s.get(tb, path, "Authorization", "Bearer "+tok)
}

func TestTokensAreCheckedOnEveryRequest(t *testing.T) {
	s := newTestServer(t, smallFixture(t))
	const path = "/v1/d/small/services/svc_gp?view=brief"
	good := token(t, grant{dir: "small", tier: dirsvc.Partner, scopes: "graph:read"})
	if r := s.getAs(t, good, path); r.status != 200 || r.header.Get("X-DIR-Audience") != "partner" {
		t.Fatalf("a good partner token: %d, audience %q", r.status, r.header.Get("X-DIR-Audience"))
	}
	parts := strings.Split(good, ".")
	tampered := parts[0] + "." + parts[1][:len(parts[1])-2] + "x" + parts[1][len(parts[1])-1:] + "." + parts[2]
	_, otherKey, _ := ed25519.GenerateKey(rand.Reader)
	foreign, _ := dirsvc.SignToken(&dirsvc.AccessToken{Directory: "small", ClientID: "dirp_x", Expires: time.Now().Add(time.Hour).Unix(),
		Scope: "graph:read", Tier: dirsvc.Partner}, testKeys.kid, otherKey)
	for name, tok := range map[string]string{
		"expired":                   token(t, grant{dir: "small", tier: dirsvc.Partner, scopes: "graph:read", expires: time.Now().Add(-time.Second)}),
		"tampered":                  tampered,
		"signed with a foreign key": foreign,
		"not a JWT":                 "not-a-token",
	} {
		r := s.getAs(t, tok, path)
		if r.status != http.StatusUnauthorized || r.json(t)["code"] != "invalid-token" ||
			!strings.Contains(r.header.Get("WWW-Authenticate"), `error="invalid_token"`) {
			t.Errorf("%s token: %d %q %s", name, r.status, r.header.Get("WWW-Authenticate"), r.body)
		}
		if r.header.Get("RateLimit") == "" {
			t.Errorf("%s token: the refusal carries no RateLimit", name)
		}
	}
	if r := s.get(t, path, "Authorization", "Basic "+good); r.status != http.StatusUnauthorized {
		t.Errorf("a token under another scheme: %d", r.status)
	}
	for name, c := range map[string]struct {
		tok, path string
	}{
		"another directory's client":  {token(t, grant{dir: "demo", tier: dirsvc.Partner, scopes: "graph:read"}), path},
		"another directory's, absent": {token(t, grant{dir: "demo", tier: dirsvc.Partner, scopes: "graph:read"}), "/v1/d/nowhere/services/svc_gp"},
		"no graph:read":               {token(t, grant{dir: "small", tier: dirsvc.Partner, scopes: "search:read"}), path},
		"a list without graph:read":   {token(t, grant{dir: "small", tier: dirsvc.Partner, scopes: "search:read"}), "/v1/d/small/services"},
		"practitioners without scope": {token(t, grant{dir: "small", tier: dirsvc.Partner, scopes: "graph:read"}), "/v1/d/small/practitioners"},
		"practitioners anonymously":   {"", "/v1/d/small/practitioners"},
		"leadership without scope":    {token(t, grant{dir: "small", tier: dirsvc.Partner, scopes: "graph:read"}), "/v1/d/small/organisations/org_harbour/leadership"},
		"leadership anonymously":      {"", "/v1/d/small/organisations/org_harbour/leadership"},
		"leadership, public tier":     {token(t, grant{dir: "small", tier: dirsvc.Public, scopes: "leadership:read"}), "/v1/d/small/organisations/org_harbour/leadership"},
	} {
		r := s.getAs(t, c.tok, c.path)
		if r.status != http.StatusForbidden || r.json(t)["code"] != "forbidden-scope" {
			t.Errorf("%s: %d %s", name, r.status, r.body)
		}
		if c.tok != "" && r.header.Get("RateLimit") == "" {
			t.Errorf("%s: a client's refusal carries no RateLimit", name)
		}
	}
}

func TestCachingAndAudienceFollowTheCaller(t *testing.T) {
	s := newTestServer(t, smallFixture(t))
	const path = "/v1/d/small/locations/loc_ultimo"
	for name, c := range map[string]struct {
		tok                 string
		audience, cacheCtrl string
		tags                bool
	}{
		"anonymous":            {"", "public", "public, s-maxage=60", true},
		"professional":         {token(t, grant{dir: "small", tier: dirsvc.Professional, scopes: "graph:read"}), "professional", "private, no-store", false},
		"partner":              {token(t, grant{dir: "small", tier: dirsvc.Partner, scopes: "graph:read"}), "partner", "private, no-store", false},
		"narrowed public tier": {token(t, grant{dir: "small", tier: dirsvc.Public, scopes: "graph:read", narrowing: dirsvc.Narrowing{Kinds: []dirsvc.Kind{dirsvc.KindLocation, dirsvc.KindOrganisation}}}), "public", "private, no-store", false},
	} {
		for _, p := range []string{path, "/v1/d/small/services"} {
			r := s.getAs(t, c.tok, p)
			if r.status != 200 || r.header.Get("X-DIR-Audience") != c.audience || r.header.Get("Cache-Control") != c.cacheCtrl {
				t.Errorf("%s %s: %d audience %q Cache-Control %q", name, p, r.status, r.header.Get("X-DIR-Audience"), r.header.Get("Cache-Control"))
			}
			if got := r.header.Get("Cache-Tag") != ""; got != c.tags || r.header.Get("Surrogate-Key") != "" {
				t.Errorf("%s %s: cache tags %q, Surrogate-Key %q", name, p, r.header.Get("Cache-Tag"), r.header.Get("Surrogate-Key"))
			}
			if !strings.Contains(r.header.Get("Vary"), "Authorization") {
				t.Errorf("%s %s: Vary %q does not name Authorization", name, p, r.header.Get("Vary"))
			}
		}
		// Errors to a client are private too.
		if c.tok != "" {
			if r := s.getAs(t, c.tok, "/v1/d/small/services/svc_nothing"); r.header.Get("Cache-Control") != "no-store" && r.header.Get("Cache-Control") != "private, no-store" {
				t.Errorf("%s: a 404 has Cache-Control %q", name, r.header.Get("Cache-Control"))
			}
		}
	}
}

func TestClientLimitHoldsExactlyAtTheBoundary(t *testing.T) {
	c := newClock()
	s := limitedServer(t, c, edge.Limits{PerMinute: 1 << 20, PerDay: 1 << 20}, "")
	issued := c.Now() // the server's clock is a day ahead of the test's
	limited := token(t, grant{dir: "small", tier: dirsvc.Partner, scopes: "graph:read", client: "dirp_small", limit: dirsvc.RateLimit{PerMinute: 5, PerDay: 8}, issued: issued})
	other := token(t, grant{dir: "small", tier: dirsvc.Partner, scopes: "graph:read", client: "dirp_other", limit: dirsvc.RateLimit{PerMinute: 5, PerDay: 8}, issued: issued})
	const path = "/v1/d/small/services/svc_gp?view=brief"
	for i := 1; i <= 5; i++ {
		if r := s.getAs(t, limited, path); r.status != 200 {
			t.Fatalf("request %d of 5: %d", i, r.status)
		}
	}
	r := s.getAs(t, limited, path)
	if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") != "12" {
		t.Fatalf("request 6: %d Retry-After %q", r.status, r.header.Get("Retry-After"))
	}
	if got := r.header.Get("RateLimit-Policy"); got != `"minute";q=5;w=60, "day";q=8;w=86400` {
		t.Errorf("RateLimit-Policy %q", got)
	}
	if r := s.getAs(t, other, path); r.status != 200 {
		t.Errorf("another client is limited by the first one's use: %d", r.status)
	}
	if r := s.get(t, path); r.status != 200 {
		t.Errorf("an anonymous caller from the same address is limited by the client's use: %d", r.status)
	}
	// After a minute the minute bucket is full, but the day allows only 3 more (8 - 5); the next of
	// the day's tokens comes 86400/8 s after the first was taken, which is 10,740 s from then.
	c.Add(time.Minute)
	for i := 1; i <= 3; i++ {
		if r := s.getAs(t, limited, path); r.status != 200 {
			t.Fatalf("after a minute, request %d of 3: %d", i, r.status)
		}
	}
	if r := s.getAs(t, limited, path); r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") != "10740" {
		t.Fatalf("past the day's limit: %d Retry-After %q", r.status, r.header.Get("Retry-After"))
	}
}

func TestNarrowedClientsSeeOnlyTheirRecords(t *testing.T) {
	s := newTestServer(t, smallFixture(t))
	ctx := context.Background()
	dir, err := s.store.Reader(ctx, "small")
	if err != nil {
		t.Fatal(err)
	}
	// The partner view of every service, and of those at or serving postcode 2007.
	everyone := token(t, grant{dir: "small", tier: dirsvc.Partner, scopes: "graph:read"})
	narrowed := token(t, grant{dir: "small", tier: dirsvc.Partner, scopes: "graph:read",
		narrowing: dirsvc.Narrowing{Areas: []string{"postcode:2007"}}})
	all := listIDs(t, s, everyone, "/v1/d/small/services?limit=100")
	inside := listIDs(t, s, narrowed, "/v1/d/small/services?limit=100")
	if len(inside) == 0 || len(inside) >= len(all) {
		t.Fatalf("narrowing to postcode:2007 keeps %d of %d services: the fixture does not test it", len(inside), len(all))
	}
	missing := s.getAs(t, narrowed, "/v1/d/small/services/svc_nothing").wire()
	for _, id := range all {
		st, err := dir.Record(ctx, id, dirsvc.Viewer{Audience: dirsvc.Partner})
		if err != nil {
			t.Fatal(err)
		}
		r := s.getAs(t, narrowed, "/v1/d/small/services/"+id+"?view=brief")
		isIn := contains(inside, id)
		if in := strings.Contains(string(st.View.Body), `"postcode:2007"`); in != isIn {
			t.Errorf("%s: in the narrowed list %v, but names postcode:2007 %v", id, isIn, in)
		}
		if isIn && r.status != 200 || !isIn && r.wire() != missing {
			t.Errorf("%s (inside %v): %d\n%s", id, isIn, r.status, r.wire())
		}
	}
	// Narrowed to record types: only services can be read or listed.
	services := token(t, grant{dir: "small", tier: dirsvc.Partner, scopes: "graph:read",
		narrowing: dirsvc.Narrowing{Kinds: []dirsvc.Kind{dirsvc.KindService}}})
	if r := s.getAs(t, services, "/v1/d/small/locations/loc_ultimo"); r.wire() != s.getAs(t, services, "/v1/d/small/locations/loc_nothing").wire() {
		t.Errorf("a location read by a client narrowed to services:\n%s", r.wire())
	}
	if r := s.getAs(t, services, "/v1/d/small/services/svc_gp"); r.status != 200 || r.json(t)["organisation"] != nil {
		t.Errorf("a service page for a client narrowed to services carries its organisation: %d %s", r.status, r.body)
	}
	if got := listIDs(t, s, services, "/v1/d/small/services?limit=100"); len(got) != len(all) {
		t.Errorf("a client narrowed to services lists %d services, want %d", len(got), len(all))
	}
	locations := token(t, grant{dir: "small", tier: dirsvc.Partner, scopes: "graph:read",
		narrowing: dirsvc.Narrowing{Kinds: []dirsvc.Kind{dirsvc.KindLocation}}})
	if got := listIDs(t, s, locations, "/v1/d/small/services"); len(got) != 0 {
		t.Errorf("a client narrowed to locations lists services %v", got)
	}
}

func contains(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// listIDs pages through a list and returns the public IDs of its items, in order.
func listIDs(tb testing.TB, s *testServer, tok, path string) []string {
	tb.Helper()
	var ids []string
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	next := path
	for range 10000 {
		r := s.getAs(tb, tok, next)
		if r.status != 200 {
			tb.Fatalf("GET %s: %d %s", next, r.status, r.body)
		}
		m := r.json(tb)
		for _, it := range m["items"].([]any) {
			ids = append(ids, it.(map[string]any)["publicId"].(string))
		}
		c, ok := m["nextCursor"].(string)
		if !ok {
			return ids
		}
		next = path + sep + "cursor=" + c
	}
	tb.Fatalf("%s: the list never ended", path)
	return nil
}

func TestAVerifiedTokenStillExpires(t *testing.T) {
	c := newClock()
	s := limitedServer(t, c, edge.Limits{PerMinute: 1 << 20, PerDay: 1 << 20}, "")
	tok := token(t, grant{dir: "small", tier: dirsvc.Partner, scopes: "graph:read", issued: c.Now(), expires: c.Now().Add(time.Minute)})
	const path = "/v1/d/small/services/svc_gp?view=brief"
	for range 2 { // the second read finds the token verified already
		if r := s.getAs(t, tok, path); r.status != 200 {
			t.Fatalf("a fresh token: %d", r.status)
		}
	}
	c.Add(time.Minute)
	if r := s.getAs(t, tok, path); r.status != http.StatusUnauthorized {
		t.Fatalf("the same token once expired: %d", r.status)
	}
}
