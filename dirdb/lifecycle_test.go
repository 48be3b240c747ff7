package dirdb_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/primary"
)

type change struct {
	id, event string
	version   int64
}

// changesAfter returns the change-log events after seq (not the placement rows of files written
// before moves were events, which reach only narrowed readers).
func changesAfter(t *testing.T, root string, seq int) []change {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(root, "dirs", "small", "directory.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query("SELECT public_id, event_type, version FROM changes WHERE seq > ? AND placement = 0 ORDER BY seq", seq)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []change
	for rows.Next() {
		var c change
		rows.Scan(&c.id, &c.event, &c.version)
		out = append(out, c)
	}
	return out
}

func openSmall(t *testing.T) (*dirdb.Store, *dirdb.Directory, int) {
	t.Helper()
	s := MustOpenStore(t)
	MustImport(t, s, readFixture(t))
	d, err := s.Directory(context.Background(), "small")
	if err != nil {
		t.Fatal(err)
	}
	return s, d, countChanges(t, s.Root(), "small")
}

// placedBy are the records each service of the small directory places for narrowed clients.
var placedBy = map[string][]string{"svc_counsel": {"loc_coast", "org_coast"}, "svc_refuge": {"loc_refuge", "org_harbour"}}

func TestLifecycleOperations(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		id     string
		t      dirsvc.Transition
		event  string
		state  dirsvc.State
		public bool // the record stays readable by public
	}{
		{"close", "svc_counsel", dirsvc.Transition{To: dirsvc.StateClosed}, "closed", dirsvc.StateClosed, false},
		{"delete", "svc_counsel", dirsvc.Transition{To: dirsvc.StateRemoved}, "deleted", dirsvc.StateRemoved, false},
		{"merge", "svc_refuge", dirsvc.Transition{To: dirsvc.StateMerged, Survivor: "svc_gp"}, "merged", dirsvc.StateMerged, false},
		{"reduce visibility", "svc_counsel", dirsvc.Transition{To: dirsvc.StateVisibilityReduced, VisibleTo: dirsvc.AudiencesOf(dirsvc.Partner)}, "visibility_reduced", dirsvc.StateVisibilityReduced, false},
		{"take down", "svc_counsel", dirsvc.Transition{To: dirsvc.StateTakedown}, "visibility_reduced", dirsvc.StateTakedown, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, d, seq := openSmall(t)
			before, _ := d.Record(ctx, c.id, dirsvc.Viewer{Audience: dirsvc.Public})
			if _, err := d.Transition(ctx, c.id, c.t); err != nil {
				t.Fatal(err)
			}
			// The record's own event, and an updated event of each record whose placement for
			// narrowed clients it changed (its site and organisation lose its area and category).
			all := changesAfter(t, s.Root(), seq)
			var got []change
			for _, e := range all {
				if e.id == c.id {
					got = append(got, e)
				} else if e.event != "updated" || !slices.Contains(placedBy[c.id], e.id) {
					t.Errorf("change log after %s: %+v, which %s does not place", c.name, e, c.id)
				}
			}
			if len(got) != 1 || got[0].event != c.event {
				t.Fatalf("change log after %s: %+v", c.name, all)
			}
			st, err := d.Record(ctx, c.id, dirsvc.Viewer{Audience: dirsvc.Public})
			if err != nil {
				t.Fatal(err)
			}
			if st.State != c.state || (st.View != nil) != c.public {
				t.Fatalf("after %s: state %s, public view %v", c.name, st.State, st.View != nil)
			}
			if v, _ := d.Record(ctx, c.id, dirsvc.Viewer{Audience: dirsvc.Partner}); c.state == dirsvc.StateVisibilityReduced && v.View == nil {
				t.Fatal("partner lost sight of a record reduced to partners")
			}
			if got[0].version != mustVersion(t, before)+1 {
				t.Fatalf("version %d after %d", got[0].version, mustVersion(t, before))
			}
		})
	}
}

func mustVersion(t *testing.T, st dirsvc.RecordStatus) int64 {
	t.Helper()
	var v struct{ Version int64 }
	if st.View == nil {
		t.Fatal("no view")
	}
	if err := jsonUnmarshal(st.View.Body, &v); err != nil {
		t.Fatal(err)
	}
	return v.Version
}

