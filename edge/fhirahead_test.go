package edge_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/edge"
)

// fhirPage is what a test reads of a searchset page: its match ids and its next link (a path).
type fhirPage struct {
	body []byte
	ids  []string
	next string
}

func readFHIRPage(t *testing.T, s *testServer, tok, path string) fhirPage {
	t.Helper()
	r := s.getAs(t, tok, path)
	if r.status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, r.status, r.body)
	}
	var b struct {
		Link  []struct{ Relation, URL string }
		Entry []struct {
			Resource struct{ ID string }
			Search   struct{ Mode string }
		}
	}
	if err := json.Unmarshal(r.body, &b); err != nil {
		t.Fatal(err)
	}
	p := fhirPage{body: r.body}
	for _, e := range b.Entry {
		if e.Search.Mode == "match" {
			p.ids = append(p.ids, e.Resource.ID)
		}
	}
	for _, l := range b.Link {
		if l.Relation == "next" {
			p.next = strings.TrimPrefix(l.URL, edge.DefaultBaseURL)
		}
	}
	return p
}

// TestFHIRPagesMadeAheadAnswerAsPagesMadeNow pages HealthcareService as the public and as a
// partner. From the second page on, the server makes each next page while the client reads the one
// it has: such a page answers the request for it byte for byte as the page made at that request
// does; and when a record it holds is closed between its making and its request, the request has
// the page made again, without the record.
func TestFHIRPagesMadeAheadAnswerAsPagesMadeNow(t *testing.T) {
	file := demoFiles(t)["demo"]
	s := newTestServerWith(t, func(c *edge.Config) { c.Admission.Expensive = 4 }, file)
	w, err := s.store.Writer(context.Background(), "demo")
	if err != nil {
		t.Fatal(err)
	}
	all := "search:read graph:read feed:read practitioners:read leadership:read"
	for _, c := range []struct{ name, tok string }{
		{"anonymous", ""},
		{"partner", token(t, grant{dir: "demo", tier: dirsvc.Partner, scopes: all})},
	} {
		t.Run(c.name, func(t *testing.T) {
			const first = "/v1/d/demo/fhir/HealthcareService?_count=4"
			// A pass over four pages: the third and the fourth come from pages made ahead.
			var pages []fhirPage
			kept0, taken0 := s.edge.AheadPages()
			for path := first; path != "" && len(pages) < 4; {
				p := readFHIRPage(t, s, c.tok, path)
				pages = append(pages, p)
				if len(pages) >= 2 {
					if kept, _ := s.edge.AheadPages(); kept != kept0+1 {
						t.Fatalf("after page %d, %d more pages are kept made ahead, want 1", len(pages), kept-kept0)
					}
				}
				path = p.next
			}
			if len(pages) < 4 || pages[3].next == "" {
				t.Fatalf("the test needs five pages at least, has %d", len(pages))
			}
			if _, taken := s.edge.AheadPages(); taken-taken0 != 2 {
				t.Fatalf("%d requests were answered with pages made ahead, want 2", taken-taken0)
			}
			// The third page asked for again is made at its request: the same bytes.
			if again := readFHIRPage(t, s, c.tok, pages[1].next); string(again.body) != string(pages[2].body) {
				t.Errorf("the third page made ahead differs from the page made at its request:\n%s\n%s", pages[2].body, again.body)
			}
			kept0, _ = s.edge.AheadPages()
			// A second pass to the second page has the third made ahead; one of its services is
			// closed before it is asked for.
			second := readFHIRPage(t, s, c.tok, readFHIRPage(t, s, c.tok, first).next)
			if kept, _ := s.edge.AheadPages(); kept != kept0+1 {
				t.Fatalf("after the second page, %d more pages are kept made ahead, want 1", kept-kept0)
			}
			_, taken1 := s.edge.AheadPages()
			closed := pages[2].ids[1]
			if _, err := w.Transition(context.Background(), strings.Replace(closed, "-", "_", 1), dirsvc.Transition{To: dirsvc.StateClosed}); err != nil {
				t.Fatal(err)
			}
			third := readFHIRPage(t, s, c.tok, second.next)
			for _, id := range third.ids {
				if id == closed {
					t.Errorf("the third page holds %s, closed after it was made ahead", closed)
				}
			}
			if _, taken := s.edge.AheadPages(); taken != taken1 {
				t.Errorf("a page made ahead before a change answered a request after it")
			}
			if len(third.ids) != 4 || third.ids[0] != pages[2].ids[0] {
				t.Errorf("the third page made again is %v, want four from %s on", third.ids, pages[2].ids[0])
			}
		})
	}
}

// TestFHIRReferencesFollowChangesBetweenRequests reads services that refer to a location, closes
// the location, and reads them again: what the server knew of the location's readability before
// (kept across requests for the directory's state) does not outlive the change, on a read or a
// search page.
func TestFHIRReferencesFollowChangesBetweenRequests(t *testing.T) {
	file := demoFiles(t)["demo"]
	s := newTestServer(t, file)
	w, err := s.store.Writer(context.Background(), "demo")
	if err != nil {
		t.Fatal(err)
	}
	type resource struct {
		ID       string
		Location []struct{ Reference string }
	}
	search := func() map[string]resource {
		r := s.get(t, "/v1/d/demo/fhir/HealthcareService?_count=100")
		var b struct{ Entry []struct{ Resource resource } }
		if err := json.Unmarshal(r.body, &b); err != nil {
			t.Fatal(err)
		}
		out := map[string]resource{}
		for _, e := range b.Entry {
			out[e.Resource.ID] = e.Resource
		}
		return out
	}
	var svc, loc string
	for id, res := range search() {
		if len(res.Location) > 0 {
			svc, loc = id, res.Location[0].Reference
			break
		}
	}
	if svc == "" {
		t.Fatal("no service of the first page refers to a location")
	}
	read := func() string { return string(s.get(t, "/v1/d/demo/fhir/HealthcareService/"+svc).body) }
	if !strings.Contains(read(), `"`+loc+`"`) {
		t.Fatalf("%s does not refer to %s on a read", svc, loc)
	}
	_, id, _ := strings.Cut(loc, "/")
	if _, err := w.Transition(context.Background(), strings.Replace(id, "-", "_", 1), dirsvc.Transition{To: dirsvc.StateClosed}); err != nil {
		t.Fatal(err)
	}
	if r := s.get(t, "/v1/d/demo/fhir/"+loc); r.status == http.StatusOK {
		t.Fatalf("%s closed reads %d", loc, r.status)
	}
	if body := read(); strings.Contains(body, `"`+loc+`"`) {
		t.Errorf("%s still refers to %s, closed, on a read: %s", svc, loc, body)
	}
	for _, res := range search() {
		for _, l := range res.Location {
			if l.Reference == loc {
				t.Errorf("%s still refers to %s, closed, on a search page", res.ID, loc)
			}
		}
	}
}
