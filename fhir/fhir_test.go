package fhir_test

import (
	"encoding/json"
	"net/url"
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
