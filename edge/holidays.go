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
	return holidayFuncs[holidayKey(country, areas)]
}

// holidayKey names the holiday list (holidayLists) that applies where a record is: the directory's
// country, or in Australia its state (the first state:<code> area); a name no list has where none
// is known.
func holidayKey(country string, areas []string) string {
	if country != "AU" {
		return country
	}
	for _, a := range areas {
		if state, ok := strings.CutPrefix(a, "state:"); ok {
			if k, ok := auStates[state]; ok {
				return k
			}
			return "AU:" + strings.ToLower(state)
		}
	}
	return country
}

// holidayFuncs are the Holidays of each list, and auStates the lists' keys by lower-case state code:
// made once, so that a search's hundreds of cards look their holidays up without allocating.
var holidayFuncs, auStates = func() (map[string]dirsvc.Holidays, map[string]string) {
	funcs, states := map[string]dirsvc.Holidays{}, map[string]string{}
	for key, list := range holidayLists {
		funcs[key] = func(d time.Time) bool {
			y, m, day := d.Date()
			return holidayDates(key, list, y)[dateOf(m, day)]
		}
		if state, ok := strings.CutPrefix(key, "AU:"); ok {
			states[state] = key
		}
	}
	return funcs, states
}()

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
