package edge

import (
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
)

// TestOpenFiltersAtFixedClocks evaluates the open-state filters at fixed instants against hours in
// different time zones: the edges of an interval, a close at 24:00, a state public holiday, and the
// day, window, after-hours and holiday filters.
func TestOpenFiltersAtFixedClocks(t *testing.T) {
	weekdays := func(zone, open, close string) *dirsvc.OpeningHours {
		h := &dirsvc.OpeningHours{TimeZone: zone, PublicHolidays: "closed"}
		for _, d := range []string{"mon", "tue", "wed", "thu", "fri"} {
			h.Weekly = append(h.Weekly, dirsvc.WeeklyHours{Day: d, Intervals: []dirsvc.Interval{{Open: open, Close: close}}})
		}
		return h
	}
	sydney, perth := weekdays("Australia/Sydney", "09:00", "17:00"), weekdays("Australia/Perth", "09:00", "17:00")
	lateFriday := &dirsvc.OpeningHours{TimeZone: "Australia/Sydney", Weekly: []dirsvc.WeeklyHours{
		{Day: "fri", Intervals: []dirsvc.Interval{{Open: "18:00", Close: "24:00"}}}}}
	holidayOpen := weekdays("Australia/Sydney", "09:00", "17:00")
	holidayOpen.PublicHolidays = "open"
	weekend := &dirsvc.OpeningHours{TimeZone: "Australia/Sydney", Weekly: []dirsvc.WeeklyHours{
		{Day: "sat", Intervals: []dirsvc.Interval{{Open: "08:00", Close: "12:00"}}}}}
	at := func(zone, clock string) time.Time {
		z, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatal(err)
		}
		tm, err := time.ParseInLocation("2006-01-02 15:04", clock, z)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	nsw := []string{"postcode:2000", "state:nsw"}
	wa := []string{"postcode:6000", "state:wa"}
	cases := []struct {
		name   string
		filter openFilter
		now    time.Time
		hours  *dirsvc.OpeningHours
		areas  []string
		want   bool
	}{
		{"open at 10:00 Sydney", openFilter{now: true}, at("Australia/Sydney", "2026-02-02 10:00"), sydney, nsw, true},
		{"closed at 08:59", openFilter{now: true}, at("Australia/Sydney", "2026-02-02 08:59"), sydney, nsw, false},
		{"open at 09:00", openFilter{now: true}, at("Australia/Sydney", "2026-02-02 09:00"), sydney, nsw, true},
		{"closed at 17:00", openFilter{now: true}, at("Australia/Sydney", "2026-02-02 17:00"), sydney, nsw, false},
		{"10:00 in Sydney is 07:00 in Perth", openFilter{now: true}, at("Australia/Sydney", "2026-02-02 10:00"), perth, wa, false},
		{"12:00 in Perth is 15:00 in Sydney", openFilter{now: true}, at("Australia/Perth", "2026-02-02 12:00"), perth, wa, true},
		{"open before midnight", openFilter{now: true}, at("Australia/Sydney", "2026-02-06 23:59"), lateFriday, nsw, true},
		{"closed at midnight (24:00)", openFilter{now: true}, at("Australia/Sydney", "2026-02-07 00:00"), lateFriday, nsw, false},
		{"closed on Australia Day", openFilter{now: true}, at("Australia/Sydney", "2026-01-26 10:00"), sydney, nsw, false},
		{"open on Australia Day when hours say so", openFilter{now: true}, at("Australia/Sydney", "2026-01-26 10:00"), holidayOpen, nsw, true},
		{"closed on Western Australia Day in WA", openFilter{now: true}, at("Australia/Perth", "2026-06-01 10:00"), perth, wa, false},
		{"open on Western Australia Day in NSW", openFilter{now: true}, at("Australia/Sydney", "2026-06-01 10:00"), sydney, nsw, true},
		{"open on public holidays", openFilter{holidays: true}, at("Australia/Sydney", "2026-02-02 10:00"), holidayOpen, nsw, true},
		{"closed on public holidays", openFilter{holidays: true}, at("Australia/Sydney", "2026-02-02 10:00"), sydney, nsw, false},
		{"open on weekends", openFilter{days: dayNames["weekends"]}, time.Time{}, weekend, nsw, true},
		{"not on weekends", openFilter{days: dayNames["weekends"]}, time.Time{}, sydney, nsw, false},
		{"open across 10:00 to 12:00 on weekdays", openFilter{days: dayNames["weekdays"], from: "10:00", to: "12:00"}, time.Time{}, sydney, nsw, true},
		{"not across 08:00 to 12:00", openFilter{from: "08:00", to: "12:00"}, time.Time{}, sydney, nsw, false},
		{"after hours on a Friday night", openFilter{afterHours: true}, time.Time{}, lateFriday, nsw, true},
		{"after hours on a Saturday", openFilter{afterHours: true}, time.Time{}, weekend, nsw, true},
		{"not after hours", openFilter{afterHours: true}, time.Time{}, sydney, nsw, false},
		{"no hours are never open", openFilter{now: true}, at("Australia/Sydney", "2026-02-02 10:00"), nil, nsw, false},
		{"always open", openFilter{now: true, afterHours: true, holidays: true}, at("Australia/Sydney", "2026-01-26 03:00"),
			&dirsvc.OpeningHours{TimeZone: "Australia/Sydney", Always: true}, nsw, true},
	}
	for _, c := range cases {
		if got := c.filter.matcher(c.now, "AU")(c.hours, c.areas); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	if (openFilter{}).matcher(time.Now(), "AU") != nil {
		t.Error("no open-state parameter still filters")
	}
}
