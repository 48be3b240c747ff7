package dirsvc_test

import (
	"testing"

	"github.com/dirsvc/dirsvc"
)

// TestCollectionProjection: a draft is published to no one, a collection to the audiences it names,
// and it is current from its start date to its end date, both included.
func TestCollectionProjection(t *testing.T) {
	pro := dirsvc.AudiencesOf(dirsvc.Professional)
	if v := dirsvc.ProjectCollection(&dirsvc.Collection{Slug: "d", Draft: true, VisibleTo: dirsvc.Everyone}, dirsvc.Professional, "2025-06-01"); v != nil {
		t.Errorf("a draft is published: %+v", v)
	}
	c := &dirsvc.Collection{Slug: "p", Title: "For GPs", VisibleTo: pro, StartDate: "2026-01-01", EndDate: "2026-01-31", Services: []string{"svc_a"}}
	if v := dirsvc.ProjectCollection(c, dirsvc.Public, "2025-06-01"); v != nil {
		t.Errorf("the professionals' collection is published to the public: %+v", v)
	}
	if v := dirsvc.ProjectCollection(c, dirsvc.Professional, "2026-02-01"); v != nil {
		t.Errorf("a collection that ended is published: %+v", v)
	}
	v := dirsvc.ProjectCollection(c, dirsvc.Professional, "2025-06-01")
	if v == nil || v.Title != "For GPs" || len(v.Services) != 1 {
		t.Fatalf("the professionals' collection: %+v", v)
	}
	for day, want := range map[string]bool{"2025-12-31": false, "2026-01-01": true, "2026-01-31": true, "2026-02-01": false} {
		if got := v.Current(day); got != want {
			t.Errorf("Current(%s) = %t, want %t", day, got, want)
		}
	}
	if s := dirsvc.SavedSearchOf("demo", "category=dental"); s == nil || s.Path != "/v1/d/demo/search/services?category=dental" {
		t.Errorf("saved search: %+v", s)
	}
	if s := dirsvc.SavedSearchOf("demo", ""); s != nil {
		t.Errorf("no saved search: %+v", s)
	}
}

// TestBrowseCategories: each category lists its platform types (filter type) and its local types
// (filter category), with labels and icons from the taxonomy, the default icon where none is named.
func TestBrowseCategories(t *testing.T) {
	tax := &dirsvc.TaxonomyView{
		Categories:    []dirsvc.CategoryView{{Code: "pc", Name: "Primary care", Types: []string{"gp"}, LocalTypes: []string{"wh"}}},
		PlatformTypes: []dirsvc.PlatformType{{Code: "gp", Label: "General practice", Icon: "stethoscope"}},
		LocalTypes:    []dirsvc.LocalTypeView{{Code: "wh", Slug: "womens-health", Label: "Women's health"}},
	}
	got := dirsvc.BrowseCategories(tax)
	want := []dirsvc.CategoryType{
		{Code: "gp", Label: "General practice", Icon: "stethoscope", Filter: dirsvc.FilterType},
		{Code: "wh", Slug: "womens-health", Label: "Women's health", Icon: dirsvc.DefaultIcon, Filter: dirsvc.FilterCategory},
	}
	if len(got) != 1 || got[0].Icon != dirsvc.DefaultIcon || len(got[0].Types) != 2 || got[0].Types[0] != want[0] || got[0].Types[1] != want[1] {
		t.Errorf("categories: %+v", got)
	}
}
