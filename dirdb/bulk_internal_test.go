package dirdb

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
)

// indexes returns the definitions of directory.db's indexes.
func indexes(t *testing.T, d *Directory) string {
	t.Helper()
	rows, err := d.readers.Query("SELECT sql FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL ORDER BY name")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var defs []string
	for rows.Next() {
		var s string
		rows.Scan(&s)
		defs = append(defs, s)
	}
	return strings.Join(defs, "\n")
}

// TestBulkImportRebuildsIndexes takes the bulk path of a first import with a small directory: the
// indexes are dropped and rebuilt inside the write, and a write that fails keeps them.
func TestBulkImportRebuildsIndexes(t *testing.T) {
	defer func(n int) { bulkThreshold = n }(bulkThreshold)
	bulkThreshold = 1
	ctx := context.Background()
	snapshot := func() *dirsvc.Snapshot {
		b, err := os.ReadFile(filepath.Join("..", "testdata", "small.ndjson"))
		if err != nil {
			t.Fatal(err)
		}
		return parseForTest(t, b)
	}
	s, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	d, err := s.CreateDirectory(ctx, "small")
	if err != nil {
		t.Fatal(err)
	}
	want := indexes(t, d)
	if !strings.Contains(want, "changes_dedupe") {
		t.Fatalf("the schema's indexes: %s", want)
	}

	bad := snapshot()
	bad.Records[len(bad.Records)-1].Base().State = "bogus"
	if _, err := d.Import(ctx, bad); err == nil {
		t.Fatal("an import with an impossible state succeeded")
	}
	if got := indexes(t, d); got != want {
		t.Fatalf("after a failed bulk import the indexes are\n%s\nwant\n%s", got, want)
	}

	stats, err := d.Import(ctx, snapshot())
	if err != nil || stats.Created == 0 {
		t.Fatalf("bulk import: %+v, %v", stats, err)
	}
	if got := indexes(t, d); got != want {
		t.Fatalf("after a bulk import the indexes are\n%s\nwant\n%s", got, want)
	}
	if st, err := d.Record(ctx, "svc_gp", dirsvc.Viewer{Audience: dirsvc.Public}); err != nil || st.View == nil {
		t.Fatalf("read after a bulk import: %v", err)
	}
	// The GP is at a site in postcode:2007 and names it in its catchment too: found once. Of the
	// services at postcode 2250 the public sees only the counselling one: the others are closed,
	// taken down, merged, removed or kept for partners.
	for area, want := range map[string]string{"postcode:2007": "svc_gp", "lga:17200": "svc_gp", "postcode:2250": "svc_counsel"} {
		page, err := d.Services(ctx, dirsvc.Viewer{Audience: dirsvc.Public}, dirsvc.ServiceQuery{Areas: []string{area}, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, p := range page.Items {
			ids = append(ids, p.PublicID)
		}
		if got := strings.Join(ids, " "); got != want {
			t.Errorf("area %s holds %q, want %q", area, got, want)
		}
	}
}

// TestImportSteps: an import reports its steps in the order they ran, the bulk path's rebuild of
// the indexes among them, each with its own time (the records' without the rebuild's).
func TestImportSteps(t *testing.T) {
	defer func(n int) { bulkThreshold = n }(bulkThreshold)
	ctx := context.Background()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "small.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		threshold int
		want      []string
	}{
		{1, []string{"records", "indexes", "narrowing", "feed", "search", "commit", "ops-commit"}},
		{1 << 30, []string{"records", "narrowing", "feed", "search", "commit", "ops-commit"}},
	} {
		bulkThreshold = c.threshold
		s, err := Open(ctx, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		d, err := s.CreateDirectory(ctx, "small")
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		stats, err := d.Import(ctx, parseForTest(t, b))
		took := time.Since(start)
		s.Close()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		var sum time.Duration
		for _, st := range stats.Steps {
			names = append(names, st.Name)
			if st.Took < 0 {
				t.Errorf("step %s took %v", st.Name, st.Took)
			}
			sum += st.Took
		}
		if !slices.Equal(names, c.want) {
			t.Errorf("bulk threshold %d: steps %v, want %v", c.threshold, names, c.want)
		}
		if sum > took {
			t.Errorf("the steps took %v in all, more than the import's %v: a nested step is counted twice", sum, took)
		}
		if b, err := json.Marshal(stats); err != nil || strings.Contains(string(b), "records") {
			t.Errorf("the stats as an answer holds them: %s, %v", b, err)
		}
	}
}
