package edgetest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/edge"
	"github.com/dirsvc/dirsvc/edge/edgetest"
)

// goTypes are the Go types whose JSON the component schemas describe, by schema name.
var goTypes = map[string]any{
	"Ref": dirsvc.Ref{}, "CodeLabel": dirsvc.CodeLabel{}, "LocalTypeRef": dirsvc.LocalTypeRef{},
	"ContactView": dirsvc.ContactView{}, "IdentifierView": dirsvc.IdentifierView{},
	"AddressView": dirsvc.AddressView{}, "Point": dirsvc.Point{}, "Ownership": dirsvc.Ownership{},
	"OwnershipCard": dirsvc.OwnershipCard{}, "Interval": dirsvc.Interval{}, "WeeklyHours": dirsvc.WeeklyHours{},
	"DateHours": dirsvc.DateHours{}, "OpeningHours": dirsvc.OpeningHours{}, "Referral": dirsvc.Referral{},
	"Cost": dirsvc.Cost{}, "OpenStatus": dirsvc.OpenStatus{}, "ServiceCard": dirsvc.ServiceCard{},
	"PersonName": dirsvc.PersonName{}, "OrganisationView": dirsvc.OrganisationView{},
	"LocationView": dirsvc.LocationView{}, "ServiceView": dirsvc.ServiceView{},
	"PractitionerView": dirsvc.PractitionerView{}, "RoleView": dirsvc.RoleView{}, "LeaderView": dirsvc.LeaderView{},
	"ServicePage": dirsvc.ServicePage{}, "LocationPage": dirsvc.LocationPage{},
	"OrganisationLocation": dirsvc.OrganisationLocation{}, "OrganisationPage": dirsvc.OrganisationPage{},
	"Problem": edge.Problem{}, "DeveloperInfo": edge.DeveloperInfo{}, "FHIRInfo": edge.FHIRInfo{},
}

// goField is a member of a Go type's JSON object.
type goField struct {
	typ   reflect.Type
	omit  bool // omitempty or omitzero: the key may be absent
	depth int
}

// jsonFields returns the members of t's JSON object as encoding/json writes them: embedded structs
// are flattened, and a field at a shallower depth hides one of the same name deeper down.
func jsonFields(t reflect.Type) map[string]goField {
	out := map[string]goField{}
	var walk func(t reflect.Type, depth int)
	walk = func(t reflect.Type, depth int) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
				walk(f.Type, depth+1)
				continue
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			if cur, ok := out[name]; ok && cur.depth <= depth {
				continue
			}
			omit := slices.Contains(strings.Split(opts, ","), "omitempty") || slices.Contains(strings.Split(opts, ","), "omitzero")
			out[name] = goField{typ: f.Type, omit: omit, depth: depth}
		}
	}
	walk(t, 0)
	return out
}

// schemaShape is what a property schema allows: its JSON types other than null, whether null is
// allowed, the component it refers to and its format.
type schemaShape struct {
	types    []string
	nullable bool
	ref      string
	format   string
	items    map[string]any
}

