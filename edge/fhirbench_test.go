package edge_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/edge"
	"github.com/dirsvc/dirsvc/fhir"
)

// fhirBenchHandler returns the handler over the data folder of $DIRSVC_BENCH_DATA (a large
// directory named demo, such as bench/fhir.sh makes), or over the demo directory without one.
func fhirBenchHandler(b *testing.B) http.Handler {
	if data := os.Getenv("DIRSVC_BENCH_DATA"); data != "" {
		store, err := dirdb.Open(context.Background(), data)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { store.Close() })
		// A first page of a directory just opened can take longer than a request's usual budget on
		// a busy machine: the benchmark waits for it rather than fail.
		return edge.New(edge.Config{Catalog: store, Logger: discardLogger(), AnonymousLimits: edge.Limits{PerMinute: 1 << 30, PerDay: 1 << 30},
			Admission: edge.Admission{ExpensiveBudget: time.Minute, ExpensiveWait: time.Minute}})
	}
	s := newTestServer(b, demoFiles(b)["demo"])
	return edge.New(edge.Config{Catalog: s.store, Logger: discardLogger(), AnonymousLimits: edge.Limits{PerMinute: 1 << 30, PerDay: 1 << 30}})
}

// fhirBenchIDs returns the ids of up to n HealthcareService resources of the public tier.
func fhirBenchIDs(b *testing.B, h http.Handler, n int) []string {
	var ids []string
	for next := "/v1/d/demo/fhir/HealthcareService?_count=100&_elements=name"; next != "" && len(ids) < n; {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", next, nil))
		var page struct {
			Link  []struct{ Relation, URL string }
			Entry []struct{ Resource struct{ ID string } }
		}
		if err := json.Unmarshal(w.Body.Bytes(), &page); err != nil {
			b.Fatal(err)
		}
		for _, e := range page.Entry {
			ids = append(ids, e.Resource.ID)
		}
		next = ""
		for _, l := range page.Link {
			if l.Relation == "next" {
				next = strings.TrimPrefix(l.URL, edge.DefaultBaseURL)
			}
		}
	}
	return ids
}

// BenchmarkFHIRRead measures the handler alone (no network) reading HealthcareService resources as
// the public, against the REST brief read of the same services (BenchmarkFHIRRead/rest), in one run;
// cpu-ns/op is the CPU time of the whole process a read.
func BenchmarkFHIRRead(b *testing.B) {
	h := fhirBenchHandler(b)
	ids := fhirBenchIDs(b, h, 2000)
	for _, c := range []struct{ name, prefix string }{
		{"fhir", "/v1/d/demo/fhir/HealthcareService/"},
		{"rest", "/v1/d/demo/services/"},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := cpuTime(b)
			defer func() { b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op") }()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					i = (i + 7919) % len(ids)
					id := ids[i]
					path := c.prefix + id
					if c.name == "rest" {
						path = c.prefix + fhirPublicID(id) + "?view=brief"
					}
					w := httptest.NewRecorder()
					h.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
					if w.Code != http.StatusOK {
						b.Fatal(path, w.Code)
					}
				}
			})
		})
	}
}

func fhirPublicID(id string) string { return strings.Replace(id, "svc-", "svc_", 1) }

// BenchmarkFHIRPage measures the handler alone reading pages of 100 HealthcareService resources
// from the start, following next links (the reported resources/s is the paging rate, and
// cpu-ns/resource the CPU time of the whole process a resource), after one pass over every page
// has filled the caches.
func BenchmarkFHIRPage(b *testing.B) {
	h := fhirBenchHandler(b)
	const first = "/v1/d/demo/fhir/HealthcareService?_count=100"
	// A page's links come before its entries, and its matches are counted (on the first pass, which
	// gives the same pages), not decoded: the CPU measured is the handler's, not the reading of its
	// pages.
	matches := map[string]int{}
	page := func(path string) (next string, n int) {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		body := w.Body.Bytes()
		if w.Code != http.StatusOK {
			b.Fatal(path, w.Code, string(body))
		}
		_, links, ok := bytes.Cut(body, []byte(`,"link":`))
		if !ok {
			b.Fatalf("%s: a page without links", path)
		}
		var page []struct{ Relation, URL string }
		if err := json.NewDecoder(bytes.NewReader(links)).Decode(&page); err != nil {
			b.Fatal(err)
		}
		for _, l := range page {
			if l.Relation == "next" {
				next = strings.TrimPrefix(l.URL, edge.DefaultBaseURL)
			}
		}
		n, ok = matches[path]
		if !ok {
			n = bytes.Count(body, []byte(`"search":{"mode":"match"}`))
			matches[path] = n
		}
		return next, n
	}
	for next := first; next != ""; next, _ = page(next) {
	}
	next := ""
	resources := 0
	b.ResetTimer()
	cpu0 := cpuTime(b)
	for range b.N {
		if next == "" {
			next = first
		}
		var n int
		next, n = page(next)
		resources += n
	}
	b.ReportMetric(float64(resources)/b.Elapsed().Seconds(), "resources/s")
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(max(resources, 1)), "cpu-ns/resource")
}

// cpuTime returns the CPU time the process has used (user and system, every thread): a figure
// that other work on a shared machine disturbs less than the elapsed time.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

var _ = fhir.Types
