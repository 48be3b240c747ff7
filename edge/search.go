package edge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dirsvc/dirsvc"
)

// Search bounds of sections 4.2.1 and 8.
const (
	defaultSearchLimit = 20
	maxSearchLimit     = 100
	maxSearchOffset    = 10000
	maxSearchText      = 200
	maxLocality        = 100
	maxRadiusKm        = 2000
)

// searchParams are the query parameters of GET search/services (section 4.2.1).
var searchParams = []param{{name: "q"}, {name: "near"}, {name: "locality"}, {name: "postcode"}, {name: "radiusKm"},
	{name: "includeCatchment"}, typeParam, categoryParam, {name: "cost", list: true}, {name: "delivery", list: true},
	{name: "facility", list: true}, {name: "language", list: true}, {name: "targetGroup", list: true},
	{name: "program", list: true}, {name: "openNow"}, {name: "openOn"}, {name: "openFrom"}, {name: "openTo"},
	{name: "afterHours"}, {name: "publicHolidays"}, {name: "appointment"}, {name: "referral"}, {name: "area"},
	{name: "ownership", list: true}, {name: "group"}, {name: "sort"}, limitParam, {name: "offset"}, {name: "spell"}}

var (
	nearRE     = regexp.MustCompile(`^(-?\d{1,3}(?:\.\d{1,12})?),(-?\d{1,3}(?:\.\d{1,12})?)$`)
	postcodeRE = regexp.MustCompile(`^\d{4}$`)
	clockRE    = regexp.MustCompile(`^([01]\d|2[0-3]):[0-5]\d$|^24:00$`)
)

// searchRequest is a search/services query as read: what dirdb searches for, and what shapes the
// answer.
type searchRequest struct {
	dirsvc.SearchQuery
	group    string // "organisation" to answer as organisations
	locality string // a place asked for by name
	open     openFilter
}

// openFilter is what the open-state parameters ask: open now, on some days, across a window of the
// day, after hours, or on public holidays.
type openFilter struct {
	now, afterHours, holidays bool
	days                      []time.Weekday // nil for any day
	from, to                  string         // HH:MM, both or neither
}

func (f openFilter) any() bool {
	return f.now || f.afterHours || f.holidays || f.days != nil || f.from != ""
}

// boolParam reads a true/false parameter; def when not given.
func boolParam(q query, name string, def bool) (bool, error) {
	switch v, err := q.oneOf(name, "true", "false"); {
	case err != nil:
		return false, err
	case v == "":
		return def, nil
	default:
		return v == "true", nil
	}
}

