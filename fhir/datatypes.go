package fhir

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strings"

	"github.com/dirsvc/dirsvc"
)

var errUnknownView = errors.New("fhir: not a view of a record kind")

// identifierTypes are the Identifier.type of the identifier types the service knows, as AU Base
// 6.0.0 fixes them (HPI-O, HPI-I, Ahpra and NPIO have patterns there; ABN and ACN are business
// identifiers).
var identifierTypes = map[string]*CodeableConcept{
	dirsvc.IdentHPIO:  {Coding: []Coding{{System: auV20203, Code: "NOI", Display: "National Organisation Identifier"}}, Text: "HPI-O"},
	dirsvc.IdentHPII:  {Coding: []Coding{{System: v20203, Code: "NPI", Display: "National provider identifier"}}, Text: "HPI-I"},
	dirsvc.IdentAhpra: {Coding: []Coding{{System: auV20203, Code: "AHPRA", Display: "Ahpra Registration Number"}}, Text: "Ahpra registration number"},
	dirsvc.IdentNPIO:  {Coding: []Coding{{System: auV20203, Code: "NPIO", Display: "National Provider Identifier at Organisation"}}, Text: "NPIO"},
	dirsvc.IdentABN:   {Coding: []Coding{{System: v20203, Code: "XX", Display: "Organization identifier"}}, Text: "ABN"},
	dirsvc.IdentACN:   {Coding: []Coding{{System: v20203, Code: "XX", Display: "Organization identifier"}}, Text: "ACN"},
	dirsvc.IdentNZBN:  {Coding: []Coding{{System: v20203, Code: "XX", Display: "Organization identifier"}}, Text: "NZBN"},
	"nz_hpi_person":   {Coding: []Coding{{System: v20203, Code: "PRN", Display: "Provider number"}}, Text: "HPI person identifier"},
}

// identifiers maps the identifiers the view carries. An identifier of a type the service does not
// name carries its own type as text.
func (m *Mapper) identifiers(ids []dirsvc.IdentifierView) []Identifier {
	var out []Identifier
	for _, id := range ids {
		i := Identifier{Use: "official", System: id.System, Value: id.Value}
		if t, ok := identifierTypes[id.Type]; ok {
			i.Type = t // shared, read only
		} else if id.Type != "" {
			i.Use = "secondary"
			i.Type = &CodeableConcept{Text: id.Type}
		}
		if id.Type == dirsvc.IdentAhpra || id.Type == dirsvc.IdentHPII || id.Type == dirsvc.IdentHPIO {
			i.Value = strings.ReplaceAll(i.Value, " ", "")
		}
		out = append(out, i)
	}
	return out
}

// setIdentifiers sets the values of the identifier parameter: the system|value pairs of ids.
func (r *draft) setIdentifiers(ids []Identifier) {
	if r.search == nil {
		return
	}
	out := make([]string, 0, len(ids))
	for _, i := range ids {
		out = append(out, i.System+"|"+i.Value)
	}
	r.search["identifier"] = out
}

// telecomOf maps a contact kind to a ContactPoint system and use.
var telecomOf = map[dirsvc.ContactKind][2]string{
	dirsvc.ContactPhone: {"phone", "work"}, dirsvc.ContactMobile: {"phone", "mobile"},
	dirsvc.ContactFreecall: {"phone", "work"}, dirsvc.ContactLocalRate: {"phone", "work"},
	dirsvc.ContactFax: {"fax", "work"}, dirsvc.ContactSMS: {"sms", "mobile"}, dirsvc.ContactTTY: {"other", "work"},
	dirsvc.ContactEmail: {"email", "work"}, dirsvc.ContactWebsite: {"url", "work"}, dirsvc.ContactOther: {"other", "work"},
}

// telecoms maps contacts (phone-like values are E.164 already in every view).
func telecoms(cs []dirsvc.ContactView) []ContactPoint {
	var out []ContactPoint
	for _, c := range cs {
		su, ok := telecomOf[c.Kind]
		if !ok || c.Value == "" {
			continue
		}
		out = append(out, ContactPoint{System: su[0], Value: c.Value, Use: su[1]})
	}
	return out
}

// auStates are the states au-address allows.
var auStates = map[string]bool{"ACT": true, "NSW": true, "NT": true, "OTHER": true, "QLD": true, "SA": true, "TAS": true, "VIC": true, "WA": true}

// address maps an address as shown; nil for none. In an Australian directory it meets au-address:
// lines or text, a four-digit postcode, a state from the list, country AU.
func (m *Mapper) address(a *dirsvc.AddressView, typ string) *Address {
	if a == nil {
		return nil
	}
	out := &Address{Use: "work", Type: typ, Line: a.Lines, City: a.Locality, State: a.State, PostalCode: a.Postcode, Country: a.Country}
	parts := append([]string{}, a.Lines...)
	parts = append(parts, strings.TrimSpace(strings.Join([]string{a.Locality, a.State, a.Postcode}, " ")))
	out.Text = strings.Join(nonEmpty(parts), ", ")
	if a.Country == "AU" {
		if out.State = strings.ToUpper(a.State); out.State != "" && !auStates[out.State] {
			out.State = ""
		}
		if !fourDigits(a.Postcode) {
			out.PostalCode = ""
		}
	}
	return out
}

// searchAddress records the address's values for the address parameters.
func (r *draft) searchAddress(a *Address) {
	if r.search == nil {
		return
	}
	r.search["address"] = append(append(r.search["address"], a.Text, a.City, a.State, a.PostalCode, a.Country), a.Line...)
	r.search["address-city"] = append(r.search["address-city"], a.City)
	r.search["address-state"] = append(r.search["address-state"], a.State)
	r.search["address-postalcode"] = append(r.search["address-postalcode"], a.PostalCode)
}

