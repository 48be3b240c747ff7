package edge

import (
	"net/netip"
	"testing"
	"time"
)

func TestTokenFailuresTableIsBounded(t *testing.T) {
	var f tokenFailures
	now := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	target := netip.MustParseAddr("192.0.2.1")
	for range MaxTokenFailures {
		f.fail(target, now)
	}
	// Failures sprayed from many addresses, all within the window.
	for i := range 3 * maxFailingAddrs {
		now = now.Add(time.Millisecond)
		f.fail(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), now)
		if n := f.len(); n > maxFailingAddrs {
			t.Fatalf("after %d addresses the table holds %d, want at most %d", i+1, n, maxFailingAddrs)
		}
	}
	// A window that ended is dropped first, and a new failure of a known address starts over.
	now = now.Add(TokenFailureWindow)
	if n := f.fail(target, now); n != 1 {
		t.Errorf("failures after the window: %d, want 1", n)
	}
}
