package edge_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/edge"
	"github.com/dirsvc/dirsvc/primary"
	"github.com/dirsvc/dirsvc/primary/demo"
)

// searchAll pages through a search as the caller and returns the public IDs of every result, with
// every answer scanned for canaries the caller's tier may not see.
func searchAll(t *testing.T, s *testServer, c caller, query string) []string {
	t.Helper()
	var ids []string
	for off := 0; ; off += 100 {
		path := fmt.Sprintf("/v1/d/demo/search/services?limit=100&offset=%d%s", off, query)
		r := s.getAs(t, c.tok, path)
		if r.status != http.StatusOK {
			t.Fatalf("GET %s as %s: %d %s", path, c.name, r.status, r.body)
		}
		if leaks := demo.Leaks(append([]byte(fmt.Sprint(r.header)), r.body...), c.aud); len(leaks) > 0 {
			t.Errorf("GET %s leaks %v to %s", path, leaks, c.name)
		}
		encodedAsEncodingJSON(t, path, r.body)
		m := r.json(t)
		for _, x := range m["results"].([]any) {
			ids = append(ids, x.(map[string]any)["publicId"].(string))
		}
		if total := int(m["total"].(float64)); off+100 >= total {
			if strings.Contains(query, "group=") {
				return ids
			}
			if len(ids) != total {
				t.Errorf("%s: total %d, %d results in all pages", path, total, len(ids))
			}
			return ids
		}
	}
}

// encodedAsEncodingJSON checks that a search's answer, whose result cards are written from their
// kept encoding, is byte for byte what encoding/json makes of the answer it decodes to.
func encodedAsEncodingJSON(t *testing.T, path string, body []byte) {
	t.Helper()
	var ans edge.SearchResults
	if err := json.Unmarshal(body, &ans); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	if again, err := json.Marshal(ans); err != nil || !bytes.Equal(again, body) {
		t.Errorf("GET %s is not encoded as encoding/json encodes it:\n got %s\nwant %s", path, body, again)
	}
}

// listAll returns the public IDs of the service list as the caller sees it.
func listAll(t *testing.T, s *testServer, tok string) []string {
	t.Helper()
	var ids []string
	for next := "/v1/d/demo/services?limit=100"; next != ""; {
		r := s.getAs(t, tok, next)
		m := r.json(t)
		for _, x := range m["items"].([]any) {
			ids = append(ids, x.(map[string]any)["publicId"].(string))
		}
		next = ""
		if cur, ok := m["nextCursor"].(string); ok {
			next = "/v1/d/demo/services?limit=100&cursor=" + cur
		}
	}
	return ids
}

// TestSearchAsEveryTier searches the demo directory as every tier: a search without words finds
// exactly the services of the service list (visibility and narrowing alike), answers carry no canary
// of another tier, a search by a canary the tier may not see answers exactly as one by a word found
// nowhere, and a client without search:read is refused.
func TestSearchAsEveryTier(t *testing.T) {
	file := demoFiles(t)["demo"]
	s := newTestServer(t, file)
	snap, err := primary.ParseImport(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	markers := demo.Canaries(file)
	for _, c := range tierCallers(t, "demo", broadArea(snap)) {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "public client" { // graph:read, not search:read
				r := s.getAs(t, c.tok, "/v1/d/demo/search/services")
				if r.status != http.StatusForbidden || !strings.Contains(string(r.body), "forbidden-scope") {
					t.Errorf("a client without search:read: %d %s", r.status, r.body)
				}
				return
			}
			found := searchAll(t, s, c, "")
			listed := listAll(t, s, c.tok)
			slices.Sort(found)
			slices.Sort(listed)
			if len(found) == 0 || !slices.Equal(found, listed) {
				t.Errorf("search finds %d services, the list %d", len(found), len(listed))
			}
			searchAll(t, s, c, "&group=organisation")
			searchAll(t, s, c, "&sort=name&q=health")
			searchAll(t, s, c, "&near=-33.8688,151.2093&sort=distance") // cards with distances
			nowhere := s.getAs(t, c.tok, "/v1/d/demo/search/services?q=zzqxnowhere")
			hidden := 0
			for _, m := range markers {
				if len(demo.Leaks([]byte(m), c.aud)) == 0 {
					continue // one the tier may see
				}
				hidden++
				r := s.getAs(t, c.tok, "/v1/d/demo/search/services?q="+url.QueryEscape(m))
				// The answers differ only in the words echoed (and so in length and entity tag).
				got, want := withoutWords(t, r), withoutWords(t, nowhere)
				if r.status != nowhere.status || got != want {
					t.Errorf("searching %s, hidden from %s, answers differently from a word found nowhere:\n%s\nwant\n%s", m, c.name, got, want)
				}
			}
			if hidden == 0 {
				t.Errorf("no canary is hidden from %s: the check proves nothing", c.name)
			}
		})
	}
}

