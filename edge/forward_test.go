package edge_test

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc/edge"
)

// positions is a fake edge copy at a fixed position of a history, recording what reads waited for.
type positions struct {
	mu      sync.Mutex
	at      uint64
	lineage string
	waited  []uint64
}

func (p *positions) WaitFor(_ context.Context, dir string, pos uint64, lineage string, _ time.Duration) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.waited = append(p.waited, pos)
	return dir == "small" && pos <= p.at && (lineage == "" || lineage == p.lineage)
}

func (p *positions) Position(dir string) (uint64, bool) { return p.at, dir == "small" }

// vouchingFor is the credential an edge vouches for client addresses with, as docs/operations.md states it:
// the hex HMAC-SHA256 of a fixed label keyed with the replication token.
func vouchingFor(token string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("dirsvc edge vouches for client addresses"))
	return hex.EncodeToString(m.Sum(nil))
}

// edgeOf serves the small fixture as an edge whose primary is the given server.
func edgeOf(t *testing.T, primary *httptest.Server, fw edge.Forwarding) *testServer {
	t.Helper()
	s := newTestServer(t, smallFixture(t))
	if primary != nil {
		fw.Primary, _ = url.Parse(primary.URL)
	}
	srv := httptest.NewServer(edge.New(edge.Config{Catalog: s.store, Logger: discardLogger(), Keys: testKeys,
		AnonymousLimits: edge.Limits{PerMinute: 1 << 30, PerDay: 1 << 30}, Forwarding: &fw}))
	t.Cleanup(srv.Close)
	s.Server = srv
	return s
}

