package fhir_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/fhir"
)

func TestIDsRoundTrip(t *testing.T) {
	for _, c := range []struct {
		kind dirsvc.Kind
		id   string
	}{{dirsvc.KindService, "svc_01873385"}, {dirsvc.KindRole, "role_a_b"}, {dirsvc.KindOrganisation, "org_x"}} {
		rid := fhir.ResourceID(c.id)
		if strings.Contains(rid, "_") {
			t.Errorf("ResourceID(%s) = %s", c.id, rid)
		}
		if got := fhir.PublicID(c.kind, rid); got != c.id {
			t.Errorf("PublicID(%s) = %s, want %s", rid, got, c.id)
		}
	}
	for _, bad := range []string{"", "svc-", "loc-1", "svc-a/b", strings.Repeat("a", 100)} {
		if got := fhir.PublicID(dirsvc.KindService, bad); got != "" {
			t.Errorf("PublicID(%q) = %q, want none", bad, got)
		}
	}
	if svc, n, ok := fhir.ParseEndpointID(fhir.EndpointID("svc_ab12", 3)); !ok || svc != "svc_ab12" || n != 3 {
		t.Errorf("endpoint id round trip: %s %d %v", svc, n, ok)
	}
	for _, bad := range []string{"svc-ab12", "svc-ab12-ep0", "svc-ab12-ep", "svc-ab12-ep01", "loc-ab12-ep1", "svc-ab12-epx"} {
		if _, _, ok := fhir.ParseEndpointID(bad); ok {
			t.Errorf("ParseEndpointID(%q) accepted", bad)
		}
	}
}

func TestParseSearchNamesTheBadParameter(t *testing.T) {
	for _, c := range []struct{ query, param string }{
		{"_count=101", "_count"}, {"_count=-1", "_count"}, {"name:sounds=x", "name"}, {"bogus=1", "bogus"},
		{"_lastUpdated=gq2020", "_lastUpdated"}, {"_include=HealthcareService:practitioner", "_include"},
		{"organization=Practitioner/x", "organization"}, {"identifier=", "identifier"}, {"_summary=data", "_summary"},
	} {
		q, _ := url.ParseQuery(c.query)
		_, err := fhir.ParseSearch(fhir.TypeHealthcareService, q, false)
		var e *dirsvc.Error
		if !asError(err, &e) || e.Code != dirsvc.EInvalid || e.Param != c.param {
			t.Errorf("%s: %v, want invalid %s", c.query, err, c.param)
		}
	}
	q, _ := url.ParseQuery("bogus=1&name=a")
	s, err := fhir.ParseSearch(fhir.TypeHealthcareService, q, true)
	if err != nil || len(s.Ignored) != 1 || s.Ignored[0] != "bogus" {
		t.Errorf("lenient: %v %+v", err, s)
	}
}

func asError(err error, e **dirsvc.Error) bool {
	x, ok := err.(*dirsvc.Error)
	*e = x
	return ok
}

func TestMappingUsesOnlyTheViewAndReadableReferences(t *testing.T) {
	v := &dirsvc.LocationView{
		RecordHead:   dirsvc.RecordHead{PublicID: "loc_a1", Version: 3, LastUpdated: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
		Name:         "Clinic",
		Organisation: dirsvc.Ref{PublicID: "org_hidden"},
		Address:      &dirsvc.AddressView{Lines: []string{"1 Main St"}, Locality: "Town", State: "Qld", Postcode: "4000", Country: "AU"},
		Hours: &dirsvc.OpeningHours{TimeZone: "Australia/Brisbane", Weekly: []dirsvc.WeeklyHours{{Day: "mon",
			Intervals: []dirsvc.Interval{{Open: "09:00", Close: "24:00"}}}}},
		Contacts:      []dirsvc.ContactView{{Kind: dirsvc.ContactMobile, Value: "+61400000000"}},
		OwnershipType: &dirsvc.Ownership{Code: "demo:own", Display: "Own type"},
	}
	m := &fhir.Mapper{Country: "AU", Canonical: "https://d.example/fhir", Readable: func(id string) bool { return id != "org_hidden" }}
	res, err := m.Location(v)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	json.Unmarshal(res.Body, &got)
	body := string(res.Body)
	if strings.Contains(body, "org_hidden") || strings.Contains(body, "org-hidden") || got["managingOrganization"] != nil {
		t.Errorf("a reference to an unreadable record: %s", body)
	}
	for _, want := range []string{`"id":"loc-a1"`, `"versionId":"3"`, `"lastUpdated":"2026-01-02T03:04:05.000Z"`,
		`"profile":["http://hl7.org.au/fhir/StructureDefinition/au-location|6.0.0"]`, `"state":"QLD"`, `"postalCode":"4000"`,
		`"closingTime":"23:59:59"`, `"valueCode":"Australia/Brisbane"`, `{"system":"phone","value":"+61400000000","use":"mobile"}`,
		`"url":"https://d.example/fhir/StructureDefinition/ownership-type","valueCodeableConcept":{"text":"Own type"}`} {
		if !strings.Contains(body, want) {
			t.Errorf("missing %s in %s", want, body)
		}
	}
	q, _ := url.ParseQuery("address-city=tow&address-state=qld&_lastUpdated=ge2026-01-02&name:exact=clinic")
	s, err := fhir.ParseSearch(fhir.TypeLocation, q, false)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Matches(res) {
		t.Errorf("%v does not match %s", q, body)
	}
	for _, miss := range []string{"address-city=own", "_lastUpdated=gt2026-01-02", "name:exact=clin", "organization=org-hidden", "_id=loc-a2"} {
		q, _ := url.ParseQuery(miss)
		s, err := fhir.ParseSearch(fhir.TypeLocation, q, false)
		if err != nil {
			t.Fatal(err)
		}
		if s.Matches(res) {
			t.Errorf("%s matches %s", miss, body)
		}
	}
}

// openTimes are the (day, open, close) of an availableTime or hoursOfOperation list, each entry's
// days expanded, in the order they come.
func openTimes(t *testing.T, body []byte, list, open, close string) []string {
	t.Helper()
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatal(err)
	}
	var entries []map[string]any
	if err := json.Unmarshal(raw[list], &entries); err != nil && raw[list] != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		days, _ := e["daysOfWeek"].([]any)
		if len(days) == 0 {
			t.Errorf("an entry without days: %v", e)
		}
		for _, d := range days {
			out = append(out, fmt.Sprintf("%s %v-%v allDay=%v", d, e[open], e[close], e["allDay"] == true))
		}
	}
	return out
}

