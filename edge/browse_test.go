package edge_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/edge"
)

// browseFixture is the small directory with categories made of local types, a category for
// professionals, one more service and collections of every kind (testdata/browse.ndjson).
func browseFixture(tb testing.TB) []byte {
	tb.Helper()
	extra, err := os.ReadFile(filepath.Join("..", "testdata", "browse.ndjson"))
	if err != nil {
		tb.Fatal(err)
	}
	return append(smallFixture(tb), extra...)
}

// decode reads a 200 answer's body into v.
func decode(tb testing.TB, r response, v any) {
	tb.Helper()
	if r.status != http.StatusOK {
		tb.Fatalf("status %d: %s", r.status, r.body)
	}
	if err := json.Unmarshal(r.body, v); err != nil {
		tb.Fatalf("%v: %s", err, r.body)
	}
}

// counts returns the categories of a category list answer, by code.
func counts(tb testing.TB, r response) map[string]dirsvc.BrowseCategory {
	tb.Helper()
	var body struct{ Categories []dirsvc.BrowseCategory }
	decode(tb, r, &body)
	out := map[string]dirsvc.BrowseCategory{}
	for _, c := range body.Categories {
		out[c.Code] = c
	}
	return out
}

// TestCategoriesPerCaller reads the category list as each kind of caller: each sees the categories
// of its tier with the services it finds in each (a narrowed client only those inside its
// narrowing); a category made of local types counts exactly the services tagged with those the
// tier sees. Anonymous answers carry cache tags, the counts' own among them, and answer 304 to a
// matching If-None-Match; clients' answers are private; a client without search:read is refused.
func TestCategoriesPerCaller(t *testing.T) {
	s := newTestServer(t, browseFixture(t))
	anon := s.get(t, "/v1/d/small/categories")
	if h := anon.header; h.Get("Cache-Tag") != "dir:small,small:taxonomy,cat:small" || h.Get("X-DIR-Audience") != "public" || h.Get("ETag") == "" {
		t.Errorf("anonymous headers: %v", h)
	}
	pub := counts(t, anon)
	want := map[string]int{"primary_care": 4, "womens": 1, "perinatal_care": 1}
	if len(pub) != len(want) {
		t.Errorf("the public's categories: %v", pub)
	}
	for code, n := range want {
		if pub[code].Count != n {
			t.Errorf("the public's %s: %d services, want %d", code, pub[code].Count, n)
		}
	}
	wantTypes := []dirsvc.CategoryType{{Code: "womens-health", Slug: "womens-health", Label: "Women's health GP", Icon: "venus", Filter: dirsvc.FilterCategory}}
	if c := pub["womens"]; c.Icon != "venus" || !slices.Equal(c.Types, wantTypes) {
		t.Errorf("the public's womens category: %+v", c)
	}
	if c := pub["perinatal_care"]; c.Icon != dirsvc.DefaultIcon {
		t.Errorf("a category without an icon: %+v", c)
	}
	if c := pub["primary_care"]; len(c.Types) != 1 || c.Types[0] != (dirsvc.CategoryType{Code: "gp", Label: "General practice", Icon: "stethoscope", Filter: dirsvc.FilterType}) {
		t.Errorf("the public's primary_care types: %+v", c.Types)
	}
	if bytes.Contains(anon.body, []byte("canary")) || bytes.Contains(anon.body, []byte("clinical-only")) {
		t.Errorf("the public's categories show what the public may not see: %s", anon.body)
	}
	if r := s.get(t, "/v1/d/small/categories", "If-None-Match", anon.header.Get("ETag")); r.status != http.StatusNotModified {
		t.Errorf("If-None-Match: %d", r.status)
	}

	pro := token(t, grant{dir: "small", tier: dirsvc.Professional, scopes: "search:read"})
	r := s.getAs(t, pro, "/v1/d/small/categories")
	if r.header.Get("Cache-Control") != "private, no-store" || r.header.Get("Cache-Tag") != "" || r.header.Get("X-DIR-Audience") != "professional" {
		t.Errorf("a professional's headers: %v", r.header)
	}
	for code, n := range map[string]int{"primary_care": 4, "womens": 2, "clinicians": 2, "pro_care": 4, "perinatal_care": 1} {
		if got := counts(t, r)[code].Count; got != n {
			t.Errorf("a professional's %s: %d services, want %d", code, got, n)
		}
	}

	narrowed := token(t, grant{dir: "small", tier: dirsvc.Partner, scopes: "search:read", narrowing: dirsvc.Narrowing{Areas: []string{"postcode:2250"}}})
	for code, n := range map[string]int{"primary_care": 0, "womens": 0, "clinicians": 0, "perinatal_care": 1} {
		if got := counts(t, s.getAs(t, narrowed, "/v1/d/small/categories"))[code].Count; got != n {
			t.Errorf("a partner narrowed to Gosford: %s has %d services, want %d", code, got, n)
		}
	}

	if r := s.getAs(t, token(t, grant{dir: "small", tier: dirsvc.Partner, scopes: "graph:read"}), "/v1/d/small/categories"); r.status != http.StatusForbidden {
		t.Errorf("a client without search:read: %d %s", r.status, r.body)
	}
	if r := s.get(t, "/v1/d/small/categories?limit=1"); r.status != http.StatusBadRequest || !bytes.Contains(r.body, []byte(`"param":"limit"`)) {
		t.Errorf("a parameter: %d %s", r.status, r.body)
	}
	if r := s.get(t, "/v1/d/nowhere/categories"); r.status != http.StatusNotFound {
		t.Errorf("an unknown directory: %d", r.status)
	}
}

