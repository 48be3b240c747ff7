package edge_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc/edge"
)

// countedRequest is one call of Metrics.Request.
type countedRequest struct{ route, method, status string }

// recordedMetrics is an edge.Metrics that hands every count to the test as it is made: a request is
// counted once its answer is written, so a test waits for the count rather than reading it at once.
type recordedMetrics struct {
	requests chan countedRequest
	shed     chan string
	limited  chan string
}

func newRecordedMetrics() *recordedMetrics {
	return &recordedMetrics{requests: make(chan countedRequest, 100), shed: make(chan string, 100), limited: make(chan string, 100)}
}

func (m *recordedMetrics) Request(route, method, status string, took time.Duration) {
	if took <= 0 {
		status += " (no duration)"
	}
	m.requests <- countedRequest{route, method, status}
}
func (m *recordedMetrics) Shed(reason string)   { m.shed <- reason }
func (m *recordedMetrics) Limited(limit string) { m.limited <- limit }

// next returns the next value counted on ch; it fails the test when none comes within a few seconds.
func next[T any](t *testing.T, what string, ch chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatalf("no %s was counted", what)
	}
	var zero T
	return zero
}

// none checks that nothing more was counted on ch.
func none[T any](t *testing.T, what string, ch chan T) {
	t.Helper()
	select {
	case v := <-ch:
		t.Errorf("%s counted %v, want none", what, v)
	default:
	}
}

// TestMetricsCountRequestsByRoutePattern checks that each request is counted once, under the
// pattern of the route that served it (never its path), its method and its status class.
func TestMetricsCountRequestsByRoutePattern(t *testing.T) {
	m := newRecordedMetrics()
	s := newTestServerWith(t, func(c *edge.Config) { c.Metrics = m }, smallFixture(t))
	for _, tc := range []struct {
		name, method, path string
		status             int
		want               countedRequest
	}{
		{"a record read counts under its route", "GET", "/v1/d/small/services/svc_gp", 200,
			countedRequest{"GET /v1/d/{dir}/services/{publicId}", "GET", "2xx"}},
		{"a missing record counts under the same route", "GET", "/v1/d/small/services/svc_nope", 404,
			countedRequest{"GET /v1/d/{dir}/services/{publicId}", "GET", "4xx"}},
		{"a list counts under its route", "GET", "/v1/d/small/services?limit=2", 200,
			countedRequest{"GET /v1/d/{dir}/services", "GET", "2xx"}},
		{"a HEAD counts under the GET route with its own method", "HEAD", "/v1/d/small/services/svc_gp", 200,
			countedRequest{"GET /v1/d/{dir}/services/{publicId}", "HEAD", "2xx"}},
		// Neither of these is an operation of the OpenAPI document: they go round its checks.
		{"a path no route serves counts as unmatched", "GET", "/no/such/thing/42", 404,
			countedRequest{edge.RouteUnmatched, "GET", "4xx"}},
		{"a method a client made up counts as other", "BREW", "/v1/d/small/services/svc_gp", 405,
			countedRequest{edge.RouteUnmatched, "other", "4xx"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status := 0
			if tc.want.route == edge.RouteUnmatched {
				req, _ := http.NewRequest(tc.method, s.URL+tc.path, nil)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				status = resp.StatusCode
			} else {
				status = s.do(t, tc.method, tc.path).status
			}
			if status != tc.status {
				t.Fatalf("%s %s: %d, want %d", tc.method, tc.path, status, tc.status)
			}
			if got := next(t, "request", m.requests); got != tc.want {
				t.Errorf("counted %+v, want %+v", got, tc.want)
			}
			none(t, "the request", m.requests)
		})
	}
	none(t, "reads", m.shed)
	none(t, "reads", m.limited)
}

// TestMetricsCountShedAndLimited checks that a request shed for capacity and one refused by the
// rate limit are counted by reason, and as requests of their route with their status class.
func TestMetricsCountShedAndLimited(t *testing.T) {
	m := newRecordedMetrics()
	s := newTestServerWith(t, func(c *edge.Config) {
		c.Metrics = m
		c.Admission = edge.Admission{Wait: 20 * time.Millisecond, PageWait: 20 * time.Millisecond, ExpensiveWait: 20 * time.Millisecond}
		c.AnonymousLimits = edge.Limits{PerMinute: 5, PerDay: 1000}
	}, smallFixture(t))
	route := "GET /v1/d/{dir}/services/{publicId}"
	for _, tc := range []struct{ bound, path, reason, route string }{
		{"in-flight", "/v1/d/small/services/svc_gp?view=brief", edge.ShedReads, route},
		{"pages", "/v1/d/small/services/svc_gp", edge.ShedPages, route},
		{"expensive", "/v1/d/small/services", edge.ShedExpensive, "GET /v1/d/{dir}/services"},
	} {
		release := s.edge.Occupy(tc.bound)
		r := s.get(t, tc.path)
		release()
		if r.status != http.StatusServiceUnavailable {
			t.Fatalf("%s with the %s bound full: %d, want 503", tc.path, tc.bound, r.status)
		}
		if got := next(t, "shed request", m.shed); got != tc.reason {
			t.Errorf("%s with the %s bound full: shed for %q, want %q", tc.path, tc.bound, got, tc.reason)
		}
		if got, want := next(t, "request", m.requests), (countedRequest{tc.route, "GET", "5xx"}); got != want {
			t.Errorf("%s with the %s bound full: counted %+v, want %+v", tc.path, tc.bound, got, want)
		}
	}
	// Three requests of the limit of five are spent: two more pass, the next is refused.
	for i := range 3 {
		r := s.get(t, "/v1/d/small/services/svc_gp?view=brief")
		want := countedRequest{route, "GET", "2xx"}
		if i == 2 {
			want.status = "4xx"
			if r.status != http.StatusTooManyRequests {
				t.Fatalf("the sixth request of a limit of five a minute: %d, want 429", r.status)
			}
			if got := next(t, "limited request", m.limited); got != edge.LimitAnonymous {
				t.Errorf("limited by %q, want %q", got, edge.LimitAnonymous)
			}
		}
		// A refused request never reaches the mux: it counts under the route it asked for.
		if got := next(t, "request", m.requests); got != want {
			t.Errorf("request %d: counted %+v, want %+v", i+4, got, want)
		}
	}
	none(t, "more shed requests", m.shed)
	none(t, "more limited requests", m.limited)
}

// discardMetrics counts nothing: it measures what counting costs the server itself.
type discardMetrics struct{}

func (discardMetrics) Request(string, string, string, time.Duration) {}
func (discardMetrics) Shed(string)                                   {}
func (discardMetrics) Limited(string)                                {}

// BenchmarkRequestCounting serves a record's brief view (the cheapest read, mostly from memory)
// through the whole handler, without metrics and with them: the difference is what counting a
// request costs (its recorder in the context, the pattern carried back).
func BenchmarkRequestCounting(b *testing.B) {
	for _, bc := range []struct {
		name string
		m    edge.Metrics
	}{{"off", nil}, {"on", discardMetrics{}}} {
		b.Run(bc.name, func(b *testing.B) {
			s := newTestServerWith(b, func(c *edge.Config) { c.Metrics = bc.m }, smallFixture(b))
			req := httptest.NewRequest("GET", "/v1/d/small/services/svc_gp?view=brief", nil)
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				s.edge.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatalf("%d", w.Code)
				}
			}
		})
	}
}