func TestClosingAnOrganisationTombstonesWhatDependsOnIt(t *testing.T) {
	ctx := context.Background()
	s, d, seq := openSmall(t)
	if _, err := d.Transition(ctx, "org_coast", dirsvc.Transition{To: dirsvc.StateClosed}); err != nil {
		t.Fatal(err)
	}
	var events []string
	for _, c := range changesAfter(t, s.Root(), seq) {
		events = append(events, c.id+":"+c.event)
	}
	want := "org_coast:closed loc_coast:visibility_reduced svc_counsel:visibility_reduced svc_reduced:visibility_reduced"
	if strings.Join(events, " ") != want {
		t.Fatalf("events = %v\nwant     %s", events, want)
	}
	if st, _ := d.Record(ctx, "svc_counsel", dirsvc.Viewer{Audience: dirsvc.Public}); st.View != nil {
		t.Fatal("a service of a closed organisation is still visible")
	}
	// Restoring brings them back as updates.
	if _, err := d.Transition(ctx, "org_coast", dirsvc.Transition{To: dirsvc.StateLive}); err != nil {
		t.Fatal(err)
	}
	if st, _ := d.Record(ctx, "svc_counsel", dirsvc.Viewer{Audience: dirsvc.Public}); st.View == nil {
		t.Fatal("restoring the organisation did not restore its service")
	}
}

func TestUpdateBumpsVersionAndLocalRevision(t *testing.T) {
	ctx := context.Background()
	s, d, seq := openSmall(t)
	info, _ := d.Info(ctx)
	line := `{"kind":"location","publicId":"loc_coast","organisation":"org_coast","name":"Coast Counselling Gosford West","address":{"lines":["5 Mann St"],"locality":"Gosford","state":"NSW","postcode":"2250"},"areas":["postcode:2250","state:nsw"],"remoteness":1,"ownershipType":{"code":"private","display":"Private"}}`
	rec, err := primary.ParseRecord([]byte(line), info)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Update(ctx, rec); err != nil {
		t.Fatal(err)
	}
	got := changesAfter(t, s.Root(), seq)
	// The location changes, and so do the views that name it: its services (location name) and the
	// roles at them. The organisation's view does not change, so it gets no event.
	ids := map[string]string{}
	for _, c := range got {
		ids[c.id] = c.event
	}
	if ids["loc_coast"] != "updated" || ids["svc_counsel"] != "updated" || ids["org_coast"] != "" {
		t.Fatalf("events after renaming a location: %+v", got)
	}
	src, err := d.Source(ctx, "loc_coast")
	if err != nil || src.Base().LocalRevision != 2 || src.Base().Version != 2 {
		t.Fatalf("source after update: %+v, %v", src.Base(), err)
	}
	svc, _ := d.Source(ctx, "svc_counsel")
	if svc.Base().LocalRevision != 1 || svc.Base().Version != 2 {
		t.Fatalf("a dependent's own information did not change, so its local revision stays: %+v", svc.Base())
	}
}

func TestAStaffOnlyChangePublishesNothing(t *testing.T) {
	s, _, _ := openSmall(t)
	staff := strings.Replace(readFixtureString(t), "pay review", "pay review done", 1)
	if st := MustImport(t, s, []byte(staff)); st.Events != 0 {
		t.Fatalf("a staff-only change published %d events", st.Events)
	}
	// The canonical record did change.
	src, err := s.Directory(context.Background(), "small")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := src.Source(context.Background(), "org_harbour")
	if err != nil || rec.(*dirsvc.Organisation).Leadership[0].StaffNotes != "pay review done canary-staff-x" {
		t.Fatalf("staff notes not stored: %v", err)
	}
}

