package edge_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/edge"
)

// BenchmarkServiceBrief measures the handler alone (no network) for a brief service read.
func BenchmarkServiceBrief(b *testing.B) {
	s := newTestServer(b, smallFixture(b))
	h := edge.New(edge.Config{Catalog: s.store, Logger: discardLogger(), AnonymousLimits: edge.Limits{PerMinute: 1 << 30, PerDay: 1 << 30}})
	req := httptest.NewRequest("GET", "/v1/d/small/services/svc_gp?view=brief", nil)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != http.StatusOK {
				b.Fatal(w.Code)
			}
		}
	})
}

// BenchmarkTokenVerificationOverhead measures, in one run, the handler's cost of a brief service read
// by a partner client (bearer token verified on every request, the client's limits) against the same
// read by an anonymous caller, in five interleaved rounds of 200,000 requests each on every core, and
// reports the median ratio of the two costs per request (the target: at most 1.20).
func BenchmarkTokenVerificationOverhead(b *testing.B) {
	s := newTestServer(b, smallFixture(b))
	h := edge.New(edge.Config{Catalog: s.store, Logger: discardLogger(), Keys: testKeys,
		AnonymousLimits: edge.Limits{PerMinute: 1 << 30, PerDay: 1 << 30}})
	tok := token(b, grant{dir: "small", tier: dirsvc.Partner, scopes: "graph:read", expires: time.Now().Add(dirsvc.TokenLifetime)})
	// measure returns the wall time per request of n reads spread over every core.
	measure := func(auth string, n int) time.Duration {
		workers := runtime.GOMAXPROCS(0)
		var wg sync.WaitGroup
		start := time.Now()
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req := httptest.NewRequest("GET", "/v1/d/small/services/svc_gp?view=brief", nil)
				if auth != "" {
					req.Header.Set("Authorization", "Bearer "+auth)
				}
				for range n / workers {
					w := httptest.NewRecorder()
					h.ServeHTTP(w, req)
					if w.Code != http.StatusOK {
						panic(w.Code)
					}
				}
			}()
		}
		wg.Wait()
		return time.Since(start) / time.Duration(n)
	}
	measure("", 20_000) // warm the view cache and the buckets
	measure(tok, 20_000)
	var ratios []float64
	for range b.N {
		for range 5 {
			anon, partner := measure("", 200_000), measure(tok, 200_000)
			ratios = append(ratios, float64(partner)/float64(anon))
			b.Logf("anonymous %v, partner %v a request", anon, partner)
		}
	}
	slices.Sort(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "partner/anonymous")
}

// BenchmarkServiceListPage reads pages of 100 of the service list, anonymously, at random cursors,
// from the data folder named by $DIRSVC_BENCH_DATA (for example one bench/partner.sh made for a
// 100,000-service directory named demo); it is skipped without one.
func BenchmarkServiceListPage(b *testing.B) {
	data := os.Getenv("DIRSVC_BENCH_DATA")
	if data == "" {
		b.Skip("set DIRSVC_BENCH_DATA to a data folder with a large directory named demo")
	}
	store, err := dirdb.Open(context.Background(), data)
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	h := edge.New(edge.Config{Catalog: store, Logger: discardLogger(), AnonymousLimits: edge.Limits{PerMinute: 1 << 30, PerDay: 1 << 30}})
	var pages []string
	for next := "/v1/d/demo/services?limit=100"; next != "" && len(pages) < 1000; {
		pages = append(pages, next)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", next, nil))
		var page struct{ NextCursor *string }
		if err := json.Unmarshal(w.Body.Bytes(), &page); err != nil {
			b.Fatal(err)
		}
		next = ""
		if page.NextCursor != nil {
			next = "/v1/d/demo/services?limit=100&cursor=" + *page.NextCursor
		}
	}
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			i = (i + 7919) % len(pages)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest("GET", pages[i], nil))
			if w.Code != http.StatusOK {
				b.Fatal(w.Code)
			}
		}
	})
}

// BenchmarkNotFoundPaths measures the handler alone (no network) for each way a record read of a
// 5,000-service directory is answered not found, and for a narrowed client's visible read beside
// them: a caller who can time the answers must not tell a hidden record from a missing one.
func BenchmarkNotFoundPaths(b *testing.B) {
	h, probes := notFoundProbes(b, 5000)
	names := []string{"anonymous missing", "anonymous hidden", "narrowed missing", "narrowed outside", "narrowed visible"}
	for _, k := range placedKinds {
		names = append(names, "narrowed missing "+string(k.kind), "narrowed outside "+string(k.kind))
	}
	for _, name := range names {
		p := probes[name]
		b.Run(strings.ReplaceAll(name, " ", "_"), func(b *testing.B) {
			for b.Loop() {
				p.serve(b, h)
			}
		})
	}
}

// BenchmarkCodedViewHit measures the handler alone reading one cached stored view over 1 KB in each
// coding, identity, br and gzip, in b.N interleaved rounds of 2,000 reads each, and reports the cost
// and allocations of a read in each and the cost of a coded read against an identity one
// (br/identity, gzip/identity), the ratio the query-cost issue names. Every coded answer is checked
// to be coded.
func BenchmarkCodedViewHit(b *testing.B) {
	benchmarkCodings(b, "/v1/d/small/services/svc_big?view=brief")
}

// BenchmarkCodedListHit is BenchmarkCodedViewHit for a page of the service list, composed at read
// time (its coded forms are kept by the hash of its body).
func BenchmarkCodedListHit(b *testing.B) {
	benchmarkCodings(b, "/v1/d/small/services")
}

func benchmarkCodings(b *testing.B, path string) {
	s := newTestServer(b, withBigService(b))
	h := edge.New(edge.Config{Catalog: s.store, Logger: discardLogger(), AnonymousLimits: edge.Limits{PerMinute: 1 << 30, PerDay: 1 << 30}})
	codings := []string{"identity", "br", "gzip"}
	// measure returns the wall time and allocations per request of n reads in coding.
	measure := func(coding string, n int) (time.Duration, float64) {
		req := httptest.NewRequest("GET", path, nil)
		req.Header.Set("Accept-Encoding", coding)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		for range n {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != http.StatusOK || (coding != "identity") != (w.Header().Get("Content-Encoding") == coding) {
				b.Fatalf("%s: %d %q", coding, w.Code, w.Header().Get("Content-Encoding"))
			}
		}
		elapsed := time.Since(start)
		runtime.ReadMemStats(&after)
		return elapsed / time.Duration(n), float64(after.Mallocs-before.Mallocs) / float64(n)
	}
	for _, c := range codings {
		measure(c, 100) // warm the view cache and the kept forms
	}
	total := map[string]time.Duration{}
	allocs := map[string]float64{}
	b.ResetTimer()
	for range b.N {
		for _, c := range codings {
			d, a := measure(c, 2000)
			total[c] += d
			allocs[c] = a
		}
	}
	for _, c := range codings {
		b.ReportMetric(float64(total[c])/float64(b.N), c+"-ns/req")
		b.ReportMetric(allocs[c], c+"-allocs/req")
	}
	b.ReportMetric(float64(total["br"])/float64(total["identity"]), "br/identity")
	b.ReportMetric(float64(total["gzip"])/float64(total["identity"]), "gzip/identity")
}
