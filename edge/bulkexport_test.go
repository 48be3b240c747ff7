package edge_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/edge"
	"github.com/dirsvc/dirsvc/fhir"
	"github.com/dirsvc/dirsvc/primary/demo"
	"github.com/dirsvc/dirsvc/primary/export"
)

// bulkClient is a FHIR Bulk Data 2.0 client of the test server, as a national directory's loader
// would be: kick-off, poll, manifest, download.
type bulkClient struct {
	s   *exportServer
	tok string
	aud dirsvc.Audience
}

// kickoff sends a kick-off (GET with query, or POST with a Parameters body) and returns the answer.
func (b *bulkClient) kickoff(t *testing.T, method, query, body string, header ...string) response {
	t.Helper()
	h := append([]string{"Accept", "application/fhir+json", "Prefer", "respond-async"}, header...)
	if b.tok != "" {
		h = append(h, "Authorization", "Bearer "+b.tok)
	}
	var rd *strings.Reader
	if body != "" {
		rd = strings.NewReader(body)
		h = append(h, "Content-Type", "application/fhir+json")
	}
	path := "/v1/d/demo/fhir/$export" + query
	if rd == nil {
		return b.s.do(t, method, path, h...)
	}
	return b.s.send(t, method, path, rd, h...)
}

// poll polls a status address (bounded: a minute) until it answers other than 202, checking the
// 202 answers' headers.
func (b *bulkClient) poll(t *testing.T, status string) response {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		r := b.s.getAs(t, b.tok, pathOf(t, status))
		if r.status != http.StatusAccepted {
			return r
		}
		if r.header.Get("X-Progress") == "" {
			t.Errorf("a 202 status answer without X-Progress")
		}
		if n, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || n < 1 {
			t.Errorf("a 202 status answer with Retry-After %q", r.header.Get("Retry-After"))
		}
		if time.Now().After(deadline) {
			t.Fatalf("the export still runs after a minute")
		}
		time.Sleep(5 * time.Millisecond) // sooner than Retry-After: a test's patience
	}
}

// run kicks off, polls and returns the manifest, after downloading every file and validating every
// line with the FHIR test oracle.
func (b *bulkClient) run(t *testing.T, query string) (export.Manifest, map[string][]json.RawMessage) {
	t.Helper()
	r := b.kickoff(t, "GET", query, "")
	if r.status != http.StatusAccepted {
		t.Fatalf("kick-off %s: %d %s", query, r.status, r.body)
	}
	loc := r.header.Get("Content-Location")
	if !strings.HasPrefix(loc, edge.DefaultBaseURL+"/v1/d/demo/fhir/$export-poll/") {
		t.Fatalf("Content-Location %q is not an absolute status address", loc)
	}
	r = b.poll(t, loc)
	if r.status != http.StatusOK {
		t.Fatalf("status: %d %s", r.status, r.body)
	}
	var m export.Manifest
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatal(err)
	}
	if _, err := time.Parse(time.RFC3339Nano, m.TransactionTime); err != nil {
		t.Errorf("transactionTime %q: %v", m.TransactionTime, err)
	}
	if m.Request != edge.DefaultBaseURL+"/v1/d/demo/fhir/$export"+query || m.RequiresAccessToken || m.Error == nil {
		t.Errorf("manifest: request %q, requiresAccessToken %v, error %v", m.Request, m.RequiresAccessToken, m.Error)
	}
	v := newFHIRValidator(t)
	got := map[string][]json.RawMessage{}
	for _, o := range m.Output {
		f := b.s.get(t, pathOf(t, o.URL)) // no token: the link is the credential
		if f.status != http.StatusOK || f.header.Get("Content-Type") != "application/fhir+ndjson" {
			t.Fatalf("download %s: %d %s", o.Type, f.status, f.header.Get("Content-Type"))
		}
		if leaks := demo.Leaks(f.body, b.aud); len(leaks) > 0 {
			t.Errorf("%s leaks %v", o.Type, leaks)
		}
		lines := ndjsonLines(t, f.body)
		if int64(len(lines)) != o.Count {
			t.Errorf("%s: %d lines, the manifest counts %d", o.Type, len(lines), o.Count)
		}
		for i, l := range lines {
			var res struct{ ResourceType string }
			json.Unmarshal(l, &res)
			if res.ResourceType != o.Type {
				t.Errorf("%s line %d is a %s", o.Type, i+1, res.ResourceType)
			}
			for _, p := range v.check("AU", l) {
				t.Errorf("%s line %d: %s\n%s", o.Type, i+1, p, l)
			}
		}
		got[o.Type] = lines
	}
	return m, got
}