// TestRecordStaffNotesStayOnThePrimary gives records of every kind staff notes, by import and by
// update: they publish nothing (no event, no new version, no byte of directory.db) and are kept with
// the canonical record.
func TestRecordStaffNotesStayOnThePrimary(t *testing.T) {
	ctx := context.Background()
	s, d, before := openSmall(t)
	file := readFixtureString(t)
	ids := []string{"org_coast", "loc_ultimo", "svc_gp", "prac_jo", "role_jo"}
	for _, id := range ids {
		file = strings.Replace(file, `"publicId":"`+id+`"`, `"publicId":"`+id+`","staffNotes":"verified by phone `+id+` canary-staff-x"`, 1)
	}
	if st := MustImport(t, s, []byte(file)); st.Events != 0 || st.Updated != 0 {
		t.Fatalf("staff notes published something: %+v", st)
	}
	for _, id := range ids {
		rec, err := d.Source(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := rec.Base().StaffNotes, "verified by phone "+id+" canary-staff-x"; got != want {
			t.Errorf("%s: StaffNotes = %q, want %q", id, got, want)
		}
		rec.Base().StaffNotes = "second call " + id + " canary-staff-x"
		if st, err := d.Update(ctx, rec); err != nil || st.Events != 0 {
			t.Fatalf("update of %s's staff notes: %+v, %v", id, st, err)
		}
		if st, err := d.Record(ctx, id, dirsvc.Viewer{Audience: dirsvc.Partner}); err != nil || mustVersion(t, st) != 1 {
			t.Errorf("%s: version %d after staff notes alone changed (%v)", id, mustVersion(t, st), err)
		}
	}
	if got := countChanges(t, s.Root(), "small"); got != before {
		t.Errorf("staff notes wrote %d events", got-before)
	}
	s.Close()
	files, _ := filepath.Glob(filepath.Join(s.Root(), "dirs", "small", "directory.db*"))
	for _, f := range files {
		if b, err := os.ReadFile(f); err != nil || bytes.Contains(b, []byte("canary-staff-x")) {
			t.Errorf("%s holds staff notes (%v)", filepath.Base(f), err)
		}
	}
}

func TestTransitionRejectsBadOperations(t *testing.T) {
	ctx := context.Background()
	_, d, _ := openSmall(t)
	for _, c := range []struct {
		id string
		t  dirsvc.Transition
	}{
		{"svc_gp", dirsvc.Transition{To: dirsvc.StateMerged, Survivor: "svc_gp"}},
		{"svc_gp", dirsvc.Transition{To: dirsvc.StateMerged, Survivor: "loc_ultimo"}},
		{"svc_gp", dirsvc.Transition{To: dirsvc.StateMerged, Survivor: "svc_closed"}},
		{"svc_gp", dirsvc.Transition{To: dirsvc.StateVisibilityReduced}},
		{"svc_gp", dirsvc.Transition{To: "bogus"}},
	} {
		if _, err := d.Transition(ctx, c.id, c.t); dirsvc.ErrorCode(err) != dirsvc.EInvalid {
			t.Errorf("Transition(%s, %+v) = %v, want invalid", c.id, c.t, err)
		}
	}
	if _, err := d.Transition(ctx, "svc_nothere", dirsvc.Transition{To: dirsvc.StateClosed}); err != dirsvc.ErrNotFound {
		t.Errorf("Transition of a missing record = %v", err)
	}
}

func TestImportFailingInsideTheWriteRollsBackEverything(t *testing.T) {
	ctx := context.Background()
	s, d, _ := openSmall(t)
	pub := filepath.Join(s.Root(), "dirs", "small", "directory.db")
	before := dumpFile(t, pub)

	// Change many records, then make the last one fail a constraint in the middle of the write.
	snap, err := primary.ParseImport(bytes.NewReader(bytes.ReplaceAll(readFixture(t), []byte("Harbour"), []byte("Bay"))))
	if err != nil {
		t.Fatal(err)
	}
	snap.Records[len(snap.Records)-1].Base().State = "bogus"
	if _, err := d.Import(ctx, snap); err == nil {
		t.Fatal("import with a record in an impossible state succeeded")
	}
	if after := dumpFile(t, pub); after != before {
		t.Fatal("a write that failed half-way left changes behind")
	}
	if st := MustImport(t, s, readFixture(t)); st.Events != 0 {
		t.Fatalf("the original file is no longer a no-op: %+v", st)
	}
}

func dumpFile(t *testing.T, path string) string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var b strings.Builder
	for _, q := range []string{"SELECT public_id, version, state FROM records ORDER BY 1", "SELECT public_id, audiences, etag FROM projections ORDER BY 1, 2", "SELECT seq, public_id, event_type FROM changes ORDER BY 1"} {
		rows, err := db.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var a, b2, c any
			rows.Scan(&a, &b2, &c)
			fmt.Fprintln(&b, a, b2, c)
		}
		rows.Close()
	}
	return b.String()
}

