package edge_test

import (
	"context"
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/edge"
	"github.com/dirsvc/dirsvc/primary"
	"github.com/dirsvc/dirsvc/primary/export"
	"github.com/dirsvc/dirsvc/primary/federation"
	"github.com/dirsvc/dirsvc/primary/webhook"
	"github.com/dirsvc/dirsvc/replicate"
)

const (
	corsAdminToken       = "an-admin-token-for-cors-tests"
	corsReplicationToken = "a-replication-token-for-cors-tests"
	corsOrigin           = "https://app.example"
)

// corsPrimary serves the small fixture with every route of the service mounted, as `dirsvc primary`
// mounts them: the read routes, the token endpoint, sandbox sign-up and access requests, the admin
// API, webhooks, exports, forwarded proposals, and the replication stream behind its token.
func corsPrimary(t *testing.T, limits edge.Limits) *testServer {
	t.Helper()
	s := newTestServerWith(t, func(c *edge.Config) {
		c.AnonymousLimits = limits
		c.SandboxDirectory = "small"
	}, smallFixture(t))
	ctx := context.Background()
	key := make([]byte, primary.ServerKeySize)
	rand.Read(key)
	access, err := primary.NewAccess(ctx, s.store, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	access.SandboxDirectory = "small"
	hooks, err := webhook.New(webhook.Config{Store: s.store, Clients: s.store, Feed: primary.WebhookFeed(s.edge, s.store.ChangeHead),
		Directories: s.store.Slugs, SealKey: primary.WebhookSealKey(key), Log: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	exports, err := export.New(export.Config{Data: s.store.Root(), Catalog: s.store, LinkKey: primary.ExportLinkKey(key),
		BaseURL: edge.DefaultBaseURL, Log: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	fed := federation.New(federation.Config{Directories: s.store, Store: s.store, Update: primary.RecordUpdater(s.store)})
	ps := &primary.Server{Edge: s.edge, Access: access, Webhooks: hooks, Exports: exports, Federation: fed, Log: discardLogger(),
		Admin:  &primary.AdminAPI{Store: s.store, Token: corsAdminToken, Moderation: fed},
		Portal: primary.NewPortal(access, s.edge, key, edge.DefaultSignupLimits, nil)}
	if err := ps.Mount(); err != nil {
		t.Fatal(err)
	}
	stream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("{}")) })
	unauthorized := func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", http.StatusUnauthorized) }
	s.edge.Handle(replicate.StreamPrefix, s.edge.RequireBearer("replication", corsReplicationToken, unauthorized, stream))
	s.client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return s
}

// corsEdge is an edge, over its own copy of the small fixture, in front of a primary.
func corsEdge(t *testing.T, p *testServer, limits edge.Limits) *testServer {
	t.Helper()
	s := newTestServer(t, smallFixture(t))
	u, _ := url.Parse(p.URL)
	srv := httptest.NewServer(edge.New(edge.Config{Catalog: s.store, Logger: discardLogger(), Keys: testKeys,
		AnonymousLimits: limits, Forwarding: &edge.Forwarding{Primary: u, EdgeToken: corsReplicationToken}}))
	t.Cleanup(srv.Close)
	s.Server = srv
	s.client = p.client
	return s
}

var corsUnlimited = edge.Limits{PerMinute: 1 << 30, PerDay: 1 << 30}

// corsExposedMust are the headers every client of the service reads, which a script must be let read.
var corsExposedMust = []string{"ETag", "Link", "Location", "Content-Location", "X-DIR-Audience", "X-DIR-Attribution",
	"RateLimit", "RateLimit-Policy", "Retry-After", "X-Progress", "Directory-Position", "Deprecation", "Sunset",
	"Replication-Pending", "WWW-Authenticate", "Content-Disposition", "Content-Range"}

// notForScripts are response headers a script has no use for, or may read without being let
// (CORS-safelisted), which therefore need not be exposed.
var notForScripts = []string{"Date", "Vary", "Cache-Tag", "Cache-Control", "Content-Language", "Content-Length",
	"Content-Type", "Expires", "Last-Modified", "Pragma", "Content-Encoding", "X-Content-Type-Options",
	"Content-Security-Policy", "Referrer-Policy", "X-Frame-Options", "Set-Cookie"}

// corsListed splits a comma-separated header into its items.
func corsListed(h http.Header, name string) []string {
	var out []string
	for _, v := range h.Values(name) {
		for _, n := range strings.Split(v, ",") {
			if n = strings.TrimSpace(n); n != "" {
				out = append(out, n)
			}
		}
	}
	return out
}

// corsNames reports whether a list of header names names a header (names are case-insensitive).
func corsNames(list []string, name string) bool {
	return slices.ContainsFunc(list, func(n string) bool { return strings.EqualFold(n, name) })
}

// checkGranted checks an answer a script on another origin may read: one Allow-Origin of "*", never
// credentials, no Vary by Origin, and every header it carries for clients exposed.
func checkGranted(t *testing.T, what string, r response) {
	t.Helper()
	if got := r.header.Values("Access-Control-Allow-Origin"); len(got) != 1 || got[0] != "*" {
		t.Errorf("%s: %d, Access-Control-Allow-Origin %q, want one \"*\"", what, r.status, got)
	}
	if n := len(r.header.Values("Access-Control-Expose-Headers")); n != 1 {
		t.Errorf("%s: %d Access-Control-Expose-Headers, want one", what, n)
	}
	checkNoCredentials(t, what, r)
	exposed := corsListed(r.header, "Access-Control-Expose-Headers")
	for _, name := range corsExposedMust {
		if !corsNames(exposed, name) {
			t.Errorf("%s: %s is not exposed (%v)", what, name, exposed)
		}
	}
	for name := range r.header {
		if !strings.HasPrefix(name, "Access-Control-") && !corsNames(notForScripts, name) && !corsNames(exposed, name) {
			t.Errorf("%s: the answer carries %s, which a script may not read", what, name)
		}
	}
}

func checkNoCredentials(t *testing.T, what string, r response) {
	t.Helper()
	if v := r.header.Get("Access-Control-Allow-Credentials"); v != "" {
		t.Errorf("%s: Access-Control-Allow-Credentials %q", what, v)
	}
	if corsNames(corsListed(r.header, "Vary"), "Origin") {
		t.Errorf("%s: Vary %q names Origin, though the answer is the same for every origin", what, r.header.Values("Vary"))
	}
}

// checkRefused checks an answer no script on another origin may read: no CORS header at all.
func checkRefused(t *testing.T, what string, r response) {
	t.Helper()
	for name := range r.header {
		if strings.HasPrefix(name, "Access-Control-") {
			t.Errorf("%s: %d carries %s: %q", what, r.status, name, r.header.Values(name))
		}
	}
}

// preflight asks, as a browser does before a request a script makes, whether method may be sent to
// path with an Authorization header.
func (s *testServer) preflight(t *testing.T, method, path string) response {
	t.Helper()
	return s.do(t, "OPTIONS", path, "Origin", corsOrigin, "Access-Control-Request-Method", method,
		"Access-Control-Request-Headers", "authorization,content-type")
}

// checkPreflight checks a preflight's grant: 204 and the methods the path's routes take.
func checkPreflight(t *testing.T, what string, r response, methods string) {
	t.Helper()
	if r.status != http.StatusNoContent || r.header.Get("Access-Control-Allow-Origin") != "*" ||
		len(r.header.Values("Access-Control-Allow-Origin")) != 1 {
		t.Fatalf("%s: %d, Access-Control-Allow-Origin %q, want 204 with one \"*\"\n%s", what, r.status,
			r.header.Values("Access-Control-Allow-Origin"), r.body)
	}
	if got := strings.Join(corsListed(r.header, "Access-Control-Allow-Methods"), ", "); got != methods {
		t.Errorf("%s: Access-Control-Allow-Methods %q, want %q", what, got, methods)
	}
	allowed := corsListed(r.header, "Access-Control-Allow-Headers")
	for _, h := range []string{"Authorization", "Content-Type", "If-None-Match", "Prefer", "Accept-Language", "Directory-Position"} {
		if !corsNames(allowed, h) {
			t.Errorf("%s: %s is not an allowed request header (%v)", what, h, allowed)
		}
	}
	if r.header.Get("Access-Control-Max-Age") == "" {
		t.Errorf("%s: no Access-Control-Max-Age", what)
	}
	checkNoCredentials(t, what, r)
}

// corsCase is a route a browser script calls: a request, the status it is answered with, and what a
// preflight for method answers (its methods; "" when the route grants none).
type corsCase struct {
	name, method, path string
	header             []string
	status             int
	or                 int    // another status the request may answer with (0: none)
	preflight          string // the method a script would send
	methods            string // the methods the preflight allows
}

func corsCases(t *testing.T) []corsCase {
	bearer := func(scopes string) []string {
		return []string{"Authorization", "Bearer " + token(t, grant{dir: "small", tier: dirsvc.Partner, scopes: scopes})}
	}
	return []corsCase{
		{name: "a record read", method: "GET", path: "/v1/d/small/services/svc_gp", status: 200, preflight: "GET", methods: "GET, HEAD"},
		{name: "a list", method: "GET", path: "/v1/d/small/services", status: 200, preflight: "GET", methods: "GET, HEAD"},
		{name: "a search", method: "GET", path: "/v1/d/small/search/services?q=harbour", status: 200, preflight: "GET", methods: "GET, HEAD"},
		{name: "a FHIR search with a token", method: "GET", path: "/v1/d/small/fhir/HealthcareService", header: bearer("graph:read search:read"),
			status: 200, preflight: "GET", methods: "GET, HEAD"},
		{name: "the FHIR capability statement", method: "GET", path: "/v1/d/small/fhir/metadata", status: 200, preflight: "GET", methods: "GET, HEAD"},
		{name: "the OpenAPI document", method: "GET", path: "/v1/openapi.json", status: 200, preflight: "GET", methods: "GET, HEAD"},
		{name: "the JWKS", method: "GET", path: "/oauth/jwks.json", status: 200, preflight: "GET", methods: "GET, HEAD"},
		{name: "developer information", method: "GET", path: "/v1/d/small/developers", status: 200, preflight: "GET", methods: "GET, HEAD"},
		{name: "the federation manifest", method: "GET", path: "/v1/d/small/federation/manifest", status: 200, preflight: "GET", methods: "GET, HEAD"},
		{name: "the sitemap", method: "GET", path: "/v1/d/small/sitemap.xml", status: 200, preflight: "GET", methods: "GET, HEAD"},
		{name: "the change feed", method: "GET", path: "/v1/d/small/changes", header: bearer("feed:read"), status: 200, preflight: "GET", methods: "GET, HEAD"},
		{name: "an image never added", method: "GET", path: "/v1/d/small/images/" + strings.Repeat("ab", 32) + ".png", status: 404, preflight: "GET", methods: "GET, HEAD"},
		{name: "a nearest locality", method: "POST", path: "/v1/d/small/localities/nearest", header: []string{"Content-Type", "application/json"},
			status: 400, preflight: "POST", methods: "POST"},
		{name: "the health check", method: "GET", path: "/healthz", status: 200, preflight: "GET", methods: "GET, HEAD"},
		{name: "a missing record", method: "GET", path: "/v1/d/small/services/svc_nothing", status: 404, preflight: "GET", methods: "GET, HEAD"},
		{name: "a refused token", method: "GET", path: "/v1/d/small/services", header: []string{"Authorization", "Bearer not-a-token"}, status: 401,
			preflight: "GET", methods: "GET, HEAD"},
		{name: "leadership without its scope", method: "GET", path: "/v1/d/small/organisations/org_harbour/leadership", header: bearer("graph:read"),
			status: 403, preflight: "GET", methods: "GET, HEAD"},
		{name: "webhooks with a token", method: "GET", path: "/v1/d/small/webhooks", header: bearer("webhooks:manage feed:read"), status: 200,
			preflight: "POST", methods: "GET, HEAD, POST"},
		{name: "webhooks without a token", method: "GET", path: "/v1/d/small/webhooks", status: 401, or: 403, preflight: "POST", methods: "GET, HEAD, POST"},
		{name: "a webhook endpoint", method: "GET", path: "/v1/d/small/webhooks/whk_nothing", header: bearer("webhooks:manage"), status: 404,
			preflight: "PATCH", methods: "GET, HEAD, PATCH, DELETE"},
		{name: "exports", method: "GET", path: "/v1/d/small/exports", header: bearer("export:run"), status: 200, preflight: "POST", methods: "GET, HEAD, POST"},
		{name: "an export file", method: "GET", path: "/v1/exports/exp_nothing/files/services.csv", status: 403, preflight: "GET", methods: "GET, HEAD"},
		{name: "a Bulk Data kick-off", method: "GET", path: "/v1/d/small/fhir/$export", header: append(bearer("export:run"), "Prefer", "respond-async"),
			status: 202, preflight: "POST", methods: "GET, HEAD, POST"},
		{name: "a Bulk Data poll", method: "GET", path: "/v1/d/small/fhir/$export-poll/exp_nothing", header: bearer("export:run"), status: 404,
			preflight: "DELETE", methods: "GET, HEAD, DELETE"},
		{name: "a forwarded proposal", method: "POST", path: "/v1/d/small/federation/forwarded/proposals", header: bearer("graph:propose"), status: 415,
			preflight: "POST", methods: "GET, HEAD, POST"}, // GET .../forwarded/{id} reads a receipt
	}
}

// refusedCases are the routes no script on another origin may call.
func refusedCases() []corsCase {
	return []corsCase{
		{name: "the token endpoint", method: "POST", path: "/oauth/token", header: []string{"Content-Type", "application/x-www-form-urlencoded"},
			status: 400, preflight: "POST"},
		{name: "an access request", method: "POST", path: "/v1/access-requests", status: 401, preflight: "POST"},
		{name: "the sandbox sign-up form", method: "GET", path: "/v1/d/small/portal/sandbox", status: 200, preflight: "POST"},
		{name: "the admin API", method: "GET", path: "/admin/v1/d/small/moderation", header: []string{"Authorization", "Bearer " + corsAdminToken},
			status: 200, preflight: "GET"},
		{name: "the admin API without its token", method: "GET", path: "/admin/v1/d/small/moderation", status: 401, preflight: "GET"},
		{name: "the admin API by a roundabout path", method: "GET", path: "/v1/d/small/../../../admin/v1/d/small/moderation", status: 307, preflight: "GET"},
		{name: "the replication stream", method: "GET", path: "/replication/v1/files", header: []string{"Authorization", "Bearer " + corsReplicationToken},
			status: 200, preflight: "GET"},
	}
}

// TestCORS checks what a browser app on another origin may call, on a primary and through an edge:
// every read and partner route answers with the grant, its errors and refusals too, and its
// preflight with the methods its routes take; the token endpoint, access requests, the sandbox form,
// the admin API and the replication stream answer without, their preflights too.
func TestCORS(t *testing.T) {
	p := corsPrimary(t, corsUnlimited)
	nodes := []struct {
		name string
		s    *testServer
	}{{"a primary", p}, {"an edge", corsEdge(t, p, corsUnlimited)}}
	for _, n := range nodes {
		t.Run("on "+n.name, func(t *testing.T) {
			for _, c := range corsCases(t) {
				t.Run(c.name+" grants any origin", func(t *testing.T) {
					r := n.s.do(t, c.method, c.path, append([]string{"Origin", corsOrigin}, c.header...)...)
					if r.status != c.status && (c.or == 0 || r.status != c.or) {
						t.Fatalf("%s %s: %d, want %d\n%s", c.method, c.path, r.status, c.status, r.body)
					}
					checkGranted(t, c.method+" "+c.path, r)
					checkPreflight(t, "preflight "+c.preflight+" "+c.path, n.s.preflight(t, c.preflight, c.path), c.methods)
				})
			}
			for _, c := range refusedCases() {
				if n.s != p && c.path == "/replication/v1/files" {
					c.status = http.StatusNotFound // an edge never forwards the primary's stream
				}
				t.Run(c.name+" grants none", func(t *testing.T) {
					r := n.s.do(t, c.method, c.path, append([]string{"Origin", corsOrigin}, c.header...)...)
					if r.status != c.status {
						t.Fatalf("%s %s: %d, want %d\n%s", c.method, c.path, r.status, c.status, r.body)
					}
					checkRefused(t, c.method+" "+c.path, r)
					pf := n.s.preflight(t, c.preflight, c.path)
					if pf.status/100 == 2 {
						t.Errorf("preflight %s %s: %d, want a refusal", c.preflight, c.path, pf.status)
					}
					checkRefused(t, "preflight "+c.preflight+" "+c.path, pf)
				})
			}
			t.Run("a preflight for a method the route does not take or a path no route serves grants none", func(t *testing.T) {
				for _, c := range []struct {
					method, path string
					status       int
				}{
					{"DELETE", "/v1/d/small/services/svc_gp", 405}, {"PUT", "/v1/d/small/webhooks", 405},
					{"GET", "/v1/d/small/nothing-here", 404}, {"GET", "/nothing-here", 404},
				} {
					r := n.s.preflight(t, c.method, c.path)
					if r.status != c.status {
						t.Errorf("preflight %s %s: %d, want %d", c.method, c.path, r.status, c.status)
					}
					for _, h := range []string{"Access-Control-Allow-Methods", "Access-Control-Allow-Headers", "Access-Control-Max-Age"} {
						if v := r.header.Get(h); v != "" {
							t.Errorf("preflight %s %s: %d with %s %q", c.method, c.path, r.status, h, v)
						}
					}
				}
			})
		})
	}
}

// TestCORSOnRateLimits checks that a script can read a 429 (and its Retry-After) on a primary and
// through an edge, and that preflights are never counted against a caller's limit.
func TestCORSOnRateLimits(t *testing.T) {
	one := edge.Limits{PerMinute: 1, PerDay: 1 << 20}
	p := corsPrimary(t, one)
	for _, n := range []struct {
		name string
		s    *testServer
	}{{"a primary", p}, {"an edge", corsEdge(t, corsPrimary(t, corsUnlimited), one)}} {
		t.Run("on "+n.name, func(t *testing.T) {
			for range 5 {
				checkPreflight(t, "preflight", n.s.preflight(t, "GET", "/v1/d/small/services"), "GET, HEAD")
				checkPreflight(t, "preflight", n.s.preflight(t, "POST", "/v1/d/small/webhooks"), "GET, HEAD, POST")
			}
			if r := n.s.do(t, "GET", "/v1/d/small/services", "Origin", corsOrigin); r.status != 200 {
				t.Fatalf("the first request after preflights: %d, want 200: preflights were counted\n%s", r.status, r.body)
			}
			for _, path := range []string{"/v1/d/small/services", "/v1/d/small/webhooks"} {
				r := n.s.do(t, "GET", path, "Origin", corsOrigin)
				if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") == "" {
					t.Fatalf("GET %s over the limit: %d, Retry-After %q", path, r.status, r.header.Get("Retry-After"))
				}
				checkGranted(t, "GET "+path+" over the limit", r)
			}
		})
	}
}
