package edge

import (
	"testing"
	"time"
)

func TestHolidaysIn(t *testing.T) {
	day := func(s string) time.Time {
		d, err := time.Parse(time.DateOnly, s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	for _, c := range []struct {
		country string
		areas   []string
		date    string
		want    bool
	}{
		{"AU", []string{"postcode:2000", "state:nsw"}, "2026-12-25", true},
		{"AU", []string{"state:nsw"}, "2026-12-28", true},  // Boxing Day falls on a Saturday: observed Monday
		{"AU", []string{"state:vic"}, "2026-11-03", true},  // Melbourne Cup: Victoria only
		{"AU", []string{"state:nsw"}, "2026-11-03", false}, // ... not New South Wales
		{"AU", []string{"state:wa"}, "2026-06-01", true},   // Western Australia Day
		{"AU", []string{"state:nsw"}, "2026-11-23", false},
		{"NZ", nil, "2026-02-06", true},  // Waitangi Day
		{"AU", nil, "2026-12-25", false}, // no state: not known
		{"GB", nil, "2026-12-25", false},
	} {
		h := holidaysIn(c.country, c.areas)
		if got := h != nil && h(day(c.date)); got != c.want {
			t.Errorf("holidaysIn(%s, %v)(%s) = %v, want %v", c.country, c.areas, c.date, got, c.want)
		}
	}
}
