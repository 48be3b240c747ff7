package edge_test

import (
	"bytes"
	"context"
	"net/http"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/dirsvc/dirsvc"
)

// TestTaxonomyIsThePublicsForEveryCaller reads the taxonomy anonymously and as a professional and a
// partner client: the same bytes, the public's (the local type only professionals and partners may
// see is left out, no entry says whom it is for), with cache tags for shared caches only, a 304 for
// a matching If-None-Match, a 400 for a parameter and a 404 for an unknown directory.
func TestTaxonomyIsThePublicsForEveryCaller(t *testing.T) {
	s := newTestServer(t, smallFixture(t))
	anon := s.get(t, "/v1/d/small/taxonomy")
	if anon.status != http.StatusOK || anon.header.Get("X-DIR-Audience") != "public" || anon.header.Get("ETag") == "" ||
		anon.header.Get("Cache-Tag") != "dir:small,small:taxonomy,cat:small" {
		t.Fatalf("anonymous: %d %v %s", anon.status, anon.header, anon.body)
	}
	for _, bad := range []string{"clinical-only", "canary", `"audiences"`} {
		if bytes.Contains(anon.body, []byte(bad)) {
			t.Errorf("the taxonomy holds %q: %s", bad, anon.body)
		}
	}
	if !bytes.Contains(anon.body, []byte(`"primary_care"`)) || !bytes.Contains(anon.body, []byte(`"stethoscope"`)) {
		t.Errorf("the taxonomy lacks its category and icon: %s", anon.body)
	}
	for _, tier := range []dirsvc.Audience{dirsvc.Professional, dirsvc.Partner} {
		tok := token(t, grant{dir: "small", tier: tier, scopes: "graph:read"})
		r := s.get(t, "/v1/d/small/taxonomy", "Authorization", "Bearer "+tok)
		if r.status != http.StatusOK || !bytes.Equal(r.body, anon.body) || r.header.Get("X-DIR-Audience") != "public" ||
			r.header.Get("Cache-Control") != "private, no-store" || r.header.Get("Cache-Tag") != "" {
			t.Errorf("%s: %d %v\n%s", tier, r.status, r.header, r.body)
		}
	}
	if r := s.get(t, "/v1/d/small/taxonomy", "If-None-Match", anon.header.Get("ETag")); r.status != http.StatusNotModified {
		t.Errorf("If-None-Match: %d", r.status)
	}
	if r := s.get(t, "/v1/d/small/taxonomy?view=page"); r.status != http.StatusBadRequest {
		t.Errorf("a parameter: %d %s", r.status, r.body)
	}
	if r := s.get(t, "/v1/d/nowhere/taxonomy"); r.status != http.StatusNotFound {
		t.Errorf("an unknown directory: %d %s", r.status, r.body)
	}
}

// shelterLines add to the small directory a type, a local type, a category, a program and a target
// group that only one service uses, the shelter, whose audiences the test sets.
func shelterLines(audiences string) []byte {
	return []byte(`{"kind":"platformType","code":"dv_refuge","label":"Refuge accommodation","icon":"house","category":"housing"}
{"kind":"localType","code":"dv_safehouse","slug":"dv_safehouse","label":"Family violence safe house"}
{"kind":"category","code":"dv_safety","name":"Safety and shelter","types":["dv_refuge"],"localTypes":["dv_safehouse"]}
{"kind":"program","code":"dv_safe_home","name":"Safe at Home program"}
{"kind":"targetGroup","code":"dv_survivors","name":"Survivors of family violence"}
{"kind":"service","publicId":"svc_shelter","organisation":"org_harbour","location":"loc_refuge","name":"Harbour Shelter","type":"dv_refuge","localTypes":["dv_safehouse"],"programs":["dv_safe_home"],"targetGroups":["dv_survivors"],"audiences":` + audiences + `}
`)
}

// shelterTerms are the labels and codes of the entries only the shelter uses.
var shelterTerms = []string{"Refuge accommodation", "Family violence safe house", "Safety and shelter", "Safe at Home program",
	"Survivors of family violence", "dv_refuge", "dv_safehouse", "dv_safety", "dv_safe_home", "dv_survivors"}

