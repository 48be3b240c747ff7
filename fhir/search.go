package fhir

import (
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/dirsvc/dirsvc"
	"golang.org/x/text/unicode/norm"
)

// SearchParam is a search parameter of a resource type.
type SearchParam struct {
	Name string
	Type string // FHIR search parameter type: token, string, reference, date, special
	// Definition is the canonical URL of the parameter: R4's own where the meaning is R4's,
	// otherwise empty (the service's own meaning, documented in Documentation).
	Definition    string
	Documentation string
}

func r4(t, name string) string { return "http://hl7.org/fhir/SearchParameter/" + t + "-" + name }

// commonParams are the parameters of every type.
var commonParams = []SearchParam{
	{"_id", "token", "http://hl7.org/fhir/SearchParameter/Resource-id", "The resource id."},
	{"_lastUpdated", "date", "http://hl7.org/fhir/SearchParameter/Resource-lastUpdated", "When the resource as the caller sees it last changed (prefixes eq, ne, gt, ge, lt, le, sa, eb)."},
}

func addressParams(t string) []SearchParam {
	return []SearchParam{
		{"address", "string", r4(t, "address"), "Any part of the address (starts with; :exact and :contains)."},
		{"address-city", "string", r4(t, "address-city"), "The address's city (locality)."},
		{"address-postalcode", "string", r4(t, "address-postalcode"), "The address's postcode."},
		{"address-state", "string", r4(t, "address-state"), "The address's state or territory."},
	}
}

// searchParams are the parameters of each type beside commonParams.
var searchParams = map[string][]SearchParam{
	TypeOrganization: append([]SearchParam{
		{"identifier", "token", r4(TypeOrganization, "identifier"), "An identifier: system|value, value, or system|."},
		{"name", "string", r4(TypeOrganization, "name"), "The name (starts with; :exact and :contains)."},
		{"active", "token", r4(TypeOrganization, "active"), "true: every organisation served is active."},
	}, addressParams(TypeOrganization)...),
	TypeLocation: append([]SearchParam{
		{"identifier", "token", r4(TypeLocation, "identifier"), "An identifier: system|value, value, or system|."},
		{"name", "string", r4(TypeLocation, "name"), "The name (starts with; :exact and :contains)."},
		{"organization", "reference", r4(TypeLocation, "organization"), "The managing organisation: Organization/id or id."},
		{"near", "special", r4(TypeLocation, "near"), "latitude|longitude|distance|unit (km or mi; distance default 10 km, at most 2000 km)."},
	}, addressParams(TypeLocation)...),
	TypeHealthcareService: {
		{"identifier", "token", r4(TypeHealthcareService, "identifier"), "An identifier: system|value, value, or system|."},
		{"name", "string", r4(TypeHealthcareService, "name"), "The name (starts with; :exact and :contains)."},
		{"active", "token", r4(TypeHealthcareService, "active"), "true: every service served is active."},
		{"organization", "reference", r4(TypeHealthcareService, "organization"), "The providing organisation: Organization/id or id."},
		{"location", "reference", r4(TypeHealthcareService, "location"), "The service's location: Location/id or id."},
		{"service-type", "token", r4(TypeHealthcareService, "service-type"), "The platform service type (code, or system|code)."},
		{"specialty", "token", r4(TypeHealthcareService, "specialty"), "A local type (specialty) the service is tagged with."},
		{"service-category", "token", r4(TypeHealthcareService, "service-category"), "The platform category."},
		{"endpoint", "reference", r4(TypeHealthcareService, "endpoint"), "An Endpoint of the service: Endpoint/id or id."},
		{"address-postalcode", "string", "", "The postcode of the place the service is at, as the caller's view shows it (the site's area; shown even where the street address is withheld)."},
		{"address-state", "string", "", "The state of the place the service is at, as the caller's view shows it."},
	},
	TypePractitioner: {
		{"identifier", "token", r4(TypePractitioner, "identifier"), "An identifier: system|value, value, or system|."},
		{"name", "string", r4(TypePractitioner, "name"), "Any part of the name (starts with; :exact and :contains)."},
		{"active", "token", r4(TypePractitioner, "active"), "true: every practitioner served is active."},
	},
	TypePractitionerRole: {
		{"active", "token", r4(TypePractitionerRole, "active"), "Whether the role is active."},
		{"practitioner", "reference", r4(TypePractitionerRole, "practitioner"), "The practitioner: Practitioner/id or id."},
		{"organization", "reference", r4(TypePractitionerRole, "organization"), "The organisation: Organization/id or id."},
		{"location", "reference", r4(TypePractitionerRole, "location"), "The location: Location/id or id."},
		{"service", "reference", r4(TypePractitionerRole, "service"), "The service: HealthcareService/id or id."},
		{"specialty", "token", r4(TypePractitionerRole, "specialty"), "A local type (specialty) of the role."},
	},
	TypeEndpoint: {
		{"name", "string", r4(TypeEndpoint, "name"), "The name (starts with; :exact and :contains)."},
		{"organization", "reference", r4(TypeEndpoint, "organization"), "The managing organisation: Organization/id or id."},
		{"service", "reference", "", "The service whose online address it is: HealthcareService/id or id."},
	},
}