// TestCategoryDetail reads one category: its types, its count and its places at the caller's tier;
// a category hidden from the tier answers exactly as a missing one, and a code that is not one
// answers 404, never 500.
func TestCategoryDetail(t *testing.T) {
	s := newTestServer(t, browseFixture(t))
	var pc dirsvc.CategoryDetail
	anon := s.get(t, "/v1/d/small/categories/primary_care")
	decode(t, anon, &pc)
	// loc_unlisted is hidden from the public: svc_unlisted is counted, but places nothing.
	// Places are named from the gazetteer.
	wantPlaces := []dirsvc.PlaceCount{{Area: "postcode:2007", Name: "Broadway, Ultimo", Count: 2},
		{Area: "postcode:2037", Name: "Forest Lodge, Glebe", Count: 1}}
	if pc.Code != "primary_care" || pc.Count != 4 || len(pc.Types) != 1 || !slices.Equal(pc.Places, wantPlaces) {
		t.Errorf("the public's primary_care: %+v", pc)
	}
	if anon.header.Get("Cache-Tag") != "dir:small,small:taxonomy,cat:small" {
		t.Errorf("cache tags %q", anon.header.Get("Cache-Tag"))
	}
	if r := s.get(t, "/v1/d/small/categories/primary_care", "If-None-Match", anon.header.Get("ETag")); r.status != http.StatusNotModified {
		t.Errorf("If-None-Match: %d", r.status)
	}

	pro := token(t, grant{dir: "small", tier: dirsvc.Professional, scopes: "search:read"})
	var cl dirsvc.CategoryDetail
	decode(t, s.getAs(t, pro, "/v1/d/small/categories/clinicians"), &cl)
	if cl.Count != 2 || !slices.Equal(cl.Places, []dirsvc.PlaceCount{{Area: "postcode:2007", Name: "Broadway, Ultimo", Count: 2}}) {
		t.Errorf("a professional's clinicians category: %+v", cl)
	}

	missing := s.get(t, "/v1/d/small/categories/no_such_category")
	if missing.status != http.StatusNotFound {
		t.Fatalf("a missing category: %d %s", missing.status, missing.body)
	}
	for _, code := range []string{"clinicians", "pro_care"} {
		if r := s.get(t, "/v1/d/small/categories/"+code); r.wire() != missing.wire() {
			t.Errorf("the hidden category %s answers differently from a missing one:\n%s", code, r.wire())
		}
	}
	for _, code := range []string{"a%20b", "%ff", "x%2Fy", "toolong" + string(bytes.Repeat([]byte("x"), 80))} {
		if r := s.get(t, "/v1/d/small/categories/"+code); r.status != http.StatusNotFound {
			t.Errorf("code %q: %d %s", code, r.status, r.body)
		}
	}
	if r := s.get(t, "/v1/d/small/categories/primary_care?view=page"); r.status != http.StatusBadRequest {
		t.Errorf("a parameter: %d", r.status)
	}
}

// slugsOf returns the slugs of a collection list answer.
func slugsOf(tb testing.TB, r response) []string {
	tb.Helper()
	var body struct{ Items []dirsvc.CollectionSummary }
	decode(tb, r, &body)
	var out []string
	for _, c := range body.Items {
		out = append(out, c.Slug)
	}
	return out
}

