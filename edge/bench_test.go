package edge_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/dirsvc/dirsvc/edge"
)

// BenchmarkServiceBrief measures the handler alone (no network) for a brief service read.
func BenchmarkServiceBrief(b *testing.B) {
	s := newTestServer(b, smallFixture(b))
	h := edge.New(edge.Config{Catalog: s.store, Logger: discardLogger()})
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
