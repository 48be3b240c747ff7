package dirdb

import (
	"bytes"
	"cmp"
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/primary/demo"
)

// TestBulkMirrorIntoAFewRecords harvests a generated directory in one bulk batch into a directory
// of a few records of its own, twice: once with the secondary indexes built after loading (most of
// the rows are new) and once row by row. Both store the same, row for row, and keep the schema's
// indexes.
func TestBulkMirrorIntoAFewRecords(t *testing.T) {
	defer func(c func() time.Time) { writeClock = c }(writeClock)
	defer func(n int) { bulkThreshold = n }(bulkThreshold)
	at := time.Date(2026, 1, 2, 3, 4, 5, 678e6, time.UTC)
	writeClock = func() time.Time { return at }
	ctx := context.Background()
	var own, up bytes.Buffer
	if err := demo.Generate(&own, demo.Options{Slug: "agg", Country: "AU", Services: 3, Seed: 2}); err != nil {
		t.Fatal(err)
	}
	if err := demo.Generate(&up, demo.Options{Slug: "region", Country: "AU", Services: 150, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	var prints, schemas []string
	for _, threshold := range []int{1, 1 << 30} {
		bulkThreshold = threshold
		s, err := Open(ctx, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		d, err := s.CreateDirectory(ctx, "agg")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.Import(ctx, parseForTest(t, own.Bytes())); err != nil {
			t.Fatal(err)
		}
		before := d.countRecords(t)
		if err := s.AddMirror(ctx, "agg", dirsvc.Mirror{Name: "up", Upstream: "https://upstream.example",
			UpstreamDir: "region", ClientID: "dirc_x", Secret: "a secret", CreatedAt: at}); err != nil {
			t.Fatal(err)
		}
		var ops []dirsvc.MirrorOp
		for _, rec := range parseForTest(t, up.Bytes()).Records {
			rec.Base().Origin = testMirrorOrigin
			ops = append(ops, dirsvc.MirrorOp{Record: rec, PublicID: rec.Base().PublicID})
		}
		slices.SortStableFunc(ops, func(a, b dirsvc.MirrorOp) int {
			return cmp.Compare(kindRank(a.Record.Kind()), kindRank(b.Record.Kind()))
		})
		at = at.Add(time.Hour)
		st, err := s.ApplyMirror(ctx, "agg", dirsvc.MirrorBatch{Mirror: "up", Ops: ops, Bulk: true, Cursor: "c1", Tier: "partner", FullHarvest: true})
		if err != nil {
			t.Fatal(err)
		}
		if st.Written == 0 || st.Written+st.Refused != len(ops) {
			t.Fatalf("threshold %d: %+v of %d", threshold, st, len(ops))
		}
		var steps []string
		for _, s := range st.Steps {
			steps = append(steps, s.Name)
		}
		want := []string{"records", "narrowing", "feed", "search", "commit", "ops-commit"}
		if threshold == 1 {
			want = slices.Insert(want, 1, "indexes")
		}
		if !slices.Equal(steps, want) {
			t.Errorf("threshold %d: the write reports steps %v, want %v", threshold, steps, want)
		}
		if after := d.countRecords(t); threshold == 1 && !bulkLoad(before, after) {
			t.Fatalf("the harvest over %d records did not take the bulk path: %d after", before, after)
		}
		schemas = append(schemas, indexes(t, d))
		root := s.Root()
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		for _, file := range []string{"directory.db", "ops.db"} {
			out.WriteString(fingerprint(t, filepath.Join(root, "dirs", "agg", file)))
		}
		prints = append(prints, out.String())
		at = time.Date(2026, 1, 2, 3, 4, 5, 678e6, time.UTC)
	}
	if schemas[0] != schemas[1] {
		t.Errorf("indexes after a bulk harvest:\n%s\nwant\n%s", schemas[0], schemas[1])
	}
	if prints[0] != prints[1] {
		t.Errorf("a bulk harvest stores\n%s\nwant (indexes kept row by row)\n%s", prints[0], prints[1])
	}
}

const testMirrorOrigin = "https://upstream.example/v1/d/region/federation/manifest"

// countRecords returns the number of records directory.db holds.
func (d *Directory) countRecords(t *testing.T) int {
	t.Helper()
	var n int
	if err := d.readers.QueryRow("SELECT count(*) FROM records").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