// shelterView is what one caller finds of the shelter's entries: those its taxonomy (the public's,
// for the taxonomy route), its category list and its autocomplete name, and whether the shelter's
// category answers.
type shelterView struct {
	taxonomy, categories, suggestions []string
	category                          int
}

// readShelterView reads the entries of the shelter's that the caller with the token ("" for an
// anonymous one) finds, and checks that a category it does not see answers exactly as one that
// never existed.
func readShelterView(t *testing.T, s *testServer, tok string) shelterView {
	t.Helper()
	named := func(r response) []string {
		t.Helper()
		if r.status != http.StatusOK {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		var out []string
		for _, term := range shelterTerms {
			if bytes.Contains(r.body, []byte(term)) {
				out = append(out, term)
			}
		}
		return out
	}
	v := shelterView{taxonomy: named(s.getAs(t, tok, "/v1/d/small/taxonomy")),
		categories: named(s.getAs(t, tok, "/v1/d/small/categories"))}
	for _, q := range []string{"refuge", "family", "safety"} {
		v.suggestions = append(v.suggestions, named(s.getAs(t, tok, "/v1/d/small/autocomplete?q="+q))...)
	}
	cat := s.getAs(t, tok, "/v1/d/small/categories/dv_safety")
	if v.category = cat.status; cat.status == http.StatusNotFound {
		if missing := s.getAs(t, tok, "/v1/d/small/categories/no_such_category"); cat.wire() != missing.wire() {
			t.Errorf("the unseen category answers differently from a missing one:\n%s\n--- missing:\n%s", cat.wire(), missing.wire())
		}
	}
	return v
}

// TestTaxonomyNamesOnlyWhatTheTierSeesInUse: a type, a local type, a category, a program and a
// target group that only a hidden service uses are named by no answer to a tier that may not see
// it (the taxonomy, the categories, a category's detail, autocomplete), and not written to
// directory.db at all while no tier may see it; a tier that sees the service lists them; and a
// lifecycle change of the service adds them to or removes them from each tier's taxonomy.
func TestTaxonomyNamesOnlyWhatTheTierSeesInUse(t *testing.T) {
	ctx := context.Background()
	s := newTestServer(t, append(smallFixture(t), shelterLines(`["staff"]`)...))
	pro := token(t, grant{dir: "small", tier: dirsvc.Professional, scopes: "search:read"})
	partner := token(t, grant{dir: "small", tier: dirsvc.Partner, scopes: "search:read"})
	nearby := token(t, grant{dir: "small", tier: dirsvc.Professional, scopes: "search:read",
		narrowing: dirsvc.Narrowing{Areas: []string{"postcode:2007"}}})
	callers := map[string]string{"the public": "", "a professional": pro, "a partner": partner}
	nothing := shelterView{category: http.StatusNotFound}
	check := func(when string, want map[string]shelterView) {
		t.Helper()
		for who, tok := range callers {
			if got := readShelterView(t, s, tok); !reflect.DeepEqual(got, want[who]) {
				t.Errorf("%s, %s finds %+v, want %+v", when, who, got, want[who])
			}
		}
	}

	check("with the service for staff only", map[string]shelterView{"the public": nothing, "a professional": nothing, "a partner": nothing})
	dir := filepath.Join(s.store.Root(), "dirs", "small")
	pub, ops := fileBytes(t, filepath.Join(dir, "directory.db")), fileBytes(t, filepath.Join(dir, "ops.db"))
	for _, term := range shelterTerms {
		if bytes.Contains(pub, []byte(term)) {
			t.Errorf("directory.db holds %q, which only a record for staff uses", term)
		}
		if !bytes.Contains(ops, []byte(term)) {
			t.Errorf("ops.db lacks %q: the scan reads the wrong files", term)
		}
	}

	d, err := s.store.Directory(ctx, "small")
	if err != nil {
		t.Fatal(err)
	}
	transition := func(to dirsvc.State, as ...dirsvc.Audience) {
		t.Helper()
		if _, err := d.Transition(ctx, "svc_shelter", dirsvc.Transition{To: to, VisibleTo: dirsvc.AudiencesOf(as...)}); err != nil {
			t.Fatal(err)
		}
	}
	inUse := shelterView{
		categories:  []string{"Refuge accommodation", "Family violence safe house", "Safety and shelter", "dv_refuge", "dv_safehouse", "dv_safety"},
		suggestions: []string{"Refuge accommodation", "dv_refuge", "Family violence safe house", "dv_safehouse"},
		category:    http.StatusOK}
	// The taxonomy route answers the public's taxonomy to every caller: a professional's lacks them.
	transition(dirsvc.StateLive, dirsvc.Professional)
	check("with the service for professionals", map[string]shelterView{"the public": nothing, "a professional": inUse, "a partner": nothing})
	var near dirsvc.CategoryDetail
	decode(t, s.getAs(t, nearby, "/v1/d/small/categories/dv_safety"), &near)
	if near.Count != 0 || len(near.Places) != 0 {
		t.Errorf("a professional narrowed to Ultimo finds the shelter in Glebe: %+v", near)
	}
	var wide dirsvc.CategoryDetail
	decode(t, s.getAs(t, pro, "/v1/d/small/categories/dv_safety"), &wide)
	if wide.Count != 1 || len(wide.Types) != 2 {
		t.Errorf("a professional's category of the shelter: %+v", wide)
	}

	transition(dirsvc.StateLive, dirsvc.Public, dirsvc.Professional, dirsvc.Partner)
	public := inUse
	public.taxonomy = shelterTerms
	check("with the service public", map[string]shelterView{"the public": public, "a professional": public, "a partner": public})

	transition(dirsvc.StateTakedown)
	check("with the service taken down", map[string]shelterView{"the public": nothing, "a professional": nothing, "a partner": nothing})
}

// TestCardsOfATierOnlyTypeAreTranslated reads, in the pseudo-locale, a professional's search results
// holding a service whose platform type only services for professionals use: a result card names
// its type by label alone, and the professionals' taxonomy (not the public's, which lacks the type)
// tells the label's code, so the card shows the type in the reader's language.
func TestCardsOfATierOnlyTypeAreTranslated(t *testing.T) {
	lines := `{"kind":"platformType","code":"domestic_violence","label":"Family violence refuge"}
{"kind":"service","publicId":"svc_dvline","organisation":"org_harbour","location":"loc_ultimo","name":"Harbour Violence Line","type":"domestic_violence","audiences":["professional"]}
`
	s := newTestServer(t, append(smallFixture(t), lines...))
	want, ok := dirsvc.LabelsOf(dirsvc.PseudoLanguage).Label(dirsvc.LabelTypes, "domestic_violence")
	if !ok || want == "Family violence refuge" {
		t.Fatalf("the pseudo-locale labels the type %q (%v): the test would prove nothing", want, ok)
	}
	pro := token(t, grant{dir: "small", tier: dirsvc.Professional, scopes: "search:read"})
	r := s.get(t, "/v1/d/small/search/services?q=violence", "Authorization", "Bearer "+pro, "Accept-Language", dirsvc.PseudoLanguage)
	var res struct {
		Results []struct {
			PublicID            string `json:"publicId"`
			TypeDisplay         string `json:"typeDisplay"`
			PlatformTypeDisplay string `json:"platformTypeDisplay"`
		} `json:"results"`
	}
	decode(t, r, &res)
	if len(res.Results) != 1 || res.Results[0].PublicID != "svc_dvline" {
		t.Fatalf("a professional's search for the service: %s", r.body)
	}
	if c := res.Results[0]; c.TypeDisplay != want || c.PlatformTypeDisplay != want {
		t.Errorf("the card names its type %q and %q, want %q", c.TypeDisplay, c.PlatformTypeDisplay, want)
	}
}
