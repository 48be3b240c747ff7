package dirdb_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dirsvc/dirsvc"
)

// TestTaxonomyIsPublishedPerAudience reads the taxonomy each tier sees from the published file: the
// local type only professionals and partners may see is left out of the public's, no entry says
// whom it is for, an unchanged import rewrites nothing, and a file an earlier version made (no
// taxonomy published) is said stale until a republish publishes it.
func TestTaxonomyIsPublishedPerAudience(t *testing.T) {
	ctx := context.Background()
	s, d, _ := openSmall(t)
	localTypes := func(a dirsvc.Audience) []string {
		t.Helper()
		p, err := d.Taxonomy(ctx, a)
		if err != nil {
			t.Fatalf("%s: %v", a, err)
		}
		if p.ETag != dirsvc.ETag(p.Body) || strings.Contains(string(p.Body), `"audiences"`) {
			t.Errorf("%s: etag %s, body %s", a, p.ETag, p.Body)
		}
		var tax dirsvc.TaxonomyView
		if err := json.Unmarshal(p.Body, &tax); err != nil {
			t.Fatal(err)
		}
		if i := slices.IndexFunc(tax.Categories, func(c dirsvc.CategoryView) bool { return c.Code == "primary_care" }); i < 0 || tax.Categories[i].Icon == "" {
			t.Errorf("%s: no primary_care category with its icon: %s", a, p.Body)
		}
		var codes []string
		for _, lt := range tax.LocalTypes {
			codes = append(codes, lt.Code)
		}
		return codes
	}
	if got := localTypes(dirsvc.Public); slices.Contains(got, "clinical-only") || len(got) == 0 {
		t.Errorf("the public's local types: %v", got)
	}
	for _, a := range []dirsvc.Audience{dirsvc.Professional, dirsvc.Partner} {
		if got := localTypes(a); !slices.Contains(got, "clinical-only") {
			t.Errorf("%s's local types: %v", a, got)
		}
	}

	db, err := sql.Open("sqlite", "file:"+filepath.Join(s.Root(), "dirs", "small", "directory.db")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rowids := func() (ids string) {
		if err := db.QueryRow("SELECT group_concat(rowid) FROM taxonomy_views").Scan(&ids); err != nil {
			t.Fatal(err)
		}
		return ids
	}
	before := rowids()
	MustImport(t, s, readFixture(t))
	if after := rowids(); after != before {
		t.Errorf("an unchanged import wrote the taxonomy again: rows %s, then %s", before, after)
	}

	if _, err := db.Exec("DELETE FROM taxonomy_views; UPDATE projection SET version = 2"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Taxonomy(ctx, dirsvc.Public); err != dirsvc.ErrNotFound {
		t.Fatalf("no taxonomy published: %v", err)
	}
	if stale, err := s.StaleViews(ctx, "small"); err != nil || !stale {
		t.Fatalf("a file of version 2 not said stale: %v %v", stale, err)
	}
	if st, err := d.Republish(ctx); err != nil || st.Events != 0 {
		t.Fatalf("republish: %+v, %v", st, err)
	}
	if got := localTypes(dirsvc.Public); slices.Contains(got, "clinical-only") || len(got) == 0 {
		t.Errorf("the public's local types after the republish: %v", got)
	}
}
