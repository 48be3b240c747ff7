package edge_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/edge"
	"github.com/dirsvc/dirsvc/fhir"
)

// firstOfType returns the id of the first resource of a type the caller finds.
func (fc *fhirClient) firstOfType(typ string) string {
	fc.t.Helper()
	r := fc.get("/" + typ + "?_count=1")
	var b struct {
		Entry []struct{ Resource struct{ ID string } }
	}
	json.Unmarshal(r.body, &b)
	if r.status != http.StatusOK || len(b.Entry) == 0 {
		fc.t.Fatalf("%s: %d %s", typ, r.status, r.body)
	}
	return b.Entry[0].Resource.ID
}

// TestFHIRNegotiationAndErrors holds the FHIR routes to their HTTP contract: JSON for every form of
// asking for it and 406 otherwise, entity tags and 304, Last-Modified, every error an
// OperationOutcome with the parameter named, bad page tokens, and the Practitioner search's access
// rules.
func TestFHIRNegotiationAndErrors(t *testing.T) {
	s := newTestServer(t, demoFiles(t)["demo"])
	fc := newFHIRClient(t, s, caller{"anonymous", "", dirsvc.Public}, "demo", "AU")
	id := fc.firstOfType(fhir.TypeHealthcareService)
	read := "/" + fhir.TypeHealthcareService + "/" + id
	for _, c := range []struct {
		name   string
		path   string
		header []string
		want   int
	}{
		{"no Accept", read, nil, 200},
		{"*/*", read, []string{"Accept", "*/*"}, 200},
		{"application/json", read, []string{"Accept", "application/json"}, 200},
		{"fhir+json with parameters", read, []string{"Accept", "application/fhir+json; fhirVersion=4.0; charset=utf-8"}, 200},
		{"a list with JSON in it", read, []string{"Accept", "text/html, application/fhir+json;q=0.5"}, 200},
		{"_format=json", read + "?_format=json", []string{"Accept", "text/html"}, 200},
		{"_format=application/fhir+json", read + "?_format=application/fhir%2Bjson", nil, 200},
		{"XML", read, []string{"Accept", "application/fhir+xml"}, 406},
		{"JSON refused by weight", read, []string{"Accept", "application/json;q=0"}, 406},
		{"_format=xml", read + "?_format=xml", nil, 406},
		{"metadata as XML", "/metadata", []string{"Accept", "application/xml"}, 406},
		{"search as XML", "/Location?_format=xml", nil, 406},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := fc.get(c.path, c.header...)
			if r.status != c.want {
				t.Fatalf("%d %s, want %d", r.status, r.body, c.want)
			}
			if c.want == 406 && !strings.Contains(string(r.body), `"resourceType":"OperationOutcome"`) {
				t.Errorf("406 is not an OperationOutcome: %s", r.body)
			}
		})
	}

	r := fc.get(read)
	etag, lm := r.header.Get("ETag"), r.header.Get("Last-Modified")
	if etag == "" || lm == "" {
		t.Fatalf("read without ETag or Last-Modified: %v", r.header)
	}
	if r := fc.get(read, "If-None-Match", etag); r.status != http.StatusNotModified || len(r.body) != 0 {
		t.Errorf("If-None-Match of the entity tag: %d %s", r.status, r.body)
	}
	if r := fc.get(read, "If-None-Match", `"other"`); r.status != http.StatusOK {
		t.Errorf("If-None-Match of another tag: %d", r.status)
	}

	for _, c := range []struct{ path, param string }{
		{"/HealthcareService?_count=101", "_count"},
		{"/HealthcareService?_count=x", "_count"},
		{"/HealthcareService?_lastUpdated=yesterday", "_lastUpdated"},
		{"/HealthcareService?active=maybe", "active"},
		{"/HealthcareService?organization=Location/loc-1", "organization"},
		{"/HealthcareService?name:fuzzy=x", "name"},
		{"/HealthcareService?_include=Location:organization", "_include"},
		{"/HealthcareService?_revinclude=Foo:bar", "_revinclude"},
		{"/HealthcareService?_elements=secret", "_elements"},
		{"/HealthcareService?_summary=true", "_summary"},
		{"/HealthcareService?_page=not-a-token", "_page"},
		{"/Location?near=100|200", "near"},
		{"/Location?near=-33|151|5000|km", "near"},
		{"/Organization?sort=name", "sort"},
		{read + "?foo=1", "foo"},
	} {
		r := fc.get(c.path)
		var oo struct {
			ResourceType string
			Issue        []struct {
				Severity, Code string
				Expression     []string
			}
		}
		json.Unmarshal(r.body, &oo)
		if r.status != http.StatusBadRequest || oo.ResourceType != "OperationOutcome" || len(oo.Issue) != 1 ||
			oo.Issue[0].Code != "invalid" || len(oo.Issue[0].Expression) != 1 || oo.Issue[0].Expression[0] != c.param {
			t.Errorf("GET %s: %d %s, want 400 naming %s", c.path, r.status, r.body, c.param)
		}
	}

	// A page token is bound to its search and to the caller.
	r = fc.get("/HealthcareService?_count=2")
	var b struct {
		Link []struct{ Relation, URL string }
	}
	json.Unmarshal(r.body, &b)
	next := ""
	for _, l := range b.Link {
		if l.Relation == "next" {
			next = strings.TrimPrefix(l.URL, edge.DefaultBaseURL+"/v1/d/demo/fhir")
		}
	}
	if next == "" {
		t.Fatalf("no next link: %s", r.body)
	}
	if r := fc.get(next); r.status != http.StatusOK {
		t.Errorf("next page: %d %s", r.status, r.body)
	}
	if r := fc.get(strings.Replace(next, "_count=2", "_count=3", 1)); r.status != http.StatusBadRequest {
		t.Errorf("a page token with another _count: %d", r.status)
	}
	partner := token(t, grant{dir: "demo", tier: dirsvc.Partner, scopes: "graph:read"})
	if r := s.getAs(t, partner, "/v1/d/demo/fhir"+next); r.status != http.StatusBadRequest {
		t.Errorf("another caller's page token: %d", r.status)
	}

	// Practitioner search: 403 without a client (the demo does not let anyone list practitioners)
	// and for a client without practitioners:read; a practitioner is still read by id.
	if r := fc.get("/Practitioner"); r.status != http.StatusForbidden || !strings.Contains(string(r.body), "OperationOutcome") {
		t.Errorf("anonymous Practitioner search: %d %s", r.status, r.body)
	}
	if r := s.getAs(t, partner, "/v1/d/demo/fhir/Practitioner"); r.status != http.StatusForbidden {
		t.Errorf("Practitioner search without practitioners:read: %d", r.status)
	}
	// Roles name their practitioner; _include leaves practitioners out without the scope, with a
	// warning.
	r = s.getAs(t, partner, "/v1/d/demo/fhir/PractitionerRole?_count=20&_include=PractitionerRole:practitioner")
	if r.status != http.StatusOK || strings.Contains(string(r.body), `"resourceType":"Practitioner"`) || !strings.Contains(string(r.body), "practitioners:read") {
		t.Errorf("_include of practitioners without practitioners:read: %d %.400s", r.status, r.body)
	}
	withScope := token(t, grant{dir: "demo", tier: dirsvc.Partner, scopes: "graph:read practitioners:read"})
	r = s.getAs(t, withScope, "/v1/d/demo/fhir/PractitionerRole?_count=20&_include=PractitionerRole:practitioner")
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `"resourceType":"Practitioner"`) {
		t.Errorf("_include of practitioners with practitioners:read: %d %.400s", r.status, r.body)
	}

	// The service's own definitions are served at their canonical addresses and are valid R4.
	for _, p := range []string{"/fhir/StructureDefinition/ownership-type", "/fhir/CodeSystem/ownership-type"} {
		r := s.get(t, p)
		if r.status != http.StatusOK {
			t.Fatalf("GET %s: %d", p, r.status)
		}
		fc.validate(p, r.body)
		var def struct{ URL string }
		json.Unmarshal(r.body, &def)
		if def.URL != edge.DefaultBaseURL+p {
			t.Errorf("GET %s: url %s", p, def.URL)
		}
	}
	// The developer information names the FHIR server and the profiles it claims.
	var dev edge.DeveloperInfo
	json.Unmarshal(s.get(t, "/v1/d/demo/developers").body, &dev)
	if dev.FHIR == nil || dev.FHIR.Base != edge.DefaultBaseURL+"/v1/d/demo/fhir" || len(dev.FHIR.Profiles) != 5 {
		t.Errorf("developer information: %+v", dev.FHIR)
	}
}

