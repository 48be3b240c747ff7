package dirdb_test

import (
	"context"
	"maps"
	"reflect"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/dirdb"
)

const testOrigin = "https://upstream.example/v1/d/region/federation/manifest"

// mirroredRecords are records of an upstream as a partner client harvests them: an organisation, its
// site, two services there, and one service that collides with a record of the small directory.
func mirroredRecords() []dirsvc.Record {
	aud := dirsvc.MirrorAudiences(dirsvc.Partner)
	meta := func(id string) dirsvc.Meta {
		return dirsvc.Meta{PublicID: id, State: dirsvc.StateLive, VisibleTo: aud, Origin: testOrigin}
	}
	return []dirsvc.Record{
		&dirsvc.Organisation{Meta: meta("org_up"), Name: "Upstream Health",
			Contacts: []dirsvc.Contact{{Kind: dirsvc.ContactEmail, Value: "intake@upstream.example", VisibleTo: aud}}},
		&dirsvc.Location{Meta: meta("loc_up"), Organisation: "org_up", Name: "Upstream Health Sydney",
			Address: dirsvc.Address{Lines: []string{"1 Main Street"}, Locality: "Sydney", State: "NSW", Postcode: "2000", Country: "AU", VisibleTo: aud}},
		&dirsvc.Service{Meta: meta("svc_up1"), Organisation: "org_up", Location: "loc_up", Name: "Upstream clinic", Type: "gp"},
		&dirsvc.Service{Meta: meta("svc_up2"), Organisation: "org_up", Location: "loc_up", Name: "Upstream counselling", Type: "gp"},
		&dirsvc.Service{Meta: meta("svc_gp"), Organisation: "org_up", Location: "loc_up", Name: "Not ours", Type: "gp"},
		&dirsvc.PractitionerRole{Meta: meta("role_up"), Practitioner: "prac_absent", Service: "svc_up1", Title: "GP"},
	}
}

