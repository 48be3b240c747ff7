package edge_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/dirsvc/dirsvc/edge"
)

// BenchmarkServicePageLanguages measures the handler alone for a service page asked for with no
// Accept-Language, with a browser's (en-AU, answered in the directory's language as stored) and in
// the pseudo-locale (rewritten on every request). The first two are the cost the labels' negotiation
// adds to every read.
func BenchmarkServicePageLanguages(b *testing.B) {
	s := newTestServer(b, smallFixture(b))
	h := edge.New(edge.Config{Catalog: s.store, Logger: discardLogger(), AnonymousLimits: edge.Limits{PerMinute: 1 << 30, PerDay: 1 << 30}})
	for _, c := range []struct{ name, header string }{
		{"none", ""}, {"browser", "en-AU,en;q=0.9"}, {"pseudo", "en-XA"},
	} {
		b.Run(c.name, func(b *testing.B) {
			req := httptest.NewRequest("GET", "/v1/d/small/services/svc_gp", nil)
			if c.header != "" {
				req.Header.Set("Accept-Language", c.header)
			}
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatal(w.Code)
				}
			}
		})
	}
}