func nonEmpty(ss []string) []string {
	out := ss[:0]
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

func fourDigits(s string) bool {
	if len(s) != 4 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// tz is the timezone extension of an opening time.
func tz(zone string) *Element {
	if zone == "" {
		return nil
	}
	return &Element{Extension: []Extension{{URL: timezoneURL, ValueCode: zone}}}
}

// fhirTime writes "HH:MM" as a FHIR time; the end of the day ("24:00") is its last second.
func fhirTime(hm string) string {
	if t, ok := fhirTimes[hm]; ok {
		return t
	}
	return hm + ":00"
}

// fhirTimes are the FHIR times of every minute of the day, made once.
var fhirTimes = func() map[string]string {
	ts := map[string]string{"24:00": "23:59:59"}
	for m := range 24 * 60 {
		hm := fmt.Sprintf("%02d:%02d", m/60, m%60)
		ts[hm] = hm + ":00"
	}
	return ts
}()

var days = []string{"mon", "tue", "wed", "thu", "fri", "sat", "sun"}

// opening is one interval of the week and the days open at those times.
type opening struct {
	days        []string
	open, close string
}

// openings groups the week's intervals by their times: the days open at the same times share one
// entry (Monday to Friday 08:30 to 17:00 is one availableTime, not five), as FHIR's daysOfWeek
// allows. Entries come in the order their times first appear in the week, each entry's days in
// weekly order; a run of days (mon to fri) shares the one list of days, other sets get their own.
func openings(weekly []dirsvc.WeeklyHours) []opening {
	type times struct{ open, close string }
	var (
		order []times
		on    []uint8 // per entry of order, a bit per day of days
	)
	for _, d := range weekly {
		day := slices.Index(days, d.Day)
		if day < 0 {
			continue // validation admits only the seven days
		}
		for _, iv := range d.Intervals {
			i := slices.Index(order, times{iv.Open, iv.Close})
			if i < 0 {
				i = len(order)
				order, on = append(order, times{iv.Open, iv.Close}), append(on, 0)
			}
			on[i] |= 1 << day
		}
	}
	out := make([]opening, len(order))
	for i, t := range order {
		out[i] = opening{days: daysOf(on[i]), open: fhirTime(t.open), close: fhirTime(t.close)}
	}
	return out
}

// daysOf returns the days of a set of bits (bit i for days[i]): a run shares days' backing array
// (read only, capped so that no append can reach past it), any other set is a new list.
func daysOf(set uint8) []string {
	lo := bits.TrailingZeros8(set)
	n := bits.OnesCount8(set)
	if set>>lo == 1<<n-1 {
		return days[lo : lo+n : lo+n]
	}
	out := make([]string, 0, n)
	for i, d := range days {
		if set&(1<<i) != 0 {
			out = append(out, d)
		}
	}
	return out
}

// availableTimes maps opening hours to a HealthcareService's availableTime (the days open at the
// same times in one entry, each time with the timezone extension), notAvailable (dates it is
// closed) and availabilityExceptions (public holidays and after-hours arrangements, as text).
func availableTimes(h *dirsvc.OpeningHours) ([]AvailableTime, []NotAvailable, string) {
	if h == nil {
		return nil, nil, ""
	}
	week := openings(h.Weekly)
	var out []AvailableTime
	if h.Always || len(week) > 0 {
		out = make([]AvailableTime, 0, len(week)+1)
	}
	if h.Always {
		out = append(out, AvailableTime{DaysOfWeek: days, AllDay: true})
	}
	zone := tz(h.TimeZone) // one for all the times (the same JSON each time)
	for _, o := range week {
		out = append(out, AvailableTime{DaysOfWeek: o.days, AvailableStartTime: o.open,
			XAvailableStartTime: zone, AvailableEndTime: o.close, XAvailableEndTime: zone})
	}
	var na []NotAvailable
	for _, e := range h.Exceptions {
		if e.Closed {
			desc := e.Note
			if desc == "" {
				desc = "Closed"
			}
			na = append(na, NotAvailable{Description: desc, During: &Period{Start: e.Date, End: e.Date}})
		}
	}
	return out, na, exceptions(h)
}

// hoursOfOperation maps opening hours to a Location's hoursOfOperation, grouped as availableTimes.
func hoursOfOperation(h *dirsvc.OpeningHours) ([]HoursOfOperation, string) {
	if h == nil {
		return nil, ""
	}
	week := openings(h.Weekly)
	var out []HoursOfOperation
	if h.Always || len(week) > 0 {
		out = make([]HoursOfOperation, 0, len(week)+1)
	}
	if h.Always {
		out = append(out, HoursOfOperation{DaysOfWeek: days, AllDay: true})
	}
	zone := tz(h.TimeZone)
	for _, o := range week {
		out = append(out, HoursOfOperation{DaysOfWeek: o.days, OpeningTime: o.open,
			XOpeningTime: zone, ClosingTime: o.close, XClosingTime: zone})
	}
	return out, exceptions(h)
}

func exceptions(h *dirsvc.OpeningHours) string {
	var parts []string
	switch h.PublicHolidays {
	case "closed":
		parts = append(parts, "Closed on public holidays.")
	case "open":
		parts = append(parts, "Usual hours on public holidays.")
	case "hours":
		var ivs []string
		for _, iv := range h.HolidayIntervals {
			ivs = append(ivs, iv.Open+"-"+iv.Close)
		}
		parts = append(parts, "On public holidays: "+strings.Join(ivs, ", ")+".")
	}
	if h.AfterHours != "" {
		parts = append(parts, h.AfterHours)
	}
	return strings.Join(parts, " ")
}
