package edge

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"testing"
	"time"
)

// TestLimiterStaysBoundedUnderAddressSpray sprays a million distinct client addresses at the
// anonymous limiter while a few clients keep asking: the table stays within maxLimited callers and
// its heap within 64 MB, and the clients that keep asking are limited exactly, never forgotten
// and given fresh buckets.
func TestLimiterStaysBoundedUnderAddressSpray(t *testing.T) {
	const (
		spray     = 1_000_000
		every     = 1_000 // an active client asks once per this many sprayed addresses
		heapBound = 64 << 20
	)
	lim := Limits{PerMinute: 60, PerDay: 10_000}
	now := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC) // still: no bucket refills during the spray
	active := []netip.Addr{netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")}
	before := heapAlloc()
	l := newLimiter[netip.Addr](maxLimited)
	allowed := make([]int, len(active))
	for i := range spray {
		a := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		if i >= 1<<24 {
			t.Fatal("the spray ran out of addresses")
		}
		if d := l.take(a, lim, now); !d.ok {
			t.Fatalf("sprayed address %d refused on its first request", i)
		}
		if i%every == 0 {
			for j, c := range active {
				if l.take(c, lim, now).ok {
					allowed[j]++
				}
			}
		}
	}
	if n := l.len(); n > maxLimited {
		t.Errorf("the table holds %d callers, over its bound of %d", n, maxLimited)
	}
	for j, n := range allowed {
		if n != lim.PerMinute {
			t.Errorf("active client %s was allowed %d requests in a minute of %d, want exactly %d", active[j], n, spray/every, lim.PerMinute)
		}
	}
	grown := heapAlloc() - before
	runtime.KeepAlive(l)
	t.Logf("heap grew %.1f MB for %d callers kept", float64(grown)/(1<<20), l.len())
	if grown > heapBound {
		t.Errorf("the limiter's heap grew %d MB, over %d MB", grown>>20, heapBound>>20)
	}
	// A caller full again is forgotten by the sweep, which frees its slot for the next.
	l.take(active[0], lim, now.Add(25*time.Hour))
	if n := l.len(); n != 1 {
		t.Errorf("after a day without requests the table holds %d callers, want 1", n)
	}
}

func heapAlloc() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// TestRateLimitGoesOnWithTheHeader: the RateLimit header is given when the answer's header is
// written, however it is (WriteHeader, a first Write or a flush before any), to an answer shared
// caches may not keep, and never to one they may.
func TestRateLimitGoesOnWithTheHeader(t *testing.T) {
	d := decision{ok: true, remaining: 4, policy: "minute", reset: 11500 * time.Millisecond}
	for _, c := range []struct {
		name, cacheControl string
		write              func(w *shareableWriter)
		want               string
	}{
		{"WriteHeader", "private, no-store", func(w *shareableWriter) { w.WriteHeader(http.StatusNotFound) }, `"minute";r=4;t=12`},
		{"Write", "no-store", func(w *shareableWriter) { w.Write([]byte("{}")) }, `"minute";r=4;t=12`},
		{"a flush first", "private, no-store", func(w *shareableWriter) {
			if err := http.NewResponseController(w).Flush(); err != nil {
				t.Fatal(err)
			}
			w.Write([]byte("{}"))
		}, `"minute";r=4;t=12`},
		{"shared", "public, s-maxage=60", func(w *shareableWriter) { w.Write([]byte("{}")) }, ""},
		{"shared, a flush first", "public, max-age=60, s-maxage=300", func(w *shareableWriter) {
			http.NewResponseController(w).Flush()
		}, ""},
	} {
		rec := httptest.NewRecorder()
		rec.Header().Set("Cache-Control", c.cacheControl)
		c.write(&shareableWriter{ResponseWriter: rec, limit: d})
		if got := rec.Result().Header.Get("RateLimit"); got != c.want {
			t.Errorf("%s: RateLimit %q, want %q", c.name, got, c.want)
		}
	}
}