// TestBulkDataExport runs FHIR Bulk Data exports as a client would: every resource type (the same
// resources as the caller's FHIR searches), chosen types, a POST kick-off, a cancel; and the
// refusals: non-partner callers and missing scopes 403, bad parameters 400, all OperationOutcomes.
func TestBulkDataExport(t *testing.T) {
	s := newExportServer(t, demoFiles(t)["demo"])
	all := "graph:read export:run practitioners:read"
	b := &bulkClient{s: s, tok: token(t, grant{dir: "demo", tier: dirsvc.Partner, scopes: all}), aud: dirsvc.Partner}
	_, files := b.run(t, "")
	fc := newFHIRClient(t, s.testServer, caller{"partner", b.tok, dirsvc.Partner}, "demo", "AU")
	for _, typ := range fhir.Types {
		matches, _, ok := fc.search("/" + typ + "?_count=100")
		if !ok {
			t.Fatalf("search %s failed", typ)
		}
		if len(matches) == 0 {
			t.Errorf("the demo has no %s", typ)
		}
		equalBodies(t, typ, files[typ], matches)
	}
	m, files := b.run(t, "?_type=Organization,Location&_outputFormat=application%2Ffhir%2Bndjson")
	if len(m.Output) != 2 || len(files[fhir.TypeOrganization]) == 0 || len(files[fhir.TypeLocation]) == 0 {
		t.Errorf("_type=Organization,Location gives %v", m.Output)
	}
	if _, files := b.run(t, "?_since=2999-01-01T00:00:00Z"); len(files) != 0 {
		t.Errorf("_since in the future gives %d types", len(files))
	}
	// POST kick-off with Parameters.
	r := b.kickoff(t, "POST", "", `{"resourceType":"Parameters","parameter":[{"name":"_type","valueString":"Practitioner"},{"name":"_outputFormat","valueString":"ndjson"}]}`)
	if r.status != http.StatusAccepted {
		t.Fatalf("POST kick-off: %d %s", r.status, r.body)
	}
	if r = b.poll(t, r.header.Get("Content-Location")); r.status != http.StatusOK {
		t.Fatalf("POST kick-off's status: %d %s", r.status, r.body)
	}
	var pm export.Manifest
	json.Unmarshal(r.body, &pm)
	if len(pm.Output) != 1 || pm.Output[0].Type != fhir.TypePractitioner {
		t.Errorf("POST _type=Practitioner gives %v", pm.Output)
	}
	// Cancel: the status is gone.
	r = b.kickoff(t, "GET", "", "")
	loc := r.header.Get("Content-Location")
	if d := s.do(t, "DELETE", pathOf(t, loc), "Authorization", "Bearer "+b.tok); d.status != http.StatusAccepted {
		t.Errorf("DELETE: %d %s", d.status, d.body)
	}
	if p := s.getAs(t, b.tok, pathOf(t, loc)); p.status != http.StatusNotFound {
		t.Errorf("the status of a cancelled export: %d", p.status)
	}
	// Another client's status answers as a missing one.
	r = b.kickoff(t, "GET", "?_type=Location", "")
	other := token(t, grant{dir: "demo", tier: dirsvc.Partner, scopes: all, client: "dirp_other"})
	if p := s.getAs(t, other, pathOf(t, r.header.Get("Content-Location"))); p.status != http.StatusNotFound {
		t.Errorf("another client's status: %d", p.status)
	}
	b.poll(t, r.header.Get("Content-Location"))

	outcome := func(name string, r response, status int, param string) {
		t.Helper()
		if r.status != status || !strings.HasPrefix(r.header.Get("Content-Type"), "application/fhir+json") ||
			!strings.Contains(string(r.body), `"OperationOutcome"`) || param != "" && !strings.Contains(string(r.body), param) {
			t.Errorf("%s: %d %s %s, want %d naming %q", name, r.status, r.header.Get("Content-Type"), r.body, status, param)
		}
	}
	for name, tok := range map[string]string{
		"anonymous":                   "",
		"a public-tier client":        token(t, grant{dir: "demo", tier: dirsvc.Public, scopes: all}),
		"a client without export:run": token(t, grant{dir: "demo", tier: dirsvc.Partner, scopes: "graph:read practitioners:read"}),
	} {
		c := &bulkClient{s: s, tok: tok}
		outcome(name, c.kickoff(t, "GET", "", ""), http.StatusForbidden, "")
	}
	noPract := &bulkClient{s: s, tok: token(t, grant{dir: "demo", tier: dirsvc.Partner, scopes: "graph:read export:run"}), aud: dirsvc.Partner}
	outcome("_type=Practitioner without practitioners:read", noPract.kickoff(t, "GET", "?_type=Practitioner", ""), http.StatusForbidden, "")
	_, files = noPract.run(t, "")
	if files[fhir.TypePractitioner] != nil || len(files[fhir.TypePractitionerRole]) == 0 {
		t.Errorf("without practitioners:read: %d practitioners, %d roles", len(files[fhir.TypePractitioner]), len(files[fhir.TypePractitionerRole]))
	}
	for query, param := range map[string]string{
		"?_outputFormat=text/csv": "_outputFormat",
		"?_type=Patient":          "_type",
		"?_since=yesterday":       "_since",
		"?_typeFilter=x":          "_typeFilter",
	} {
		outcome(query, b.kickoff(t, "GET", query, ""), http.StatusBadRequest, param)
	}
	outcome("a POST body that is not Parameters", b.kickoff(t, "POST", "", `{"resourceType":"Bundle"}`), http.StatusBadRequest, "body")
	h := []string{"Accept", "application/fhir+json", "Authorization", "Bearer " + b.tok}
	outcome("no Prefer", s.get(t, "/v1/d/demo/fhir/$export", h...), http.StatusBadRequest, "Prefer")
	if !slices.Contains(fhir.Types, fhir.TypeEndpoint) {
		t.Fatal("no Endpoint type")
	}
}