// readSearch reads and checks every parameter of a search; a bad one is a 400 naming it.
func readSearch(q query) (searchRequest, error) {
	var sr searchRequest
	sq := &sr.SearchQuery
	text, _ := q.get("q")
	if utf8.RuneCountInString(text) > maxSearchText {
		return sr, dirsvc.InvalidParam("q", "q is at most %d characters", maxSearchText)
	}
	sq.Text = strings.TrimSpace(text)
	if v, ok := q.get("near"); ok {
		m := nearRE.FindStringSubmatch(v)
		if m == nil {
			return sr, dirsvc.InvalidParam("near", "near must be latitude,longitude as two decimal numbers")
		}
		lat, _ := strconv.ParseFloat(m[1], 64)
		lon, _ := strconv.ParseFloat(m[2], 64)
		if lat < -90 || lat > 90 || lon < -180 || lon > 180 {
			return sr, dirsvc.InvalidParam("near", "near must be a latitude from -90 to 90 and a longitude from -180 to 180")
		}
		sq.Near = &dirsvc.Point{Lat: lat, Lon: lon}
	}
	if v, ok := q.get("locality"); ok {
		if strings.TrimSpace(v) == "" || utf8.RuneCountInString(v) > maxLocality {
			return sr, dirsvc.InvalidParam("locality", "locality is 1 to %d characters", maxLocality)
		}
		sr.locality = strings.TrimSpace(v)
	}
	if v, ok := q.get("radiusKm"); ok {
		r, err := strconv.ParseFloat(v, 64)
		if err != nil || strings.ContainsAny(v, "eEinfINFxX") || !(r > 0 && r <= maxRadiusKm) {
			return sr, dirsvc.InvalidParam("radiusKm", "radiusKm must be a number greater than 0 and at most %d", maxRadiusKm)
		}
		if sq.Near == nil {
			return sr, dirsvc.InvalidParam("radiusKm", "radiusKm needs near")
		}
		sq.RadiusKm = r
	}
	catchment, err := boolParam(q, "includeCatchment", true)
	if err != nil {
		return sr, err
	}
	sq.LocatedOnly = !catchment
	if sq.Areas, err = areaParams(q); err != nil {
		return sr, err
	}
	for _, f := range []struct {
		name  string
		dst   *[]string
		valid func(string) bool
	}{
		{"type", &sq.Types, dirsvc.ValidCode},
		{"category", &sq.Categories, dirsvc.ValidCode}, // a code or a slug
		{"cost", &sq.Costs, dirsvc.ValidCode},
		{"delivery", &sq.Delivery, dirsvc.ValidCode},
		{"facility", &sq.Facilities, dirsvc.ValidCode},
		{"language", &sq.Languages, dirsvc.ValidCode},
		{"targetGroup", &sq.TargetGroups, dirsvc.ValidCode},
		{"program", &sq.Programs, dirsvc.ValidCode},
		{"ownership", &sq.Ownership, dirsvc.ValidCode},
	} {
		if *f.dst, err = q.list(f.name, f.valid); err != nil {
			return sr, err
		}
	}
	if sr.open, err = readOpen(q); err != nil {
		return sr, err
	}
	if sq.Appointment, err = q.oneOf("appointment", dirsvc.AppointmentRequired, dirsvc.AppointmentNotRequired); err != nil {
		return sr, err
	}
	referral, err := q.oneOf("referral", "self")
	if err != nil {
		return sr, err
	}
	sq.SelfReferral = referral == "self"
	if sr.group, err = q.oneOf("group", "organisation"); err != nil {
		return sr, err
	}
	if sq.Sort, err = q.oneOf("sort", dirsvc.SortRelevance, dirsvc.SortDistance, dirsvc.SortName); err != nil {
		return sr, err
	}
	if sq.Sort == dirsvc.SortDistance && sq.Near == nil {
		return sr, dirsvc.InvalidParam("sort", "sort=distance needs near")
	}
	if sq.Limit, err = q.limit(defaultSearchLimit, maxSearchLimit); err != nil {
		return sr, err
	}
	if sq.Offset, err = q.offset(maxSearchOffset); err != nil {
		return sr, err
	}
	spell, err := q.oneOf("spell", "off")
	if err != nil {
		return sr, err
	}
	sq.Spell = spell != "off"
	return sr, nil
}

var dayNames = map[string][]time.Weekday{
	"any":      nil,
	"weekdays": {time.Monday, time.Tuesday, time.Wednesday, time.Thursday, time.Friday},
	"weekends": {time.Saturday, time.Sunday},
	"mon":      {time.Monday}, "tue": {time.Tuesday}, "wed": {time.Wednesday}, "thu": {time.Thursday},
	"fri": {time.Friday}, "sat": {time.Saturday}, "sun": {time.Sunday},
}

// readOpen reads the open-state parameters.
func readOpen(q query) (openFilter, error) {
	var f openFilter
	var err error
	if f.now, err = boolParam(q, "openNow", false); err != nil {
		return f, err
	}
	if f.afterHours, err = boolParam(q, "afterHours", false); err != nil {
		return f, err
	}
	if f.holidays, err = boolParam(q, "publicHolidays", false); err != nil {
		return f, err
	}
	if v, ok := q.get("openOn"); ok {
		days, known := dayNames[v]
		if !known {
			return f, dirsvc.InvalidParam("openOn", "openOn must be any, weekdays, weekends, mon, tue, wed, thu, fri, sat or sun")
		}
		f.days = days
	}
	from, hasFrom := q.get("openFrom")
	to, hasTo := q.get("openTo")
	for _, c := range []struct {
		name, v string
		given   bool
	}{{"openFrom", from, hasFrom}, {"openTo", to, hasTo}} {
		if c.given && !clockRE.MatchString(c.v) {
			return f, dirsvc.InvalidParam(c.name, "%s must be a time of day as HH:MM", c.name)
		}
	}
	switch {
	case hasFrom != hasTo:
		name := "openTo"
		if !hasFrom {
			name = "openFrom"
		}
		return f, dirsvc.InvalidParam(name, "openFrom and openTo go together")
	case hasFrom && from >= to:
		return f, dirsvc.InvalidParam("openTo", "openTo must be after openFrom")
	}
	f.from, f.to = from, to
	return f, nil
}

