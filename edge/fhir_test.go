package edge_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/edge"
	"github.com/dirsvc/dirsvc/fhir"
	"github.com/dirsvc/dirsvc/primary"
	"github.com/dirsvc/dirsvc/primary/demo"
)

// fhirClient reads a FHIR server of the test server as one caller, scanning every answer for
// canaries the caller's tier may not see and validating every resource it receives.
type fhirClient struct {
	t       *testing.T
	s       *testServer
	c       caller
	dir     string
	country string
	v       *fhirValidator
	// reads remembers the status of each resource read by Type/id.
	reads    map[string]int
	statuses map[int]int
}

func newFHIRClient(t *testing.T, s *testServer, c caller, dir, country string) *fhirClient {
	return &fhirClient{t: t, s: s, c: c, dir: dir, country: country, v: newFHIRValidator(t), reads: map[string]int{}, statuses: map[int]int{}}
}

// get reads a path under the directory's FHIR base, scans it and checks its media type.
func (fc *fhirClient) get(path string, header ...string) response {
	fc.t.Helper()
	full := "/v1/d/" + fc.dir + "/fhir" + path
	if fc.c.tok != "" {
		header = append(header, "Authorization", "Bearer "+fc.c.tok)
	}
	r := fc.s.get(fc.t, full, header...)
	fc.statuses[r.status]++
	var head strings.Builder
	for k, vs := range r.header {
		head.WriteString(k + ": " + strings.Join(vs, " ") + "\n")
	}
	if leaks := demo.Leaks(append([]byte(head.String()), r.body...), fc.c.aud); len(leaks) > 0 {
		fc.t.Errorf("GET %s leaks %v to %s", full, leaks, fc.c.name)
	}
	if r.status != http.StatusNotModified && r.status != http.StatusMovedPermanently && !strings.HasPrefix(r.header.Get("Content-Type"), "application/fhir+json") {
		fc.t.Errorf("GET %s: Content-Type %q", full, r.header.Get("Content-Type"))
	}
	return r
}

// validate checks one resource and returns its references.
func (fc *fhirClient) validate(where string, raw json.RawMessage) []string {
	fc.t.Helper()
	for _, p := range fc.v.check(fc.country, raw) {
		fc.t.Errorf("%s: %s\n%s", where, p, raw)
	}
	return references(raw)
}

