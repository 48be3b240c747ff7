package dirdb_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/dirdb"
)

// browseFixture is the small directory with categories made of local types, a category for
// professionals, one more service and collections of every kind (testdata/browse.ndjson).
func browseFixture(tb testing.TB) []byte {
	tb.Helper()
	extra, err := os.ReadFile(filepath.Join("..", "testdata", "browse.ndjson"))
	if err != nil {
		tb.Fatal(err)
	}
	return append(readFixture(tb), extra...)
}

func openBrowse(t *testing.T) (*dirdb.Store, *dirdb.Directory) {
	t.Helper()
	s := MustOpenStore(t)
	MustImport(t, s, browseFixture(t))
	d, err := s.Directory(context.Background(), "small")
	if err != nil {
		t.Fatal(err)
	}
	return s, d
}

// categoryCounts returns the count of each category the viewer's tier sees, by code.
func categoryCounts(t *testing.T, d *dirdb.Directory, v dirsvc.Viewer) map[string]int {
	t.Helper()
	ctx := context.Background()
	p, err := d.Taxonomy(ctx, v.Audience)
	if err != nil {
		t.Fatal(err)
	}
	var tax dirsvc.TaxonomyView
	if err := json.Unmarshal(p.Body, &tax); err != nil {
		t.Fatal(err)
	}
	var cats []dirsvc.CategoryServices
	for _, c := range tax.Categories {
		cats = append(cats, dirsvc.ServicesOf(c))
	}
	n, err := d.CountServices(ctx, v, cats)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for i, c := range cats {
		out[c.Code] = n[i]
	}
	return out
}

// TestCategoriesCountWhatTheCallerFinds counts each category's services per tier and narrowing: a
// category of platform types counts the services of its platform category the tier sees; a category
// of local types counts exactly the services tagged with those the tier sees (a service tagged with
// two of them once, a service of another platform category too); hidden categories are not counted;
// a narrowing counts only what lies inside it.
func TestCategoriesCountWhatTheCallerFinds(t *testing.T) {
	_, d := openBrowse(t)
	pro := dirsvc.Viewer{Audience: dirsvc.Professional}
	for _, tt := range []struct {
		name string
		v    dirsvc.Viewer
		want map[string]int
	}{
		{"the public", dirsvc.Viewer{Audience: dirsvc.Public},
			// svc_gp is tagged womens-health (the clinical-only tag is hidden from the public); the
			// category of clinical-only alone is left out, as in the taxonomy.
			map[string]int{"primary_care": 4, "womens": 1, "perinatal_care": 1}},
		{"professionals", pro,
			// svc_gp carries both of womens' local types and counts once; svc_clinic is tagged
			// clinical-only, which professionals see.
			map[string]int{"primary_care": 4, "womens": 2, "clinicians": 2, "pro_care": 4, "perinatal_care": 1}},
		{"a partner narrowed to Gosford", dirsvc.Viewer{Audience: dirsvc.Partner, Narrowing: dirsvc.Narrowing{Areas: []string{"postcode:2250"}}},
			map[string]int{"primary_care": 0, "womens": 0, "clinicians": 0, "perinatal_care": 1}},
		{"a partner narrowed to mental health", dirsvc.Viewer{Audience: dirsvc.Partner, Narrowing: dirsvc.Narrowing{Categories: []string{"mental_health"}}},
			map[string]int{"primary_care": 0, "womens": 0, "clinicians": 0, "perinatal_care": 1}},
		{"a partner narrowed to organisations", dirsvc.Viewer{Audience: dirsvc.Partner, Narrowing: dirsvc.Narrowing{Kinds: []dirsvc.Kind{dirsvc.KindOrganisation}}},
			map[string]int{"primary_care": 0, "womens": 0, "clinicians": 0, "perinatal_care": 0}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := categoryCounts(t, d, tt.v)
			if len(got) != len(tt.want) {
				t.Errorf("categories %v, want %v", got, tt.want)
			}
			for code, n := range tt.want {
				if got[code] != n {
					t.Errorf("%s: %d services, want %d (all: %v)", code, got[code], n, got)
				}
			}
		})
	}

	// Closing a service takes it out of every count at once.
	if _, err := d.Transition(context.Background(), "svc_counsel", dirsvc.Transition{To: dirsvc.StateClosed}); err != nil {
		t.Fatal(err)
	}
	if got := categoryCounts(t, d, pro); got["perinatal_care"] != 0 {
		t.Errorf("after svc_counsel closed, perinatal_care counts %d", got["perinatal_care"])
	}
}