// matcher returns the predicate of the open-state filters at the instant now, for services of the
// directory's country: whether hours (in their own time zone, with the public holidays of the state
// the service's areas name) are open as asked.
func (f openFilter) matcher(now time.Time, country string) func(h *dirsvc.OpeningHours, areas []string) bool {
	if !f.any() {
		return nil
	}
	return func(h *dirsvc.OpeningHours, areas []string) bool {
		if h == nil {
			return false
		}
		holidays := holidaysIn(country, areas)
		if f.now && dirsvc.StatusAt(h, now, holidays).Status != dirsvc.OpenNow {
			return false
		}
		if h.Always {
			return true
		}
		if f.holidays && h.PublicHolidays != "open" && h.PublicHolidays != "hours" {
			return false
		}
		week := map[time.Weekday][]dirsvc.Interval{}
		for _, w := range h.Weekly {
			if d := slices.Index(weekdayCodes[:], w.Day); d >= 0 {
				week[time.Weekday(d)] = append(week[time.Weekday(d)], w.Intervals...)
			}
		}
		days := f.days
		if days == nil {
			days = []time.Weekday{0, 1, 2, 3, 4, 5, 6}
		}
		onSomeDay := slices.ContainsFunc(days, func(d time.Weekday) bool {
			return slices.ContainsFunc(week[d], func(iv dirsvc.Interval) bool {
				return f.from == "" || iv.Open <= f.from && f.to <= iv.Close
			})
		})
		if (f.days != nil || f.from != "") && !onSomeDay {
			return false
		}
		if f.afterHours {
			after := slices.ContainsFunc([]time.Weekday{0, 1, 2, 3, 4, 5, 6}, func(d time.Weekday) bool {
				return slices.ContainsFunc(week[d], func(iv dirsvc.Interval) bool {
					return d == time.Saturday || d == time.Sunday || iv.Open < businessOpens || iv.Close > businessCloses
				})
			})
			if !after {
				return false
			}
		}
		return true
	}
}

// The business hours outside which a service open on a weekday is open after hours.
const (
	businessOpens  = "08:00"
	businessCloses = "18:00"
)

var weekdayCodes = [...]string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}

// SearchResults is the answer of GET search/services: result cards, the whole match set's total
// and facets, and how the query was read. By organisation it also carries the page's
// organisations and the services found in all.
type SearchResults struct {
	Results        []dirsvc.ResultCard  `json:"results"`
	Total          int                  `json:"total"`
	Limit          int                  `json:"limit"`
	Offset         int                  `json:"offset"`
	Facets         dirsvc.SearchFacets  `json:"facets"`
	Interpretation SearchInterpretation `json:"interpretation"`
	Organisations  []OrganisationHit    `json:"organisations,omitempty"`
	ServiceTotal   *int                 `json:"serviceTotal,omitempty"`
}

// OrganisationHit is an organisation of a search answered by organisation.
type OrganisationHit struct {
	PublicID string `json:"publicId"`
	Name     string `json:"name,omitempty"`
	Services int    `json:"services"`
}

// SearchInterpretation says how a search's query was read.
type SearchInterpretation struct {
	Query string `json:"q"`
	dirsvc.QueryReading
	Spell    bool          `json:"spell"`
	Near     *dirsvc.Point `json:"near"`
	RadiusKm *float64      `json:"radiusKm"`
	Areas    []string      `json:"areas"`
	Sort     string        `json:"sort"`
	Group    string        `json:"group,omitempty"`
}