// TestCollectionList lists the collections each caller sees today: never a draft, one for another
// tier, or one outside its dates, counted in the directory's time zone; home=true keeps the home
// page's; any other parameter or value is a 400 naming it.
func TestCollectionList(t *testing.T) {
	// 13:30 UTC on 31 December 2098 is already 1 January 2099 in Sydney, the directory's zone:
	// from-2099 has started there; an hour before, it had not.
	at := time.Date(2098, 12, 31, 12, 30, 0, 0, time.UTC)
	s := newTestServerWith(t, func(c *edge.Config) { c.Now = func() time.Time { return at } }, browseFixture(t))
	if got, want := slugsOf(t, s.get(t, "/v1/d/small/collections")), []string{"care-near-you", "counselling"}; !slices.Equal(got, want) {
		t.Errorf("at 23:30 on 31 December 2098 in Sydney: %v, want %v", got, want)
	}
	at = at.Add(time.Hour)
	if got, want := slugsOf(t, s.get(t, "/v1/d/small/collections")), []string{"care-near-you", "counselling", "from-2099"}; !slices.Equal(got, want) {
		t.Errorf("at 00:30 on 1 January 2099 in Sydney: %v, want %v", got, want)
	}
	at = time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	anon := s.get(t, "/v1/d/small/collections")
	if got, want := slugsOf(t, anon), []string{"care-near-you", "counselling"}; !slices.Equal(got, want) {
		t.Errorf("the public's collections: %v, want %v", got, want)
	}
	if anon.header.Get("Cache-Tag") != "dir:small,small:collections" || bytes.Contains(anon.body, []byte("canary")) {
		t.Errorf("the public's answer: %v %s", anon.header, anon.body)
	}
	if r := s.get(t, "/v1/d/small/collections", "If-None-Match", anon.header.Get("ETag")); r.status != http.StatusNotModified {
		t.Errorf("If-None-Match: %d", r.status)
	}
	if got, want := slugsOf(t, s.get(t, "/v1/d/small/collections?home=true")), []string{"care-near-you"}; !slices.Equal(got, want) {
		t.Errorf("home=true: %v, want %v", got, want)
	}
	pro := token(t, grant{dir: "small", tier: dirsvc.Professional, scopes: "search:read", issued: at})
	if got, want := slugsOf(t, s.getAs(t, pro, "/v1/d/small/collections")), []string{"care-near-you", "counselling", "for-clinicians"}; !slices.Equal(got, want) {
		t.Errorf("a professional's collections: %v, want %v", got, want)
	}
	for _, tt := range []struct{ query, param string }{
		{"home=false", "home"}, {"home=", "home"}, {"home=true&home=true", "home"}, {"homepage=true", "homepage"}, {"limit=5", "limit"},
	} {
		r := s.get(t, "/v1/d/small/collections?"+tt.query)
		if r.status != http.StatusBadRequest || !bytes.Contains(r.body, []byte(`"param":"`+tt.param+`"`)) {
			t.Errorf("?%s: %d %s", tt.query, r.status, r.body)
		}
	}
}

