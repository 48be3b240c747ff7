package edge_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

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
	if r := s.get(t, "/v1/d/small/services/svc_gp?view=brief"); r.status != http.StatusOK || r.header.Get("RateLimit") != `"minute";r=0;t=60` {
		t.Fatalf("after a second: %d RateLimit %q", r.status, r.header.Get("RateLimit"))
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
