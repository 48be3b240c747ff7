package edge

import (
	"strings"
	"sync"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/rickar/cal/v2"
	"github.com/rickar/cal/v2/au"
	"github.com/rickar/cal/v2/nz"
)

// holidayLists are the public holidays of each Australian state and territory (areas state:<code>)
// and of New Zealand.
var holidayLists = map[string][]*cal.Holiday{
	"AU:act": au.HolidaysACT, "AU:nsw": au.HolidaysNSW, "AU:nt": au.HolidaysNT, "AU:qld": au.HolidaysQLD,
	"AU:sa": au.HolidaysSA, "AU:tas": au.HolidaysTAS, "AU:vic": au.HolidaysVIC, "AU:wa": au.HolidaysWA,
	"NZ": nz.Holidays,
}

// holidaysIn returns the public holidays where a record is, from its directory's country and its
// state:<code> area; nil where none are known (hours then follow the week).
func holidaysIn(country string, areas []string) dirsvc.Holidays {
	key := country
	if country == "AU" {
		for _, a := range areas {
			if state, ok := strings.CutPrefix(a, "state:"); ok {
				key = "AU:" + strings.ToLower(state)
				break
			}
		}
	}
	list, ok := holidayLists[key]
	if !ok {
		return nil
	}
	return func(d time.Time) bool {
		y, m, day := d.Date()
		return holidayDates(key, list, y)[dateOf(m, day)]
	}
}

// dateOf numbers a day of a year by its month and day.
func dateOf(m time.Month, day int) int { return int(m)*32 + day }

// holidayYears keeps, by list and year, the dates of its holidays (actual and observed): working
// them out costs far more than looking one up, and an open-now search asks for each service found.
var holidayYears sync.Map // holidayYear -> map[int]bool

type holidayYear struct {
	list string
	year int
}

// holidayDates returns the dates of a list's holidays in a year (dateOf), working them out once.
func holidayDates(key string, list []*cal.Holiday, y int) map[int]bool {
	k := holidayYear{key, y}
	if v, ok := holidayYears.Load(k); ok {
		return v.(map[int]bool)
	}
	dates := map[int]bool{}
	for _, h := range list {
		actual, observed := h.Calc(y)
		for _, t := range []time.Time{actual, observed} {
			if ty, tm, td := t.Date(); !t.IsZero() && ty == y {
				dates[dateOf(tm, td)] = true
			}
		}
	}
	v, _ := holidayYears.LoadOrStore(k, dates)
	return v.(map[int]bool)
}
