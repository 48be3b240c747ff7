package dirsvc_test

import (
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
	pub := dirsvc.ProjectTaxonomy(tax, dirsvc.Public)
	if len(pub.Categories) != 1 || pub.Categories[0].Code != "open" || !slices.Equal(pub.Categories[0].LocalTypes, []string{"shown"}) ||
		len(pub.LocalTypes) != 1 || pub.LocalTypes[0].Code != "shown" || len(pub.PlatformTypes) != 1 {
		t.Errorf("the public's taxonomy: %+v", pub)
	}
	if p := dirsvc.ProjectTaxonomy(tax, dirsvc.Professional); len(p.Categories) != 3 || len(p.LocalTypes) != 2 {
		t.Errorf("the professionals' taxonomy: %+v", p)
	}
	if !slices.Equal(tax.Categories[0].LocalTypes, []string{"shown", "hidden"}) || tax.LocalTypes[1].VisibleTo != pro {
		t.Error("projecting changed the taxonomy")
	}
}