// Params returns the search parameters of resource type t, common ones first.
func Params(t string) []SearchParam {
	return append(slices.Clone(commonParams), searchParams[t]...)
}

// Includes are the _include values of each type; RevIncludes the _revinclude values a search of each
// type accepts.
var (
	Includes = map[string][]string{
		TypeOrganization:      {},
		TypeLocation:          {"Location:organization"},
		TypeHealthcareService: {"HealthcareService:organization", "HealthcareService:location", "HealthcareService:endpoint"},
		TypePractitioner:      {},
		TypePractitionerRole:  {"PractitionerRole:practitioner", "PractitionerRole:organization", "PractitionerRole:location", "PractitionerRole:service"},
		TypeEndpoint:          {"Endpoint:organization"},
	}
	RevIncludes = map[string][]string{
		TypeOrganization:      {"Location:organization", "HealthcareService:organization", "PractitionerRole:organization"},
		TypeLocation:          {"HealthcareService:location", "PractitionerRole:location"},
		TypeHealthcareService: {"PractitionerRole:service"},
		TypePractitioner:      {"PractitionerRole:practitioner"},
		TypePractitionerRole:  {},
		TypeEndpoint:          {"HealthcareService:endpoint"},
	}
)

// Result parameters a search accepts beside the type's search parameters.
var resultParams = []string{"_count", "_page", "_include", "_revinclude", "_summary", "_total", "_elements", "_format"}

// Limits of a search.
const (
	DefaultCount  = 20
	MaxCount      = 100
	maxValues     = 20  // values of one parameter (comma separated, repeated)
	maxValueLen   = 200 // characters of one value
	MaxNearKm     = 2000
	defaultNearKm = 10
)

// Criterion is one search parameter occurrence: its values are alternatives (any may match).
type Criterion struct {
	Param    SearchParam
	Modifier string
	Values   []string
	// dates and near are the parsed values of date and near parameters.
	dates []dateRange
	near  []nearValue
}

// Search is a parsed search of one type: every criterion must match.
type Search struct {
	Type        string
	Criteria    []Criterion
	Count       int
	Page        string
	Include     []string
	RevInclude  []string
	SummaryOnly bool // _summary=count
	Total       bool // _total=accurate
	Elements    []string
	// Ignored are the unknown parameters a lenient search left out.
	Ignored []string
	// Key is the canonical form of every result-shaping parameter (not _page nor _format), which a
	// page token is bound to.
	Key string
}

// Values returns the values of every criterion of parameter name without a modifier, and whether
// there is exactly one such criterion (so its values are alternatives a store can look up).
func (s *Search) Values(name string) ([]string, bool) {
	var out []string
	n := 0
	for _, c := range s.Criteria {
		if c.Param.Name == name {
			n++
			if c.Modifier == "" {
				out = c.Values
			}
		}
	}
	return out, n == 1 && out != nil
}