// TestCategoryPlaces: a category's places are the areas of its services' sites as the tier sees
// them, at the most local level they carry (postcodes in the small directory), most services first.
func TestCategoryPlaces(t *testing.T) {
	_, d := openBrowse(t)
	ctx := context.Background()
	primary := dirsvc.CategoryServices{Code: "primary_care", Types: []string{"gp"}}
	for _, tt := range []struct {
		name string
		v    dirsvc.Viewer
		want []dirsvc.PlaceCount
	}{
		// loc_unlisted (postcode 2009) is hidden from the public: its service places nothing.
		{"the public", dirsvc.Viewer{Audience: dirsvc.Public},
			[]dirsvc.PlaceCount{{Area: "postcode:2007", Count: 2}, {Area: "postcode:2037", Count: 1}}},
		{"professionals", dirsvc.Viewer{Audience: dirsvc.Professional},
			[]dirsvc.PlaceCount{{Area: "postcode:2007", Count: 2}, {Area: "postcode:2009", Count: 1}, {Area: "postcode:2037", Count: 1}}},
		{"a partner narrowed to Glebe", dirsvc.Viewer{Audience: dirsvc.Partner, Narrowing: dirsvc.Narrowing{Areas: []string{"postcode:2037"}}},
			[]dirsvc.PlaceCount{{Area: "postcode:2037", Count: 1}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := d.Places(ctx, tt.v, primary)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("places %v, want %v", got, tt.want)
			}
		})
	}
	got, err := d.Places(ctx, dirsvc.Viewer{Audience: dirsvc.Public}, dirsvc.CategoryServices{Code: "none", LocalTypes: []string{"nothing"}})
	if err != nil || got == nil || len(got) != 0 {
		t.Errorf("a category finding nothing: %v, %v", got, err)
	}
}

// TestCollectionsArePublishedPerAudience reads the collections each tier may see from the published
// file: the draft and the one that ended never, the professionals' one only by professionals, the
// one that starts later with its dates (the reader decides what is current), in the directory's
// order; an unchanged import rewrites nothing.
func TestCollectionsArePublishedPerAudience(t *testing.T) {
	ctx := context.Background()
	s, d := openBrowse(t)
	slugs := func(a dirsvc.Audience) []string {
		t.Helper()
		cs, err := d.Collections(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range cs {
			out = append(out, c.Slug)
		}
		return out
	}
	all := []string{"care-near-you", "counselling", "from-2099"}
	if got := slugs(dirsvc.Public); !slices.Equal(got, all) {
		t.Errorf("the public's collections: %v, want %v", got, all)
	}
	if got := slugs(dirsvc.Partner); !slices.Equal(got, all) {
		t.Errorf("partners' collections: %v, want %v", got, all)
	}
	pro := []string{"care-near-you", "counselling", "for-clinicians", "from-2099"}
	if got := slugs(dirsvc.Professional); !slices.Equal(got, pro) {
		t.Errorf("professionals' collections: %v, want %v", got, pro)
	}
	cs, _ := d.Collections(ctx, dirsvc.Public)
	if c := cs[2]; c.StartDate != "2099-01-01" || c.Current("2098-12-31") || !c.Current("2099-01-01") {
		t.Errorf("from-2099 as published: %+v", c)
	}

	db, err := sql.Open("sqlite", "file:"+filepath.Join(s.Root(), "dirs", "small", "directory.db")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rowids := func() (ids string) {
		if err := db.QueryRow("SELECT group_concat(rowid) FROM collection_views").Scan(&ids); err != nil {
			t.Fatal(err)
		}
		return ids
	}
	before := rowids()
	MustImport(t, s, browseFixture(t))
	if after := rowids(); after != before {
		t.Errorf("an unchanged import wrote the collections again: rows %s, then %s", before, after)
	}

	// A file of an earlier version (no collections published) is said stale, and a republish
	// publishes them.
	if _, err := db.Exec("DELETE FROM collection_views; UPDATE projection SET version = 3"); err != nil {
		t.Fatal(err)
	}
	if stale, err := s.StaleViews(ctx, "small"); err != nil || !stale {
		t.Fatalf("a file of version 3 not said stale: %v %v", stale, err)
	}
	if st, err := d.Republish(ctx); err != nil || st.Events != 0 {
		t.Fatalf("republish: %+v, %v", st, err)
	}
	if got := slugs(dirsvc.Public); !slices.Equal(got, all) {
		t.Errorf("the public's collections after the republish: %v", got)
	}
	// An import without collections unpublishes them all.
	MustImport(t, s, readFixture(t))
	if got := slugs(dirsvc.Professional); len(got) != 0 {
		t.Errorf("collections after an import without any: %v", got)
	}
}
