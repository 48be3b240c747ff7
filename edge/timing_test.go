package edge_test

import (
	"bytes"
	"context"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/edge"
	"github.com/dirsvc/dirsvc/primary"
	"github.com/dirsvc/dirsvc/primary/demo"
)

// probe is one kind of record read whose timing a caller can observe: the request and the status
// it must answer.
type probe struct {
	name   string
	req    *http.Request
	status int
}

// serve answers the probe's request through the handler and fails on an unexpected status.
func (p probe) serve(tb testing.TB, h http.Handler) {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, p.req)
	if w.Code != p.status {
		tb.Fatalf("%s: %d, want %d\n%s", p.name, w.Code, p.status, w.Body)
	}
}

// notFoundProbes is a generated demo directory of the given number of services in a real store, its
// edge handler, and the reads of each way a service read can be answered not found (and the
// narrowed client's visible read beside them):
//   - anonymous missing: an ID the directory does not hold;
//   - anonymous hidden: a live service the public may not see;
//   - narrowed missing, narrowed outside, narrowed visible: a professional client narrowed to an
//     area reads an absent ID, a service the professional tier sees outside the area, one inside it.
func notFoundProbes(tb testing.TB, services int) (http.Handler, map[string]probe) {
	tb.Helper()
	var file bytes.Buffer
	if err := demo.Generate(&file, demo.Options{Slug: "demo", Services: services, Seed: demo.DefaultSeed}); err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	store, err := dirdb.Open(ctx, tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { store.Close() })
	if _, _, err := primary.Import(ctx, store, bytes.NewReader(file.Bytes())); err != nil {
		tb.Fatal(err)
	}
	snap, err := primary.ParseImport(bytes.NewReader(file.Bytes()))
	if err != nil {
		tb.Fatal(err)
	}
	h := edge.New(edge.Config{Catalog: store, Logger: discardLogger(), Keys: testKeys,
		AnonymousLimits: edge.Limits{PerMinute: 1 << 30, PerDay: 1 << 30}})
	area := ""
	for _, r := range snap.Records {
		if l, ok := r.(*dirsvc.Location); ok && l.VisibleTo.Has(dirsvc.Public) && len(l.Areas) > 0 {
			area = l.Areas[0] // a narrow area: most services lie outside it
			break
		}
	}
	professional := token(tb, grant{dir: "demo", tier: dirsvc.Professional, scopes: "graph:read"})
	narrowed := token(tb, grant{dir: "demo", tier: dirsvc.Professional, scopes: "graph:read",
		narrowing: dirsvc.Narrowing{Areas: []string{area}}})
	read := func(tok, id string) *http.Request {
		req := httptest.NewRequest("GET", "/v1/d/demo/services/"+id+"?view=brief", nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		return req
	}
	status := func(req *http.Request) int {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Code
	}
	probes := map[string]probe{
		"anonymous missing": {"anonymous missing", read("", "svc_missing"), 404},
		"narrowed missing":  {"narrowed missing", read(narrowed, "svc_missing"), 404},
	}
	for _, r := range snap.Records {
		sv, ok := r.(*dirsvc.Service)
		if !ok || sv.State != dirsvc.StateLive {
			continue
		}
		id := sv.PublicID
		if _, ok := probes["anonymous hidden"]; !ok && !sv.VisibleTo.Has(dirsvc.Public) && status(read("", id)) == 404 {
			probes["anonymous hidden"] = probe{"anonymous hidden", read("", id), 404}
		}
		if !sv.VisibleTo.Has(dirsvc.Professional) || status(read(professional, id)) != 200 {
			continue
		}
		name := "narrowed visible"
		if status(read(narrowed, id)) == 404 {
			name = "narrowed outside"
		}
		if _, ok := probes[name]; !ok {
			probes[name] = probe{name, read(narrowed, id), status(read(narrowed, id))}
		}
	}
	for _, name := range []string{"anonymous hidden", "narrowed outside", "narrowed visible"} {
		if _, ok := probes[name]; !ok {
			tb.Fatalf("the demo of %d services has no %s service (narrowed to %q)", services, name, area)
		}
	}
	return h, probes
}

// TestNotFoundTakesTheSameTime times, in one run, reads that must answer not found: a hidden
// record's beside a missing one's, for an anonymous caller and for a client narrowed to an area
// (whose records outside the area must answer as missing ones). The two reads of each pair run one
// after the other, in random order, so that the machine's load weighs on both alike, and the test
// compares the median and the trimmed mean of the pairs' differences with a bound well above what
// a loaded machine's noise gives. A difference of a tenth of a millisecond, which a caller over the
// network can measure, fails it.
func TestNotFoundTakesTheSameTime(t *testing.T) {
	h, probes := notFoundProbes(t, demo.DefaultServices)
	for _, c := range []struct{ hidden, missing string }{
		{"anonymous hidden", "anonymous missing"},
		{"narrowed outside", "narrowed missing"},
	} {
		t.Run(c.hidden+" against "+c.missing, func(t *testing.T) {
			hidden, missing := probes[c.hidden], probes[c.missing]
			d := pairedDifferences(t, h, hidden, missing, 2000)
			median, trimmed := quantile(d.diffs, 0.5), trimmedMean(d.diffs, 0.2)
			// The bound: 15 µs, or a third of a missing read's median time, whichever is more
			// (a loaded machine makes every read slower, and its noise with it).
			bound := max(15*time.Microsecond, time.Duration(float64(d.baseline)/3))
			t.Logf("%s %v, %s %v (medians); the difference's median %v, trimmed mean %v, bound %v",
				c.hidden, d.medianA, c.missing, d.baseline, median, trimmed, bound)
			if median.Abs() > bound && trimmed.Abs() > bound {
				t.Errorf("%s takes %v longer than %s (median of %d paired differences; trimmed mean %v): a caller can tell them apart",
					c.hidden, median, c.missing, len(d.diffs), trimmed)
			}
		})
	}
}

// differences are the times of n pairs of reads: each pair's difference (a's time less b's), and
// the medians of each read's own times.
type differences struct {
	diffs             []time.Duration
	medianA, baseline time.Duration
}

// pairedDifferences serves n pairs of the two probes, after a warm-up, each pair in random order.
func pairedDifferences(tb testing.TB, h http.Handler, a, b probe, n int) differences {
	tb.Helper()
	timed := func(p probe) time.Duration {
		start := time.Now()
		p.serve(tb, h)
		return time.Since(start)
	}
	for range n / 4 {
		timed(a)
		timed(b)
	}
	runtime.GC()
	d := differences{diffs: make([]time.Duration, n)}
	as, bs := make([]time.Duration, n), make([]time.Duration, n)
	for i := range n {
		if rand.N(2) == 0 {
			as[i] = timed(a)
			bs[i] = timed(b)
		} else {
			bs[i] = timed(b)
			as[i] = timed(a)
		}
		d.diffs[i] = as[i] - bs[i]
	}
	d.medianA, d.baseline = quantile(as, 0.5), quantile(bs, 0.5)
	return d
}

// quantile returns the q quantile of the durations (it sorts them).
func quantile(ds []time.Duration, q float64) time.Duration {
	slices.Sort(ds)
	return ds[int(q*float64(len(ds)-1))]
}

// trimmedMean returns the mean of the durations without the share cut of each end (it sorts them).
func trimmedMean(ds []time.Duration, cut float64) time.Duration {
	slices.Sort(ds)
	k := int(cut * float64(len(ds)))
	var sum time.Duration
	for _, d := range ds[k : len(ds)-k] {
		sum += d
	}
	return sum / time.Duration(len(ds)-2*k)
}
