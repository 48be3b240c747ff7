package main_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/edge"
	"github.com/dirsvc/dirsvc/edge/edgetest"
)

const (
	testReplicationToken = "a-replication-token-for-tests"
	testAdminToken       = "an-admin-token-for-tests"
)

// cluster is a primary and an edge of it, each a real process of the binary on 127.0.0.1.
type cluster struct {
	bin                   string
	primaryData, replica  string
	primary, edge         string // addresses
	primaryCmd            *exec.Cmd
	primaryLog, edgeLog   *processLog
	primaryArgs, edgeArgs []string
}

// startCluster imports the small fixture into a new data folder, starts a primary on it and an
// edge following it, and waits until the edge serves the directory.
func startCluster(t testing.TB, edgeArgs ...string) *cluster {
	t.Helper()
	c := &cluster{bin: buildBinary(t), primaryData: t.TempDir(), replica: t.TempDir()}
	if out, err := exec.Command(c.bin, "import", "--data", c.primaryData, smallFixture).CombinedOutput(); err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	c.primaryArgs = []string{"primary", "--base-url", testBaseURL, "--data", c.primaryData, "--replica-dir", c.replica,
		"--replication-token", testReplicationToken, "--admin-token", testAdminToken,
		"--anonymous-per-minute", "10000000", "--anonymous-per-day", "100000000", "--sandbox-directory", "small"}
	c.primary, c.primaryCmd, c.primaryLog = startMode(t, c.bin, c.primaryArgs...)
	c.edgeArgs = append([]string{"edge", "--data", t.TempDir(), "--primary", "http://" + c.primary,
		"--replication-token", testReplicationToken,
		"--anonymous-per-minute", "10000000", "--anonymous-per-day", "100000000", "--sandbox-directory", "small"}, edgeArgs...)
	c.edge, _, c.edgeLog = startMode(t, c.bin, c.edgeArgs...)
	c.waitFor(t, "the edge serves the directory", func() bool {
		return get(t, c.edge, "/v1/d/small/services/svc_gp", nil).status == 200
	})
	return c
}

var smallFixture = filepath.Join("..", "..", "testdata", "small.ndjson")

// waitFor polls a condition on processes outside the test until it holds, failing after a deadline.
func (c *cluster) waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30s\nprimary:\n%s\nedge:\n%s", what, c.primaryLog, c.edgeLog)
		}
		time.Sleep(20 * time.Millisecond) // another process's state: polled, with a deadline
	}
}

// noRedirects answers a merged record's 301 itself.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

type answer struct {
	status int
	header http.Header
	body   []byte
}

func get(t testing.TB, addr, path string, header http.Header) answer {
	t.Helper()
	return do(t, "GET", "http://"+addr+path, header, nil)
}

func do(t testing.TB, method, u string, header http.Header, body []byte) answer {
	t.Helper()
	req, err := http.NewRequest(method, u, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if len(body) > 0 && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json") // what the write routes take
	}
	resp, err := noRedirects.Do(req)
	if err != nil {
		return answer{status: -1, body: []byte(err.Error())}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, b}
}

// fixtureRecord returns the import line of a record of the small fixture, with its name replaced.
func fixtureRecord(t testing.TB, publicID, name string) []byte {
	t.Helper()
	f, err := os.Open(smallFixture)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec map[string]any
		if json.Unmarshal(sc.Bytes(), &rec) == nil && rec["publicId"] == publicID {
			rec["name"] = name
			b, _ := json.Marshal(rec)
			return b
		}
	}
	t.Fatalf("no %s in the fixture", publicID)
	return nil
}

// putRecord writes a record through the admin API at addr (a primary, or an edge that forwards it)
// and returns the answer.
func putRecord(t testing.TB, addr string, publicID string, line []byte) answer {
	t.Helper()
	return do(t, "PUT", "http://"+addr+"/admin/v1/d/small/records/"+publicID,
		http.Header{"Authorization": {"Bearer " + testAdminToken}}, line)
}

func name(t testing.TB, a answer) string {
	t.Helper()
	var v struct{ Name string }
	if err := json.Unmarshal(a.body, &v); err != nil {
		t.Fatalf("%d %s: %v", a.status, a.body, err)
	}
	return v.Name
}

