package edge_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/edge"
)

// clock is a settable time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }
func newClock() *clock               { return &clock{t: time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)} }
func limitedServer(t *testing.T, c *clock, limits edge.Limits, header string) *testServer {
	t.Helper()
	s := newTestServer(t, smallFixture(t))
	srv := httptest.NewServer(edge.New(edge.Config{Catalog: s.store, Logger: discardLogger(), Now: c.Now,
		AnonymousLimits: limits, ClientIPHeader: header, Keys: testKeys}))
	t.Cleanup(srv.Close)
	s.Server = srv
	return s
}

func TestAnonymousLimitHoldsExactlyAtTheBoundary(t *testing.T) {
	c := newClock()
	s := limitedServer(t, c, edge.Limits{}, "") // the defaults: 60 a minute, 10,000 a day
	for i := 1; i <= 60; i++ {
		if r := s.get(t, "/v1/d/small/services/svc_gp?view=brief"); r.status != http.StatusOK {
			t.Fatalf("request %d of 60: %d", i, r.status)
		}
	}
	r := s.get(t, "/v1/d/small/services/svc_gp?view=brief")
	if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") != "1" || r.json(t)["code"] != "rate-limited" {
		t.Fatalf("request 61: %d Retry-After %q %s", r.status, r.header.Get("Retry-After"), r.body)
	}
	if got := r.header.Get("RateLimit-Policy"); got != `"minute";q=60;w=60, "day";q=10000;w=86400` {
		t.Errorf("RateLimit-Policy %q", got)
	}
	c.Add(time.Second) // one token back
	if r := s.get(t, "/v1/d/small/services/svc_gp?view=brief"); r.status != http.StatusOK {
		t.Fatalf("after a second: %d", r.status)
	}
	if r := s.get(t, "/v1/d/small/services/svc_gp"); r.status != http.StatusTooManyRequests {
		t.Fatalf("the token came back once only: %d", r.status)
	}
	// What is not the directory API is not limited.
	for _, p := range []string{"/v1/openapi.json", "/healthz"} {
		if r := s.get(t, p); r.status != http.StatusOK {
			t.Errorf("%s while limited: %d", p, r.status)
		}
	}
}

func TestAnonymousDayLimitAndClientAddresses(t *testing.T) {
	c := newClock()
	s := limitedServer(t, c, edge.Limits{PerMinute: 5, PerDay: 8}, "X-Forwarded-For")
	from := func(addr string) response {
		return s.get(t, "/v1/d/small/developers", "X-Forwarded-For", "198.51.100.7, "+addr)
	}
	for i := 1; i <= 5; i++ {
		if r := from("203.0.113.1"); r.status != http.StatusOK {
			t.Fatalf("request %d: %d", i, r.status)
		}
	}
	if r := from("203.0.113.1"); r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") != "12" {
		t.Fatalf("6th in a minute: %d Retry-After %q", r.status, r.header.Get("Retry-After"))
	}
	if r := from("203.0.113.2"); r.status != http.StatusOK {
		t.Fatalf("another address is limited too: %d", r.status)
	}
	c.Add(time.Minute)
	for i := 1; i <= 3; i++ {
		if r := from("203.0.113.1"); r.status != http.StatusOK {
			t.Fatalf("request %d of the day's last 3: %d", i, r.status)
		}
	}
	r := from("203.0.113.1")
	if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") != "10740" {
		t.Fatalf("9th in a day: %d Retry-After %q (the day bucket refills one in 3 hours, less the minute gone)", r.status, r.header.Get("Retry-After"))
	}

	// IPv6 addresses count by their /64.
	for i := 1; i <= 5; i++ {
		if r := from(fmt.Sprintf("2001:db8:0:1::%x", i)); r.status != http.StatusOK {
			t.Fatalf("IPv6 request %d: %d", i, r.status)
		}
	}
	if r := from("2001:db8:0:1::ffff"); r.status != http.StatusTooManyRequests {
		t.Errorf("another address of the same /64: %d, want 429", r.status)
	}
	if r := from("2001:db8:0:2::1"); r.status != http.StatusOK {
		t.Errorf("another /64: %d", r.status)
	}
}

func TestClientAddressHeaderIsIgnoredUnlessTrusted(t *testing.T) {
	c := newClock()
	s := limitedServer(t, c, edge.Limits{PerMinute: 2, PerDay: 100}, "")
	for i, addr := range []string{"203.0.113.1", "203.0.113.2", "203.0.113.3"} {
		r := s.get(t, "/v1/d/small/developers", "X-Forwarded-For", addr)
		if want := i < 2; (r.status == http.StatusOK) != want {
			t.Fatalf("request %d claiming %s: %d; a client must not choose its own address", i+1, addr, r.status)
		}
	}
}

// TestSharedAnswersCarryNoPerClientHeader checks that an answer a shared cache may keep and serve to
// everyone behind it says nothing of the one client that caused it: no RateLimit (its remaining
// requests), while the anonymous RateLimit-Policy, the same for every client, stays. Answers to a
// client are private and say where it stands; so does a refusal, with Retry-After.
func TestSharedAnswersCarryNoPerClientHeader(t *testing.T) {
	c := newClock()
	s := limitedServer(t, c, edge.Limits{PerMinute: 20, PerDay: 100}, "")
	const policy = `"minute";q=20;w=60, "day";q=100;w=86400`
	for _, p := range []string{
		"/v1/d/small/services/svc_gp",            // a page
		"/v1/d/small/services/svc_gp?view=brief", // a stored view
		"/v1/d/small/services",                   // a list
		"/v1/d/small/services/svc_doesnotexist",  // a 404 caches keep too
		"/v1/d/small/developers",
	} {
		r := s.get(t, p)
		if !strings.Contains(r.header.Get("Cache-Control"), "public") {
			t.Fatalf("%s: %d with Cache-Control %q, want a public answer", p, r.status, r.header.Get("Cache-Control"))
		}
		if got := r.header.Values("RateLimit"); len(got) > 0 {
			t.Errorf("%s: a shareable answer carries RateLimit %q", p, got)
		}
		if got := r.header.Get("RateLimit-Policy"); got != policy {
			t.Errorf("%s: RateLimit-Policy %q, want %q", p, got, policy)
		}
		if nm := s.get(t, p, "If-None-Match", r.header.Get("ETag")); r.header.Get("ETag") != "" && len(nm.header.Values("RateLimit")) > 0 {
			t.Errorf("%s: a 304 to a shareable answer carries RateLimit %q", p, nm.header.Values("RateLimit"))
		}
	}
	tok := token(t, grant{dir: "small", tier: dirsvc.Partner, scopes: "graph:read", issued: c.Now(),
		limit: dirsvc.RateLimit{PerMinute: 5, PerDay: 100}})
	r := s.get(t, "/v1/d/small/services/svc_gp", "Authorization", "Bearer "+tok)
	if r.status != http.StatusOK || r.header.Get("Cache-Control") != "private, no-store" || r.header.Get("RateLimit") != `"minute";r=4;t=12` {
		t.Errorf("a client's answer: %d, Cache-Control %q, RateLimit %q", r.status, r.header.Get("Cache-Control"), r.header.Get("RateLimit"))
	}
	for range 20 {
		r = s.get(t, "/v1/d/small/services/svc_gp")
	}
	if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") == "" || r.header.Get("RateLimit") == "" ||
		r.header.Get("Cache-Control") != "no-store" {
		t.Errorf("a refusal: %d, Retry-After %q, RateLimit %q, Cache-Control %q", r.status, r.header.Get("Retry-After"),
			r.header.Get("RateLimit"), r.header.Get("Cache-Control"))
	}
}