// TestFHIRLeadership: Organization.contact holds an organisation's leadership exactly when the
// leadership endpoint answers it (leadership:read, and senior management switched on by the
// platform and the directory), in reads and searches alike.
func TestFHIRLeadership(t *testing.T) {
	s := newTestServer(t, demoFiles(t)["demo"])
	with := token(t, grant{dir: "demo", tier: dirsvc.Partner, scopes: "graph:read leadership:read"})
	without := token(t, grant{dir: "demo", tier: dirsvc.Partner, scopes: "graph:read"})
	contacts := func(tok string) (n int, orgs int) {
		r := s.getAs(t, tok, "/v1/d/demo/fhir/Organization?_count=100")
		var b struct {
			Entry []struct {
				Resource struct {
					ID      string
					Contact []json.RawMessage
				}
			}
		}
		json.Unmarshal(r.body, &b)
		for _, e := range b.Entry {
			n += len(e.Resource.Contact)
			if len(e.Resource.Contact) > 0 {
				lr := s.getAs(t, tok, "/v1/d/demo/organisations/org_"+strings.TrimPrefix(e.Resource.ID, "org-")+"/leadership")
				var l edge.Leadership
				json.Unmarshal(lr.body, &l)
				if lr.status != 200 || len(l.Leadership) != len(e.Resource.Contact) {
					t.Errorf("%s has %d contacts; the leadership endpoint answers %d with %d", e.Resource.ID, len(e.Resource.Contact), lr.status, len(l.Leadership))
				}
				read := s.getAs(t, tok, "/v1/d/demo/fhir/Organization/"+e.Resource.ID)
				if !strings.Contains(string(read.body), `"contact":`) {
					t.Errorf("the read of %s has no contact, its search entry has", e.Resource.ID)
				}
			}
		}
		return n, len(b.Entry)
	}
	if n, orgs := contacts(with); n != 0 || orgs == 0 {
		t.Errorf("senior management off for the platform: %d contacts in %d organisations", n, orgs)
	}
	if err := s.store.SetSeniorManagementAvailable(context.Background(), "demo", true); err != nil {
		t.Fatal(err)
	}
	if n, _ := contacts(with); n == 0 {
		t.Errorf("senior management on, leadership:read: no contact")
	}
	if n, _ := contacts(without); n != 0 {
		t.Errorf("without leadership:read: %d contacts", n)
	}
	if n, _ := contacts(""); n != 0 {
		t.Errorf("anonymous: %d contacts", n)
	}
}