// TestEdgeFollowsThePrimary runs a primary and an edge as processes: the edge serves the primary's
// directories byte for byte, sees a write on the primary, lets a client read its own write, forwards
// the token endpoint and writes, picks up a directory created later, and reports its state.
func TestEdgeFollowsThePrimary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	c := startCluster(t, "--metrics-addr", "127.0.0.1:0")
	checker := edgetest.NewChecker(t)
	checked := &http.Client{Transport: checker.Transport(t, nil), Timeout: 30 * time.Second}

	// The same reads answer the same bytes at the edge as at the primary, hidden and missing
	// records included.
	for _, p := range []string{"/v1/d/small/services/svc_gp", "/v1/d/small/services?limit=5", "/v1/d/small/organisations/org_harbour",
		"/v1/d/small/services/svc_missing", "/v1/d/nowhere/services/svc_gp", "/v1/d/small/developers",
		"/v1/d/small/taxonomy", "/v1/d/small/categories", "/v1/d/small/categories/primary_care",
		// hidden from the public, closed, merged, taken down
		"/v1/d/small/locations/loc_unlisted", "/v1/d/small/services/svc_closed", "/v1/d/small/services/svc_old",
		"/v1/d/small/services/svc_down"} {
		at, want := get(t, c.edge, p, nil), get(t, c.primary, p, nil)
		if (strings.Contains(p, "/taxonomy") || strings.Contains(p, "/categories")) && at.status != 200 {
			t.Errorf("GET %s at the edge: %d %s", p, at.status, at.body)
		}
		want.body = bytes.ReplaceAll(want.body, []byte(c.primary), []byte(c.edge)) // addresses come from the Host
		if at.status != want.status || !bytes.Equal(at.body, want.body) {
			t.Errorf("GET %s: edge %d %s\nprimary %d %s", p, at.status, at.body, want.status, want.body)
		}
		resp, err := checked.Get("http://" + c.edge + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}

	signUpThroughTheEdge(t, c)

	// A write on the primary becomes visible at the edge.
	if a := putRecord(t, c.primary, "svc_gp", fixtureRecord(t, "svc_gp", "Written On The Primary")); a.status != 200 {
		t.Fatalf("admin write: %d %s", a.status, a.body)
	}
	c.waitFor(t, "the write reaches the edge", func() bool {
		return name(t, get(t, c.edge, "/v1/d/small/services/svc_gp", nil)) == "Written On The Primary"
	})

	// Read your writes: a write sent to the edge is forwarded and answers with the directory's
	// position; a read at the edge that asks for that position sees the write, every time.
	for i := range 20 {
		want := fmt.Sprintf("Written Through The Edge %d", i)
		w := putRecord(t, c.edge, "svc_gp", fixtureRecord(t, "svc_gp", want))
		pos := w.header.Get("Directory-Position")
		if w.status != 200 || pos == "" {
			t.Fatalf("write through the edge: %d %q %s", w.status, pos, w.body)
		}
		r := get(t, c.edge, "/v1/d/small/services/svc_gp", http.Header{"Directory-Position": {pos}})
		if r.status != 200 || name(t, r) != want {
			t.Fatalf("read at position %s after write %d: %d %s", pos, i, r.status, r.body)
		}
	}
	if a := get(t, c.edge, "/v1/d/small/services/svc_gp", http.Header{"Directory-Position": {"soon"}}); a.status != 400 ||
		!strings.Contains(string(a.body), "Directory-Position") {
		t.Errorf("a bad position: %d %s", a.status, a.body)
	}
	// A position the primary has not reached yet: the edge waits, then the primary answers.
	if a := get(t, c.edge, "/v1/d/small/services/svc_gp", http.Header{"Directory-Position": {"999999999"}}); a.status != 200 {
		t.Errorf("a read at a future position: %d %s", a.status, a.body)
	}
	// The admin API's answers, through the edge, are as the OpenAPI document says.
	for _, w := range []struct {
		method, path, token string
		body                []byte
		status              int
	}{
		{"PUT", "/admin/v1/d/small/records/svc_gp", testAdminToken, fixtureRecord(t, "svc_gp", "Checked"), 200},
		{"PUT", "/admin/v1/d/small/records/svc_other", testAdminToken, fixtureRecord(t, "svc_gp", "Checked"), 400},
		{"POST", "/admin/v1/d/small/records/svc_gp/transition", "wrong-admin-token", []byte(`{"to":"closed"}`), 401},
		{"POST", "/admin/v1/d/small/records/svc_nowhere/transition", testAdminToken, []byte(`{"to":"closed"}`), 404},
		{"POST", "/admin/v1/d/small/records/svc_gp/transition", testAdminToken, []byte(`{"to":"sideways"}`), 400},
	} {
		req, _ := http.NewRequest(w.method, "http://"+c.edge+w.path, bytes.NewReader(w.body))
		req.Header.Set("Authorization", "Bearer "+w.token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := checked.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != w.status {
			t.Errorf("%s %s: %d, want %d", w.method, w.path, resp.StatusCode, w.status)
		}
	}
	// Writes without the admin token are refused by the primary, through the edge too.
	if a := do(t, "PUT", "http://"+c.edge+"/admin/v1/d/small/records/svc_gp", nil, fixtureRecord(t, "svc_gp", "x")); a.status != 401 {
		t.Errorf("an admin write without the token: %d %s", a.status, a.body)
	}

	// The token endpoint is forwarded; the edge verifies the token with the keys it followed.
	id, secret := createClient(t, c.bin, c.primaryData, "--name", "Partner Org", "--partner",
		"--directory", "small", "--tier", "partner", "--scopes", "graph:read")
	cc := clientcredentials.Config{ClientID: id, ClientSecret: secret, TokenURL: "http://" + c.edge + "/oauth/token",
		EndpointParams: url.Values{"directory": {"small"}}, AuthStyle: oauth2.AuthStyleInHeader}
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, checked)
	c.waitFor(t, "a partner reads at the edge", func() bool {
		resp, err := cc.Client(ctx).Get("http://" + c.edge + "/v1/d/small/services/svc_gp?view=brief")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200 && resp.Header.Get("X-DIR-Audience") == "partner"
	})

	// The operator's senior-management switch reaches the edge both ways: leadership shows there
	// only while it is on.
	leadersID, leadersSecret := createClient(t, c.bin, c.primaryData, "--name", "Leaders Org", "--partner",
		"--directory", "small", "--tier", "partner", "--scopes", "graph:read leadership:read")
	lc := clientcredentials.Config{ClientID: leadersID, ClientSecret: leadersSecret, TokenURL: "http://" + c.edge + "/oauth/token",
		EndpointParams: url.Values{"directory": {"small"}}, AuthStyle: oauth2.AuthStyleInHeader}
	leadership := func() int {
		resp, err := lc.Client(ctx).Get("http://" + c.edge + "/v1/d/small/organisations/org_harbour/leadership")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := leadership(); got != 404 {
		t.Fatalf("leadership at the edge with the switch off: %d", got)
	}
	for _, sw := range []struct {
		to     string
		status int
	}{{"on", 200}, {"off", 404}} {
		if out, err := exec.Command(c.bin, "platform", "--data", c.primaryData, "senior-management", "small", sw.to).CombinedOutput(); err != nil {
			t.Fatalf("senior-management %s: %v\n%s", sw.to, err, out)
		}
		c.waitFor(t, "leadership at the edge with the switch "+sw.to, func() bool { return leadership() == sw.status })
	}

	// A directory created while both run appears at the edge without a restart.
	gen := filepath.Join(t.TempDir(), "extra.ndjson")
	if out, err := exec.Command(c.bin, "gen", "--services", "20", "--slug", "extra", "--out", gen).CombinedOutput(); err != nil {
		t.Fatalf("gen: %v\n%s", err, out)
	}
	if out, err := exec.Command(c.bin, "import", "--data", c.primaryData, gen).CombinedOutput(); err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	c.waitFor(t, "the new directory at the edge", func() bool {
		return get(t, c.edge, "/v1/d/extra/developers", nil).status == 200
	})
	at, want := get(t, c.edge, "/v1/d/extra/services?limit=3", nil), get(t, c.primary, "/v1/d/extra/services?limit=3", nil)
	if !bytes.Equal(at.body, want.body) {
		t.Errorf("the new directory differs at the edge:\n%s\n%s", at.body, want.body)
	}
	// A cursor the primary gave is taken at the edge, and the edge's at the primary: both derive the
	// cursor keys from the replication token.
	var page struct{ NextCursor string }
	if err := json.Unmarshal(want.body, &page); err != nil || page.NextCursor == "" {
		t.Fatalf("the primary's first page of extra has no cursor: %v %s", err, want.body)
	}
	next := "/v1/d/extra/services?limit=3&cursor=" + page.NextCursor
	if at, want := get(t, c.edge, next, nil), get(t, c.primary, next, nil); at.status != 200 || !bytes.Equal(at.body, want.body) {
		t.Errorf("the primary's cursor at the edge: %d %s\nat the primary: %d %s", at.status, at.body, want.status, want.body)
	}

	// A generated directory's categories, collections (with result cards) and searches answer the
	// same bytes at the edge, from its copy, as at the primary; a collection for professionals is
	// missing for the public at both.
	for _, p := range []string{"/v1/d/extra/categories", "/v1/d/extra/categories/primary_care", "/v1/d/extra/collections",
		"/v1/d/extra/collections?home=true", "/v1/d/extra/collections/mental-health-support", "/v1/d/extra/collections/referral-pathways",
		// Search from the edge's own copy: its documents and full-text indexes came with the pages.
		"/v1/d/extra/search/services?q=clinic&limit=5", "/v1/d/extra/search/services?q=mental+helth&group=organisation",
		"/v1/d/extra/search/organisations?limit=5", "/v1/d/extra/autocomplete?q=me"} {
		at, want := get(t, c.edge, p, nil), get(t, c.primary, p, nil)
		wantStatus := 200
		if strings.HasSuffix(p, "/referral-pathways") {
			wantStatus = 404
		}
		if at.status != wantStatus || at.status != want.status || !bytes.Equal(at.body, want.body) {
			t.Errorf("GET %s: edge %d %s\nprimary %d %s", p, at.status, at.body, want.status, want.body)
		}
		resp, err := checked.Get("http://" + c.edge + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}

	// Health and metrics name the role and each copy's position.
	// The public health route says only what a load balancer needs: no file of the data folder.
	for node, addr := range map[string]string{"primary": c.primary, "edge": c.edge} {
		if h := get(t, addr, "/healthz", nil); h.status != 200 || string(h.body) != `{"role":"`+node+`","healthy":true,"ready":true}` {
			t.Errorf("%s's public health: %d %s", node, h.status, h.body)
		}
	}
	h := get(t, metricsAddr(t, c.edge), "/healthz", nil)
	var st dirsvc.NodeStatus
	if err := json.Unmarshal(h.body, &st); err != nil || h.status != 200 || st.Role != "edge" || !st.Healthy || len(st.Files) != 2 {
		t.Errorf("edge health: %d %s", h.status, h.body)
	}
	m := regexp.MustCompile(`msg=metrics addr=(\S+)`).FindStringSubmatch(c.edgeLog.String())
	if m == nil {
		t.Fatalf("no metrics address:\n%s", c.edgeLog)
	}
	if metrics := get(t, m[1], "/metrics", nil); !strings.Contains(string(metrics.body), `dirsvc_edge_position{file="dirs/small/directory"}`) {
		t.Errorf("edge metrics:\n%.800s", metrics.body)
	}
	if checker.Count() == 0 {
		t.Fatal("no response was checked against the OpenAPI document")
	}
}

// TestEdgeReadsAreNeverTorn reads at the edge from several goroutines while the primary rewrites
// an organisation over and over: each rewrite changes the organisation's name in every one of its
// services in one transaction, so every list page must show one name for all of them.
func TestEdgeReadsAreNeverTorn(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	c := startCluster(t)
	const path = "/v1/d/small/services?organisation=org_harbour&limit=100"
	var (
		reads, torn, failed, shed atomic.Int64
		seen                      sync.Map
		stop                      = make(chan struct{})
		wg                        sync.WaitGroup
	)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				a := get(t, c.edge, path, nil)
				reads.Add(1)
				if a.status == http.StatusServiceUnavailable && a.header.Get("Retry-After") != "" {
					shed.Add(1) // the node's admission under load: an answer, not a torn read
					continue
				}
				if a.status != 200 {
					failed.Add(1)
					continue
				}
				var page struct {
					Items []struct {
						Organisation struct{ Name string }
					}
				}
				if err := json.Unmarshal(a.body, &page); err != nil || len(page.Items) < 2 {
					failed.Add(1)
					continue
				}
				names := map[string]bool{}
				for _, it := range page.Items {
					names[it.Organisation.Name] = true
					seen.Store(it.Organisation.Name, true)
				}
				if len(names) != 1 {
					torn.Add(1)
				}
			}
		}()
	}
	for i := range 150 {
		if a := putRecord(t, c.primary, "org_harbour", fixtureRecord(t, "org_harbour", "Harbour Health "+strconv.Itoa(i))); a.status != 200 {
			t.Fatalf("write %d: %d %s", i, a.status, a.body)
		}
	}
	c.waitFor(t, "the last write at the edge", func() bool {
		return name(t, get(t, c.edge, "/v1/d/small/organisations/org_harbour", nil)) == "Harbour Health 149"
	})
	close(stop)
	wg.Wait()
	distinct := 0
	seen.Range(func(any, any) bool { distinct++; return true })
	t.Logf("%d reads, %d names seen, %d torn, %d failed, %d shed", reads.Load(), distinct, torn.Load(), failed.Load(), shed.Load())
	if torn.Load() != 0 || failed.Load() != 0 || shed.Load()*100 > reads.Load() {
		t.Fatalf("%d torn, %d failed and %d shed reads of %d\n%s", torn.Load(), failed.Load(), shed.Load(), reads.Load(), c.edgeLog)
	}
	if distinct < 10 {
		t.Fatalf("the readers saw only %d of the names written: the edge did not change under them", distinct)
	}
}