// ParseSearch reads the query of a search of type t. A parameter the type does not take is an error
// naming it, unless lenient, when it is left out and named in Ignored; a bad value is always an error
// naming its parameter.
func ParseSearch(t string, q url.Values, lenient bool) (*Search, error) {
	s := &Search{Type: t, Count: DefaultCount}
	params := map[string]SearchParam{}
	for _, p := range Params(t) {
		params[p.Name] = p
	}
	names := make([]string, 0, len(q))
	for n := range q {
		names = append(names, n)
	}
	sort.Strings(names)
	var key []string
	for _, raw := range names {
		vals := q[raw]
		name, mod, _ := strings.Cut(raw, ":")
		if len(vals) > maxValues {
			return nil, dirsvc.InvalidParam(name, "%s is given more than %d times", name, maxValues)
		}
		for _, v := range vals {
			if len(v) > maxValueLen && name != "_page" {
				return nil, dirsvc.InvalidParam(name, "a value of %s is longer than %d characters", name, maxValueLen)
			}
		}
		if slices.Contains(resultParams, name) {
			if mod != "" {
				return nil, dirsvc.InvalidParam(name, "%s takes no modifier", name)
			}
			if err := s.result(name, vals); err != nil {
				return nil, err
			}
			if name != "_page" && name != "_format" {
				key = append(key, raw+"="+strings.Join(vals, "\x00"))
			}
			continue
		}
		p, ok := params[name]
		if !ok {
			if lenient {
				s.Ignored = append(s.Ignored, raw)
				continue
			}
			return nil, dirsvc.InvalidParam(name, "%s is not a search parameter of %s (see the CapabilityStatement)", name, t)
		}
		if err := checkModifier(p, mod); err != nil {
			return nil, err
		}
		for _, v := range vals {
			c, err := parseCriterion(p, mod, v)
			if err != nil {
				return nil, err
			}
			s.Criteria = append(s.Criteria, c)
		}
		key = append(key, raw+"="+strings.Join(vals, "\x00"))
	}
	s.Key = t + "?" + strings.Join(key, "\x01")
	return s, nil
}

func checkModifier(p SearchParam, mod string) error {
	switch {
	case mod == "":
		return nil
	case p.Type == "string" && (mod == "exact" || mod == "contains"):
		return nil
	}
	return dirsvc.InvalidParam(p.Name, "%s does not take the modifier :%s", p.Name, mod)
}

// result reads a result parameter.
func (s *Search) result(name string, vals []string) error {
	one := func() (string, error) {
		if len(vals) != 1 {
			return "", dirsvc.InvalidParam(name, "%s is given once", name)
		}
		return vals[0], nil
	}
	switch name {
	case "_count":
		v, err := one()
		if err != nil {
			return err
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > MaxCount {
			return dirsvc.InvalidParam(name, "_count is a whole number from 0 to %d", MaxCount)
		}
		s.Count = n
	case "_page":
		v, err := one()
		if err != nil {
			return err
		}
		if len(v) > 400 {
			return dirsvc.InvalidParam(name, "_page is not a page token this server gave")
		}
		s.Page = v
	case "_format":
		v, err := one()
		if err != nil {
			return err
		}
		if !JSONFormat(v) {
			return errNotAcceptable
		}
	case "_summary":
		v, err := one()
		if err != nil {
			return err
		}
		if v != "count" && v != "false" {
			return dirsvc.InvalidParam(name, "_summary takes count (or false)")
		}
		s.SummaryOnly = v == "count"
	case "_total":
		v, err := one()
		if err != nil {
			return err
		}
		if v != "accurate" && v != "none" {
			return dirsvc.InvalidParam(name, "_total takes accurate (or none)")
		}
		s.Total = v == "accurate"
	case "_include", "_revinclude":
		allowed := Includes[s.Type]
		if name == "_revinclude" {
			allowed = RevIncludes[s.Type]
		}
		for _, v := range vals {
			for _, x := range strings.Split(v, ",") {
				if !slices.Contains(allowed, x) {
					return dirsvc.InvalidParam(name, "%s takes %s", name, orNone(allowed))
				}
				if name == "_include" {
					s.Include = appendNew(s.Include, x)
				} else {
					s.RevInclude = appendNew(s.RevInclude, x)
				}
			}
		}
	case "_elements":
		for _, v := range vals {
			for _, e := range strings.Split(v, ",") {
				if !validElement(s.Type, e) {
					return dirsvc.InvalidParam(name, "%q is not an element of %s", e, s.Type)
				}
				s.Elements = appendNew(s.Elements, e)
			}
		}
	}
	return nil
}

func appendNew(ss []string, s string) []string {
	if slices.Contains(ss, s) {
		return ss
	}
	return append(ss, s)
}

func orNone(ss []string) string {
	if len(ss) == 0 {
		return "no value for this type"
	}
	return strings.Join(ss, ", ")
}

// JSONFormat reports whether a _format value asks for JSON.
func JSONFormat(v string) bool {
	switch strings.TrimSpace(strings.ToLower(v)) {
	case "json", "application/json", "application/fhir+json":
		return true
	}
	return false
}

// errNotAcceptable is the error of a _format that is not JSON.
var errNotAcceptable = &dirsvc.Error{Code: ENotAcceptable, Param: "_format", Message: "Only FHIR JSON is offered (_format=json)."}

// ENotAcceptable is the code of a request for a format other than FHIR JSON (406).
const ENotAcceptable = "not-acceptable"

func parseCriterion(p SearchParam, mod, v string) (Criterion, error) {
	c := Criterion{Param: p, Modifier: mod}
	for _, part := range splitValues(v) {
		if part == "" {
			return c, dirsvc.InvalidParam(p.Name, "%s has an empty value", p.Name)
		}
		switch p.Type {
		case "date":
			d, err := parseDate(part)
			if err != nil {
				return c, dirsvc.InvalidParam(p.Name, "%s takes a date or date-time with an optional prefix (eq, ne, gt, ge, lt, le, sa, eb)", p.Name)
			}
			c.dates = append(c.dates, d)
		case "special":
			n, err := parseNear(part)
			if err != nil {
				return c, dirsvc.InvalidParam(p.Name, "near takes latitude|longitude|distance|unit with distance up to %d km and unit km or mi", MaxNearKm)
			}
			c.near = append(c.near, n)
		case "token":
			if p.Name == "active" && part != "true" && part != "false" {
				return c, dirsvc.InvalidParam(p.Name, "active takes true or false")
			}
		case "reference":
			part = normalRef(p, part)
			if part == "" {
				return c, dirsvc.InvalidParam(p.Name, "%s takes a reference such as %s/id or an id", p.Name, refType(p.Name))
			}
		case "string":
			part = fold(part)
		}
		c.Values = append(c.Values, part)
	}
	return c, nil
}

// splitValues splits a parameter value at commas not escaped with a backslash.
func splitValues(v string) []string {
	var out []string
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		switch {
		case v[i] == '\\' && i+1 < len(v):
			i++
			b.WriteByte(v[i])
		case v[i] == ',':
			out = append(out, b.String())
			b.Reset()
		default:
			b.WriteByte(v[i])
		}
	}
	return append(out, b.String())
}

