package dirsvc_test

import (
	"reflect"
	"slices"
	"testing"

	"github.com/dirsvc/dirsvc"
)

// TestTaxonomyProjection: an audience sees the local types and categories it may see, without their
// audiences; a category left with no type it may see is left out, not shown empty.
func TestTaxonomyProjection(t *testing.T) {
	pro := dirsvc.AudiencesOf(dirsvc.Professional)
	tax := &dirsvc.Taxonomy{
		Categories: []dirsvc.Category{
			{Code: "open", Types: []string{"gp"}, LocalTypes: []string{"shown", "hidden"}, VisibleTo: dirsvc.Everyone},
			{Code: "clinical", LocalTypes: []string{"hidden"}, VisibleTo: dirsvc.Everyone},
			{Code: "pro-only", Types: []string{"gp"}, VisibleTo: pro},
		},
		PlatformTypes: []dirsvc.PlatformType{{Code: "gp", Label: "GP"}},
		LocalTypes:    []dirsvc.LocalType{{Code: "shown", VisibleTo: dirsvc.Everyone}, {Code: "hidden", VisibleTo: pro}},
	}
	used := dirsvc.TaxonomyUse{PlatformTypes: map[string]bool{"gp": true}, LocalTypes: map[string]bool{"shown": true, "hidden": true}}
	pub := dirsvc.ProjectTaxonomy(tax, dirsvc.Public, used)
	if len(pub.Categories) != 1 || pub.Categories[0].Code != "open" || !slices.Equal(pub.Categories[0].LocalTypes, []string{"shown"}) ||
		len(pub.LocalTypes) != 1 || pub.LocalTypes[0].Code != "shown" || len(pub.PlatformTypes) != 1 {
		t.Errorf("the public's taxonomy: %+v", pub)
	}
	if p := dirsvc.ProjectTaxonomy(tax, dirsvc.Professional, used); len(p.Categories) != 3 || len(p.LocalTypes) != 2 {
		t.Errorf("the professionals' taxonomy: %+v", p)
	}
	if !slices.Equal(tax.Categories[0].LocalTypes, []string{"shown", "hidden"}) || tax.LocalTypes[1].VisibleTo != pro {
		t.Error("projecting changed the taxonomy")
	}
}

// TestTaxonomyListsOnlyWhatTheAudienceUses: an entry no service the audience sees uses is left out
// of its taxonomy, whatever its own audiences, as is a category left with none of its types; a
// local type refines only the platform types listed.
func TestTaxonomyListsOnlyWhatTheAudienceUses(t *testing.T) {
	tax := &dirsvc.Taxonomy{
		Categories: []dirsvc.Category{
			{Code: "care", Types: []string{"gp", "refuge"}, VisibleTo: dirsvc.Everyone},
			{Code: "safety", Types: []string{"refuge"}, LocalTypes: []string{"safe-house"}, VisibleTo: dirsvc.Everyone},
		},
		PlatformTypes: []dirsvc.PlatformType{{Code: "gp", Label: "GP"}, {Code: "refuge", Label: "Refuge"}},
		LocalTypes: []dirsvc.LocalType{{Code: "womens", VisibleTo: dirsvc.Everyone, Refines: []string{"gp", "refuge"}},
			{Code: "safe-house", VisibleTo: dirsvc.Everyone}},
		Programs:     []dirsvc.Term{{Code: "medicare", Name: "Medicare"}, {Code: "safe-home", Name: "Safe at home"}},
		TargetGroups: []dirsvc.Term{{Code: "youth", Name: "Young people"}, {Code: "survivors", Name: "Survivors"}},
	}
	used := dirsvc.TaxonomyUse{PlatformTypes: map[string]bool{"gp": true, "unknown": true}, LocalTypes: map[string]bool{"womens": true},
		Programs: map[string]bool{"medicare": true}, TargetGroups: map[string]bool{"youth": true}}
	got := dirsvc.ProjectTaxonomy(tax, dirsvc.Public, used)
	want := &dirsvc.TaxonomyView{
		Categories:    []dirsvc.CategoryView{{Code: "care", Types: []string{"gp"}}},
		PlatformTypes: []dirsvc.PlatformType{{Code: "gp", Label: "GP"}},
		LocalTypes:    []dirsvc.LocalTypeView{{Code: "womens", Refines: []string{"gp"}}},
		Programs:      []dirsvc.Term{{Code: "medicare", Name: "Medicare"}},
		TargetGroups:  []dirsvc.Term{{Code: "youth", Name: "Young people"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the taxonomy of what the public uses:\n%+v\nwant\n%+v", got, want)
	}
	none := dirsvc.ProjectTaxonomy(tax, dirsvc.Partner, dirsvc.TaxonomyUse{})
	if len(none.Categories)+len(none.PlatformTypes)+len(none.LocalTypes)+len(none.Programs)+len(none.TargetGroups) != 0 ||
		none.Categories == nil || none.PlatformTypes == nil || none.LocalTypes == nil || none.Programs == nil || none.TargetGroups == nil {
		t.Errorf("the taxonomy of an audience that sees no service: %+v", none)
	}
	if !slices.Equal(tax.LocalTypes[0].Refines, []string{"gp", "refuge"}) || !slices.Equal(tax.Categories[0].Types, []string{"gp", "refuge"}) {
		t.Error("projecting changed the taxonomy")
	}
}
