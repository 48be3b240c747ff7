package dirdb

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/primary"
	"github.com/dirsvc/dirsvc/primary/demo"
)

// TestPublishedBodiesAreTheGateOutput checks that what publish stores is byte for byte the JSON of
// the projection gate's view with the versions it decided, for every record and audience.
func TestPublishedBodiesAreTheGateOutput(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "testdata", "small.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	snap := parseForTest(t, b)
	lk := newMemLookup(snap)
	now := time.Date(2026, 11, 22, 1, 2, 3, 4000000, time.UTC)
	prev := row{exists: true, version: 6, localRevision: 3}
	for _, rec := range snap.Records {
		p, err := publish(rec, lk, prev, true, now)
		if err != nil {
			t.Fatal(err)
		}
		if p.row.version != 7 || p.row.localRevision != 4 {
			t.Fatalf("%s: version %d local revision %d", rec.Base().PublicID, p.row.version, p.row.localRevision)
		}
		for _, a := range dirsvc.ServedAudiences {
			v := dirsvc.Project(rec, lk, a)
			var got []byte
			for _, vr := range p.views {
				if vr.audiences&audienceBit(a) != 0 {
					got = vr.body
				}
			}
			if v == nil {
				if got != nil {
					t.Fatalf("%s: a body for %s, who may not see it", rec.Base().PublicID, a)
				}
				continue
			}
			*v.(interface{ Head() *dirsvc.RecordHead }).Head() = dirsvc.RecordHead{PublicID: rec.Base().PublicID,
				Version: 7, LocalRevision: 4, LastUpdated: now, Origin: rec.Base().Origin}
			want, _ := json.Marshal(v)
			if !bytes.Equal(got, want) {
				t.Fatalf("%s for %s:\n got %s\nwant %s", rec.Base().PublicID, a, got, want)
			}
		}
	}
}

// BenchmarkEncodeViews encodes the views of every record of a generated directory of 3,000
// services, as publish does (most audiences of a record see the same view).
func BenchmarkEncodeViews(b *testing.B) {
	var gen bytes.Buffer
	if err := demo.Generate(&gen, demo.Options{Slug: "gen", Country: "AU", Services: 3000, Seed: 7}); err != nil {
		b.Fatal(err)
	}
	snap, err := primary.ParseImport(&gen)
	if err != nil {
		b.Fatal(err)
	}
	lk, now := newMemLookup(snap), time.Now()
	views := make([][]projected, len(snap.Records))
	for i, rec := range snap.Records {
		views[i], _ = project(rec, lk, now)
	}
	for b.Loop() {
		for i, rec := range snap.Records {
			if _, err := encodeViews(rec.Base(), views[i]); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(snap.Records)), "ns/record")
}