// handleSearchServices answers GET search/services: the services the caller may find (its audience,
// inside its narrowing) that match the words, place and filters, as result cards.
func (s *Server) handleSearchServices(w http.ResponseWriter, r *http.Request) {
	b, err := s.startBrowse(r, searchParams...)
	var sr searchRequest
	if err == nil {
		sr, err = readSearch(b.q)
	}
	if err != nil {
		s.browseError(w, r, err)
		return
	}
	dir, info, viewer := b.dir, b.info, b.viewer
	now := s.cfg.Now()
	// Hours are kept to the minute: every search of a minute with the same open-state filter
	// gets the same answer for the same hours, which the directory may then work out once.
	minute := now.Truncate(time.Minute)
	if sr.Open = sr.open.matcher(minute, info.Country); sr.Open != nil {
		sr.OpenKey = fmt.Sprintf("%s %d %+v", info.Country, minute.Unix(), sr.open)
	}
	sr.ByOrganisation = sr.group == "organisation"
	if sr.locality != "" {
		sr.Place = localityPlace(sr.locality, info.Country)
	}
	if sr.Sort == "" {
		sr.Sort = dirsvc.SortRelevance
	}
	res, err := dir.SearchServices(r.Context(), viewer, sr.SearchQuery)
	if err != nil {
		s.error(w, r, err)
		return
	}
	ans := SearchResults{Total: res.Total, Limit: sr.Limit, Offset: sr.Offset,
		Facets: res.Facets.Listed(), Interpretation: SearchInterpretation{Query: sr.Text, QueryReading: res.Reading.Listed(), Spell: sr.Spell, Near: sr.Near,
			Areas: append([]string{}, sr.Areas...), Sort: sr.Sort, Group: sr.group}}
	if sr.RadiusKm > 0 {
		ans.Interpretation.RadiusKm = &sr.RadiusKm
	}
	if sr.ByOrganisation {
		ans.ServiceTotal = &res.ServiceTotal
		ans.Organisations = []OrganisationHit{}
		for _, o := range res.Organisations {
			ans.Organisations = append(ans.Organisations, OrganisationHit{o.PublicID, o.Name, o.Services})
		}
	}
	rd := &reading{dir: dir, info: info, viewer: viewer}
	results := make([]byte, 0, 64+len(res.Hits)*1024)
	results = append(results, '[')
	statuses := openStatuses{} // services found share hours (the index keeps one of each)
	for _, h := range res.Hits {
		if len(results) > 1 {
			results = append(results, ',')
		}
		n := len(results)
		if results, err = s.appendResultCard(r.Context(), rd, h, now, statuses, results); err != nil {
			s.error(w, r, err)
			return
		}
		if len(results) == n && n > 1 {
			results = results[:n-1] // no longer visible: no card, and no comma before it
		}
	}
	results = append(results, ']')
	body, err := withResults(ans, results)
	if err != nil {
		s.error(w, r, err)
		return
	}
	s.cacheTags(w, r, dirTag(r, "services"))
	s.writeLabelled(w, r, viewer.Audience, body)
}

// withResults returns the JSON of a search's answer with results, the JSON array of its result
// cards, as its results member (the answer's first: ans.Results is left nil and encoded as null).
func withResults(ans SearchResults, results []byte) ([]byte, error) {
	const head = `{"results":null`
	b, err := json.Marshal(ans)
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(b, []byte(head)) {
		return nil, errors.New("search: the answer does not begin with its results")
	}
	out := make([]byte, 0, len(b)+len(results))
	out = append(out, `{"results":`...)
	out = append(out, results...)
	return append(out, b[len(head):]...), nil
}

// appendResultCard appends the result card of a service found (see resultCard) to dst: from the
// card's kept encoding when the directory gave one, else encoded now; nothing when the service is
// no longer visible.
func (s *Server) appendResultCard(ctx context.Context, rd *reading, h dirsvc.SearchHit, now time.Time, statuses openStatuses, dst []byte) ([]byte, error) {
	if h.Card != nil && h.CardJSON != nil {
		return dirsvc.AppendCard(dst, h.CardJSON, roundedKm(h.DistanceKm), statuses.at(h.Hours, now, rd.info.Country, h.Areas))
	}
	card, ok, err := s.resultCard(ctx, rd, h, now)
	if err != nil || !ok {
		return dst, err
	}
	b, err := json.Marshal(card)
	if err != nil {
		return nil, err
	}
	return append(dst, b...), nil
}

