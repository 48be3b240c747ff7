package edge_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/edge"
)

// countingPrimary is a fake primary that answers 200 to everything and counts what reaches it.
func countingPrimary(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	primary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"from":"primary"}`))
	}))
	t.Cleanup(primary.Close)
	return primary, &n
}

// limitedEdge serves the small fixture as an edge of primary, with the given anonymous limits, the
// client address taken from X-Forwarded-For (as behind a proxy that appends to it) and a fixed clock.
func limitedEdge(t *testing.T, primary *httptest.Server, fw edge.Forwarding, limits edge.Limits) *testServer {
	t.Helper()
	s := newTestServer(t, smallFixture(t))
	fw.Primary, _ = url.Parse(primary.URL)
	c := newClock()
	srv := httptest.NewServer(edge.New(edge.Config{Catalog: s.store, Logger: discardLogger(), Keys: testKeys,
		Now: c.Now, AnonymousLimits: limits, ClientIPHeader: "X-Forwarded-For", Forwarding: &fw}))
	t.Cleanup(srv.Close)
	s.Server = srv
	return s
}

// send sends a request with the header lines given as name, value pairs (a name given twice sends
// two lines), without checking the answer against the OpenAPI document: forwarded routes are the
// primary's.
func send(t *testing.T, method, target string, header ...string) response {
	t.Helper()
	req, err := http.NewRequest(method, target, strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{resp.StatusCode, resp.Header, body}
}

// TestAnEdgeLimitsWhatItForwards floods an edge with requests it forwards, from one address: the
// edge answers 429 itself once the address's anonymous limit is used up, so the primary sees no
// more than the limit; another address is unaffected, and a client with a valid token counts
// against its own limit.
func TestAnEdgeLimitsWhatItForwards(t *testing.T) {
	primary, seen := countingPrimary(t)
	s := limitedEdge(t, primary, edge.Forwarding{EdgeToken: "a-replication-token-for-tests"}, edge.Limits{PerMinute: 3, PerDay: 100})
	flood := []struct{ method, path string }{
		{"POST", "/oauth/token"}, {"PUT", "/admin/v1/d/small/records/svc_gp"}, {"POST", "/v1/d/small/webhooks"},
		{"GET", "/v1/d/small/exports/abc"}, {"GET", "/anything/else"}, {"GET", "/v1/d/small/services/svc_gp"},
	}
	var refused int
	for i := range 30 {
		c := flood[i%len(flood)]
		h := []string{"X-Forwarded-For", "203.0.113.1"}
		if c.path == "/v1/d/small/services/svc_gp" {
			h = append(h, "Directory-Position", "6") // a read the edge's copy cannot answer
		}
		r := send(t, c.method, s.URL+c.path, h...)
		switch {
		case i < 3 && r.status != 200:
			t.Fatalf("request %d (%s %s), within the limit: %d %s", i+1, c.method, c.path, r.status, r.body)
		case i >= 3 && r.status != http.StatusTooManyRequests:
			t.Fatalf("request %d (%s %s), past the limit: %d %s", i+1, c.method, c.path, r.status, r.body)
		case i >= 3:
			refused++
			// The token endpoint's refusal is an OAuth error body, every other a problem.
			code, want := "code", "rate-limited"
			if c.path == edge.TokenPath {
				code, want = "error", "temporarily_unavailable"
			}
			if r.header.Get("Retry-After") == "" || r.header.Get("RateLimit") == "" ||
				r.header.Get("RateLimit-Policy") != `"minute";q=3;w=60, "day";q=100;w=86400` || r.json(t)[code] != want {
				t.Fatalf("request %d refused with %v %s", i+1, r.header, r.body)
			}
		}
	}
	if got := seen.Load(); got != 3 {
		t.Fatalf("the primary saw %d requests of a flood limited to 3 (%d refused by the edge)", got, refused)
	}
	if r := send(t, "PUT", s.URL+"/admin/v1/d/small/records/svc_gp", "X-Forwarded-For", "203.0.113.2"); r.status != 200 || seen.Load() != 4 {
		t.Fatalf("another address after the flood: %d, primary saw %d", r.status, seen.Load())
	}
	// A client with a valid token counts against its grant's limit, not its address's.
	tok := token(t, grant{dir: "small", tier: dirsvc.Partner, scopes: "graph:read", client: "dirp_limited",
		limit: dirsvc.RateLimit{PerMinute: 2, PerDay: 100}, issued: newClock().Now()})
	for i := 1; i <= 3; i++ {
		r := send(t, "POST", s.URL+"/v1/d/small/webhooks", "X-Forwarded-For", "203.0.113.1", "Authorization", "Bearer "+tok)
		if want := map[bool]int{true: 200, false: 429}[i <= 2]; r.status != want {
			t.Fatalf("request %d of a client limited to 2: %d, want %d", i, r.status, want)
		}
	}
	if got := seen.Load(); got != 6 {
		t.Errorf("the primary saw %d requests, want 6", got)
	}
}

// TestAHugePositionIsAnsweredAtOnce reads at positions no write answered with, or far ahead of the
// edge's copy: the edge answers at once, without waiting for its copy.
func TestAHugePositionIsAnsweredAtOnce(t *testing.T) {
	primary, seen := countingPrimary(t)
	copyAt := &positions{at: 5}
	s := limitedEdge(t, primary, edge.Forwarding{Positions: copyAt, ReadWait: time.Hour}, edge.Limits{PerMinute: 1 << 20, PerDay: 1 << 20})
	read := func(pos string) response {
		return send(t, "GET", s.URL+"/v1/d/small/services/svc_gp", "Directory-Position", pos)
	}
	waited := func() []uint64 {
		copyAt.mu.Lock()
		defer copyAt.mu.Unlock()
		return append([]uint64(nil), copyAt.waited...)
	}

	// Beyond 2^53-1: 400 naming the header, neither waited for nor forwarded.
	for _, pos := range []string{"9007199254740992", "18446744073709551615", "9007199254740992.aa01"} {
		if r := read(pos); r.status != 400 || r.json(t)["param"] != "Directory-Position" {
			t.Errorf("position %s: %d %s", pos, r.status, r.body)
		}
	}
	if len(waited()) != 0 || seen.Load() != 0 {
		t.Fatalf("absurd positions were waited for (%v) or forwarded (%d)", waited(), seen.Load())
	}
	// More than MaxPositionAhead past the copy, up to 2^53-1: to the primary at once.
	for i, pos := range []uint64{5 + 10_000 + 1, (1<<53 - 1)} {
		if r := read(strconv.FormatUint(pos, 10)); r.status != 200 || seen.Load() != int64(i+1) {
			t.Errorf("position %d: %d, primary saw %d", pos, r.status, seen.Load())
		}
	}
	if len(waited()) != 0 {
		t.Fatalf("positions far ahead of the copy were waited for: %v", waited())
	}
	// Within the bound the edge still waits for its copy (the fake's wait is over at once).
	if r := read(strconv.FormatUint(5+10_000, 10)); r.status != 200 || seen.Load() != 3 {
		t.Errorf("a position within the bound: %d, primary saw %d", r.status, seen.Load())
	}
	if r := read("5"); r.status != 200 || strings.Contains(string(r.body), `"from":"primary"`) {
		t.Errorf("a position the copy has: %d %s", r.status, r.body)
	}
	if got := waited(); len(got) != 2 || got[0] != 5+10_000 || got[1] != 5 {
		t.Errorf("positions waited for: %v", got)
	}
}

// TestTheProxysClientAddressCounts sends the client address header as a client behind a proxy that
// appends to it would: whatever the client wrote first, the last entry, the proxy's, is the key.
func TestTheProxysClientAddressCounts(t *testing.T) {
	s := limitedServer(t, newClock(), edge.Limits{PerMinute: 2, PerDay: 100}, "X-Forwarded-For")
	for name, lines := range map[string][]string{
		"several lines": {"198.51.100.%d", "203.0.113.1"},
		"a list":        {"198.51.100.%d, 203.0.113.2"},
		"both":          {"198.51.100.%d, 192.0.2.%d", "10.0.0.1, 203.0.113.3"},
	} {
		t.Run("a client cannot choose its key with "+name, func(t *testing.T) {
			for i := 1; i <= 3; i++ {
				var h []string
				for _, l := range lines {
					h = append(h, "X-Forwarded-For", strings.ReplaceAll(l, "%d", strconv.Itoa(i)))
				}
				r := send(t, "GET", s.URL+"/v1/d/small/developers", h...)
				if want := map[bool]int{true: 200, false: 429}[i <= 2]; r.status != want {
					t.Fatalf("request %d with %q: %d, want %d", i, h, r.status, want)
				}
			}
		})
	}
	// A value that is not an address counts as the connection's (127.0.0.1) ...
	for i := 1; i <= 3; i++ {
		r := send(t, "GET", s.URL+"/v1/d/small/developers", "X-Forwarded-For", "203.0.113.9", "X-Forwarded-For", "unknown-"+strconv.Itoa(i))
		if want := map[bool]int{true: 200, false: 429}[i <= 2]; r.status != want {
			t.Fatalf("request %d with an unparsable last entry: %d, want %d", i, r.status, want)
		}
	}
	// ... and a single value works as before.
	if r := send(t, "GET", s.URL+"/v1/d/small/developers", "X-Forwarded-For", "203.0.113.9"); r.status != 200 {
		t.Errorf("a single address: %d", r.status)
	}
}