// TestReadsSeeEveryCommittedWrite reads through every reserved reader (each keeps its snapshot
// between queries), writes, and checks that every reader then sees the write.
func TestReadsSeeEveryCommittedWrite(t *testing.T) {
	ctx := context.Background()
	_, d, _ := openSmall(t)
	readName := func() string {
		st, err := d.Record(ctx, "svc_counsel", dirsvc.Viewer{Audience: dirsvc.Public})
		if err != nil || st.View == nil {
			t.Fatalf("read: %v", err)
		}
		var v struct{ Name string }
		jsonUnmarshal(st.View.Body, &v)
		return v.Name
	}
	// Hold several readers at once so each opens a snapshot.
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() { defer wg.Done(); readName() }()
	}
	wg.Wait()
	info, _ := d.Info(ctx)
	for i := range 3 {
		name := fmt.Sprintf("Coast Counselling %d", i)
		line := `{"kind":"service","publicId":"svc_counsel","organisation":"org_coast","location":"loc_coast","name":"` + name + `","type":"psychology"}`
		rec, err := primary.ParseRecord([]byte(line), info)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.Update(ctx, rec); err != nil {
			t.Fatal(err)
		}
		for range 32 {
			if got := readName(); got != name {
				t.Fatalf("after writing %q a reader sees %q", name, got)
			}
		}
	}
}

// TestAChangeHiddenFromAnAudienceLeavesItsViewAlone changes only what partners and professionals see
// of a service: their views take a new version and time, and the change log tells only them; the
// public's view keeps its version, local revision and time, byte for byte.
func TestAChangeHiddenFromAnAudienceLeavesItsViewAlone(t *testing.T) {
	ctx := context.Background()
	s, d, seq := openSmall(t)
	info, _ := d.Info(ctx)
	before := map[dirsvc.Audience]dirsvc.Published{}
	for _, a := range dirsvc.ServedAudiences {
		st, err := d.Record(ctx, "svc_gp", dirsvc.Viewer{Audience: a})
		if err != nil || st.View == nil {
			t.Fatalf("read as %s: %v", a, err)
		}
		before[a] = *st.View
	}
	src, err := d.Source(ctx, "svc_gp")
	if err != nil {
		t.Fatal(err)
	}
	svc := src.(*dirsvc.Service)
	for i := range svc.Contacts {
		if svc.Contacts[i].Value == "+61255502001" { // the professional and partner line
			svc.Contacts[i].Value = "+61255502002"
		}
	}
	doc, _ := json.Marshal(struct {
		Kind string `json:"kind"`
		*dirsvc.Service
	}{"service", svc})
	rec, err := primary.ParseRecord(doc, info)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Update(ctx, rec); err != nil {
		t.Fatal(err)
	}
	head := func(b []byte) (v struct {
		Version       int64
		LocalRevision int64
		LastUpdated   string
	}) {
		jsonUnmarshal(b, &v)
		return v
	}
	for _, a := range dirsvc.ServedAudiences {
		st, _ := d.Record(ctx, "svc_gp", dirsvc.Viewer{Audience: a})
		was, now := head(before[a].Body), head(st.View.Body)
		if a == dirsvc.Public {
			if !bytes.Equal(st.View.Body, before[a].Body) || st.View.ETag != before[a].ETag {
				t.Errorf("the public's view changed: %+v, was %+v", now, was)
			}
			continue
		}
		if now.Version <= was.Version || now.LocalRevision <= was.LocalRevision || now.LastUpdated == was.LastUpdated {
			t.Errorf("%s's view did not move on: %+v, was %+v", a, now, was)
		}
	}
	var aud int64
	db, _ := sql.Open("sqlite", "file:"+filepath.Join(s.Root(), "dirs", "small", "directory.db")+"?mode=ro")
	defer db.Close()
	if err := db.QueryRow("SELECT audiences FROM changes WHERE seq > ? AND public_id = 'svc_gp'", seq).Scan(&aud); err != nil {
		t.Fatal(err)
	}
	if got := dirsvc.Audiences(aud); got.Has(dirsvc.Public) || !got.Has(dirsvc.Professional) || !got.Has(dirsvc.Partner) {
		t.Errorf("the change is logged for %v, want professional and partner only", got)
	}
	if cs := changesAfter(t, s.Root(), seq); len(cs) != 1 {
		t.Errorf("the change logged %v, want one event", cs)
	}
}
