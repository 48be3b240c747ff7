package dirdb

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/dirsvc/dirsvc"
)

// A client a directory narrowed (to areas, categories or record kinds) searches only what its
// narrowing lets it read: the tests here check every surface of search that derives something from
// the documents (words found, spelling corrections, places read from the words, suggestions, totals
// and facets, organisations) against what lies inside the narrowing, for every kind of narrowing.

// narrowedViewers returns viewers of every served audience narrowed in each way search must honour,
// with the demo directory's own areas and categories.
func narrowedViewers(t *testing.T, d *Directory) []dirsvc.Viewer {
	t.Helper()
	states, postcodes, cats := commonKeys(t, d, keyArea+"state:", 1), commonKeys(t, d, keyArea+"postcode:", 1), commonKeys(t, d, keyCat, 2)
	if len(states) == 0 || len(postcodes) == 0 || len(cats) < 2 {
		t.Fatalf("the directory has too few areas and categories (%v %v %v) to test narrowing", states, postcodes, cats)
	}
	narrowings := []dirsvc.Narrowing{
		{Areas: []string{"state:" + states[0]}},
		{Areas: []string{"postcode:" + postcodes[0]}},
		{Categories: cats[1:2]},
		{Areas: []string{"state:" + states[0]}, Categories: cats[:1]},
		// Services and sites only: no organisations, roles or practitioners.
		{Kinds: []dirsvc.Kind{dirsvc.KindService, dirsvc.KindLocation}},
		// Practitioners without the roles that tie them to services.
		{Kinds: []dirsvc.Kind{dirsvc.KindService, dirsvc.KindLocation, dirsvc.KindOrganisation, dirsvc.KindPractitioner}},
	}
	var out []dirsvc.Viewer
	for _, a := range dirsvc.ServedAudiences {
		for _, n := range narrowings {
			out = append(out, dirsvc.Viewer{Audience: a, Narrowing: n})
		}
	}
	return out
}

// visibleWordDocs returns how many documents a viewer may find hold a term (or with prefix, a term
// starting with it), as the full-text index itself answers (any column the viewer may search) and
// the narrowing places the documents.
func visibleWordDocs(t *testing.T, d *Directory, v dirsvc.Viewer, term string, prefix bool) int {
	t.Helper()
	bit := audienceBit(v.Audience)
	table := fmt.Sprintf("search_text_%d", bit)
	match := `"` + term + `"`
	if prefix {
		match += "*"
	}
	if !peopleSearchable(v.Narrowing) {
		match = `{name specialties organisation place description} : ` + match
	}
	rows, err := d.readers.Query("SELECT rowid FROM "+table+" WHERE "+table+" MATCH ?", match)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	d.search.mu.RLock()
	defer d.search.mu.RUnlock()
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		if m := d.search.docs[id]; m != nil && m.audiences&bit != 0 && insideSearch(m, v.Narrowing) {
			n++
		}
	}
	return n
}

// hiddenTerms returns up to n terms of the viewer's tier (of letters only, at least six) that no
// document the viewer may find holds where it may search, nor any term they start (the last word of
// a search is also read as the start of a longer one), and as many it may find.
func hiddenTerms(t *testing.T, d *Directory, v dirsvc.Viewer, n int) (hidden, shown []string) {
	t.Helper()
	voc, err := d.loadVocabulary(context.Background(), audienceBit(v.Audience))
	if err != nil {
		t.Fatal(err)
	}
	terms := slices.DeleteFunc(slices.Clone(voc.terms), func(s string) bool {
		return len(s) < 6 || strings.TrimLeft(s, "abcdefghijklmnopqrstuvwxyz") != ""
	})
	rand.New(rand.NewPCG(7, uint64(len(terms)))).Shuffle(len(terms), func(i, j int) { terms[i], terms[j] = terms[j], terms[i] })
	for _, term := range terms {
		if len(hidden) == n && len(shown) == n {
			break
		}
		if visibleWordDocs(t, d, v, term, true) == 0 {
			if len(hidden) < n {
				hidden = append(hidden, term)
			}
		} else if len(shown) < n {
			shown = append(shown, term)
		}
	}
	return hidden, shown
}

// misspelt returns the term with one letter changed so that the tier's vocabulary lacks it.
func misspelt(voc *vocabulary, term string) string {
	for i := len(term) / 2; i < len(term); i++ {
		for _, c := range "qxzjkv" {
			w := term[:i] + string(c) + term[i+1:]
			if voc.count[w] == 0 && w != term {
				return w
			}
		}
	}
	return ""
}

