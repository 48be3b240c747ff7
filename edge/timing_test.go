package edge_test

import (
	"bytes"
	"context"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
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

// placedKinds are the kinds of record other than services a narrowing places (by their services),
// with the paths of their reads.
type placedKind struct {
	kind dirsvc.Kind
	path string
}

var placedKinds = []placedKind{
	{dirsvc.KindOrganisation, "organisations"}, {dirsvc.KindLocation, "locations"}, {dirsvc.KindPractitioner, "practitioners"},
}

// notFoundProbes is a generated demo directory of the given number of services in a real store, its
// edge handler, and the reads of each way a record read can be answered not found (and the
// narrowed client's visible read beside them):
//   - anonymous missing: an ID the directory does not hold;
//   - anonymous hidden: a live service the public may not see;
//   - narrowed missing, narrowed outside, narrowed visible: a professional client narrowed to an
//     area reads an absent ID, a service the professional tier sees outside the area, one inside it;
//   - narrowed missing <kind>, narrowed outside <kind>: a professional client narrowed to an area
//     and a category reads an absent organisation, site or practitioner, and the one of those the
//     professional tier sees, outside the narrowing, with the most services.
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
	// How many services each organisation, site and practitioner has: the more, the longer a check
	// that read each of them would take.
	weight := map[string]int{}
	category := ""
	for _, r := range snap.Records {
		switch x := r.(type) {
		case *dirsvc.Service:
			weight[x.Organisation]++
			weight[x.Location]++
			if t := snap.Taxonomy.PlatformType(x.Type); category == "" && t != nil {
				category = t.Category
			}
		case *dirsvc.PractitionerRole:
			weight[x.Practitioner]++
		}
	}
	professional := token(tb, grant{dir: "demo", tier: dirsvc.Professional, scopes: "graph:read"})
	narrowed := token(tb, grant{dir: "demo", tier: dirsvc.Professional, scopes: "graph:read",
		narrowing: dirsvc.Narrowing{Areas: []string{area}}})
	narrowedBoth := token(tb, grant{dir: "demo", tier: dirsvc.Professional, scopes: "graph:read",
		narrowing: dirsvc.Narrowing{Areas: []string{area}, Categories: []string{category}}})
	read := func(tok, path, id string) *http.Request {
		req := httptest.NewRequest("GET", "/v1/d/demo/"+path+"/"+id+"?view=brief", nil)
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
		"anonymous missing": {"anonymous missing", read("", "services", "svc_missing"), 404},
		"narrowed missing":  {"narrowed missing", read(narrowed, "services", "svc_missing"), 404},
	}
	heaviest := map[dirsvc.Kind]string{}
	for _, r := range snap.Records {
		m := r.Base()
		if m.State != dirsvc.StateLive || !m.VisibleTo.Has(dirsvc.Professional) {
			continue
		}
		if i := slices.IndexFunc(placedKinds, func(k placedKind) bool { return k.kind == r.Kind() }); i >= 0 {
			k := placedKinds[i]
			if weight[m.PublicID] > weight[heaviest[k.kind]] && status(read(professional, k.path, m.PublicID)) == 200 &&
				status(read(narrowedBoth, k.path, m.PublicID)) == 404 {
				heaviest[k.kind] = m.PublicID
			}
			continue
		}
		sv, ok := r.(*dirsvc.Service)
		if !ok {
			continue
		}
		id := sv.PublicID
		if _, ok := probes["anonymous hidden"]; !ok && !sv.VisibleTo.Has(dirsvc.Public) && status(read("", "services", id)) == 404 {
			probes["anonymous hidden"] = probe{"anonymous hidden", read("", "services", id), 404}
		}
		if status(read(professional, "services", id)) != 200 {
			continue
		}
		name := "narrowed visible"
		if status(read(narrowed, "services", id)) == 404 {
			name = "narrowed outside"
		}
		if _, ok := probes[name]; !ok {
			probes[name] = probe{name, read(narrowed, "services", id), status(read(narrowed, "services", id))}
		}
	}
	for _, k := range placedKinds {
		if id := heaviest[k.kind]; id != "" {
			name := "narrowed outside " + string(k.kind)
			probes[name] = probe{name, read(narrowedBoth, k.path, id), 404}
		}
		name := "narrowed missing " + string(k.kind)
		probes[name] = probe{name, read(narrowedBoth, k.path, k.kind.IDPrefix()+"missing"), 404}
	}
	for name := range probes {
		if _, ok := probes[strings.Replace(name, "missing", "outside", 1)]; strings.Contains(name, "missing") && !strings.HasPrefix(name, "anonymous") && !ok {
			tb.Fatalf("the demo of %d services has no record for %q (narrowed to %q and %q)", services, strings.Replace(name, "missing", "outside", 1), area, category)
		}
	}
	for _, name := range []string{"anonymous hidden", "narrowed visible"} {
		if _, ok := probes[name]; !ok {
			tb.Fatalf("the demo of %d services has no %s service (narrowed to %q)", services, name, area)
		}
	}
	return h, probes
}

// TestNotFoundTakesTheSameTime times, in one run, reads that must answer not found: a hidden
// record's beside a missing one's, for an anonymous caller and for clients narrowed to an area, or
// an area and a category (whose services, organisations, sites and practitioners outside the
// narrowing must answer as missing ones). The two reads of each pair run one
// after the other, in random order, so that the machine's load weighs on both alike, and the test
// compares the median and the trimmed mean of the pairs' differences with a bound well above what
// a loaded machine's noise gives. A difference of a tenth of a millisecond, which a caller over the
// network can measure, fails it.
func TestNotFoundTakesTheSameTime(t *testing.T) {
	h, probes := notFoundProbes(t, demo.DefaultServices)
	pairs := []struct{ hidden, missing string }{
		{"anonymous hidden", "anonymous missing"},
		{"narrowed outside", "narrowed missing"},
	}
	for _, k := range placedKinds {
		pairs = append(pairs, struct{ hidden, missing string }{"narrowed outside " + string(k.kind), "narrowed missing " + string(k.kind)})
	}
	for _, c := range pairs {
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
