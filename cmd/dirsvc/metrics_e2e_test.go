package main_test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/dirsvc/dirsvc"
)

// The routes the mixed run of TestMetricsCountWhatAMixedRunDid calls, as the service's routes list
// names them: each request the run sends is tallied under the one that serves it.
var metricsRunRoutes = []string{
	"POST /oauth/token",
	"POST /v1/d/{dir}/webhooks",
	"POST /v1/d/{dir}/webhooks/{id}/test",
	"POST /v1/d/{dir}/exports",
	"GET /v1/d/{dir}/exports/{id}",
	"GET /v1/exports/{id}/files/{name}",
	"GET /v1/d/{dir}/services/{publicId}",
	"GET /v1/d/{dir}/search/services",
}

// requestKey is a series of dirsvc_http_request_duration_seconds: route, method, status class.
type requestKey struct{ route, method, status string }

// tallyTransport sends requests and tallies each answer under the route pattern that serves it,
// its method and its status class: what the service's metrics must count.
type tallyTransport struct {
	t      *testing.T
	routes *http.ServeMux
	mu     sync.Mutex
	counts map[requestKey]int
}

func newTallyTransport(t *testing.T, patterns []string) *tallyTransport {
	tt := &tallyTransport{t: t, routes: http.NewServeMux(), counts: map[requestKey]int{}}
	for _, p := range patterns {
		tt.routes.HandleFunc(p, func(http.ResponseWriter, *http.Request) {})
	}
	return tt
}

func (tt *tallyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	_, route := tt.routes.Handler(req)
	if route == "" {
		tt.t.Errorf("the run sent %s %s, which none of its routes serves", req.Method, req.URL.Path)
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err == nil {
		tt.mu.Lock()
		tt.counts[requestKey{route, req.Method, strconv.Itoa(resp.StatusCode/100) + "xx"}]++
		tt.mu.Unlock()
	}
	return resp, err
}

func (tt *tallyTransport) tally() map[requestKey]int {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	out := map[requestKey]int{}
	for k, v := range tt.counts {
		out[k] = v
	}
	return out
}

// hookCounter is a webhook receiver on 127.0.0.1 (TLS): it answers 204 and keeps the webhook-id of
// every message it is sent, each once.
type hookCounter struct {
	*httptest.Server
	mu  sync.Mutex
	ids map[string]bool
}

func (h *hookCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
	h.mu.Lock()
	h.ids[r.Header.Get("webhook-id")] = true
	h.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (h *hookCounter) messages() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.ids)
}

// scrapeMetrics reads a node's metrics and parses them as Prometheus does.
func scrapeMetrics(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + metricsAddr(t, addr) + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d", resp.StatusCode)
	}
	var p expfmt.TextParser
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("the metrics do not parse: %v", err)
	}
	return mfs
}

// lintScrape runs Prometheus' naming lint over every family a node exposes: the project's and the
// Go runtime's must pass; Litestream's keep the names Litestream documents, and the families of
// them that fail are returned.
func lintScrape(t *testing.T, mfs map[string]*dto.MetricFamily) (litestream []string) {
	t.Helper()
	var all []*dto.MetricFamily
	for _, mf := range mfs {
		all = append(all, mf)
	}
	problems, err := promlint.NewWithMetricFamilies(all).Lint()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, p := range problems {
		if !strings.HasPrefix(p.Metric, "litestream_") {
			t.Errorf("lint: %s: %s", p.Metric, p.Text)
		} else if !seen[p.Metric] {
			seen[p.Metric] = true
			litestream = append(litestream, p.Metric)
		}
	}
	sort.Strings(litestream)
	return litestream
}

// seriesValue returns the value of the series of a family whose labels include those given (of a
// histogram, its count), summed over the series that match; 0 when none does.
func seriesValue(mfs map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	mf := mfs[name]
	if mf == nil {
		return 0
	}
	v := 0.0
	for _, m := range mf.GetMetric() {
		has := map[string]string{}
		for _, l := range m.GetLabel() {
			has[l.GetName()] = l.GetValue()
		}
		match := true
		for i := 0; i+1 < len(labels); i += 2 {
			match = match && has[labels[i]] == labels[i+1]
		}
		if match {
			v += m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
		}
	}
	return v
}