// refType is the resource type a reference parameter names.
func refType(name string) string {
	switch name {
	case "organization":
		return TypeOrganization
	case "location":
		return TypeLocation
	case "practitioner":
		return TypePractitioner
	case "service":
		return TypeHealthcareService
	case "endpoint":
		return TypeEndpoint
	}
	return ""
}

// normalRef returns a reference value as Type/id, or "" when it is not one of the parameter's type.
func normalRef(p SearchParam, v string) string {
	t := refType(p.Name)
	if i := strings.Index(v, "/"+t+"/"); i >= 0 && strings.HasPrefix(v, "http") {
		v = v[i+1:]
	}
	id, ok := strings.CutPrefix(v, t+"/")
	if !ok {
		id = v
	}
	if id == "" || len(id) > 80 || strings.ContainsAny(id, "/?#") {
		return ""
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return ""
		}
	}
	return t + "/" + id
}

// fold makes a string comparable: lower case, accents and punctuation dropped, spaces collapsed.
func fold(s string) string {
	var b strings.Builder
	space := false
	for _, r := range norm.NFD.String(s) {
		switch {
		case unicode.Is(unicode.Mn, r):
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = false
			b.WriteRune(unicode.ToLower(r))
		default:
			space = true
		}
	}
	return b.String()
}

// Matches reports whether the resource meets every criterion.
func (s *Search) Matches(r *Resource) bool {
	for i := range s.Criteria {
		if !s.Criteria[i].matches(r) {
			return false
		}
	}
	return true
}

func (c *Criterion) matches(r *Resource) bool {
	switch c.Param.Name {
	case "_lastUpdated":
		t, err := time.Parse(time.RFC3339Nano, r.LastUpdated)
		if err != nil {
			return false
		}
		for _, d := range c.dates {
			if d.matches(t) {
				return true
			}
		}
		return false
	case "near":
		have := r.Search.Get("near")
		if len(have) == 0 {
			return false
		}
		lat, lon, _ := strings.Cut(have[0], "|")
		la, _ := strconv.ParseFloat(lat, 64)
		lo, _ := strconv.ParseFloat(lon, 64)
		for _, n := range c.near {
			if dirsvc.HaversineKm(n.lat, n.lon, la, lo) <= n.km {
				return true
			}
		}
		return false
	}
	found := false
	r.Search.Each(c.Param.Name, func(h string) bool {
		for _, want := range c.Values {
			if c.valueMatches(want, h) {
				found = true
				return false
			}
		}
		return true
	})
	return found
}