// TestSearchRefusesBadParameters checks every bound of section 4.2.1: each bad value answers 400
// naming its parameter.
func TestSearchRefusesBadParameters(t *testing.T) {
	s := newTestServer(t, smallFixture(t))
	for _, c := range []struct{ query, param string }{
		{"q=" + strings.Repeat("a", 201), "q"},
		{"near=1", "near"},
		{"near=91,0", "near"},
		{"near=0,181", "near"},
		{"near=1e1,2", "near"},
		{"locality=" + strings.Repeat("a", 101), "locality"},
		{"postcode=200", "postcode"},
		{"postcode=20000", "postcode"},
		{"near=1,2&radiusKm=0", "radiusKm"},
		{"near=1,2&radiusKm=2001", "radiusKm"},
		{"near=1,2&radiusKm=NaN", "radiusKm"},
		{"radiusKm=5", "radiusKm"},
		{"includeCatchment=yes", "includeCatchment"},
		{"openNow=1", "openNow"},
		{"openOn=someday", "openOn"},
		{"openFrom=9:00&openTo=17:00", "openFrom"},
		{"openFrom=09:00", "openTo"},
		{"openFrom=17:00&openTo=09:00", "openTo"},
		{"afterHours=TRUE", "afterHours"},
		{"publicHolidays=no", "publicHolidays"},
		{"appointment=maybe", "appointment"},
		{"referral=gp", "referral"},
		{"area=nsw", "area"},
		{"area=state:nsw&area=state:vic", "area"},
		{"group=location", "group"},
		{"sort=date", "sort"},
		{"sort=distance", "sort"},
		{"limit=0", "limit"},
		{"limit=101", "limit"},
		{"offset=-1", "offset"},
		{"offset=10001", "offset"},
		{"spell=on", "spell"},
		{"type=a%20b", "type"},
		{"cost=", "cost"},
		{"bogus=1", "bogus"},
	} {
		r := s.get(t, "/v1/d/small/search/services?"+c.query)
		if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), `"`+c.param+`"`) {
			t.Errorf("?%s: %d %s, want 400 naming %s", c.query, r.status, r.body, c.param)
		}
	}
	for _, q := range []string{"", "q=clinic", "near=-33.87,151.2&radiusKm=2000&sort=distance", "offset=10000",
		"openOn=weekends&openFrom=00:00&openTo=24:00", "postcode=2000&includeCatchment=false", "spell=off&q=clinc"} {
		if r := s.get(t, "/v1/d/small/search/services?"+q); r.status != http.StatusOK {
			t.Errorf("?%s: %d %s", q, r.status, r.body)
		}
	}
}