// references returns every reference value in a resource's JSON.
func references(raw []byte) []string {
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if s, ok := e.(string); ok && k == "reference" {
					out = append(out, s)
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	var v any
	json.Unmarshal(raw, &v)
	walk(v)
	return out
}

// resolve reads every reference, which must answer 200 at the caller's tier.
func (fc *fhirClient) resolve(where string, refs []string) {
	fc.t.Helper()
	for _, ref := range refs {
		st, seen := fc.reads[ref]
		if !seen {
			r := fc.get("/" + ref)
			st = r.status
			fc.reads[ref] = st
			if st == http.StatusOK {
				fc.resolve(ref, fc.validate(ref, r.body))
			}
		}
		if st != http.StatusOK {
			fc.t.Errorf("%s refers to %s, which %s reads as %d", where, ref, fc.c.name, st)
		}
	}
}

// search pages through a search to its end and returns the entries of each mode, checking every
// resource, every reference and the links.
func (fc *fhirClient) search(query string) (matches, included []json.RawMessage, ok bool) {
	fc.t.Helper()
	path := query
	seen := map[string]bool{}
	for pages := 0; path != ""; pages++ {
		if pages > 1000 {
			fc.t.Fatalf("%s: more than 1000 pages", query)
		}
		r := fc.get(path)
		if r.status != http.StatusOK {
			return nil, nil, false
		}
		var b struct {
			Link  []struct{ Relation, URL string }
			Entry []struct {
				FullURL  string          `json:"fullUrl"`
				Resource json.RawMessage `json:"resource"`
				Search   struct{ Mode string }
			}
		}
		if err := json.Unmarshal(r.body, &b); err != nil {
			fc.t.Fatalf("%s: %v", path, err)
		}
		path = ""
		for _, l := range b.Link {
			if !strings.HasPrefix(l.URL, edge.DefaultBaseURL+"/v1/d/"+fc.dir+"/fhir/") {
				fc.t.Errorf("%s: link %s is not on the base URL", query, l.URL)
			}
			if l.Relation == "next" {
				path = strings.TrimPrefix(l.URL, edge.DefaultBaseURL+"/v1/d/"+fc.dir+"/fhir")
			}
		}
		for _, e := range b.Entry {
			fc.validate(query, e.Resource)
			switch e.Search.Mode {
			case "match":
				if seen[e.FullURL] {
					fc.t.Errorf("%s: %s is on two pages", query, e.FullURL)
				}
				seen[e.FullURL] = true
				matches = append(matches, e.Resource)
			case "include":
				included = append(included, e.Resource)
			}
			if e.Search.Mode != "outcome" {
				fc.resolve(e.FullURL, references(e.Resource))
			}
		}
	}
	return matches, included, true
}

// idsOf returns Type/id of resources.
func idsOf(rs []json.RawMessage) []string {
	var out []string
	for _, r := range rs {
		var h struct{ ResourceType, ID string }
		json.Unmarshal(r, &h)
		out = append(out, h.ResourceType+"/"+h.ID)
	}
	return out
}

// TestFHIREveryTierSeesOnlyWhatItMay reads, as every tier (a narrowed client too), every record of
// the demo directory as a FHIR resource (plain and with _elements), and every resource type by
// search to its end with every _include and _revinclude, with _summary=count and _elements, and
// the CapabilityStatement; it scans every byte of every answer for a canary the tier may not see,
// validates every resource received (R4 and AU Base), reads every reference at the same tier
// (each must answer 200), and holds every 404 to the bytes of a missing resource and of an unknown
// type.
func TestFHIREveryTierSeesOnlyWhatItMay(t *testing.T) {
	file := demoFiles(t)["demo"]
	s := newTestServer(t, file)
	if err := s.store.SetSeniorManagementAvailable(context.Background(), "demo", true); err != nil {
		t.Fatal(err)
	}
	snap, err := primary.ParseImport(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	closeAndMerge(t, s, "demo", snap)
	for _, c := range tierCallers(t, "demo", broadArea(snap)) {
		t.Run(c.name, func(t *testing.T) {
			fc := newFHIRClient(t, s, c, "demo", "AU")
			fc.get("/metadata")
			missing := fc.get("/HealthcareService/svc-missing").wire()
			if unknown := fc.get("/Patient/svc-missing").wire(); unknown != missing {
				t.Errorf("an unknown type answers differently from a missing resource:\n%s\nwant\n%s", unknown, missing)
			}
			for _, rec := range snap.Records {
				typ := fhir.TypeOf(rec.Kind())
				id := fhir.ResourceID(rec.Base().PublicID)
				for _, q := range []string{"", "?_elements=identifier,name"} {
					r := fc.get("/" + typ + "/" + id + q)
					switch r.status {
					case http.StatusOK:
						fc.resolve(typ+"/"+id, fc.validate(typ+"/"+id, r.body))
					case http.StatusNotFound:
						if r.wire() != missing {
							t.Errorf("hidden %s/%s answers differently from a missing one:\n%s\nwant\n%s", typ, id, r.wire(), missing)
						}
					}
				}
			}
			for _, typ := range fhir.Types {
				query := "/" + typ + "?_count=100"
				if inc := fhir.Includes[typ]; len(inc) > 0 {
					query += "&_include=" + strings.Join(inc, ",")
				}
				if rev := fhir.RevIncludes[typ]; len(rev) > 0 {
					query += "&_revinclude=" + strings.Join(rev, ",")
				}
				matches, _, ok := fc.search(query)
				if !ok {
					if typ != fhir.TypePractitioner {
						t.Errorf("search %s failed", query)
					}
					continue
				}
				if len(matches) == 0 && c.name == "partner" {
					t.Errorf("%s finds no %s", c.name, typ)
				}
				fc.search("/" + typ + "?_count=7&_elements=name")
				fc.get("/" + typ + "?_summary=count")
			}
			for _, st := range []int{200, 404} {
				if fc.statuses[st] == 0 {
					t.Errorf("no %d answer; statuses %v", st, fc.statuses)
				}
			}
			if c.name == "anonymous" && fc.statuses[http.StatusForbidden] == 0 {
				t.Errorf("an anonymous Practitioner search was not refused; statuses %v", fc.statuses)
			}
		})
	}
}

// TestFHIRPagingReproducesTheRESTLists pages through every resource type at every tier, with
// records changed, closed and added between pages, and holds each type's set to what the REST API
// gives the same caller: the service list for HealthcareService, the practitioner list for
// Practitioner, and single record reads for the rest. No resource appears twice, and every record
// that stayed visible throughout appears.
func TestFHIRPagingReproducesTheRESTLists(t *testing.T) {
	file := demoFiles(t)["demo"]
	s := newTestServer(t, file)
	snap, err := primary.ParseImport(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	w, err := s.store.Writer(ctx, "demo")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range tierCallers(t, "demo", broadArea(snap)) {
		t.Run(c.name, func(t *testing.T) {
			// What the REST API gives the caller of a type, read just before its pages are: the
			// records closed while an earlier type was paged take others with them.
			wantOf := func(typ string) map[string]bool {
				out := map[string]bool{}
				list := map[string]string{fhir.TypeHealthcareService: "/services?limit=100", fhir.TypePractitioner: "/practitioners?limit=100"}[typ]
				for next := list; next != ""; {
					r := s.getAs(t, c.tok, "/v1/d/demo"+next)
					if r.status != http.StatusOK {
						return nil
					}
					var page struct {
						Items      []struct{ PublicID string }
						NextCursor *string
					}
					json.Unmarshal(r.body, &page)
					for _, it := range page.Items {
						out[fhir.ResourceID(it.PublicID)] = true
					}
					next = ""
					if page.NextCursor != nil {
						next = list + "&cursor=" + url.QueryEscape(*page.NextCursor)
					}
				}
				if list != "" {
					return out
				}
				paths := map[dirsvc.Kind]string{dirsvc.KindOrganisation: "organisations", dirsvc.KindLocation: "locations", dirsvc.KindRole: "roles"}
				for _, rec := range snap.Records {
					p, ok := paths[rec.Kind()]
					if !ok || fhir.TypeOf(rec.Kind()) != typ {
						continue
					}
					q := ""
					if rec.Kind() != dirsvc.KindRole {
						q = "?view=brief"
					}
					if s.getAs(t, c.tok, "/v1/d/demo/"+p+"/"+rec.Base().PublicID+q).status == http.StatusOK {
						out[fhir.ResourceID(rec.Base().PublicID)] = true
					}
				}
				return out
			}
			want := map[string]map[string]bool{}
			fc := newFHIRClient(t, s, c, "demo", "AU")
			for _, typ := range []string{fhir.TypeOrganization, fhir.TypeLocation, fhir.TypeHealthcareService, fhir.TypePractitioner, fhir.TypePractitionerRole} {
				want[typ] = wantOf(typ)
				got := map[string]bool{}
				changed := map[string]bool{}
				path := "/" + typ + "?_count=13"
				for page := 0; path != ""; page++ {
					r := fc.get(path)
					if r.status != http.StatusOK {
						if want[typ] != nil {
							t.Fatalf("%s: %d %s", path, r.status, r.body)
						}
						break
					}
					var b struct {
						Link  []struct{ Relation, URL string }
						Entry []struct {
							Resource json.RawMessage
							Search   struct{ Mode string }
						}
					}
					json.Unmarshal(r.body, &b)
					var ids []string
					for _, e := range b.Entry {
						id := idsOf([]json.RawMessage{e.Resource})[0]
						_, id, _ = strings.Cut(id, "/")
						if got[id] {
							t.Errorf("%s: %s on two pages", typ, id)
						}
						got[id] = true
						ids = append(ids, id)
					}
					// Between pages: change a record not yet reached (a new version), and close one.
					if page%3 == 1 && len(ids) > 0 {
						for _, rec := range snap.Records {
							id := fhir.ResourceID(rec.Base().PublicID)
							if fhir.TypeOf(rec.Kind()) == typ && id > ids[len(ids)-1] && want[typ][id] && !changed[id] {
								changed[id] = true
								if _, err := w.Transition(ctx, rec.Base().PublicID, dirsvc.Transition{To: dirsvc.StateClosed}); err != nil {
									t.Fatal(err)
								}
								break
							}
						}
					}
					path = ""
					for _, l := range b.Link {
						if l.Relation == "next" {
							path = strings.TrimPrefix(l.URL, edge.DefaultBaseURL+"/v1/d/demo/fhir")
						}
					}
				}
				if want[typ] == nil {
					continue
				}
				for id := range want[typ] {
					if !got[id] && !changed[id] {
						t.Errorf("%s: %s/%s is in the REST API's set but not in the FHIR pages", c.name, typ, id)
					}
				}
				for id := range got {
					if !want[typ][id] {
						t.Errorf("%s: %s/%s is in the FHIR pages but not in the REST API's set", c.name, typ, id)
					}
				}
			}
			if t.Failed() {
				return
			}
		})
		// Each caller starts from the same directory: restore what was closed by reimporting.
		if _, _, err := primary.Import(ctx, s.store, bytes.NewReader(file)); err != nil {
			t.Fatal(err)
		}
	}
}