// TestAnEdgeForwardsWhatItDoesNotServe checks what an edge sends to its primary: every request no
// read route serves, with the client's address vouched for by the replication token, and reads that
// want a newer position than its copy has; everything else it answers itself.
func TestAnEdgeForwardsWhatItDoesNotServe(t *testing.T) {
	const token = "a-replication-token-for-tests"
	var (
		mu   sync.Mutex
		seen []*http.Request
	)
	primary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Clone(context.Background()))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"from":"primary"}`))
	}))
	t.Cleanup(primary.Close)
	copyAt := &positions{at: 5, lineage: "aa01"}
	s := edgeOf(t, primary, edge.Forwarding{EdgeToken: token, Positions: copyAt})
	last := func() *http.Request {
		mu.Lock()
		defer mu.Unlock()
		if len(seen) == 0 {
			return nil
		}
		return seen[len(seen)-1]
	}

	// A write, the token endpoint and the admin API go to the primary, Host kept, with the client's
	// address and the credential that vouches for it (a client's own copies of those headers
	// dropped). The replication token itself is nowhere on the request: whoever sees a forwarded
	// request cannot follow the primary's stream.
	for _, c := range []struct{ method, path string }{
		{"POST", "/oauth/token"}, {"PUT", "/admin/v1/d/small/records/svc_gp"}, {"POST", "/v1/d/small/webhooks"},
		{"GET", "/v1/d/small/exports/abc"}, {"GET", "/v1/d/small/fhir/$export"}, {"POST", "/v1/d/small/fhir/$export"},
		{"GET", "/v1/d/small/fhir/$export-poll/abc"}, {"DELETE", "/v1/d/small/fhir/$export-poll/abc"},
		{"GET", "/v1/exports/abc/files/services.csv"},
	} {
		req, _ := http.NewRequest(c.method, s.URL+c.path, strings.NewReader("{}"))
		req.Header.Set("Dirsvc-Client-Ip", "203.0.113.9")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		r := last()
		if resp.StatusCode != 200 || r == nil || r.Method != c.method || r.URL.Path != c.path {
			t.Fatalf("%s %s: %d, primary saw %v", c.method, c.path, resp.StatusCode, r)
		}
		if r.Header.Get("Dirsvc-Edge-Token") != vouchingFor(token) || r.Header.Get("Dirsvc-Client-Ip") != "127.0.0.1" ||
			r.Host != strings.TrimPrefix(s.URL, "http://") {
			t.Errorf("%s %s: forwarded with credential %q, client %q, host %q", c.method, c.path,
				r.Header.Get("Dirsvc-Edge-Token"), r.Header.Get("Dirsvc-Client-Ip"), r.Host)
		}
		for name, values := range r.Header {
			for _, v := range values {
				if strings.Contains(v, token) {
					t.Errorf("%s %s: the replication token is forwarded in %s", c.method, c.path, name)
				}
			}
		}
		if strings.Contains(r.URL.String(), token) {
			t.Errorf("%s %s: the replication token is forwarded in the URL", c.method, c.path)
		}
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(seen) }
	n := count()
	// Reads are the edge's own; so is a read at a position its copy has reached.
	if r := s.get(t, "/v1/d/small/services/svc_gp"); r.status != 200 || strings.Contains(string(r.body), `"from":"primary"`) {
		t.Fatalf("a read: %d %s", r.status, r.body)
	}
	if r := s.get(t, "/v1/d/small/services/svc_gp", "Directory-Position", "5"); r.status != 200 || strings.Contains(string(r.body), `"from":"primary"`) {
		t.Fatalf("a read at a position the copy has: %d %s", r.status, r.body)
	}
	if count() != n {
		t.Fatalf("reads the edge serves went to the primary")
	}
	// A read at a newer position goes to the primary once the wait is over.
	req, _ := http.NewRequest("GET", s.URL+"/v1/d/small/services/svc_gp", nil)
	req.Header.Set("Directory-Position", "6")
	resp, err := http.DefaultClient.Do(req) // the fake primary's answer is no service
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if r := last(); count() != n+1 || r.URL.Path != "/v1/d/small/services/svc_gp" {
		t.Fatalf("a read at a newer position did not go to the primary")
	}
	// A position of another history (the primary was restored) goes to the primary, whatever its
	// number; one of the copy's history is the edge's.
	req.Header.Set("Directory-Position", "3.bb02")
	resp, err = http.DefaultClient.Do(req) // the fake primary's answer is no service
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if r := last(); count() != n+2 || r.URL.Path != "/v1/d/small/services/svc_gp" {
		t.Errorf("a read at a position of another history did not go to the primary")
	}
	if r := s.get(t, "/v1/d/small/services/svc_gp", "Directory-Position", "3.aa01"); r.status != 200 || strings.Contains(string(r.body), `"from":"primary"`) {
		t.Errorf("a read at a position of the copy's history: %d %s", r.status, r.body)
	}
	for _, bad := range []string{"six", "6.", "6.XYZ", "-1", "6." + strings.Repeat("a", 65)} {
		if r := s.get(t, "/v1/d/small/services/svc_gp", "Directory-Position", bad); r.status != 400 || r.json(t)["param"] != "Directory-Position" {
			t.Errorf("a bad position %q: %d %s", bad, r.status, r.body)
		}
	}
	// The primary's replication stream is not reachable through an edge, however the path is
	// written: the edge matches on the path cleaned as the primary's mux cleans it.
	n = count()
	for _, p := range []string{
		"/replication/v1/files",
		"/replication",
		"/replication/",
		"//replication/v1/files",
		"/./replication/v1/files",
		"/x/../replication/v1/files",
		"/replication/../replication/v1/files",
		"/replication/v1/../v1/ltx/0?name=dirs/small/directory",
		"///replication//v1//files",
		"/%72eplication/v1/files",
		"/replication%2Fv1%2Ffiles",
		"/%2e/replication/v1/files",
		"/x/%2e%2e/replication/v1/files",
		"/%2freplication/v1/files",
	} {
		if got := rawGet(t, s.URL, p); got != 404 {
			t.Errorf("the replication stream through the edge at %s: %d", p, got)
		}
	}
	if count() != n {
		t.Errorf("a request for the replication stream went to the primary")
	}
	// A path that only looks like it is still forwarded.
	if resp, err := http.Get(s.URL + "/replications/v1/files"); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	if count() != n+1 {
		t.Errorf("/replications/v1/files was not forwarded")
	}
	copyAt.mu.Lock()
	if len(copyAt.waited) != 4 || copyAt.waited[0] != 5 || copyAt.waited[1] != 6 {
		t.Errorf("positions waited for: %v", copyAt.waited)
	}
	copyAt.mu.Unlock()

	// A primary that cannot be reached: 503 with Retry-After, the edge's reads unaffected; at the
	// token endpoint in an OAuth error body, as every error of that endpoint.
	primary.Close()
	req, _ = http.NewRequest("POST", s.URL+"/oauth/token", strings.NewReader("grant_type=client_credentials"))
	resp, err = s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("forwarding to a primary that is down: %d", resp.StatusCode)
	}
	if resp.Header.Get("Content-Type") != "application/json" || !strings.Contains(string(body), `"error":"temporarily_unavailable"`) {
		t.Errorf("the token endpoint with the primary down: %s %s", resp.Header.Get("Content-Type"), body)
	}
	if r := s.get(t, "/v1/d/small/services/svc_gp"); r.status != 200 {
		t.Errorf("a read with the primary down: %d", r.status)
	}
}

// TestAnEdgeOnFlyReplays answers what the primary serves with fly-replay, for Fly's proxy.
func TestAnEdgeOnFlyReplays(t *testing.T) {
	s := edgeOf(t, nil, edge.Forwarding{FlyPrimaryRegion: "syd"})
	req, _ := http.NewRequest("POST", s.URL+"/oauth/token", strings.NewReader("grant_type=client_credentials"))
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("Fly-Replay") != "region=syd" {
		t.Errorf("fly-replay: %d %q", resp.StatusCode, resp.Header.Get("Fly-Replay"))
	}
	if r := s.get(t, "/v1/d/small/services/svc_gp"); r.status != 200 || r.header.Get("Fly-Replay") != "" {
		t.Errorf("a read on Fly: %d %q", r.status, r.header.Get("Fly-Replay"))
	}
}

// rawGet sends GET target to the server at base with target written as is on the request line (a
// client would clean or escape it), and returns the status.
func rawGet(t *testing.T, base, target string) int {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: edge.test\r\nConnection: close\r\n\r\n", target); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("GET %s: %v", target, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestThePrimaryBelievesOnlyItsEdges limits a forwarded request by the address its edge names only
// when the edge presents the credential derived from the replication token: not the token itself,
// nor anything else.
func TestThePrimaryBelievesOnlyItsEdges(t *testing.T) {
	const token = "a-replication-token-for-tests"
	s := newTestServer(t, smallFixture(t))
	srv := httptest.NewServer(edge.New(edge.Config{Catalog: s.store, Logger: discardLogger(), Keys: testKeys,
		AnonymousLimits: edge.Limits{PerMinute: 1, PerDay: 100}, EdgeToken: token}))
	t.Cleanup(srv.Close)
	s.Server = srv
	get := func(edgeToken, client string) int {
		return s.get(t, "/v1/d/small/services/svc_gp", "Dirsvc-Edge-Token", edgeToken, "Dirsvc-Client-Ip", client).status
	}
	vouch := vouchingFor(token)
	// Two clients behind one edge each get their own limit.
	if get(vouch, "198.51.100.1") != 200 || get(vouch, "198.51.100.2") != 200 {
		t.Fatal("two clients of one edge share a limit")
	}
	if get(vouch, "198.51.100.1") != 429 {
		t.Fatal("a client of an edge is not limited")
	}
	// Without the credential the named address means nothing: the caller is limited by its own
	// (127.0.0.1), which the first of these uses up. The replication token itself is not the
	// credential, nor is a credential derived from another token or a truncated one.
	for i, bad := range []string{"not-the-token-of-any-edge", token, "Bearer " + token, vouchingFor(token + "x"),
		vouch[:32], strings.ToUpper(vouch), vouch + "0", ""} {
		want := 429
		if i == 0 {
			want = 200
		}
		if got := get(bad, "198.51.100."+strconv.Itoa(10+i)); got != want {
			t.Errorf("a caller presenting %q as the credential: %d, want %d", bad, got, want)
		}
	}
}