// TestFHIRNewZealand reads a New Zealand directory: valid R4 resources claiming no AU profile, with
// addresses as they are.
func TestFHIRNewZealand(t *testing.T) {
	s := newTestServer(t, demoFiles(t)["demo-nz"])
	fc := newFHIRClient(t, s, caller{"anonymous", "", dirsvc.Public}, "demo-nz", "NZ")
	for _, typ := range []string{fhir.TypeOrganization, fhir.TypeLocation, fhir.TypeHealthcareService, fhir.TypePractitionerRole, fhir.TypeEndpoint} {
		matches, _, ok := fc.search("/" + typ + "?_count=50")
		if !ok || len(matches) == 0 {
			t.Errorf("%s: none", typ)
		}
		for _, m := range matches {
			if strings.Contains(string(m), "hl7.org.au") {
				t.Errorf("an NZ resource claims an AU profile: %.300s", m)
			}
		}
	}
}

// TestAnEdgeServesFHIRFromItsCopy: an edge answers every FHIR route from its own copy, never asking
// the primary (here one that fails every request it gets).
func TestAnEdgeServesFHIRFromItsCopy(t *testing.T) {
	var asked atomic.Int64
	primary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		w.WriteHeader(http.StatusBadGateway)
	}))
	t.Cleanup(primary.Close)
	s := edgeOf(t, primary, edge.Forwarding{EdgeToken: "a-replication-token-for-tests"})
	for _, p := range []string{"/v1/d/small/fhir/metadata", "/v1/d/small/fhir/HealthcareService?_count=5",
		"/v1/d/small/fhir/HealthcareService/svc-gp", "/v1/d/small/fhir/Location?_count=5&_revinclude=HealthcareService:location",
		"/fhir/CodeSystem/ownership-type"} {
		if r := s.get(t, p); r.status != http.StatusOK {
			t.Errorf("GET %s on an edge: %d %s", p, r.status, r.body)
		}
	}
	if r := s.get(t, "/v1/d/small/fhir/HealthcareService/svc-missing"); r.status != http.StatusNotFound {
		t.Errorf("a missing resource on an edge: %d", r.status)
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("the edge asked the primary %d times", n)
	}
}

// TestFHIRTotals: _summary=count and _total=accurate count exactly the matches that paging gives,
// with and without a filter, and _count=0 gives no entries.
func TestFHIRTotals(t *testing.T) {
	s := newTestServer(t, demoFiles(t)["demo"])
	partner := token(t, grant{dir: "demo", tier: dirsvc.Partner, scopes: "graph:read"})
	fc := newFHIRClient(t, s, caller{"partner", partner, dirsvc.Partner}, "demo", "AU")
	for _, q := range []string{"Location", "HealthcareService?service-category=primary_care", "PractitionerRole?active=true", "Endpoint"} {
		all := fc.allOf(q)
		sep := "?"
		if strings.Contains(q, "?") {
			sep = "&"
		}
		for _, extra := range []string{"_summary=count", "_total=accurate&_count=5", "_total=accurate&_count=0"} {
			r := fc.get("/" + q + sep + extra)
			var b struct {
				Total *int
				Entry []struct{ Search struct{ Mode string } }
			}
			json.Unmarshal(r.body, &b)
			if r.status != http.StatusOK || b.Total == nil || *b.Total != len(all) {
				t.Errorf("%s%s%s: %d total %v, want %d", q, sep, extra, r.status, b.Total, len(all))
			}
			want := 0
			if strings.Contains(extra, "_count=5") {
				want = min(5, len(all))
			}
			if len(b.Entry) != want {
				t.Errorf("%s%s%s: %d entries, want %d", q, sep, extra, len(b.Entry), want)
			}
		}
		if len(all) == 0 {
			t.Errorf("%s: nothing to count", q)
		}
	}
}
