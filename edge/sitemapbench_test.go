package edge_test

import (
	"bytes"
	"context"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/edge"
	"github.com/dirsvc/dirsvc/primary"
	"github.com/dirsvc/dirsvc/primary/demo"
)

var sitemapServices = flag.Int("sitemap-services", 100000, "services in the directory BenchmarkSitemap generates")

// BenchmarkSitemap measures a whole sitemap part (50,000 pages) of a generated directory (100,000
// services unless -sitemap-services says otherwise; generating and importing it takes minutes). The
// part is streamed a thousand pages at a time: B/op stays that of the part's batches and the
// writer's buffers, far below the size of the part (bytes/op reports it).
func BenchmarkSitemap(b *testing.B) {
	ctx := context.Background()
	var file bytes.Buffer
	if err := demo.Generate(&file, demo.Options{Slug: "bench", Country: "AU", Services: *sitemapServices, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	s, err := dirdb.Open(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	if _, _, err := primary.Import(ctx, s, bytes.NewReader(file.Bytes())); err != nil {
		b.Fatal(err)
	}
	h := edge.New(edge.Config{Catalog: s, Logger: discardLogger(), AnonymousLimits: edge.Limits{PerMinute: 1 << 30, PerDay: 1 << 30}})
	path := "/v1/d/bench/sitemap.xml?part=1"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
	if w.Code != http.StatusOK {
		// A directory of fewer pages than a part is one urlset.
		path = "/v1/d/bench/sitemap.xml"
	}
	var size int64
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		rec := &countingWriter{header: http.Header{}}
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.status != http.StatusOK {
			b.Fatal(rec.status)
		}
		size = rec.n
	}
	b.ReportMetric(float64(size), "bytes/op")
}

// countingWriter is a ResponseWriter that keeps nothing of the body but its size.
type countingWriter struct {
	header http.Header
	status int
	n      int64
}

func (w *countingWriter) Header() http.Header { return w.header }
func (w *countingWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}
func (w *countingWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.n += int64(len(p))
	return io.Discard.Write(p)
}
