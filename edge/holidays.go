package edge

import (
	"strings"
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
		for _, h := range list {
			actual, observed := h.Calc(y)
			for _, t := range []time.Time{actual, observed} {
				if ty, tm, td := t.Date(); !t.IsZero() && ty == y && tm == m && td == day {
					return true
				}
			}
		}
		return false
	}
}