// mirrorStore returns the small directory with a mirror named up.
func mirrorStore(t *testing.T) (*dirdb.Store, *dirdb.Directory) {
	t.Helper()
	s, d, _ := openSmall(t)
	if err := s.AddMirror(context.Background(), "small", dirsvc.Mirror{Name: "up", Upstream: "https://upstream.example",
		UpstreamDir: "region", ClientID: "dirc_x", Secret: "a secret", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	return s, d
}

// published returns what each audience reads of each record, without the time of the write.
func published(t *testing.T, d *dirdb.Directory, ids ...string) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, id := range ids {
		for _, a := range dirsvc.ServedAudiences {
			st, err := d.Record(context.Background(), id, dirsvc.Viewer{Audience: a})
			if dirsvc.ErrorCode(err) == dirsvc.ENotFound {
				out[id+" "+a.String()] = "not found"
				continue
			} else if err != nil {
				t.Fatal(err)
			}
			var v map[string]any
			if st.View != nil {
				if err := jsonUnmarshal(st.View.Body, &v); err != nil {
					t.Fatal(err)
				}
				delete(v, "lastUpdated")
			}
			out[id+" "+a.String()] = []any{st.State, st.Survivor, v}
		}
	}
	return out
}

// TestApplyMirrorInBulkAndInPartsAgree writes the same harvest to two copies of a directory, once in
// bulk and once record by record: every audience reads the same of every record, the record that
// collides with one of the directory's own and the role whose practitioner is absent are refused
// alike, and what a partner harvest brought is seen by partners only.
func TestApplyMirrorInBulkAndInPartsAgree(t *testing.T) {
	ctx := context.Background()
	ids := []string{"org_up", "loc_up", "svc_up1", "svc_up2", "svc_gp", "role_up"}
	var results []map[string]any
	for _, bulk := range []bool{false, true} {
		s, d := mirrorStore(t)
		var ops []dirsvc.MirrorOp
		for _, r := range mirroredRecords() {
			ops = append(ops, dirsvc.MirrorOp{Record: r, PublicID: r.Base().PublicID})
		}
		st, err := s.ApplyMirror(ctx, "small", dirsvc.MirrorBatch{Mirror: "up", Ops: ops, Bulk: bulk, Cursor: "c1", Tier: "partner", FullHarvest: true})
		if err != nil {
			t.Fatal(err)
		}
		if st.Written != 4 || st.Refused != 2 {
			t.Errorf("bulk=%v: written %d, refused %d; want 4 and 2", bulk, st.Written, st.Refused)
		}
		if v := view(t, d, "svc_up1", dirsvc.Partner); v == nil || v["origin"] != testOrigin {
			t.Fatalf("bulk=%v: a partner reads %v", bulk, v)
		}
		for _, a := range []dirsvc.Audience{dirsvc.Public, dirsvc.Professional} {
			if v := view(t, d, "svc_up1", a); v != nil {
				t.Errorf("bulk=%v: %s reads what a partner harvest brought: %v", bulk, a, v)
			}
		}
		if v := view(t, d, "svc_gp", dirsvc.Public); v == nil || v["origin"] != nil {
			t.Errorf("bulk=%v: the directory's own svc_gp reads %v", bulk, v)
		}
		// Another mirror may not write a record this one owns.
		if err := s.AddMirror(ctx, "small", dirsvc.Mirror{Name: "other", Upstream: "https://other.example",
			UpstreamDir: "region", ClientID: "dirc_y", Secret: "a secret", CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		taken := mirroredRecords()[2].(*dirsvc.Service)
		taken.Name = "Taken over"
		st, err = s.ApplyMirror(ctx, "small", dirsvc.MirrorBatch{Mirror: "other", Bulk: bulk, Cursor: "o1", Tier: "partner",
			Ops: []dirsvc.MirrorOp{{Record: taken, PublicID: taken.PublicID}}})
		if err != nil || st.Written != 0 || st.Refused != 1 {
			t.Fatalf("bulk=%v: another mirror's write of svc_up1: %+v %v", bulk, st, err)
		}
		if v := view(t, d, "svc_up1", dirsvc.Partner); v == nil || v["name"] != "Upstream clinic" {
			t.Fatalf("bulk=%v: after another mirror's write a partner reads %v", bulk, v)
		}
		// Tombstones: one service merged into the other, the organisation's site closed.
		st, err = s.ApplyMirror(ctx, "small", dirsvc.MirrorBatch{Mirror: "up", Bulk: bulk, Cursor: "c2", Tier: "partner", Ops: []dirsvc.MirrorOp{
			{PublicID: "svc_up2", Tombstone: dirsvc.EventMerged, Survivor: "svc_up1"},
			{PublicID: "svc_gp", Tombstone: dirsvc.EventDeleted}, // the directory's own: refused
		}})
		if err != nil || st.Written != 1 || st.Refused != 1 {
			t.Fatalf("bulk=%v: tombstones: %+v %v", bulk, st, err)
		}
		ms, err := s.Mirrors(ctx, "small")
		if err != nil || len(ms) != 2 || ms[1].Cursor != "c2" || ms[1].FullHarvest || ms[1].Harvested != 5 || ms[0].Harvested != 0 { // by name: other, up
			t.Errorf("bulk=%v: mirror state %+v %v", bulk, ms, err)
		}
		results = append(results, published(t, d, ids...))
	}
	if !reflect.DeepEqual(results[0], results[1]) {
		for k := range maps.Keys(results[0]) {
			if !reflect.DeepEqual(results[0][k], results[1][k]) {
				t.Errorf("%s: in parts %v, in bulk %v", k, results[0][k], results[1][k])
			}
		}
	}
}

// TestMirroredRecordsAreReadOnlyHere refuses local changes of a mirrored record (409
// mirrored-record), keeps mirrored records through an import of the directory's own file and a
// republish, and removes them with their mirror.
func TestMirroredRecordsAreReadOnlyHere(t *testing.T) {
	ctx := context.Background()
	s, d := mirrorStore(t)
	var ops []dirsvc.MirrorOp
	for _, r := range mirroredRecords()[:3] {
		ops = append(ops, dirsvc.MirrorOp{Record: r, PublicID: r.Base().PublicID})
	}
	if _, err := s.ApplyMirror(ctx, "small", dirsvc.MirrorBatch{Mirror: "up", Ops: ops, Cursor: "c1", Tier: "partner"}); err != nil {
		t.Fatal(err)
	}
	svc := mirroredRecords()[2]
	svc.Base().Origin = ""
	if _, err := d.Update(ctx, svc); dirsvc.ErrorCode(err) != dirsvc.EMirrored {
		t.Errorf("Update of a mirrored record: %v, want %s", err, dirsvc.EMirrored)
	}
	if _, err := d.Transition(ctx, "svc_up1", dirsvc.Transition{To: dirsvc.StateClosed}); dirsvc.ErrorCode(err) != dirsvc.EMirrored {
		t.Errorf("Transition of a mirrored record: %v, want %s", err, dirsvc.EMirrored)
	}
	own := mirroredRecords()[3]
	own.Base().PublicID = "svc_new"
	if _, err := d.Update(ctx, own); dirsvc.ErrorCode(err) != dirsvc.EInvalid {
		t.Errorf("Update of a new record claiming an origin: %v, want %s", err, dirsvc.EInvalid)
	}
	MustImport(t, s, readFixture(t))
	if _, err := d.Republish(ctx); err != nil {
		t.Fatal(err)
	}
	if v := view(t, d, "svc_up1", dirsvc.Partner); v == nil {
		t.Fatal("an import of the directory's own file and a republish dropped a mirrored record")
	}
	if st, err := s.RemoveMirror(ctx, "small", "up"); err != nil || st.Written != 3 {
		t.Fatalf("RemoveMirror: %+v %v", st, err)
	}
	if st, err := d.Record(ctx, "svc_up1", dirsvc.Viewer{Audience: dirsvc.Partner}); err != nil || st.State != dirsvc.StateRemoved {
		t.Errorf("a record of a removed mirror: %+v %v", st, err)
	}
	if _, err := s.ApplyMirror(ctx, "small", dirsvc.MirrorBatch{Mirror: "up", Ops: ops}); dirsvc.ErrorCode(err) != dirsvc.ENotFound {
		t.Errorf("a batch of a removed mirror: %v", err)
	}
}
