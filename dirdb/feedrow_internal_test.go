package dirdb

import (
	"context"
	"database/sql"
	"reflect"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
)

// TestChangeRowsReadEveryField writes change-log rows with every field set, with NULLs, and with
// an origin that holds spaces, and reads them back as the feed does.
func TestChangeRowsReadEveryField(t *testing.T) {
	d := demoDirectory(t)
	ctx := context.Background()
	at := time.Date(2026, 11, 23, 1, 2, 3, 456789000, time.UTC)
	var last int64
	if err := d.readers.QueryRowContext(ctx, "SELECT COALESCE(max(seq), 0) FROM changes").Scan(&last); err != nil {
		t.Fatal(err)
	}
	want := []changeRow{
		{Change: dirsvc.Change{Kind: dirsvc.KindService, PublicID: "svc_x1", Version: 7, LocalRevision: 3,
			EventType: dirsvc.EventMerged, Survivor: "svc_x2", Origin: "Harbour  Health Network ", At: at},
			audiences: 5, before: sql.NullInt64{Int64: 4, Valid: true}, after: sql.NullInt64{Int64: 0, Valid: true}, placement: true},
		{Change: dirsvc.Change{Kind: dirsvc.KindOrganisation, PublicID: "org_x3", Version: 1, EventType: dirsvc.EventCreated, At: at},
			audiences: 1},
	}
	_, err := d.write(ctx, func(w *writeTx) error {
		for _, r := range want {
			var survivor, origin any
			if r.Survivor != "" {
				survivor = r.Survivor
			}
			if r.Origin != "" {
				origin = r.Origin
			}
			err := w.exec(w.pub, `INSERT INTO changes (kind, public_id, version, local_revision, event_type, survivor_id,
				origin, audiences, at, placed_before, placed_after, placement) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				r.Kind, r.PublicID, r.Version, r.LocalRevision, r.EventType, survivor, origin, r.audiences,
				r.At.Format(time.RFC3339Nano), r.before, r.after, r.placement)
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.changeRows(ctx, last, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d rows, want %d", len(got), len(want))
	}
	for i := range want {
		want[i].Seq = got[i].Seq
		if !got[i].At.Equal(want[i].At) {
			t.Errorf("row %d at %v, want %v", i, got[i].At, want[i].At)
		}
		got[i].At = want[i].At
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("row %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
}
