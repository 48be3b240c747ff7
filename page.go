package dirsvc

import (
	"slices"
	"sync"
	"time"
)

// ServiceCard is a service as listed on a location or organisation page.
type ServiceCard struct {
	PublicID     string `json:"publicId"`
	Slug         string `json:"slug"`
	Name         string `json:"name"`
	TypeDisplay  string `json:"typeDisplay"`
	CategoryIcon string `json:"categoryIcon"`
}

// CardOf returns the card of a service view.
func CardOf(v *ServiceView) ServiceCard {
	return ServiceCard{PublicID: v.PublicID, Slug: v.Slug, Name: v.Name, TypeDisplay: v.TypeDisplay,
		CategoryIcon: v.CategoryIcon}
}

// ServicePage is the default representation of a service: the brief view with its organisation,
// location and practitioner roles expanded.
type ServicePage struct {
	ServiceView
	Organisation *OrganisationView `json:"organisation"`
	Location     *LocationView     `json:"location,omitempty"`
	Roles        []RoleView        `json:"roles"`
	OpenStatus   OpenStatus        `json:"openStatus"`
}

// LocationPage is the default representation of a location: the brief view with its organisation
// expanded and its services.
type LocationPage struct {
	LocationView
	Organisation *OrganisationView `json:"organisation"`
	Services     []ServiceCard     `json:"services"`
	OpenStatus   OpenStatus        `json:"openStatus"`
}

// OrganisationLocation is an item of an organisation page's locations.
type OrganisationLocation struct {
	PublicID        string        `json:"publicId"`
	Name            string        `json:"name"`
	Area            string        `json:"area"`
	Address         []string      `json:"address"` // display lines, or null when withheld
	AddressWithheld bool          `json:"addressWithheld"`
	Point           *Point        `json:"point"`
	OpenStatus      OpenStatus    `json:"openStatus"`
	Services        []ServiceCard `json:"services"`
}

// OrganisationPage is the default representation of an organisation: the brief view with every site
// the caller may see and its services.
type OrganisationPage struct {
	OrganisationView
	Locations []OrganisationLocation `json:"locations"`
	Services  []ServiceCard          `json:"services"`
}

// PractitionerPage is a practitioner with view=page: the brief view with their active roles and the
// directory's services those roles are at.
type PractitionerPage struct {
	PractitionerView
	Roles    []RoleView    `json:"roles"`
	Services []ServiceCard `json:"services"`
}

// AddressLines returns the display lines of an address: street lines, then locality, state and
// postcode.
func AddressLines(a *AddressView) []string {
	if a == nil {
		return nil
	}
	lines := slices.Clone(a.Lines)
	last := a.Locality
	for _, s := range []string{a.State, a.Postcode} {
		if s != "" {
			last += " " + s
		}
	}
	return append(lines, last)
}

// Open states.
const (
	OpenNow     = "open"
	ClosedNow   = "closed"
	OpenUnknown = "unknown"
)

// OpenStatus says whether something is open at a moment, with a detail for people.
type OpenStatus struct {
	Status string `json:"status"`
	Detail string `json:"detail"`
}

func (s OpenStatus) rank() int {
	switch s.Status {
	case OpenNow:
		return 2
	case ClosedNow:
		return 1
	}
	return 0
}

// Best returns the better of two states: open over closed over unknown.
func (s OpenStatus) Best(o OpenStatus) OpenStatus {
	if o.rank() > s.rank() {
		return o
	}
	return s
}

// zones caches time zones: time.LoadLocation reads and parses the zone's data on every call.
var zones sync.Map // name -> *time.Location

// LoadZone returns the IANA time zone with the name, as time.LoadLocation does, loading each once.
func LoadZone(name string) (*time.Location, error) {
	if l, ok := zones.Load(name); ok {
		return l.(*time.Location), nil
	}
	l, err := time.LoadLocation(name)
	if err != nil {
		return nil, err
	}
	zones.Store(name, l)
	return l, nil
}

// Today returns the date (YYYY-MM-DD) at the instant now in the IANA time zone named zone, or in UTC
// when the name is empty or unknown: the day against which appointments are current.
func Today(now time.Time, zone string) string {
	if z, err := LoadZone(zone); err == nil && zone != "" {
		now = now.In(z)
	}
	return now.Format(time.DateOnly)
}

// EarliestToday returns the date at the instant now in the time zone furthest behind UTC (UTC-12):
// an appointment current there is current somewhere, and none that has ended everywhere is.
func EarliestToday(now time.Time) string { return now.UTC().Add(-12 * time.Hour).Format(time.DateOnly) }

// Holidays reports whether a date (its year, month and day, whatever its zone) is a public holiday
// where the hours apply.
type Holidays func(date time.Time) bool

// StatusAt returns whether hours h are open at t, in the hours' own time zone: dates listed as
// exceptions first, then public holidays as the hours say, then the week.
func StatusAt(h *OpeningHours, t time.Time, holiday Holidays) OpenStatus {
	words := directoryLabels
	if h == nil {
		return OpenStatus{Status: OpenUnknown, Detail: words.openDetail(OpenHoursNotListed, "", "")}
	}
	if h.Always {
		return OpenStatus{Status: OpenNow, Detail: words.openDetail(OpenAllHours, "", "")}
	}
	loc, err := LoadZone(h.TimeZone)
	if err != nil {
		return OpenStatus{Status: OpenUnknown, Detail: words.openDetail(OpenHoursNotListed, "", "")}
	}
	t = t.In(loc)
	now := t.Format("15:04")
	for day := 0; day < 8; day++ {
		d := t.AddDate(0, 0, day)
		for _, iv := range intervalsOn(h, d, holiday) {
			switch {
			case day == 0 && iv.Open <= now && now < iv.Close:
				return OpenStatus{Status: OpenNow, Detail: words.openDetail(OpenUntil, iv.Close, "")}
			case day == 0 && now < iv.Open:
				return OpenStatus{Status: ClosedNow, Detail: words.openDetail(OpensAt, iv.Open, "")}
			case day == 1:
				return OpenStatus{Status: ClosedNow, Detail: words.openDetail(OpensTomorrowAt, iv.Open, "")}
			case day > 1:
				return OpenStatus{Status: ClosedNow, Detail: words.openDetail(OpensOnAt, iv.Open, weekdayCodes[d.Weekday()])}
			}
		}
	}
	return OpenStatus{Status: ClosedNow, Detail: words.openDetail(OpenClosed, "", "")}
}

// weekdayCodes are the codes of the family LabelWeekdays, Sunday first.
var weekdayCodes = [...]string{"sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"}

var weekdays = [...]string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}

// intervalsOn returns the opening intervals on the local date of d: a listed exception, else the
// public-holiday hours on a holiday, else the week's.
func intervalsOn(h *OpeningHours, d time.Time, holiday Holidays) []Interval {
	date := d.Format(time.DateOnly)
	for _, x := range h.Exceptions {
		if x.Date == date {
			if x.Closed {
				return nil
			}
			return x.Intervals
		}
	}
	if holiday != nil && holiday(d) {
		switch h.PublicHolidays {
		case "closed":
			return nil
		case "hours":
			return h.HolidayIntervals
		}
	}
	var out []Interval
	for _, w := range h.Weekly {
		if w.Day == weekdays[d.Weekday()] {
			out = append(out, w.Intervals...)
		}
	}
	slices.SortFunc(out, func(a, b Interval) int {
		if a.Open < b.Open {
			return -1
		}
		if a.Open > b.Open {
			return 1
		}
		return 0
	})
	return out
}