// TestCollectionDetail reads a collection's cards as each caller: the services the caller sees, in
// the collection's order, each with its site as the caller sees it (a withheld address as null, a
// site hidden from the tier as no site) and the practitioners whose name the caller may see;
// services hidden from the tier, closed or outside a narrowing are left out silently. A draft, a
// collection for another tier or one outside its dates answers exactly as a missing one.
func TestCollectionDetail(t *testing.T) {
	s := newTestServer(t, browseFixture(t))
	var pub dirsvc.CollectionDetail
	anon := s.get(t, "/v1/d/small/collections/care-near-you")
	decode(t, anon, &pub)
	ids := func(d dirsvc.CollectionDetail) []string {
		var out []string
		for _, c := range d.Services {
			out = append(out, c.PublicID)
		}
		return out
	}
	if got, want := ids(pub), []string{"svc_gp", "svc_refuge", "svc_unlisted", "svc_counsel"}; !slices.Equal(got, want) {
		t.Errorf("the public's cards: %v, want %v", got, want)
	}
	if pub.Search == nil || pub.Search.Query != "category=primary_care" || pub.Search.Path != "/v1/d/small/search/services?category=primary_care" || !pub.Home {
		t.Errorf("the collection: %+v", pub)
	}
	gp, refuge, unlisted := pub.Services[0], pub.Services[1], pub.Services[2]
	if gp.Location == nil || gp.Location.PublicID != "loc_ultimo" || len(gp.Location.Address) == 0 || gp.Location.Point == nil ||
		gp.Organisation != (dirsvc.Ref{PublicID: "org_harbour", Name: "Harbour Health"}) || gp.CategoryIcon == "" ||
		gp.TypeDisplay != "Women's health GP" || gp.PlatformTypeDisplay != "General practice" || gp.LocalType == nil {
		t.Errorf("svc_gp's card: %+v", gp)
	}
	if !slices.Equal(gp.PractitionerLinks, []dirsvc.PractitionerLink{{PublicID: "prac_jo", Name: "Dr Jo Lee", Title: "General practitioner"}}) {
		t.Errorf("svc_gp's practitioners for the public: %+v", gp.PractitionerLinks)
	}
	if l := refuge.Location; l == nil || l.Address != nil || !l.AddressWithheld || l.Point != nil || l.Area == "" {
		t.Errorf("the withheld site of svc_refuge: %+v", l)
	}
	if unlisted.Location != nil {
		t.Errorf("svc_unlisted's site, hidden from the public: %+v", unlisted.Location)
	}
	for _, bad := range []string{"canary", "Quiet", "prac_hidden", "Back St"} {
		if bytes.Contains(anon.body, []byte(bad)) {
			t.Errorf("the public's cards hold %q: %s", bad, anon.body)
		}
	}
	if anon.header.Get("Cache-Tag") != "dir:small,small:collections" || anon.header.Get("X-DIR-Attribution") != "Incorporates G-NAF data" {
		t.Errorf("cache tags %q, attribution %q", anon.header.Get("Cache-Tag"), anon.header.Get("X-DIR-Attribution"))
	}
	if r := s.get(t, "/v1/d/small/collections/care-near-you", "If-None-Match", anon.header.Get("ETag")); r.status != http.StatusNotModified {
		t.Errorf("If-None-Match: %d", r.status)
	}

	pro := token(t, grant{dir: "small", tier: dirsvc.Professional, scopes: "search:read"})
	var pd dirsvc.CollectionDetail
	decode(t, s.getAs(t, pro, "/v1/d/small/collections/care-near-you"), &pd)
	if got, want := ids(pd), []string{"svc_gp", "svc_refuge", "svc_unlisted", "svc_reduced", "svc_counsel"}; !slices.Equal(got, want) {
		t.Errorf("a professional's cards: %v, want %v", got, want)
	}
	if len(pd.Services) > 0 && len(pd.Services[0].PractitionerLinks) != 2 {
		t.Errorf("svc_gp's practitioners for a professional: %+v", pd.Services[0].PractitionerLinks)
	}
	narrowed := token(t, grant{dir: "small", tier: dirsvc.Partner, scopes: "search:read", narrowing: dirsvc.Narrowing{Areas: []string{"postcode:2250"}}})
	var nd dirsvc.CollectionDetail
	decode(t, s.getAs(t, narrowed, "/v1/d/small/collections/care-near-you"), &nd)
	if got, want := ids(nd), []string{"svc_reduced", "svc_counsel"}; !slices.Equal(got, want) {
		t.Errorf("a partner narrowed to Gosford: %v, want %v", got, want)
	}
	decode(t, s.getAs(t, pro, "/v1/d/small/collections/for-clinicians"), &pd)
	if got, want := ids(pd), []string{"svc_gp", "svc_clinic"}; !slices.Equal(got, want) || pd.Search != nil {
		t.Errorf("a professional's for-clinicians: %v, search %+v", got, pd.Search)
	}

	missing := s.get(t, "/v1/d/small/collections/no-such-collection")
	if missing.status != http.StatusNotFound {
		t.Fatalf("a missing collection: %d", missing.status)
	}
	for _, slug := range []string{"for-clinicians", "draft-list", "winter-2020", "from-2099"} {
		if r := s.get(t, "/v1/d/small/collections/"+slug); r.wire() != missing.wire() {
			t.Errorf("%s answers differently from a missing collection:\n%s", slug, r.wire())
		}
	}
	for _, slug := range []string{"%ff", "a%20b", "-x", string(bytes.Repeat([]byte("x"), 120))} {
		if r := s.get(t, "/v1/d/small/collections/"+slug); r.status != http.StatusNotFound {
			t.Errorf("slug %q: %d %s", slug, r.status, r.body)
		}
	}
	if r := s.get(t, "/v1/d/small/collections/care-near-you?home=true"); r.status != http.StatusBadRequest {
		t.Errorf("a parameter on the detail: %d", r.status)
	}
}