// TestNarrowedSearchKnowsOnlyItsOwnWords checks, for every kind of narrowing, that a word only
// documents outside it hold (or only the practitioners of a service, for a client that may not read
// them) finds nothing and answers as a word found nowhere, that spelling correction never turns a
// word into such a word (nor a misspelling of one), and that every correction is a word the viewer
// finds.
func TestNarrowedSearchKnowsOnlyItsOwnWords(t *testing.T) {
	d := demoDirectory(t)
	ctx := context.Background()
	search(t, d, dirsvc.Viewer{Audience: dirsvc.Public}, dirsvc.SearchQuery{Text: "health"}) // loads the index
	hiddenSeen := 0
	for _, v := range narrowedViewers(t, d) {
		t.Run(fmt.Sprintf("%s %+v", v.Audience, v.Narrowing), func(t *testing.T) {
			voc, err := d.loadVocabulary(ctx, audienceBit(v.Audience))
			if err != nil {
				t.Fatal(err)
			}
			hidden, shown := hiddenTerms(t, d, v, 12)
			hiddenSeen += len(hidden)
			none := search(t, d, v, dirsvc.SearchQuery{Text: "zzqxnowhere"})
			checkCorrections := func(asked string, res dirsvc.SearchResult) {
				t.Helper()
				for _, c := range res.Reading.Corrections {
					if visibleWordDocs(t, d, v, c.To, false) == 0 {
						t.Errorf("%q is corrected to %q, which no service the viewer finds holds", asked, c.To)
					}
				}
			}
			for _, h := range hidden {
				got := search(t, d, v, dirsvc.SearchQuery{Text: h})
				got.Reading, none.Reading = dirsvc.QueryReading{}, dirsvc.QueryReading{}
				if got.Total != 0 || fmt.Sprint(got) != fmt.Sprint(none) {
					t.Errorf("%q, held only outside the narrowing: %+v; a word found nowhere: %+v", h, got, none)
				}
				spelt := search(t, d, v, dirsvc.SearchQuery{Text: h + " x", Spell: true})
				checkCorrections(h, spelt)
				if typo := misspelt(voc, h); typo != "" {
					res := search(t, d, v, dirsvc.SearchQuery{Text: typo + " x", Spell: true})
					if slices.ContainsFunc(res.Reading.Corrections, func(c dirsvc.Correction) bool { return c.To == h }) {
						t.Errorf("%q is corrected to %q, a word held only outside the narrowing", typo, h)
					}
					checkCorrections(typo, res)
				}
			}
			// The check can fail: a misspelling of a word the viewer finds is corrected to it.
			fixed := 0
			for _, s := range shown {
				typo := misspelt(voc, s)
				if typo == "" {
					continue
				}
				res := search(t, d, v, dirsvc.SearchQuery{Text: typo + " x", Spell: true})
				checkCorrections(typo, res)
				if len(res.Reading.Corrections) > 0 {
					fixed++
				}
			}
			if len(shown) > 0 && fixed == 0 {
				t.Errorf("no misspelling of %v is corrected", shown)
			}
		})
	}
	if hiddenSeen == 0 {
		t.Fatal("no narrowing hides a word: the test checks nothing")
	}
}

