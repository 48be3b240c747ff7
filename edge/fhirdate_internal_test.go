package edge

import (
	"math/rand/v2"
	"net/http"
	"testing"
	"time"
)

// TestHTTPDateIsTimeFormat holds the hand-written Last-Modified of FHIR reads to what time's own
// formatting writes, for instants of every form FHIR gives (fractions, offsets) across the years.
func TestHTTPDateIsTimeFormat(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	zones := []*time.Location{time.UTC, time.FixedZone("", 10*3600), time.FixedZone("", -(9*3600 + 30*60))}
	for range 5000 {
		at := time.Unix(rng.Int64N(253402300799), rng.Int64N(1e9)).In(zones[rng.IntN(len(zones))])
		for _, layout := range []string{time.RFC3339Nano, time.RFC3339, "2006-01-02T15:04:05.000Z07:00"} {
			instant := at.Format(layout)
			got, ok := httpDate(instant)
			if want := at.UTC().Format(http.TimeFormat); !ok || got != want {
				t.Fatalf("httpDate(%q) = %q, %v; want %q", instant, got, ok, want)
			}
		}
	}
	for _, bad := range []string{"", "2026-11-23", "yesterday", "2026-11-23T16:25:18"} {
		if got, ok := httpDate(bad); ok {
			t.Errorf("httpDate(%q) = %q, want no date", bad, got)
		}
	}
}