// withoutWords returns a search answer's body without the words it echoes (q and words).
func withoutWords(t *testing.T, r response) string {
	t.Helper()
	m := r.json(t)
	in := m["interpretation"].(map[string]any)
	delete(in, "q")
	delete(in, "words")
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAutocompleteAsEveryTier asks every tier for suggestions by the first letters of every word of
// the demo directory's canaries and names: no answer carries a canary the tier may not see, each
// suggestion's search finds services, anonymous answers are cached as section 8 says, and q is
// required and bounded.
func TestAutocompleteAsEveryTier(t *testing.T) {
	file := demoFiles(t)["demo"]
	s := newTestServer(t, file)
	prefixes := []string{"can", "canary", "canary st", "canary pa", "canary pro", "canary pub", "gp", "cl", "me", "ph", "sy", "a"}
	for _, c := range tierCallers(t, "demo", "state:nsw") {
		if c.name == "public client" {
			continue // no search:read
		}
		t.Run(c.name, func(t *testing.T) {
			kinds := map[string]int{}
			for _, p := range prefixes {
				r := s.getAs(t, c.tok, "/v1/d/demo/autocomplete?q="+url.QueryEscape(p))
				if r.status != http.StatusOK {
					t.Fatalf("autocomplete %q: %d %s", p, r.status, r.body)
				}
				if leaks := demo.Leaks(append([]byte(fmt.Sprint(r.header)), r.body...), c.aud); len(leaks) > 0 {
					t.Errorf("autocomplete %q leaks %v to %s", p, leaks, c.name)
				}
				want := "private, no-store"
				if c.tok == "" {
					want = "public, max-age=60, s-maxage=300"
				}
				if got := r.header.Get("Cache-Control"); got != want {
					t.Errorf("Cache-Control %q, want %q", got, want)
				}
				for _, x := range r.json(t)["suggestions"].([]any) {
					sg := x.(map[string]any)
					kinds[sg["kind"].(string)]++
					found := s.getAs(t, c.tok, "/v1/d/demo/search/services?limit=1&"+sg["search"].(string))
					if found.status != http.StatusOK || found.json(t)["total"].(float64) == 0 {
						t.Errorf("suggestion %v finds nothing: %d %s", sg, found.status, found.body)
					}
				}
			}
			for _, k := range []string{"type", "place", "organisation"} {
				if kinds[k] == 0 {
					t.Errorf("no %s suggested to %s: %v", k, c.name, kinds)
				}
			}
		})
	}
	for _, q := range []string{"", "q=", "q=" + strings.Repeat("a", 101), "q=a&q=b", "x=1"} {
		if r := s.get(t, "/v1/d/demo/autocomplete?"+q); r.status != http.StatusBadRequest {
			t.Errorf("?%s: %d %s", q, r.status, r.body)
		}
	}
}

// TestSearchOrganisationsAsEveryTier checks, for every tier, that the organisations found without
// filters are exactly those of the services a search finds, A to Z, that no answer carries a canary
// of another tier, and that the letter filter and facet agree.
func TestSearchOrganisationsAsEveryTier(t *testing.T) {
	file := demoFiles(t)["demo"]
	s := newTestServer(t, file)
	for _, c := range tierCallers(t, "demo", "state:nsw") {
		if c.name == "public client" {
			continue // no search:read
		}
		t.Run(c.name, func(t *testing.T) {
			want := map[string]bool{}
			for off := 0; ; off += 100 {
				m := s.getAs(t, c.tok, fmt.Sprintf("/v1/d/demo/search/services?limit=100&offset=%d", off)).json(t)
				for _, x := range m["results"].([]any) {
					want[x.(map[string]any)["organisation"].(map[string]any)["publicId"].(string)] = true
				}
				if off+100 >= int(m["total"].(float64)) {
					break
				}
			}
			get := func(query string) map[string]any {
				r := s.getAs(t, c.tok, "/v1/d/demo/search/organisations?limit=100"+query)
				if r.status != http.StatusOK {
					t.Fatalf("%s: %d %s", query, r.status, r.body)
				}
				if leaks := demo.Leaks(append([]byte(fmt.Sprint(r.header)), r.body...), c.aud); len(leaks) > 0 {
					t.Errorf("search/organisations%s leaks %v to %s", query, leaks, c.name)
				}
				return r.json(t)
			}
			all := get("")
			items := all["items"].([]any)
			for off := 100; off < int(all["total"].(float64)); off += 100 {
				items = append(items, get(fmt.Sprintf("&offset=%d", off))["items"].([]any)...)
			}
			var names []string
			got := map[string]bool{}
			for _, x := range items {
				o := x.(map[string]any)
				got[o["publicId"].(string)] = true
				names = append(names, strings.ToLower(o["name"].(string)))
				if len(o["offerings"].([]any)) == 0 || o["services"].(float64) < 1 {
					t.Errorf("%v offers nothing", o)
				}
			}
			if len(got) == 0 || fmt.Sprint(got) != fmt.Sprint(want) || int(all["total"].(float64)) != len(want) {
				t.Errorf("organisations found %d (total %v), of the services found %d", len(got), all["total"], len(want))
			}
			if !slices.IsSorted(names) {
				t.Errorf("not A to Z: %v", names)
			}
			letters := all["facets"].(map[string]any)["letter"].([]any)
			sum := 0
			for _, x := range letters {
				f := x.(map[string]any)
				n := int(f["count"].(float64))
				sum += n
				byLetter := get("&letter=" + url.QueryEscape(f["value"].(string)))
				if int(byLetter["total"].(float64)) != n {
					t.Errorf("letter %v: facet %d, found %v", f["value"], n, byLetter["total"])
				}
			}
			if sum != len(want) {
				t.Errorf("letter facet counts %d organisations, want %d", sum, len(want))
			}
		})
	}
	for _, q := range []string{"letter=a", "letter=AB", "postcode=123", "area=x", "limit=0", "offset=10001", "q=" + strings.Repeat("a", 201), "near=1,2"} {
		if r := s.get(t, "/v1/d/demo/search/organisations?"+q); r.status != http.StatusBadRequest {
			t.Errorf("?%s: %d %s", q, r.status, r.body)
		}
	}
}

// TestSearchByLocality asks for a locality of the demo's sites by name: every service found lies in
// one of its postcodes or serves it, the sites there are among them, and an unknown name finds none.
func TestSearchByLocality(t *testing.T) {
	file := demoFiles(t)["demo"]
	s := newTestServer(t, file)
	snap, err := primary.ParseImport(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	var site *dirsvc.Location
	for _, r := range snap.Records {
		if l, ok := r.(*dirsvc.Location); ok && l.VisibleTo.Has(dirsvc.Public) && l.State == dirsvc.StateLive && !l.Address.Withheld && l.Address.Postcode != "" {
			site = l
			break
		}
	}
	if site == nil {
		t.Fatal("no public site with an address")
	}
	m := s.get(t, "/v1/d/demo/search/services?limit=100&locality="+url.QueryEscape(strings.ToUpper(site.Address.Locality))).json(t)
	place := m["interpretation"].(map[string]any)["place"].(map[string]any)
	if !slices.Contains(place["areas"].([]any), any("postcode:"+site.Address.Postcode)) {
		t.Errorf("%s read as %v", site.Address.Locality, place)
	}
	atSite := false
	for _, x := range m["results"].([]any) {
		loc, _ := x.(map[string]any)["location"].(map[string]any)
		if loc != nil && loc["publicId"] == site.PublicID {
			atSite = true
		}
	}
	if m["total"].(float64) == 0 || !atSite {
		t.Errorf("locality %s finds %v services, none at %s", site.Address.Locality, m["total"], site.PublicID)
	}
	// A postcode and an area both hold: sites located in the postcode are in its state, in no other
	// (with catchments, services serving the whole country lie in both).
	state := ""
	for _, a := range site.Areas {
		if strings.HasPrefix(a, "state:") {
			state = a
		}
	}
	both := func(area string) float64 {
		return s.get(t, "/v1/d/demo/search/services?includeCatchment=false&postcode="+site.Address.Postcode+"&area="+area).json(t)["total"].(float64)
	}
	other := "state:tas"
	if state == other {
		other = "state:wa"
	}
	if both(state) == 0 || both(other) != 0 {
		t.Errorf("postcode %s with %s finds %v, with %s %v", site.Address.Postcode, state, both(state), other, both(other))
	}
	if n := s.get(t, "/v1/d/demo/search/services?locality=Nowhereville").json(t)["total"].(float64); n != 0 {
		t.Errorf("an unknown locality finds %v services", n)
	}
}

// TestRelevanceSet runs the relevance set of testdata/relevance.json against the demo directory as
// the public and reports precision at 5: of the services each query must find among the first 5
// results (at most 5 a query), the share found there. It fails below 0.8, and logs every miss.
func TestRelevanceSet(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "relevance.json"))
	if err != nil {
		t.Fatal(err)
	}
	var set struct {
		Queries []struct {
			Q    string   `json:"q"`
			Want []string `json:"want"`
		} `json:"queries"`
	}
	if err := json.Unmarshal(raw, &set); err != nil {
		t.Fatal(err)
	}
	if len(set.Queries) < 40 {
		t.Fatalf("the relevance set holds %d queries, want at least 40", len(set.Queries))
	}
	s := newTestServer(t, demoFiles(t)["demo"])
	found, wanted := 0, 0
	for _, q := range set.Queries {
		m := s.get(t, "/v1/d/demo/search/services?limit=5&q="+url.QueryEscape(q.Q)).json(t)
		var top []string
		for _, x := range m["results"].([]any) {
			top = append(top, x.(map[string]any)["publicId"].(string))
		}
		n := 0
		for _, id := range q.Want[:min(5, len(q.Want))] {
			if slices.Contains(top, id) {
				n++
			}
		}
		found, wanted = found+n, wanted+min(5, len(q.Want))
		if n < min(5, len(q.Want)) {
			t.Logf("%q: %d of %v in the first 5 %v (read as %v)", q.Q, n, q.Want, top, m["interpretation"])
		}
	}
	p := float64(found) / float64(wanted)
	t.Logf("precision at 5: %.3f (%d of %d over %d queries)", p, found, wanted, len(set.Queries))
	if p < 0.8 {
		t.Errorf("precision at 5 is %.3f, want at least 0.8", p)
	}
}

