package edge

import (
	"net/http"
	"testing"
)

// corsHeaderWriter is a response writer that keeps the header and drops the rest.
type corsHeaderWriter struct{ h http.Header }

func (w *corsHeaderWriter) Header() http.Header         { return w.h }
func (w *corsHeaderWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *corsHeaderWriter) WriteHeader(int)             {}

// TestCORSAllocatesNothing checks that the grant on a read costs no allocation: its values are
// shared, and a clean path is recognised without copying it.
func TestCORSAllocatesNothing(t *testing.T) {
	h := (&Server{}).cors(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for _, target := range []string{"/v1/d/demo/services/svc_000001?view=brief", "/admin/v1/d/demo/moderation"} {
		r, err := http.NewRequest("GET", target, nil)
		if err != nil {
			t.Fatal(err)
		}
		w := &corsHeaderWriter{h: http.Header{}}
		if n := testing.AllocsPerRun(1000, func() { clear(w.h); h.ServeHTTP(w, r) }); n != 0 {
			t.Errorf("GET %s: %v allocations a request, want none", target, n)
		}
	}
}

// BenchmarkCORS is the middleware's own cost on a read it grants, beside the same request without
// it: the difference is what CORS adds to every answer.
func BenchmarkCORS(b *testing.B) {
	next := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	r, err := http.NewRequest("GET", "/v1/d/demo/services/svc_000001?view=brief", nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		h    http.Handler
	}{{"without", next}, {"with", (&Server{}).cors(next)}} {
		b.Run(c.name, func(b *testing.B) {
			w := &corsHeaderWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				c.h.ServeHTTP(w, r)
			}
		})
	}
}