// resultCard returns the result card of a service found: the card the directory gave with it, else
// one made from the caller's views of the service, its site and its roles (false when the service
// is no longer visible, a change since the search read it); with its distance and open status.
func (s *Server) resultCard(ctx context.Context, rd *reading, h dirsvc.SearchHit, now time.Time) (dirsvc.ResultCard, bool, error) {
	if h.Card != nil { // the directory's card of the caller's views
		card := *h.Card
		card.DistanceKm = roundedKm(h.DistanceKm)
		card.OpenStatus = dirsvc.StatusAt(h.Hours, now, holidaysIn(rd.info.Country, h.Areas))
		return card, true, nil
	}
	sv, err := viewOf[dirsvc.ServiceView](ctx, rd, h.PublicID)
	if err != nil || sv == nil {
		return dirsvc.ResultCard{}, false, err
	}
	var site *dirsvc.LocationView
	if sv.Location != nil {
		if site, err = viewOf[dirsvc.LocationView](ctx, rd, sv.Location.PublicID); err != nil {
			return dirsvc.ResultCard{}, false, err
		}
	}
	roles, err := relatedViews[dirsvc.RoleView](ctx, rd, dirsvc.KindRole, dirsvc.KindService, sv.PublicID)
	if err != nil {
		return dirsvc.ResultCard{}, false, err
	}
	card := dirsvc.ResultCardOf(sv, site, roles)
	card.DistanceKm = roundedKm(h.DistanceKm)
	card.OpenStatus = dirsvc.StatusAt(sv.Hours, now, holidaysIn(rd.info.Country, sv.Areas))
	return card, true, nil
}

// openStatuses keeps the open states one answer worked out, by hours and holiday list: the hours of
// services found are shared by the index (one *OpeningHours for all services with the same hours).
type openStatuses map[statusKey]dirsvc.OpenStatus

type statusKey struct {
	hours    *dirsvc.OpeningHours
	holidays string
}

// at returns the open status of hours at now where the areas are (see dirsvc.StatusAt).
func (st openStatuses) at(hours *dirsvc.OpeningHours, now time.Time, country string, areas []string) dirsvc.OpenStatus {
	k := statusKey{hours, holidayKey(country, areas)}
	if s, ok := st[k]; ok {
		return s
	}
	s := dirsvc.StatusAt(hours, now, holidayFuncs[k.holidays])
	st[k] = s
	return s
}

// roundedKm returns a distance rounded to 10 m; nil for nil.
func roundedKm(km *float64) *float64 {
	if km == nil {
		return nil
	}
	r := math.Round(*km*100) / 100
	return &r
}

// localityPlace is a locality asked for by name, with the postcodes of the places of that name the
// gazetteer holds in the directory's country (none when it holds none: the directory's own sites of
// that name may still be found).
func localityPlace(name, country string) *dirsvc.PlaceRead {
	p := &dirsvc.PlaceRead{Name: name, Areas: []string{}}
	for _, l := range dirsvc.LocalitiesNamed(name) {
		if a := "postcode:" + l.Postcode; l.Country == country && l.Postcode != "" && !slices.Contains(p.Areas, a) {
			p.Areas = append(p.Areas, a)
		}
	}
	return p
}

// areaParams reads the place filters a search and an organisation search share: area (one area
// ID) and postcode (exactly 4 digits), as the areas a service must lie in, each of them.
func areaParams(q query) ([]string, error) {
	var areas []string
	if v, ok := q.get("area"); ok {
		if !dirsvc.ValidArea(v) {
			return nil, dirsvc.InvalidParam("area", "area must be one area as type:code, such as postcode:2000 or state:nsw")
		}
		areas = append(areas, v)
	}
	if v, ok := q.get("postcode"); ok {
		if !postcodeRE.MatchString(v) {
			return nil, dirsvc.InvalidParam("postcode", "postcode is exactly 4 digits")
		}
		areas = append(areas, "postcode:"+v)
	}
	return areas, nil
}