// TestOpenNowFollowsTheClock asks the same open-now search of one server a minute before services
// open and just after: each time it finds exactly the services whose cards say they are open, and
// more of them after.
func TestOpenNowFollowsTheClock(t *testing.T) {
	sydney, err := time.LoadLocation("Australia/Sydney")
	if err != nil {
		t.Fatal(err)
	}
	c := &clock{t: time.Date(2026, 2, 2, 8, 59, 30, 0, sydney)} // a Monday, not a holiday
	s := newTestServerWith(t, func(cfg *edge.Config) { cfg.Now = c.Now }, demoFiles(t)["demo"])
	open := func() (found, cards int) {
		t.Helper()
		r := s.get(t, "/v1/d/demo/search/services?openNow=true&limit=1")
		if r.status != http.StatusOK {
			t.Fatalf("openNow: %d %s", r.status, r.body)
		}
		found = int(r.json(t)["total"].(float64))
		for offset := 0; ; offset += 100 {
			r := s.get(t, fmt.Sprintf("/v1/d/demo/search/services?limit=100&offset=%d", offset))
			var page struct {
				Results []dirsvc.ResultCard `json:"results"`
			}
			if err := json.Unmarshal(r.body, &page); err != nil || r.status != http.StatusOK {
				t.Fatalf("page at %d: %d %v", offset, r.status, err)
			}
			for _, card := range page.Results {
				if card.OpenStatus.Status == dirsvc.OpenNow {
					cards++
				}
			}
			if len(page.Results) < 100 {
				return found, cards
			}
		}
	}
	beforeFound, beforeCards := open()
	c.Add(40 * time.Second) // 09:00:10
	afterFound, afterCards := open()
	if beforeFound != beforeCards || afterFound != afterCards {
		t.Errorf("open now finds %d services at 08:59 and %d at 09:00; their cards say %d and %d are open",
			beforeFound, afterFound, beforeCards, afterCards)
	}
	if afterFound <= beforeFound {
		t.Errorf("no service opens at 09:00 on a Monday: %d open before, %d after", beforeFound, afterFound)
	}
}