// requestCounts returns the counts of dirsvc_http_request_duration_seconds by series.
func requestCounts(mfs map[string]*dto.MetricFamily) map[requestKey]int {
	out := map[requestKey]int{}
	for _, m := range mfs["dirsvc_http_request_duration_seconds"].GetMetric() {
		var k requestKey
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "route":
				k.route = l.GetValue()
			case "method":
				k.method = l.GetValue()
			case "status":
				k.status = l.GetValue()
			}
		}
		out[k] = int(m.GetHistogram().GetSampleCount())
	}
	return out
}

// TestMetricsCountWhatAMixedRunDid drives `dirsvc serve` as its users would (a partner registers a
// webhook and has it pinged, runs an export and downloads its files; anonymous callers read, miss,
// search and burst past the rate limit), then scrapes its metrics: they parse, lint clean, and
// count exactly what the run did. On `dirsvc primary` over the same folder Litestream's metrics
// join (their names are Litestream's own); an edge following it exports what an edge does only.
func TestMetricsCountWhatAMixedRunDid(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	recv := &hookCounter{ids: map[string]bool{}}
	recv.Server = httptest.NewTLSServer(recv)
	t.Cleanup(recv.Close)
	certFile := filepath.Join(dir, "receiver.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: recv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSL_CERT_FILE", certFile) // the binary trusts the receiver as a developer's machine would

	const perMinute = 20
	addr, cmd, log := startMode(t, bin, "serve", "--data", data, "--webhook-allow-networks", "127.0.0.0/8",
		"--anonymous-per-minute", strconv.Itoa(perMinute))
	base := "http://" + addr
	tally := newTallyTransport(t, metricsRunRoutes)
	anonymous := &http.Client{Transport: tally, Timeout: 30 * time.Second}
	partnerID, partnerSecret := createClient(t, bin, data, "--name", "Metrics Partner", "--directory", "demo",
		"--scopes", "feed:read webhooks:manage export:run")
	cc := clientcredentials.Config{ClientID: partnerID, ClientSecret: partnerSecret, TokenURL: base + "/oauth/token",
		EndpointParams: url.Values{"directory": {"demo"}}, AuthStyle: oauth2.AuthStyleInHeader}
	partner := cc.Client(context.WithValue(context.Background(), oauth2.HTTPClient, anonymous))
	call := func(c *http.Client, method, u, body string, want int) []byte {
		t.Helper()
		req, _ := http.NewRequest(method, u, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want {
			t.Fatalf("%s %s: %d, want %d\n%s", method, u, resp.StatusCode, want, b)
		}
		return b
	}

	// A webhook, pinged.
	var hook struct{ ID string }
	json.Unmarshal(call(partner, "POST", base+"/v1/d/demo/webhooks", `{"url":"`+recv.URL+`/hook"}`, http.StatusCreated), &hook)
	var sent struct{ OK bool }
	json.Unmarshal(call(partner, "POST", base+"/v1/d/demo/webhooks/"+hook.ID+"/test", "", http.StatusOK), &sent)
	if !sent.OK || recv.messages() != 1 {
		t.Fatalf("the ping: ok %v, the receiver holds %d messages\n%s", sent.OK, recv.messages(), log)
	}

	// An export, run to its end, its files downloaded.
	var exp struct {
		ID, Status string
		Files      []struct {
			URL   string
			Bytes int64
		}
	}
	json.Unmarshal(call(partner, "POST", base+"/v1/d/demo/exports", `{"formats":["csv","json"]}`, http.StatusAccepted), &exp)
	for deadline := time.Now().Add(2 * time.Minute); exp.Status != dirsvc.ExportSucceeded; time.Sleep(50 * time.Millisecond) {
		if exp.Status == dirsvc.ExportFailed || time.Now().After(deadline) {
			t.Fatalf("the export is %s\n%s", exp.Status, log)
		}
		json.Unmarshal(call(partner, "GET", base+"/v1/d/demo/exports/"+exp.ID, "", http.StatusOK), &exp)
	}
	var written, downloaded int64
	for _, f := range exp.Files {
		written += f.Bytes
		downloaded += int64(len(call(anonymous, "GET", f.URL, "", http.StatusOK)))
	}
	if written == 0 || downloaded != written {
		t.Fatalf("the export's files: %d bytes, %d downloaded", written, downloaded)
	}

	// Anonymous reads: a few records, one missing, a search; then a burst until the limit answers.
	service := firstLiveService(t)
	for range 5 {
		call(anonymous, "GET", base+"/v1/d/demo/services/"+service, "", http.StatusOK)
	}
	call(anonymous, "GET", base+"/v1/d/demo/services/svc_no_such_service", "", http.StatusNotFound)
	call(anonymous, "GET", base+"/v1/d/demo/search/services?q=counselling", "", http.StatusOK)
	limited := false
	for i := 0; i < 2*perMinute && !limited; i++ {
		resp, err := anonymous.Get(base + "/v1/d/demo/services/" + service + "?view=brief")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		limited = resp.StatusCode == http.StatusTooManyRequests
	}
	if !limited {
		t.Fatalf("%d anonymous requests past a limit of %d a minute were all answered", 2*perMinute, perMinute)
	}

	// The metrics count what the run did. A request is counted once its answer is written, just
	// after the client has it: the scrape is read again until the last ones are in, or a deadline.
	want := tally.tally()
	total := 0
	for _, n := range want {
		total += n
	}
	var mfs map[string]*dto.MetricFamily
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		mfs = scrapeMetrics(t, addr)
		got := 0
		for k, n := range requestCounts(mfs) {
			if want[k] > 0 {
				got += n
			}
		}
		if got >= total || time.Now().After(deadline) {
			break
		}
	}
	if problems := lintScrape(t, mfs); len(problems) > 0 {
		t.Errorf("serve exposes Litestream metrics that fail the lint: %v", problems)
	}
	got := requestCounts(mfs)
	routes := map[string]bool{}
	for k, n := range want {
		routes[k.route] = true
		if got[k] != n {
			t.Errorf("requests %+v: %d counted, the run sent %d", k, got[k], n)
		}
	}
	for k, n := range got {
		if routes[k.route] && want[k] == 0 && n > 0 {
			t.Errorf("requests %+v: %d counted, the run sent none", k, n)
		}
	}
	// The tally itself: one 404 and one 429 of the record route, every file downloaded once.
	if want[requestKey{"GET /v1/d/{dir}/services/{publicId}", "GET", "4xx"}] != 2 ||
		want[requestKey{"GET /v1/exports/{id}/files/{name}", "GET", "2xx"}] != len(exp.Files) {
		t.Errorf("the run's tally: %v", want)
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"dirsvc_http_requests_rate_limited_total", []string{"limit", "anonymous"}, 1},
		{"dirsvc_http_requests_rate_limited_total", []string{"limit", "client"}, 0},
		{"dirsvc_http_requests_shed_total", nil, 0},
		{"dirsvc_webhook_delivery_rounds_total", []string{"outcome", "delivered"}, float64(recv.messages())},
		{"dirsvc_webhook_delivery_rounds_total", nil, float64(recv.messages())},
		{"dirsvc_webhook_endpoints_stopped_total", nil, 0},
		{"dirsvc_webhook_deliveries_waiting", nil, 0},
		{"dirsvc_webhook_oldest_waiting_age_seconds", nil, 0},
		{"dirsvc_exports_finished_total", []string{"state", "succeeded"}, 1},
		{"dirsvc_exports_finished_total", nil, 1},
		{"dirsvc_export_duration_seconds", []string{"state", "succeeded"}, 1},
		{"dirsvc_export_written_bytes_total", nil, float64(written)},
		{"dirsvc_exports_running", nil, 0},
		{"dirsvc_import_records_written_total", []string{"change", "created"}, float64(demoRecordsLoaded(t, log.String()))},
		{"dirsvc_import_records_written_total", []string{"change", "updated"}, 0},
		{"dirsvc_mirror_records_written_total", nil, 0},
		{"dirsvc_ready", nil, 1},
	} {
		if _, ok := mfs[c.name]; !ok {
			t.Errorf("no %s in the metrics", c.name)
		} else if v := seriesValue(mfs, c.name, c.labels...); v != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, v, c.want)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	// The primary over the same folder: Litestream's metrics join, and the lint runs over them too.
	// This process imported nothing, answered nothing yet.
	const token = "a-replication-token-for-metrics-tests"
	paddr, _, plog := startMode(t, bin, "primary", "--data", data, "--replica-dir", filepath.Join(dir, "replica"),
		"--replication-token", token)
	mfs = scrapeMetrics(t, paddr)
	failing := lintScrape(t, mfs)
	if _, ok := mfs["litestream_txid"]; !ok {
		t.Fatalf("the primary exposes no Litestream metrics\n%s", plog)
	}
	t.Logf("Litestream's metrics that keep names failing the lint: %v", failing)
	if v := seriesValue(mfs, "dirsvc_import_records_written_total"); v != 0 {
		t.Errorf("the primary counts %v records imported; it imported none", v)
	}
	if seriesValue(mfs, "dirsvc_replication_healthy") != 1 {
		t.Errorf("dirsvc_replication_healthy is not 1\n%s", plog)
	}

	// An edge following the primary exports what an edge does, and nothing of the primary's work.
	// A route it does not serve is forwarded, and counted as forwarded (and by the primary under
	// its route).
	eaddr, _, elog := startMode(t, bin, "edge", "--data", filepath.Join(dir, "edge"), "--primary", "http://"+paddr,
		"--replication-token", token)
	resp, err := http.Get("http://" + eaddr + "/v1/d/demo/exports")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 4 {
		t.Fatalf("a list of exports without a token, through the edge: %d\n%s", resp.StatusCode, elog)
	}
	forwarded := requestKey{"forwarded", "GET", strconv.Itoa(resp.StatusCode/100) + "xx"}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if mfs = scrapeMetrics(t, eaddr); requestCounts(mfs)[forwarded] == 1 || time.Now().After(deadline) {
			break
		}
	}
	lintScrape(t, mfs)
	if got := requestCounts(mfs); got[forwarded] != 1 || len(got) != 1 {
		t.Errorf("the edge counted %v, want one forwarded request", got)
	}
	if _, ok := mfs["dirsvc_edge_healthy"]; !ok {
		t.Errorf("the edge exposes no follower metrics")
	}
	for name := range mfs {
		for _, primaryOnly := range []string{"dirsvc_webhook_", "dirsvc_export", "dirsvc_import_", "dirsvc_mirror_", "dirsvc_replica"} {
			if strings.HasPrefix(name, primaryOnly) {
				t.Errorf("the edge exposes %s, work it does not do", name)
			}
		}
	}
	pk := requestKey{"GET /v1/d/{dir}/exports", "GET", forwarded.status}
	if got := requestCounts(scrapeMetrics(t, paddr))[pk]; got != 1 {
		t.Errorf("the primary counted %d of %+v, want the one the edge forwarded", got, pk)
	}
}

// demoRecordsLoaded returns the records the demo directories loaded at a first start created, as
// the start logged them.
func demoRecordsLoaded(t *testing.T, log string) int {
	t.Helper()
	re := regexp.MustCompile(`msg="loaded demo directory" .*records=(\d+)`)
	n, lines := 0, 0
	for _, m := range re.FindAllStringSubmatch(log, -1) {
		v, _ := strconv.Atoi(m[1])
		n, lines = n+v, lines+1
	}
	if lines != 2 || n == 0 {
		t.Fatalf("the start logged %d demo directories loaded (%d records), want 2:\n%s", lines, n, log)
	}
	return n
}