func (c *Criterion) valueMatches(want, have string) bool {
	switch c.Param.Type {
	case "string":
		h := fold(have)
		switch c.Modifier {
		case "exact":
			return h == want
		case "contains":
			return strings.Contains(h, want)
		}
		if strings.HasPrefix(h, want) {
			return true
		}
		// A value matches the start of any word too (a name's family name, a line's street).
		return strings.Contains(h, " "+want)
	case "reference":
		return have == want
	case "token":
		if c.Param.Name == "_id" || c.Param.Name == "active" {
			return have == want
		}
		hs, hv, _ := strings.Cut(have, "|")
		ws, wv, hasSystem := strings.Cut(want, "|")
		if !hasSystem {
			return strings.EqualFold(hv, want) || identifierEqual(hv, want)
		}
		if ws != hs {
			return false
		}
		return wv == "" || hv == wv || identifierEqual(hv, wv)
	}
	return false
}

// identifierEqual compares identifier values as the identifier search of the REST API does:
// without spaces, in upper case.
func identifierEqual(a, b string) bool {
	n := func(s string) string { return strings.ToUpper(strings.ReplaceAll(s, " ", "")) }
	return n(a) == n(b)
}

// dateRange is a date parameter's value: a prefix and the range its value stands for.
type dateRange struct {
	prefix     string
	start, end time.Time // [start, end)
}

func parseDate(v string) (dateRange, error) {
	d := dateRange{prefix: "eq"}
	if len(v) > 2 && v[0] >= 'a' && v[0] <= 'z' {
		d.prefix, v = v[:2], v[2:]
		switch d.prefix {
		case "eq", "ne", "gt", "ge", "lt", "le", "sa", "eb":
		default:
			return d, strconv.ErrSyntax
		}
	}
	for _, f := range []struct {
		layout string
		add    func(time.Time) time.Time
	}{
		{"2006", func(t time.Time) time.Time { return t.AddDate(1, 0, 0) }},
		{"2006-01", func(t time.Time) time.Time { return t.AddDate(0, 1, 0) }},
		{"2006-01-02", func(t time.Time) time.Time { return t.AddDate(0, 0, 1) }},
		{"2006-01-02T15:04Z07:00", func(t time.Time) time.Time { return t.Add(time.Minute) }},
		{"2006-01-02T15:04:05Z07:00", func(t time.Time) time.Time { return t.Add(time.Second) }},
		{time.RFC3339Nano, func(t time.Time) time.Time { return t.Add(time.Millisecond) }},
	} {
		if t, err := time.Parse(f.layout, v); err == nil {
			d.start, d.end = t, f.add(t)
			return d, nil
		}
	}
	return d, strconv.ErrSyntax
}

func (d dateRange) matches(t time.Time) bool {
	in := !t.Before(d.start) && t.Before(d.end)
	switch d.prefix {
	case "eq":
		return in
	case "ne":
		return !in
	case "gt", "sa":
		return !t.Before(d.end)
	case "ge":
		return !t.Before(d.start)
	case "lt", "eb":
		return t.Before(d.start)
	case "le":
		return t.Before(d.end)
	}
	return false
}

type nearValue struct{ lat, lon, km float64 }

func parseNear(v string) (nearValue, error) {
	parts := strings.Split(v, "|")
	if len(parts) < 2 || len(parts) > 4 {
		return nearValue{}, strconv.ErrSyntax
	}
	lat, err1 := strconv.ParseFloat(parts[0], 64)
	lon, err2 := strconv.ParseFloat(parts[1], 64)
	if err1 != nil || err2 != nil || lat < -90 || lat > 90 || lon < -180 || lon > 180 {
		return nearValue{}, strconv.ErrSyntax
	}
	n := nearValue{lat: lat, lon: lon, km: defaultNearKm}
	if len(parts) > 2 && parts[2] != "" {
		d, err := strconv.ParseFloat(parts[2], 64)
		if err != nil || d < 0 {
			return n, strconv.ErrSyntax
		}
		n.km = d
	}
	if len(parts) > 3 && parts[3] != "" {
		switch parts[3] {
		case "km", "[km]":
		case "mi", "[mi_i]":
			n.km *= 1.609344
		default:
			return n, strconv.ErrSyntax
		}
	}
	if n.km > MaxNearKm {
		return n, strconv.ErrSyntax
	}
	return n, nil
}