// TestPrimaryKilledDuringWrites kills the primary (SIGKILL) in the middle of a stream of writes:
// the edge keeps serving, reports its lag past the bound on its health route, and converges once
// the primary is back; the primary lost no acknowledged write.
func TestPrimaryKilledDuringWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	c := startCluster(t, "--max-lag", "1s")
	var acked atomic.Int64
	acked.Store(-1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			a := do(t, "PUT", "http://"+c.primary+"/admin/v1/d/small/records/svc_gp",
				http.Header{"Authorization": {"Bearer " + testAdminToken}}, fixtureRecord(t, "svc_gp", "Write "+strconv.Itoa(i)))
			if a.status != 200 {
				return // the primary is gone
			}
			acked.Store(int64(i))
		}
	}()
	c.waitFor(t, "some writes acknowledged", func() bool { return acked.Load() >= 30 })
	if err := c.primaryCmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	c.primaryCmd.Wait()
	<-done
	last := acked.Load()

	// The edge keeps serving reads from its copy, and says on its health route that it lags.
	if a := get(t, c.edge, "/v1/d/small/services/svc_gp", nil); a.status != 200 || !strings.HasPrefix(name(t, a), "Write ") {
		t.Fatalf("a read at the edge with the primary down: %d %s", a.status, a.body)
	}
	c.waitFor(t, "the edge reports its lag", func() bool { return get(t, c.edge, "/healthz", nil).status == 503 })
	if a := get(t, c.edge, "/v1/d/small/services/svc_gp", nil); a.status != 200 {
		t.Fatalf("a read at the lagging edge: %d %s", a.status, a.body)
	}

	// The primary comes back on its data folder with every acknowledged write.
	addr, _, log := restartAt(t, c.bin, c.primary, c.primaryArgs...)
	c.primaryLog = log
	got := name(t, get(t, addr, "/v1/d/small/services/svc_gp", nil))
	n, err := strconv.Atoi(strings.TrimPrefix(got, "Write "))
	if err != nil || int64(n) < last {
		t.Fatalf("after the restart the primary has %q; %d writes were acknowledged", got, last+1)
	}
	// The edge converges on the primary and is healthy again.
	c.waitFor(t, "the edge converges", func() bool {
		at, want := get(t, c.edge, "/v1/d/small/services/svc_gp", nil), get(t, addr, "/v1/d/small/services/svc_gp", nil)
		return at.status == 200 && bytes.Equal(at.body, want.body) && get(t, c.edge, "/healthz", nil).status == 200
	})
	// And follows new writes again.
	if a := putRecord(t, addr, "svc_gp", fixtureRecord(t, "svc_gp", "After The Restart")); a.status != 200 {
		t.Fatalf("write after the restart: %d %s", a.status, a.body)
	}
	c.waitFor(t, "a write after the restart at the edge", func() bool {
		return name(t, get(t, c.edge, "/v1/d/small/services/svc_gp", nil)) == "After The Restart"
	})
}