// TestNarrowedSearchReadsOnlyItsOwnPlaces checks that a locality written at the end of a search's
// words is read as a place only when a service the narrowed viewer finds is there.
func TestNarrowedSearchReadsOnlyItsOwnPlaces(t *testing.T) {
	d := demoDirectory(t)
	search(t, d, dirsvc.Viewer{Audience: dirsvc.Public}, dirsvc.SearchQuery{}) // loads the index
	checked := 0
	for _, v := range narrowedViewers(t, d) {
		bit := audienceBit(v.Audience)
		inside, outside := map[string]bool{}, map[string]bool{}
		d.search.mu.RLock()
		for _, m := range d.search.docs {
			if m.audiences&bit == 0 || m.Locality == "" || m.Postcode == "" {
				continue
			}
			if insideSearch(m, v.Narrowing) {
				inside[strings.ToLower(m.Locality)] = true
			} else {
				outside[strings.ToLower(m.Locality)] = true
			}
		}
		d.search.mu.RUnlock()
		for place := range outside {
			if inside[place] {
				continue
			}
			checked++
			res := search(t, d, v, dirsvc.SearchQuery{Text: "gp in " + place})
			if res.Reading.Place != nil {
				t.Errorf("%s %+v: %q, where only services outside the narrowing are, is read as a place: %+v", v.Audience, v.Narrowing, place, res.Reading.Place)
			}
			located := search(t, d, v, dirsvc.SearchQuery{Place: &dirsvc.PlaceRead{Name: place, Areas: []string{}}})
			if located.Reading.Place == nil || len(located.Reading.Place.Areas) != 0 {
				t.Errorf("%s %+v: locality=%q reads the postcodes of services outside the narrowing: %+v", v.Audience, v.Narrowing, place, located.Reading.Place)
			}
		}
		for place := range inside {
			if strings.Trim(place, "abcdefghijklmnopqrstuvwxyz ") != "" {
				continue // a locality with other characters ("stun'sail boom") is not read from words
			}
			if res := search(t, d, v, dirsvc.SearchQuery{Text: "gp in " + place}); res.Reading.Place == nil {
				t.Errorf("%s %+v: %q, where services the viewer finds are, is not read as a place", v.Audience, v.Narrowing, place)
			}
			break
		}
	}
	if checked == 0 {
		t.Fatal("no narrowing leaves a locality out: the test checks nothing")
	}
}

// TestKindNarrowingHoldsOnEverySearch checks that a client narrowed to record kinds without
// organisations is told of no organisation by any search (organisation search, a search answered by
// organisation, autocomplete), with totals and facets that count none; and that one without
// services finds nothing at all.
func TestKindNarrowingHoldsOnEverySearch(t *testing.T) {
	d := demoDirectory(t)
	ctx := context.Background()
	for _, a := range dirsvc.ServedAudiences {
		full := dirsvc.Viewer{Audience: a}
		orgs, err := d.SearchOrganisations(ctx, full, dirsvc.OrganisationQuery{Limit: 5})
		if err != nil {
			t.Fatal(err)
		}
		if orgs.Total == 0 {
			t.Fatalf("%s finds no organisation", a)
		}
		name := strings.Fields(dirsvc.FoldName(orgs.Items[0].Name))[0]
		suggested, err := d.Suggest(ctx, full, name, 5)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(suggested, func(s dirsvc.Suggestion) bool { return s.Kind == dirsvc.SuggestOrganisation }) {
			t.Fatalf("%s: %q suggests no organisation: %+v", a, name, suggested)
		}
		for _, kinds := range [][]dirsvc.Kind{{dirsvc.KindService, dirsvc.KindLocation}, {dirsvc.KindService}, {dirsvc.KindLocation, dirsvc.KindOrganisation}} {
			v := dirsvc.Viewer{Audience: a, Narrowing: dirsvc.Narrowing{Kinds: kinds}}
			services := v.Narrowing.AllowsKind(dirsvc.KindService)
			organisations := services && v.Narrowing.AllowsKind(dirsvc.KindOrganisation)
			res, err := d.SearchOrganisations(ctx, v, dirsvc.OrganisationQuery{Limit: 5})
			if err != nil {
				t.Fatal(err)
			}
			if !organisations && (res.Total != 0 || len(res.Items) != 0 || len(res.Facets.Letter)+len(res.Facets.Category)+len(res.Facets.Region)+len(res.Facets.Place) != 0) {
				t.Errorf("%s %v: organisation search finds %d, %+v", a, kinds, res.Total, res.Facets)
			}
			got, err := d.Suggest(ctx, v, name, 5)
			if err != nil {
				t.Fatal(err)
			}
			if !organisations && slices.ContainsFunc(got, func(s dirsvc.Suggestion) bool { return s.Kind == dirsvc.SuggestOrganisation }) {
				t.Errorf("%s %v: %q suggests organisations: %+v", a, kinds, name, got)
			}
			grouped := search(t, d, v, dirsvc.SearchQuery{ByOrganisation: true, Limit: 5})
			if !organisations && (grouped.Total != 0 || len(grouped.Organisations) != 0 || len(grouped.Hits) != 0) {
				t.Errorf("%s %v: a search by organisation finds %d organisations: %+v", a, kinds, grouped.Total, grouped.Organisations)
			}
			plain := search(t, d, v, dirsvc.SearchQuery{Limit: 5})
			if services != (plain.Total > 0) || grouped.ServiceTotal != plain.Total && organisations {
				t.Errorf("%s %v: a search finds %d services, by organisation %d", a, kinds, plain.Total, grouped.ServiceTotal)
			}
		}
	}
}