func shapeOf(components map[string]any, s map[string]any) schemaShape {
	var sh schemaShape
	var visit func(s map[string]any)
	visit = func(s map[string]any) {
		if r, ok := s["$ref"].(string); ok {
			name := strings.TrimPrefix(r, "#/components/schemas/")
			sh.ref = name
			if target, ok := components[name].(map[string]any); ok {
				visit(target)
			}
			return
		}
		switch t := s["type"].(type) {
		case string:
			if t == "null" {
				sh.nullable = true
			} else if !slices.Contains(sh.types, t) {
				sh.types = append(sh.types, t)
			}
		case []any:
			for _, x := range t {
				if x == "null" {
					sh.nullable = true
				} else if !slices.Contains(sh.types, x.(string)) {
					sh.types = append(sh.types, x.(string))
				}
			}
		}
		if f, ok := s["format"].(string); ok {
			sh.format = f
		}
		if it, ok := s["items"].(map[string]any); ok {
			sh.items = it
		}
		for _, k := range []string{"oneOf", "anyOf", "allOf"} {
			for _, sub := range asList(s[k]) {
				visit(sub.(map[string]any))
			}
		}
	}
	visit(s)
	sort.Strings(sh.types)
	return sh
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

var timeType = reflect.TypeFor[time.Time]()

// jsonType is the JSON type encoding/json writes for a non-pointer Go type.
func jsonType(t reflect.Type) string {
	switch {
	case t == timeType:
		return "string"
	case t.Kind() == reflect.String:
		return "string"
	case t.Kind() == reflect.Bool:
		return "boolean"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		return "integer"
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		return "number"
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		return "array"
	case t.Kind() == reflect.Struct || t.Kind() == reflect.Map:
		return "object"
	}
	return "?" + t.String()
}

// checkValue checks that a property schema describes values of Go type t.
func checkValue(t *testing.T, where string, components map[string]any, t0 reflect.Type, prop map[string]any) {
	t.Helper()
	sh := shapeOf(components, prop)
	typ := t0
	if typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	if want := jsonType(typ); !slices.Equal(sh.types, []string{want}) {
		t.Errorf("%s: schema types %v, Go type %s is written as %s", where, sh.types, t0, want)
	}
	if typ == timeType && sh.format != "date-time" {
		t.Errorf("%s: a time.Time is a date-time string; schema format is %q", where, sh.format)
	}
	if typ.Kind() == reflect.Struct && typ != timeType && sh.ref != typ.Name() {
		t.Errorf("%s: Go type %s, schema refers to %q; want #/components/schemas/%s", where, typ, sh.ref, typ.Name())
	}
	if typ.Kind() == reflect.Slice && sh.items != nil {
		checkValue(t, where+"[]", components, typ.Elem(), sh.items)
	}
}

// TestSchemasMatchGoTypes holds each component schema to the JSON of its Go type: the same members;
// required exactly when always written (no omitempty); null allowed for a pointer written even when
// nil, and for no field that can never be null; JSON types, formats and referenced components.
func TestSchemasMatchGoTypes(t *testing.T) {
	doc := rawDocument(t)
	components := doc["components"].(map[string]any)["schemas"].(map[string]any)
	for name, s := range components {
		if s.(map[string]any)["type"] == "object" && goTypes[name] == nil {
			t.Errorf("component %s has no Go type in goTypes: add it so its schema is checked", name)
		}
	}
	for name, v := range goTypes {
		t.Run(name, func(t *testing.T) {
			s, ok := components[name].(map[string]any)
			if !ok {
				t.Fatalf("no component schema %s", name)
			}
			props, _ := s["properties"].(map[string]any)
			var required []string
			for _, r := range asList(s["required"]) {
				required = append(required, r.(string))
			}
			if ap, ok := s["additionalProperties"]; ok && ap == false {
				t.Errorf("additionalProperties: false breaks the tolerant reader (fields are only added within v1)")
			}
			fields := jsonFields(reflect.TypeOf(v))
			for fname, f := range fields {
				prop, ok := props[fname].(map[string]any)
				if !ok {
					t.Errorf("%s.%s (Go %s) is not a property of the schema", name, fname, f.typ)
					continue
				}
				if req := slices.Contains(required, fname); req == f.omit {
					t.Errorf("%s.%s: required=%v, but the Go field is omitempty=%v", name, fname, req, f.omit)
				}
				sh := shapeOf(components, prop)
				switch {
				case f.typ.Kind() == reflect.Pointer && !f.omit && !sh.nullable:
					t.Errorf("%s.%s: a pointer without omitempty is written as null when nil; the schema must allow null", name, fname)
				case f.typ.Kind() != reflect.Pointer && f.typ.Kind() != reflect.Slice && f.typ.Kind() != reflect.Map && sh.nullable:
					t.Errorf("%s.%s: Go %s is never null; the schema allows null", name, fname, f.typ)
				case f.omit && sh.nullable:
					t.Errorf("%s.%s: omitempty fields are left out, never null; the schema allows null", name, fname)
				}
				checkValue(t, name+"."+fname, components, f.typ, prop)
			}
			for pname := range props {
				if _, ok := fields[pname]; !ok {
					t.Errorf("%s.%s is in the schema but not in the Go type %T", name, pname, v)
				}
			}
		})
	}
}

// enumOf returns the enum of the schema at a path of names below components/schemas, following $ref
// and oneOf/anyOf, without null.
func enumOf(t *testing.T, components map[string]any, path ...string) []string {
	t.Helper()
	s, ok := components[path[0]].(map[string]any)
	if !ok {
		t.Fatalf("no component schema %s", path[0])
	}
	for _, p := range path[1:] {
		if r, ok := s["$ref"].(string); ok {
			s = components[strings.TrimPrefix(r, "#/components/schemas/")].(map[string]any)
		}
		props, _ := s["properties"].(map[string]any)
		if s, ok = props[p].(map[string]any); !ok {
			t.Fatalf("no property %s in %v", p, path)
		}
	}
	var out []string
	var visit func(v any)
	visit = func(v any) {
		m := v.(map[string]any)
		if r, ok := m["$ref"].(string); ok {
			visit(components[strings.TrimPrefix(r, "#/components/schemas/")])
		}
		for _, e := range asList(m["enum"]) {
			if e != nil {
				out = append(out, e.(string))
			}
		}
		for _, k := range []string{"oneOf", "anyOf"} {
			for _, sub := range asList(m[k]) {
				visit(sub)
			}
		}
	}
	visit(s)
	sort.Strings(out)
	return out
}

// TestEnumsMatchGoValues holds each enumeration of the document to the fixed values of the Go code.
func TestEnumsMatchGoValues(t *testing.T) {
	components := rawDocument(t)["components"].(map[string]any)["schemas"].(map[string]any)
	strs := func(vs ...string) []string { sort.Strings(vs); return vs }
	var audiences []string
	for _, a := range dirsvc.ServedAudiences {
		audiences = append(audiences, a.String())
	}
	kinds := []dirsvc.ContactKind{dirsvc.ContactPhone, dirsvc.ContactMobile, dirsvc.ContactFreecall, dirsvc.ContactLocalRate,
		dirsvc.ContactFax, dirsvc.ContactSMS, dirsvc.ContactTTY, dirsvc.ContactEmail, dirsvc.ContactWebsite, dirsvc.ContactOther}
	var kindNames []string
	for _, k := range kinds {
		kindNames = append(kindNames, string(k))
	}
	for _, k := range enumOf(t, components, "ContactKind") {
		if !dirsvc.ContactKind(k).Valid() {
			t.Errorf("ContactKind enum has %q, which the Go code does not know", k)
		}
	}
	for _, g := range enumOf(t, components, "PractitionerView", "gender") {
		if g == "" || !dirsvc.ValidGender(g) {
			t.Errorf("gender enum has %q, which the Go code does not know", g)
		}
	}
	tests := []struct {
		path []string
		want []string
	}{
		{[]string{"ContactKind"}, strs(kindNames...)},
		{[]string{"Audience"}, strs(audiences...)},
		{[]string{"OpenStatus", "status"}, strs(dirsvc.OpenNow, dirsvc.ClosedNow, dirsvc.OpenUnknown)},
		{[]string{"OrganisationView", "metroRural"}, strs("metro", "rural")},
		{[]string{"LocationView", "metroRural"}, strs("metro", "rural")},
		{[]string{"OwnershipSource"}, strs(dirsvc.SourceService, dirsvc.SourceLocation, dirsvc.SourceOrganisation)},
		{[]string{"ServiceView", "appointment"}, strs(dirsvc.AppointmentRequired, dirsvc.AppointmentNotRequired)},
		{[]string{"LeaderView", "group"}, strs(dirsvc.LeaderExecutive, dirsvc.LeaderBoard)},
		{[]string{"PractitionerView", "gender"}, strs(dirsvc.GenderWoman, dirsvc.GenderMan, dirsvc.GenderNonBinary,
			dirsvc.GenderDifferentTerm, dirsvc.GenderPreferNotToSay)},
		{[]string{"OpeningHours", "publicHolidays"}, strs("closed", "open", "hours")},
		{[]string{"WeeklyHours", "day"}, strs("mon", "tue", "wed", "thu", "fri", "sat", "sun")},
	}
	for _, tt := range tests {
		if got := enumOf(t, components, tt.path...); !slices.Equal(got, tt.want) {
			t.Errorf("enum of %s = %v, want %v", strings.Join(tt.path, "."), got, tt.want)
		}
	}
}

// catalog is an in-memory dirsvc.Catalog of one directory.
type catalog struct {
	info    dirsvc.Directory
	records map[string]dirsvc.RecordStatus
	related map[string][]dirsvc.Published // by kind/ref/refID
	// leadership is every organisation's stored leadership view.
	leadership *dirsvc.Published
}

func (c *catalog) Reader(_ context.Context, slug string) (dirsvc.DirectoryReader, error) {
	if slug != c.info.Slug {
		return nil, dirsvc.ErrNotFound
	}
	return c, nil
}

func (c *catalog) Info(context.Context) (*dirsvc.Directory, error) { return &c.info, nil }

func (c *catalog) Record(_ context.Context, id string, _ dirsvc.Audience) (dirsvc.RecordStatus, error) {
	st, ok := c.records[id]
	if !ok {
		return dirsvc.RecordStatus{}, dirsvc.ErrNotFound
	}
	return st, nil
}

func (c *catalog) Related(_ context.Context, _ dirsvc.Viewer, kind, ref dirsvc.Kind, id string) ([]dirsvc.Published, error) {
	return c.related[fmt.Sprintf("%s/%s/%s", kind, ref, id)], nil
}

func (c *catalog) Inside(context.Context, string, dirsvc.Viewer) (bool, error) { return true, nil }

// views returns the views of the live records of kind, in public-ID order.
func (c *catalog) views(kind dirsvc.Kind) dirsvc.Page {
	var p dirsvc.Page
	for _, st := range c.records {
		if st.Kind == kind && st.View != nil {
			p.Items = append(p.Items, *st.View)
		}
	}
	slices.SortFunc(p.Items, func(a, b dirsvc.Published) int { return strings.Compare(a.PublicID, b.PublicID) })
	return p
}

func (c *catalog) Services(context.Context, dirsvc.Viewer, dirsvc.ServiceQuery) (dirsvc.Page, error) {
	return c.views(dirsvc.KindService), nil
}

func (c *catalog) Practitioners(context.Context, dirsvc.Viewer, string, int) (dirsvc.Page, error) {
	return c.views(dirsvc.KindPractitioner), nil
}

func (c *catalog) Identified(context.Context, dirsvc.Viewer, string, string) ([]string, error) {
	return nil, nil
}

func (c *catalog) Leadership(_ context.Context, id string) (*dirsvc.Published, error) {
	if c.leadership == nil {
		return nil, dirsvc.ErrNotFound
	}
	return c.leadership, nil
}

// live adds a live record with its view.
func (c *catalog) live(t *testing.T, kind dirsvc.Kind, id string, view any, relatedTo ...string) {
	t.Helper()
	body, err := json.Marshal(view)
	if err != nil {
		t.Fatal(err)
	}
	p := dirsvc.Published{PublicID: id, Body: body, ETag: fmt.Sprintf(`"%s-v3"`, id)}
	c.records[id] = dirsvc.RecordStatus{Kind: kind, State: dirsvc.StateLive, SeenBy: dirsvc.Everyone, View: &p}
	for _, r := range relatedTo { // "kind/id" of the records it refers to
		key := string(kind) + "/" + r
		c.related[key] = append(c.related[key], p)
	}
}

func (c *catalog) tombstone(kind dirsvc.Kind, id string, state dirsvc.State, survivor string) {
	c.records[id] = dirsvc.RecordStatus{Kind: kind, State: state, Survivor: survivor, SeenBy: dirsvc.Everyone}
}

// fullHours are opening hours with every field set.
func fullHours() *dirsvc.OpeningHours {
	return &dirsvc.OpeningHours{TimeZone: "Australia/Sydney",
		Weekly: []dirsvc.WeeklyHours{{Day: "mon", Intervals: []dirsvc.Interval{{Open: "08:30", Close: "17:00"}}},
			{Day: "sat", Intervals: []dirsvc.Interval{{Open: "09:00", Close: "24:00"}}}},
		PublicHolidays: "hours", HolidayIntervals: []dirsvc.Interval{{Open: "10:00", Close: "14:00"}},
		Exceptions: []dirsvc.DateHours{{Date: "2025-12-25", Closed: true, Note: "Christmas"},
			{Date: "2025-12-24", Intervals: []dirsvc.Interval{{Open: "08:00", Close: "12:00"}}}},
		AfterHours: "Call 13 SICK", Always: false}
}

// demoCatalog holds records with every field set and records with every optional field left out and
// every nullable one null, and tombstones.
func demoCatalog(t *testing.T) *catalog {
	c := &catalog{info: dirsvc.Directory{Slug: "demo", Name: "Demo directory", Country: "AU", TimeZone: "Australia/Sydney",
		Licence: "CC BY 4.0", Attribution: "Incorporates or developed using G-NAF © Geoscape Australia licensed by the Commonwealth of Australia under the Open G-NAF End User Licence Agreement."},
		records: map[string]dirsvc.RecordStatus{}, related: map[string][]dirsvc.Published{}}
	own := &dirsvc.Ownership{Code: "not_for_profit", Display: "Not for profit"}
	ids := []dirsvc.IdentifierView{{Type: "abn", System: "http://hl7.org.au/id/abn", Value: "51824753556"}}
	contacts := []dirsvc.ContactView{{Kind: dirsvc.ContactPhone, Value: "+61290000000", Label: "Reception"},
		{Kind: dirsvc.ContactEmail, Value: "hello@example.org"}, {Kind: dirsvc.ContactWebsite, Value: "https://example.org"}}
	addr := &dirsvc.AddressView{Lines: []string{"1 Harbour St"}, Locality: "Sydney", State: "NSW", Postcode: "2000", Country: "AU"}
	lt := dirsvc.LocalTypeRef{ID: "skin", Slug: "skin-checks", Label: "Skin checks", Icon: "stethoscope"}
	cat := "primary_care"

	org := dirsvc.OrganisationView{RecordHead: head("org_full"), Name: "Harbour Health", Description: "A health service.",
		Logo: "https://example.org/logo.png", Website: "https://example.org", OwnershipType: own,
		OwnershipSource: dirsvc.SourceOrganisation, Identifiers: ids, Contacts: contacts,
		PostalAddress: &dirsvc.AddressView{Lines: nil, Locality: "Sydney", Country: "AU"}, MetroRural: "metro"}
	org.Origin = "https://other.example/v1/d/nsw"
	c.live(t, dirsvc.KindOrganisation, "org_full", org)
	c.live(t, dirsvc.KindOrganisation, "org_min", dirsvc.OrganisationView{RecordHead: head("org_min"), Name: "Small org"})

	loc := dirsvc.LocationView{RecordHead: head("loc_full"), Name: "Harbour clinic", Description: "Ground floor.",
		Organisation: dirsvc.Ref{PublicID: "org_full", Name: "Harbour Health"}, Address: addr,
		Point: &dirsvc.Point{Lat: -33.86, Lon: 151.21}, Area: "Sydney NSW 2000", Areas: []string{"postcode:2000", "state:nsw"},
		MetroRural: "metro", OwnershipType: own, OwnershipSource: dirsvc.SourceOrganisation, Hours: fullHours(),
		Contacts: contacts, Identifiers: ids, Facilities: []string{"wheelchair_access"}}
	c.live(t, dirsvc.KindLocation, "loc_full", loc, "organisation/org_full")
	c.live(t, dirsvc.KindLocation, "loc_min", dirsvc.LocationView{RecordHead: head("loc_min"), Name: "Refuge",
		Organisation: dirsvc.Ref{PublicID: "org_min"}, AddressWithheld: true, Area: "Parramatta NSW"}, "organisation/org_min")

	svc := dirsvc.ServiceView{RecordHead: head("svc_full"), Name: "Skin clinic", Slug: "skin-clinic",
		Description: "Skin checks.", Organisation: dirsvc.Ref{PublicID: "org_full", Name: "Harbour Health"},
		Location: &dirsvc.Ref{PublicID: "loc_full", Name: "Harbour clinic"}, Area: "Sydney NSW 2000",
		Areas: []string{"postcode:2000"}, Type: dirsvc.CodeLabel{Code: "general_practice", Label: "General practice"},
		TypeDisplay: "Skin checks", PlatformTypeDisplay: "General practice", LocalType: &lt,
		Specialties: []dirsvc.LocalTypeRef{lt}, CategoryCode: &cat, CategoryIcon: "stethoscope", OwnershipType: own,
		OwnershipSource: dirsvc.SourceOrganisation,
		Ownership:       &dirsvc.OwnershipCard{Code: own.Code, Label: own.Display, Source: dirsvc.SourceOrganisation},
		Programs:        []dirsvc.CodeLabel{{Code: "mbs", Label: "Medicare"}}, TargetGroups: []dirsvc.CodeLabel{{Code: "youth", Label: "Young people"}},
		Catchment: []string{"state:nsw"}, Hours: fullHours(), Contacts: contacts, Identifiers: ids,
		Website:                    "https://example.org/skin",
		Referral:                   &dirsvc.Referral{Required: true, From: []string{"gp"}, Notes: "Ask your GP."},
		ReferralRequiredFromLabels: []string{"General practitioner"}, Appointment: dirsvc.AppointmentRequired,
		Cost:     &dirsvc.Cost{Kind: "bulk_billed", Notes: "For concession card holders."},
		Delivery: []string{"in_person", "telehealth"}, Languages: []string{"en", "vi"}}
	c.live(t, dirsvc.KindService, "svc_full", svc, "location/loc_full", "organisation/org_full")
	c.live(t, dirsvc.KindService, "svc_min", dirsvc.ServiceView{RecordHead: head("svc_min"), Name: "Drop-in", Slug: "drop-in",
		Organisation: dirsvc.Ref{PublicID: "org_min"}, Type: dirsvc.CodeLabel{Code: "x", Label: "x"}, TypeDisplay: "x",
		PlatformTypeDisplay: "x", CategoryIcon: dirsvc.DefaultIcon, ReferralRequiredFromLabels: []string{}},
		"organisation/org_min")
	// A service whose organisation the caller may not see: the page shows organisation null.
	c.live(t, dirsvc.KindService, "svc_orphan", dirsvc.ServiceView{RecordHead: head("svc_orphan"), Name: "Orphan",
		Slug: "orphan", Organisation: dirsvc.Ref{PublicID: "org_hidden"}, Type: dirsvc.CodeLabel{Code: "x", Label: "x"},
		TypeDisplay: "x", PlatformTypeDisplay: "x", CategoryIcon: dirsvc.DefaultIcon, ReferralRequiredFromLabels: []string{}})

	c.live(t, dirsvc.KindRole, "role_full", dirsvc.RoleView{RecordHead: head("role_full"),
		Practitioner: dirsvc.Ref{PublicID: "prac_a", Name: "Dr Ann Lee"}, Service: dirsvc.Ref{PublicID: "svc_full", Name: "Skin clinic"},
		Location: &dirsvc.Ref{PublicID: "loc_full"}, Organisation: dirsvc.Ref{PublicID: "org_full"}, Title: "GP",
		Specialties: []dirsvc.LocalTypeRef{lt}, Contacts: contacts, Active: true, StartDate: "2020-01-01", EndDate: "2030-01-01"},
		"service/svc_full")
	c.live(t, dirsvc.KindRole, "role_min", dirsvc.RoleView{RecordHead: head("role_min"), Practitioner: dirsvc.Ref{PublicID: "prac_b"},
		Service: dirsvc.Ref{PublicID: "svc_full"}, Organisation: dirsvc.Ref{PublicID: "org_full"}, Title: "Nurse", Active: true},
		"service/svc_full")

	c.tombstone(dirsvc.KindService, "svc_closed", dirsvc.StateClosed, "")
	c.tombstone(dirsvc.KindService, "svc_merged", dirsvc.StateMerged, "svc_full")
	c.tombstone(dirsvc.KindLocation, "loc_merged", dirsvc.StateMerged, "loc_min")
	c.tombstone(dirsvc.KindOrganisation, "org_removed", dirsvc.StateRemoved, "")
	c.tombstone(dirsvc.KindOrganisation, "org_merged", dirsvc.StateMerged, "org_min")
	return c
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestEdgeAnswersMatchDocument serves every documented operation from the real edge handler, over
// records with every field and records with none of the optional ones, through a checking client.
func TestEdgeAnswersMatchDocument(t *testing.T) {
	now := time.Date(2025, 3, 3, 10, 0, 0, 0, time.UTC) // a Monday, 21:00 in Sydney
	srv := httptest.NewServer(edge.New(edge.Config{Catalog: demoCatalog(t), Logger: discard(), Now: func() time.Time { return now }}))
	defer srv.Close()
	c := edgetest.NewChecker(t)
	client := &http.Client{Transport: c.Transport(t, nil)}

	tests := []struct {
		path   string
		status int
		header []string
	}{
		{"/v1/openapi.json", 200, nil},
		{"/v1/d/demo/developers", 200, nil},
		{"/v1/d/nope/developers", 404, nil},
		{"/v1/d/Not_A_Slug/developers", 404, nil},
		{"/v1/d/demo/services/svc_x", 404, nil},
		{"/v1/d/demo/services/loc_full", 404, nil},
		{"/v1/d/demo/services/svc_full?view=bogus", 400, nil},
		{"/v1/d/demo/services/svc_closed", 410, nil},
		{"/v1/d/demo/organisations/org_removed", 410, nil},
		{"/v1/d/demo/services/svc_merged", 200, nil}, // 301, then the survivor
		{"/v1/d/demo/services/svc_merged?view=brief", 200, nil},
		{"/v1/d/demo/locations/loc_merged", 200, nil},
		{"/v1/d/demo/organisations/org_merged", 200, nil},
		{"/v1/d/demo/services/svc_full?view=brief", 304, []string{"If-None-Match", `"svc_full-v3"`}},
		{"/healthz", 200, nil},
	}
	for _, kind := range []string{"services/svc", "locations/loc", "organisations/org"} {
		for _, id := range []string{"_full", "_min"} {
			for _, q := range []string{"", "?view=page", "?view=brief"} {
				tests = append(tests, struct {
					path   string
					status int
					header []string
				}{"/v1/d/demo/" + kind + id + q, 200, nil})
			}
		}
	}
	tests = append(tests, struct {
		path   string
		status int
		header []string
	}{"/v1/d/demo/services/svc_orphan", 200, nil})

	for _, tt := range tests {
		req, err := http.NewRequest("GET", srv.URL+tt.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(tt.header); i += 2 {
			req.Header.Set(tt.header[i], tt.header[i+1])
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", tt.path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.status {
			t.Errorf("GET %s = %d, want %d: %s", tt.path, resp.StatusCode, tt.status, body)
		}
	}
	// A page's entity tag is the hash of the page.
	resp, err := client.Get(srv.URL + "/v1/d/demo/locations/loc_full")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	req, _ := http.NewRequest("GET", srv.URL+"/v1/d/demo/locations/loc_full", nil)
	req.Header.Set("If-None-Match", resp.Header.Get("ETag"))
	if resp, err = client.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotModified {
		t.Errorf("GET a page with its entity tag = %d, want 304", resp.StatusCode)
	}

	// Every request is checked once, each redirect hop too; /healthz is not checked.
	if want := len(tests) - 1 + 4 + 2; c.Count() != want {
		t.Errorf("Count = %d, want %d", c.Count(), want)
	}
}

// TestTransportFailsUndocumentedAnswers checks that a client through Transport fails the test on a
// route the document does not describe and on a view the document does not allow.
func TestTransportFailsUndocumentedAnswers(t *testing.T) {
	cat := demoCatalog(t)
	// A stored brief view missing a required field.
	cat.records["svc_bad"] = dirsvc.RecordStatus{Kind: dirsvc.KindService, State: dirsvc.StateLive, SeenBy: dirsvc.Everyone,
		View: &dirsvc.Published{PublicID: "svc_bad", ETag: `"bad"`, Body: []byte(jsonWithout(t, serviceView(), "slug"))}}
	srv := httptest.NewServer(edge.New(edge.Config{Catalog: cat, Logger: discard()}))
	defer srv.Close()
	c := edgetest.NewChecker(t)
	for _, tt := range []struct{ path, want string }{
		{"/v1/d/demo/widgets", "undocumented operation"},
		{"/v1/d/demo/services/svc_bad?view=brief", "slug"},
	} {
		failures := capture(t, func(tb testing.TB) {
			client := &http.Client{Transport: c.Transport(tb, nil)}
			resp, err := client.Get(srv.URL + tt.path)
			if err != nil {
				tb.Fatalf("GET %s: %v", tt.path, err)
			}
			resp.Body.Close()
		})
		if all := strings.Join(failures, "\n"); !strings.Contains(all, tt.want) || !strings.Contains(all, "GET "+tt.path) {
			t.Errorf("GET %s: failures %q, want one about %q naming the request", tt.path, failures, tt.want)
		}
	}
}
