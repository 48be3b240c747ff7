package edge_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/dirsvc/dirsvc"
)

// searchAnswer is what the narrowing tests read of GET search/services.
type searchAnswer struct {
	Results []struct {
		PublicID string `json:"publicId"`
	} `json:"results"`
	Total          int             `json:"total"`
	Facets         json.RawMessage `json:"facets"`
	Organisations  []struct{ PublicID string }
	Interpretation struct {
		Corrections []dirsvc.Correction `json:"corrections"`
		Place       *dirsvc.PlaceRead   `json:"place"`
	} `json:"interpretation"`
}

// TestNarrowedClientsSearchOnlyWhatTheyRead searches the demo directory over HTTP as clients narrowed
// in every way a directory may narrow one (areas, categories, record kinds), and checks every search
// surface against what the client may read: each organisation found or suggested, and each service
// found, answers the client 200; a client that may not read organisations is told of none, with
// totals and facets that count none; a word that only services outside the narrowing hold answers
// as a word found nowhere, and spelling correction never turns a misspelling of it into it.
func TestNarrowedClientsSearchOnlyWhatTheyRead(t *testing.T) {
	s := newTestServer(t, demoFiles(t)["demo"])
	const base = "/v1/d/demo/"
	get := func(tok, path string, v any) int {
		t.Helper()
		r := s.getAs(t, tok, base+path)
		if r.status == 200 && v != nil {
			decode(t, r, v)
		}
		return r.status
	}
	// Words of the organisations' names anyone finds, to look for beyond each narrowing.
	var orgs struct {
		Items []struct{ PublicID, Name string }
	}
	get("", "search/organisations?limit=100", &orgs)
	var words []string
	for _, o := range orgs.Items {
		for _, w := range strings.Fields(dirsvc.FoldName(o.Name)) {
			if len(w) >= 6 && strings.Trim(w, "abcdefghijklmnopqrstuvwxyz") == "" && !slices.Contains(words, w) {
				words = append(words, w)
			}
		}
	}
	words = words[:min(len(words), 30)]
	if len(orgs.Items) < 20 || len(words) < 20 {
		t.Fatalf("the demo directory's organisations give %d words", len(words))
	}
	hiddenSeen := 0
	for _, n := range []dirsvc.Narrowing{
		{Areas: []string{"state:vic"}},
		{Categories: []string{"mental_health"}},
		{Kinds: []dirsvc.Kind{dirsvc.KindService, dirsvc.KindLocation}},
		{Kinds: []dirsvc.Kind{dirsvc.KindService, dirsvc.KindLocation, dirsvc.KindOrganisation, dirsvc.KindPractitioner}},
	} {
		tok := token(t, grant{dir: "demo", tier: dirsvc.Partner, scopes: "search:read graph:read", narrowing: n})
		readable := func(path string) bool { return get(tok, path, nil) == 200 }
		t.Run(fmt.Sprintf("%+v", n), func(t *testing.T) {
			var found struct {
				Items  []struct{ PublicID string }
				Total  int
				Facets map[string][]json.RawMessage
			}
			get(tok, "search/organisations?limit=100", &found)
			for _, o := range found.Items {
				if !readable("organisations/" + o.PublicID) {
					t.Errorf("organisation search finds %s, which answers the client as missing", o.PublicID)
				}
			}
			if !n.AllowsKind(dirsvc.KindOrganisation) {
				for facet, values := range found.Facets {
					if len(values) > 0 {
						t.Errorf("organisation search counts %d organisations and %d values of %s", found.Total, len(values), facet)
					}
				}
				if found.Total != 0 {
					t.Errorf("organisation search counts %d organisations", found.Total)
				}
				var grouped struct {
					Total         int
					Organisations []json.RawMessage
				}
				get(tok, "search/services?group=organisation", &grouped)
				if grouped.Total != 0 || len(grouped.Organisations) != 0 {
					t.Errorf("a search by organisation counts %d organisations: %s", grouped.Total, grouped.Organisations)
				}
			}
			for _, w := range words {
				var sug struct{ Suggestions []dirsvc.Suggestion }
				get(tok, "autocomplete?q="+url.QueryEscape(w[:4]), &sug)
				for _, x := range sug.Suggestions {
					if x.Kind == dirsvc.SuggestOrganisation && !readable("organisations/"+x.PublicID) {
						t.Errorf("autocomplete %q suggests %s, which answers the client as missing", w[:4], x.PublicID)
					}
				}
				var plain, none searchAnswer
				get(tok, "search/services?spell=off&q="+w, &plain)
				for _, r := range plain.Results {
					if !readable("services/" + r.PublicID) {
						t.Errorf("%q finds %s, which answers the client as missing", w, r.PublicID)
					}
				}
				if plain.Total > 0 {
					continue
				}
				hiddenSeen++
				get(tok, "search/services?spell=off&q=zzqxnowhere", &none)
				if string(plain.Facets) != string(none.Facets) || plain.Total != none.Total {
					t.Errorf("%q, found only outside the narrowing, answers %d %s; a word found nowhere %d %s", w, plain.Total, plain.Facets, none.Total, none.Facets)
				}
				typo := w[:len(w)/2] + "q" + w[len(w)/2+1:]
				var spelt searchAnswer
				get(tok, "search/services?q="+typo, &spelt)
				for _, c := range spelt.Interpretation.Corrections {
					var again searchAnswer
					if get(tok, "search/services?spell=off&q="+url.QueryEscape(c.To), &again); c.To == w || again.Total == 0 {
						t.Errorf("%q is corrected to %q, which the client finds nothing by", typo, c.To)
					}
				}
			}
		})
	}
	if hiddenSeen == 0 {
		t.Fatal("no narrowing leaves a word out: the test checks nothing")
	}
}