func TestOpeningHoursShareAnEntryForTheDaysOpenAtTheSameTimes(t *testing.T) {
	iv := func(open, close string) dirsvc.Interval { return dirsvc.Interval{Open: open, Close: close} }
	day := func(d string, ivs ...dirsvc.Interval) dirsvc.WeeklyHours {
		return dirsvc.WeeklyHours{Day: d, Intervals: ivs}
	}
	hours := &dirsvc.OpeningHours{TimeZone: "Australia/Perth", Weekly: []dirsvc.WeeklyHours{
		day("mon", iv("08:30", "17:00"), iv("18:00", "20:00")), day("tue", iv("08:30", "17:00")),
		day("wed", iv("08:30", "17:00"), iv("18:00", "20:00")), day("thu", iv("08:30", "17:00")),
		day("fri", iv("08:30", "17:00"), iv("18:00", "20:00")), day("sat", iv("09:00", "24:00")), day("sun", iv("09:00", "24:00")),
	}}
	m := &fhir.Mapper{Country: "AU", Canonical: "https://d.example/fhir"}
	svc, err := m.HealthcareService(&dirsvc.ServiceView{RecordHead: dirsvc.RecordHead{PublicID: "svc_a1", Version: 1}, Name: "Clinic", Hours: hours})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		AvailableTime []struct {
			DaysOfWeek []string `json:"daysOfWeek"`
			Start      string   `json:"availableStartTime"`
			End        string   `json:"availableEndTime"`
			StartZone  struct {
				Extension []struct{ URL, ValueCode string } `json:"extension"`
			} `json:"_availableStartTime"`
		} `json:"availableTime"`
	}
	if err := json.Unmarshal(svc.Body, &got); err != nil {
		t.Fatal(err)
	}
	want := []string{"[mon tue wed thu fri] 08:30:00-17:00:00", "[mon wed fri] 18:00:00-20:00:00", "[sat sun] 09:00:00-23:59:59"}
	var have []string
	for _, a := range got.AvailableTime {
		have = append(have, fmt.Sprintf("%v %s-%s", a.DaysOfWeek, a.Start, a.End))
		if len(a.StartZone.Extension) != 1 || a.StartZone.Extension[0].ValueCode != "Australia/Perth" {
			t.Errorf("%v: timezone extension %+v", a.DaysOfWeek, a.StartZone)
		}
	}
	if !slices.Equal(have, want) {
		t.Errorf("availableTime\n got %q\nwant %q", have, want)
	}

	// Any week: expanding each entry's days gives back exactly the week's intervals, day by day,
	// for a service's availableTime and a location's hoursOfOperation alike.
	rng := rand.New(rand.NewPCG(1, 2))
	times := []dirsvc.Interval{iv("00:00", "24:00"), iv("08:00", "12:00"), iv("13:00", "17:00"), iv("09:00", "17:30")}
	for range 300 {
		h := &dirsvc.OpeningHours{TimeZone: "Pacific/Auckland", Always: rng.IntN(8) == 0}
		var wantWeek []string
		if h.Always {
			for _, d := range []string{"mon", "tue", "wed", "thu", "fri", "sat", "sun"} {
				wantWeek = append(wantWeek, d+" <nil>-<nil> allDay=true")
			}
		}
		for _, d := range rng.Perm(7) {
			name := []string{"mon", "tue", "wed", "thu", "fri", "sat", "sun"}[d]
			w := dirsvc.WeeklyHours{Day: name}
			for _, i := range rng.Perm(len(times))[:rng.IntN(3)] {
				w.Intervals = append(w.Intervals, times[i])
				wantWeek = append(wantWeek, fmt.Sprintf("%s %s-%s allDay=false", name, fhirTimeOf(times[i].Open), fhirTimeOf(times[i].Close)))
			}
			h.Weekly = append(h.Weekly, w)
		}
		slices.Sort(wantWeek)
		svc, err := m.HealthcareService(&dirsvc.ServiceView{RecordHead: dirsvc.RecordHead{PublicID: "svc_a1", Version: 1}, Name: "S", Hours: h})
		if err != nil {
			t.Fatal(err)
		}
		loc, err := m.Location(&dirsvc.LocationView{RecordHead: dirsvc.RecordHead{PublicID: "loc_a1", Version: 1}, Name: "L", Hours: h})
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range [][]string{openTimes(t, svc.Body, "availableTime", "availableStartTime", "availableEndTime"),
			openTimes(t, loc.Body, "hoursOfOperation", "openingTime", "closingTime")} {
			slices.Sort(l)
			if !slices.Equal(l, wantWeek) {
				t.Fatalf("week %+v\n got %q\nwant %q", h, l, wantWeek)
			}
		}
	}
}

// fhirTimeOf is the FHIR time of "HH:MM", the end of the day its last second.
func fhirTimeOf(hm string) string {
	if hm == "24:00" {
		return "23:59:59"
	}
	return hm + ":00"
}
