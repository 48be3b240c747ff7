package dirdb_test

import (
	"context"
	"testing"

	"github.com/dirsvc/dirsvc"
)

// TestSnapshotCountsWhatItWalks counts each kind in snapshots of every served tier, with and without
// narrowings, after records were taken down, reduced to partners and closed: each count is the
// number of records the snapshot's walk of the kind gives.
func TestSnapshotCountsWhatItWalks(t *testing.T) {
	ctx := context.Background()
	_, d := openBrowse(t)
	for id, to := range map[string]dirsvc.Transition{
		"svc_counsel": {To: dirsvc.StateTakedown},
		"svc_gp":      {To: dirsvc.StateVisibilityReduced, VisibleTo: dirsvc.AudiencesOf(dirsvc.Partner)},
		"loc_ultimo":  {To: dirsvc.StateClosed},
	} {
		if _, err := d.Transition(ctx, id, to); err != nil {
			t.Fatal(err)
		}
	}
	narrowings := []dirsvc.Narrowing{{}, {Areas: []string{"postcode:2250"}}, {Categories: []string{"mental_health"}},
		{Areas: []string{"state:nsw"}, Categories: []string{"primary_care"}},
		{Kinds: []dirsvc.Kind{dirsvc.KindService, dirsvc.KindPractitioner, dirsvc.KindRole}}}
	walkedAny := false
	for _, a := range dirsvc.ServedAudiences {
		for _, n := range narrowings {
			v := dirsvc.Viewer{Audience: a, Narrowing: n}
			snap, err := d.ReadSnapshot(ctx, v)
			if err != nil {
				t.Fatal(err)
			}
			for _, kind := range dirsvc.ExportKinds {
				walked := int64(0)
				if err := snap.Walk(ctx, kind, func(dirsvc.Published) error { walked++; return nil }); err != nil {
					t.Fatal(err)
				}
				counted, err := snap.Count(ctx, kind)
				if err != nil {
					t.Fatal(err)
				}
				if counted != walked {
					t.Errorf("%s %+v: %d %ss counted, %d walked", a, n, counted, kind, walked)
				}
				walkedAny = walkedAny || walked > 0
			}
			snap.Close()
		}
	}
	if !walkedAny {
		t.Fatal("no snapshot walked a record")
	}
}
