package dirsvc_test

import (
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
)

func TestStatusAt(t *testing.T) {
	weekdays := func(open, close string) []dirsvc.WeeklyHours {
		var w []dirsvc.WeeklyHours
		for _, d := range []string{"mon", "tue", "wed", "thu", "fri"} {
			w = append(w, dirsvc.WeeklyHours{Day: d, Intervals: []dirsvc.Interval{{Open: open, Close: close}}})
		}
		return w
	}
	sydney, _ := time.LoadLocation("Australia/Sydney")
	at := func(date, clock string) time.Time {
		t, err := time.ParseInLocation("2006-01-02 15:04", date+" "+clock, sydney)
		if err != nil {
			panic(err)
		}
		return t.UTC() // the hours' zone, not the caller's, decides
	}
	christmas := func(d time.Time) bool { return d.Format("01-02") == "12-25" }
	h := &dirsvc.OpeningHours{TimeZone: "Australia/Sydney", Weekly: weekdays("09:00", "17:00"), PublicHolidays: "closed",
		Exceptions: []dirsvc.DateHours{{Date: "2026-12-24", Intervals: []dirsvc.Interval{{Open: "09:00", Close: "12:00"}}}}}
	for _, c := range []struct {
		name   string
		h      *dirsvc.OpeningHours
		t      time.Time
		want   dirsvc.OpenStatus
		public dirsvc.Holidays
	}{
		{"open on a weekday", h, at("2026-11-23", "10:00"), dirsvc.OpenStatus{Status: "open", Detail: "Open until 17:00"}, christmas},
		{"before opening", h, at("2026-11-23", "08:00"), dirsvc.OpenStatus{Status: "closed", Detail: "Opens at 09:00"}, christmas},
		{"after closing on Friday", h, at("2026-11-27", "18:00"), dirsvc.OpenStatus{Status: "closed", Detail: "Opens Monday at 09:00"}, christmas},
		{"a listed exception wins", h, at("2026-12-24", "13:00"), dirsvc.OpenStatus{Status: "closed", Detail: "Opens Monday at 09:00"}, christmas},
		{"closed on a public holiday", h, at("2026-12-25", "10:00"), dirsvc.OpenStatus{Status: "closed", Detail: "Opens Monday at 09:00"}, christmas},
		{"holidays unknown: the week", h, at("2026-12-25", "10:00"), dirsvc.OpenStatus{Status: "open", Detail: "Open until 17:00"}, nil},
		{"holiday hours", &dirsvc.OpeningHours{TimeZone: "Australia/Sydney", Weekly: weekdays("09:00", "17:00"), PublicHolidays: "hours",
			HolidayIntervals: []dirsvc.Interval{{Open: "10:00", Close: "14:00"}}}, at("2026-12-25", "13:00"), dirsvc.OpenStatus{Status: "open", Detail: "Open until 14:00"}, christmas},
		{"always open", &dirsvc.OpeningHours{Always: true}, at("2026-12-25", "03:00"), dirsvc.OpenStatus{Status: "open", Detail: "Open 24 hours"}, christmas},
		{"no hours", nil, at("2026-12-25", "03:00"), dirsvc.OpenStatus{Status: "unknown", Detail: "Hours not listed"}, christmas},
	} {
		if got := dirsvc.StatusAt(c.h, c.t, c.public); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}
