package edge_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/edge"
	"github.com/dirsvc/dirsvc/fhir"
)

// TestFederationManifestDescribesTheDirectory reads the demo directory's manifest as an aggregate
// would: its identity and region come from the import, its AU pack names the implementation guide
// the FHIR resources claim, and every address it names is absolute and answers on this server
// (never a 404 for a route the server does not have). A node that forwards to a primary also names
// what the primary serves, and only what the OpenAPI document lists.
func TestFederationManifestDescribesTheDirectory(t *testing.T) {
	file := demoFiles(t)["demo"]
	s := newTestServer(t, file)
	m := manifestOf(t, s, "")
	d := m.Directory
	if d.Slug != "demo" || d.Country != "AU" || d.TimeZone != "Australia/Sydney" || d.Name == "" ||
		d.Manifest != edge.DefaultBaseURL+"/v1/d/demo/federation/manifest" {
		t.Errorf("identity %+v", d)
	}
	if m.Region == "" || m.DataIssueContact != "data@demo.example.org" || m.Licence == "" || m.Attribution == "" {
		t.Errorf("region %q, data-issue contact %q, licence %q, attribution %q", m.Region, m.DataIssueContact, m.Licence, m.Attribution)
	}
	if len(m.JurisdictionPacks) != 1 || m.JurisdictionPacks[0].ID != "au" ||
		m.JurisdictionPacks[0].FHIRImplementationGuide != "hl7.fhir.au.base#"+fhir.AUBaseVersion ||
		!slices.Contains(m.JurisdictionPacks[0].AreaTypes, dirsvc.AreaSA2) {
		t.Errorf("jurisdiction packs %+v", m.JurisdictionPacks)
	}
	if !slices.Equal(m.Tiers, []string{"public", "professional", "partner"}) {
		t.Errorf("tiers %v", m.Tiers)
	}
	e := m.Endpoints
	if e.ReadAPI != edge.DefaultBaseURL+"/v1/d/demo" || e.ChangeFeed == "" || e.FHIR != edge.DefaultBaseURL+"/v1/d/demo/fhir" {
		t.Errorf("endpoints %+v", e)
	}
	if e.Exports != "" || e.ForwardedProposals != "" {
		t.Errorf("a node without those routes names them: %+v", e)
	}
	// Every address the manifest names answers here, to a caller with the scopes it needs.
	partner := token(t, grant{dir: "demo", tier: dirsvc.Partner, scopes: "graph:read feed:read search:read"})
	addresses := []string{e.ReadAPI + "/services?limit=1", e.OpenAPI, e.Developers, e.ChangeFeed, e.FHIR + "/metadata", d.Manifest}
	if i := slices.IndexFunc(m.CodeSystems, func(c edge.CodeSystemRef) bool { return c.Name == "ownership-type" }); i < 0 || m.CodeSystems[i].Concepts == "" {
		t.Errorf("the ownership code system, which the service serves, without its concepts: %+v", m.CodeSystems)
	}
	for _, c := range m.CodeSystems {
		if !strings.HasPrefix(c.System, edge.DefaultBaseURL+"/fhir/CodeSystem/") {
			t.Errorf("code system %s: system %q", c.Name, c.System)
		}
		if c.Concepts != "" {
			addresses = append(addresses, c.Concepts)
		}
	}
	for _, a := range addresses {
		path, ok := strings.CutPrefix(a, edge.DefaultBaseURL)
		if !ok {
			t.Errorf("%q is not an address of this service", a)
			continue
		}
		if r := s.getAs(t, partner, path); r.status != http.StatusOK {
			t.Errorf("GET %s: %d %s", path, r.status, r.body)
		}
	}

	// The same manifest for every caller of the directory; none for another directory's client, or
	// for a directory that does not exist.
	for _, c := range tierCallers(t, "demo", "state:nsw") {
		if got := manifestOf(t, s, c.tok); !sameJSON(t, got, m) {
			t.Errorf("%s reads another manifest", c.name)
		}
	}
	if r := s.getAs(t, token(t, grant{dir: "elsewhere", tier: dirsvc.Partner, scopes: "graph:read"}), "/v1/d/demo/federation/manifest"); r.status != http.StatusForbidden {
		t.Errorf("another directory's client: %d", r.status)
	}
	if r := s.get(t, "/v1/d/nowhere/federation/manifest"); r.status != http.StatusNotFound {
		t.Errorf("an unknown directory: %d", r.status)
	}
	if r := s.get(t, "/v1/d/demo/federation/manifest?pretty=1"); r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "pretty") {
		t.Errorf("an unknown parameter: %d %s", r.status, r.body)
	}

	// An edge names the routes it forwards to the primary, as the OpenAPI document lists them.
	primary, _ := url.Parse("http://127.0.0.1:1")
	fw := newTestServerWith(t, func(c *edge.Config) { c.Forwarding = &edge.Forwarding{Primary: primary} }, file)
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(edge.OpenAPIDocument(), &doc); err != nil {
		t.Fatal(err)
	}
	em := manifestOf(t, fw, "").Endpoints
	for _, c := range []struct {
		got, path, method string
	}{
		{em.Exports, "/v1/d/{dir}/exports", "post"},
		{em.FHIRBulkExport, "/v1/d/{dir}/fhir/$export", "get"},
		{em.ForwardedProposals, "/v1/d/{dir}/federation/forwarded/proposals", "post"},
		{em.ForwardedIssues, "/v1/d/{dir}/federation/forwarded/issues", "post"},
	} {
		_, documented := doc.Paths[c.path][c.method]
		want := ""
		if documented {
			want = edge.DefaultBaseURL + strings.Replace(c.path, "{dir}", "demo", 1)
		}
		if c.got != want {
			t.Errorf("an edge names %q for %s %s, want %q (documented: %v)", c.got, c.method, c.path, want, documented)
		}
	}
}

func manifestOf(t *testing.T, s *testServer, tok string) edge.FederationManifest {
	t.Helper()
	r := s.getAs(t, tok, "/v1/d/demo/federation/manifest")
	if r.status != http.StatusOK {
		t.Fatalf("manifest: %d %s", r.status, r.body)
	}
	var m edge.FederationManifest
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func sameJSON(t *testing.T, a, b any) bool {
	t.Helper()
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(ja) == string(jb)
}