// restartAt starts a serving mode again on the address it had (edges know the primary by it).
func restartAt(t testing.TB, bin, addr string, args ...string) (string, *exec.Cmd, *processLog) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		a, cmd, log, err := tryStart(t, bin, append(args, "--addr", addr)...)
		if err == nil {
			return a, cmd, log
		}
		if time.Now().After(deadline) {
			t.Fatalf("restart on %s: %v", addr, err)
		}
		time.Sleep(100 * time.Millisecond) // the port may linger a moment after the kill
	}
}

// BenchmarkWriteToVisible measures how long a write on the primary takes to be visible at an edge,
// both as real processes with their default settings: from sending the write (the admin API, which
// answers once the write is replicated) to the first read at the edge that shows it, reads polled
// every millisecond. It reports the median and 99th percentile.
func BenchmarkWriteToVisible(b *testing.B) {
	c := startCluster(b)
	lags := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		want := "Lag " + strconv.Itoa(i)
		line := fixtureRecord(b, "svc_gp", want)
		start := time.Now()
		if a := putRecord(b, c.primary, "svc_gp", line); a.status != 200 {
			b.Fatalf("write: %d %s", a.status, a.body)
		}
		for name(b, get(b, c.edge, "/v1/d/small/services/svc_gp?view=brief", nil)) != want {
			time.Sleep(time.Millisecond) // a client polling the edge
		}
		lags = append(lags, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lags)
	b.ReportMetric(float64(lags[len(lags)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lags[len(lags)*99/100].Microseconds())/1000, "p99-ms")
}

// signUpThroughTheEdge signs up for sandbox credentials at the edge, as a browser does: the edge
// serves the portal itself and forwards the form and its POST, a write, to the primary; the
// credentials get a token at once, through the edge too.
func signUpThroughTheEdge(t *testing.T, c *cluster) {
	t.Helper()
	portal := get(t, c.edge, edge.PortalPath("small"), nil)
	if portal.status != 200 || !bytes.Contains(portal.body, []byte(`href="`+edge.SandboxSignupPath("small")+`"`)) {
		t.Fatalf("the portal at the edge: %d", portal.status)
	}
	form := get(t, c.edge, edge.SandboxSignupPath("small"), nil)
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindSubmatch(form.body)
	cookie := form.header.Get("Set-Cookie")
	if form.status != 200 || m == nil || !strings.Contains(cookie, "Secure") {
		t.Fatalf("the sign-up form through the edge: %d, cookie %q", form.status, cookie)
	}
	body := url.Values{"csrf": {html.UnescapeString(string(m[1]))}, "name": {"Edge Developer"}, "email": {"dev@example.org"},
		"purpose": {"Reads services near the edge."}}.Encode()
	signed := do(t, "POST", "http://"+c.edge+edge.SandboxSignupPath("small"), http.Header{"Content-Type": {"application/x-www-form-urlencoded"},
		"Cookie": {strings.Split(cookie, ";")[0]}}, []byte(body))
	creds := regexp.MustCompile(`id="client-id">([^<]+)<[\s\S]*id="client-secret">([^<]+)<`).FindSubmatch(signed.body)
	if signed.status != http.StatusCreated || creds == nil {
		t.Fatalf("sign-up through the edge: %d %s", signed.status, signed.body)
	}
	tok := do(t, "POST", "http://"+c.edge+edge.TokenPath, http.Header{"Content-Type": {"application/x-www-form-urlencoded"}},
		[]byte(url.Values{"grant_type": {"client_credentials"}, "directory": {"small"}, "client_id": {string(creds[1])},
			"client_secret": {html.UnescapeString(string(creds[2]))}}.Encode()))
	if tok.status != 200 || !bytes.Contains(tok.body, []byte(`"sandbox":true`)) {
		t.Fatalf("token with the new credentials through the edge: %d %s", tok.status, tok.body)
	}
}
