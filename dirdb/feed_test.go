package dirdb_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/dirdb"
)

// everyChange reads a reader's whole feed from the oldest event retained, a page of limit at a
// time.
func everyChange(t *testing.T, log dirsvc.ChangeLog, fr dirsvc.FeedReader, limit int) []dirsvc.Change {
	t.Helper()
	var out []dirsvc.Change
	q := dirsvc.ChangeQuery{Oldest: true, Limit: limit}
	for range 100000 {
		p, err := log.Changes(context.Background(), fr, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Changes) > limit {
			t.Fatalf("%d changes on a page of %d", len(p.Changes), limit)
		}
		out = append(out, p.Changes...)
		if !p.More {
			return out
		}
		q = dirsvc.ChangeQuery{After: p.Next, Limit: limit}
	}
	t.Fatal("the feed did not end")
	return nil
}

// TestTheChangeLogIsGapFreeAndUnique holds the log, after an import and lifecycle operations, to
// sequences without a gap and events unique by the dedupe tuple, and every reader's feed to the
// log's order.
func TestTheChangeLogIsGapFreeAndUnique(t *testing.T) {
	ctx := context.Background()
	s, d, _ := openSmall(t)
	for _, tr := range []struct {
		id string
		t  dirsvc.Transition
	}{
		{"svc_counsel", dirsvc.Transition{To: dirsvc.StateVisibilityReduced, VisibleTo: dirsvc.AudiencesOf(dirsvc.Partner)}},
		{"svc_counsel", dirsvc.Transition{To: dirsvc.StateLive}},
		{"svc_refuge", dirsvc.Transition{To: dirsvc.StateMerged, Survivor: "svc_gp"}},
		{"svc_counsel", dirsvc.Transition{To: dirsvc.StateClosed}},
	} {
		if _, err := d.Transition(ctx, tr.id, tr.t); err != nil {
			t.Fatalf("%s to %s: %v", tr.id, tr.t.To, err)
		}
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(s.Root(), "dirs", "small", "directory.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n, lo, hi, tuples int
	if err := db.QueryRow("SELECT count(*), min(seq), max(seq) FROM changes").Scan(&n, &lo, &hi); err != nil {
		t.Fatal(err)
	}
	if n < 10 || hi-lo+1 != n {
		t.Fatalf("%d events from %d to %d", n, lo, hi)
	}
	var events int
	if err := db.QueryRow(`SELECT count(*), (SELECT count(*) FROM (SELECT DISTINCT public_id, version, local_revision, event_type
FROM changes WHERE placement = 0)) FROM changes WHERE placement = 0`).Scan(&events, &tuples); err != nil {
		t.Fatal(err)
	}
	if events != tuples {
		t.Fatalf("%d events, %d distinct tuples", events, tuples)
	}
	for _, a := range dirsvc.ServedAudiences {
		for _, limit := range []int{1, 7, 500} {
			var last int64
			for _, c := range everyChange(t, d, dirsvc.FeedReader{Viewer: dirsvc.Viewer{Audience: a}, Practitioners: true}, limit) {
				if c.Seq <= last {
					t.Fatalf("%s, pages of %d: event %d after %d", a, limit, c.Seq, last)
				}
				last = c.Seq
			}
			if last == 0 {
				t.Fatalf("%s reads no event", a)
			}
			merged := false
			for _, c := range everyChange(t, d, dirsvc.FeedReader{Viewer: dirsvc.Viewer{Audience: a}}, limit) {
				if c.EventType == dirsvc.EventMerged && c.PublicID == "svc_refuge" {
					merged = c.Survivor == "svc_gp"
				}
			}
			if !merged {
				t.Errorf("%s: no merged tombstone of svc_refuge naming svc_gp", a)
			}
		}
	}
}

// TestPruningRaisesTheFloor prunes the log in bounded steps: events older than the time go, oldest
// first; a position below the floor is gone (410), the floor itself and omitting the position read
// what is left.
func TestPruningRaisesTheFloor(t *testing.T) {
	ctx := context.Background()
	_, d, total := openSmall(t)
	public := dirsvc.FeedReader{Viewer: dirsvc.Viewer{Audience: dirsvc.Public}}
	if n, err := d.PruneChanges(ctx, time.Now().Add(-time.Hour), 5); err != nil || n != 0 {
		t.Fatalf("pruning before every event removed %d (%v)", n, err)
	}
	all := everyChange(t, d, public, 500)
	if n, err := d.PruneChanges(ctx, time.Now().Add(time.Hour), 5); err != nil || n != 5 {
		t.Fatalf("pruned %d (%v), want 5", n, err)
	}
	if _, err := d.Changes(ctx, public, dirsvc.ChangeQuery{After: 4, Limit: 10}); dirsvc.ErrorCode(err) != dirsvc.EGone {
		t.Fatalf("a position below the floor: %v, want gone", err)
	}
	// A position ahead of the copy (a cursor from a primary an edge lags behind) reads an empty page
	// that stays there.
	if p, err := d.Changes(ctx, public, dirsvc.ChangeQuery{After: 1 << 40, Limit: 10}); err != nil || len(p.Changes) != 0 || p.Next != 1<<40 || p.More {
		t.Fatalf("a position ahead of the log: %+v, %v", p, err)
	}
	left := everyChange(t, d, public, 500)
	var want []dirsvc.Change
	for _, c := range all {
		if c.Seq > 5 {
			want = append(want, c)
		}
	}
	if len(left) != len(want) || len(left) > 0 && left[0].Seq != want[0].Seq {
		t.Fatalf("after pruning 5 of %d the feed holds %d events, want %d", total, len(left), len(want))
	}
	p, err := d.Changes(ctx, public, dirsvc.ChangeQuery{After: 5, Limit: 500})
	if err != nil || len(p.Changes) != len(want) {
		t.Fatalf("from the floor: %d events, %v; want %d", len(p.Changes), err, len(want))
	}
	for {
		n, err := d.PruneChanges(ctx, time.Now().Add(time.Hour), 1000)
		if err != nil {
			t.Fatal(err)
		}
		if n < 1000 {
			break
		}
	}
	if left := everyChange(t, d, public, 500); len(left) != 0 {
		t.Fatalf("after pruning everything, %d events", len(left))
	}
	if _, err := d.Changes(ctx, public, dirsvc.ChangeQuery{After: 5, Limit: 10}); dirsvc.ErrorCode(err) != dirsvc.EGone {
		t.Fatalf("the old floor after pruning everything: %v, want gone", err)
	}
}

// TestAReplicaServesTheFeed reads the feed of a copy opened as an edge opens its replicas
// (read-only): the same events as the primary's.
func TestAReplicaServesTheFeed(t *testing.T) {
	ctx := context.Background()
	s, d, _ := openSmall(t)
	fr := dirsvc.FeedReader{Viewer: dirsvc.Viewer{Audience: dirsvc.Professional}, Practitioners: true}
	want := everyChange(t, d, fr, 500)
	root := s.Root()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := dirdb.OpenReplica(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rd, err := r.Reader(ctx, "small")
	if err != nil {
		t.Fatal(err)
	}
	got := everyChange(t, rd, fr, 7)
	if len(got) == 0 || len(got) != len(want) {
		t.Fatalf("the replica's feed holds %d events, the primary's %d", len(got), len(want))
	}
	for i := range got {
		if got[i].Seq != want[i].Seq || got[i].EventType != want[i].EventType || got[i].PublicID != want[i].PublicID {
			t.Fatalf("event %d: %+v on the replica, %+v on the primary", i, got[i], want[i])
		}
	}
}

// TestRepublishingFillsTheFeedsPlacements holds a directory whose placements were never kept (a
// file of a build before them) to being stale, and republishing it to keeping every record's
// placement again without logging an event.
func TestRepublishingFillsTheFeedsPlacements(t *testing.T) {
	ctx := context.Background()
	s, d, _ := openSmall(t)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(s.Root(), "dirs", "small", "directory.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	state := func() (places, events int) {
		if err := db.QueryRow("SELECT (SELECT count(*) FROM feed_places WHERE place_id != 0), (SELECT count(*) FROM changes)").Scan(&places, &events); err != nil {
			t.Fatal(err)
		}
		return places, events
	}
	places, events := state()
	if places == 0 {
		t.Fatal("the import placed no record")
	}
	if _, err := db.Exec("DELETE FROM feed_places; UPDATE projection SET feed_filled = 0"); err != nil {
		t.Fatal(err)
	}
	if stale, err := s.StaleViews(ctx, "small"); err != nil || !stale {
		t.Fatalf("a directory without the feed's placements not said stale: %v %v", stale, err)
	}
	if st, err := d.Republish(ctx); err != nil || st.Events != 0 {
		t.Fatalf("republish: %+v, %v", st, err)
	}
	if p, e := state(); p != places || e != events {
		t.Errorf("republishing placed %d records and left %d events; the import %d and %d", p, e, places, events)
	}
	if stale, err := s.StaleViews(ctx, "small"); err != nil || stale {
		t.Errorf("the directory is still said stale: %v %v", stale, err)
	}
}

// TestPruningKeepsOnlyThePlacementsEventsNeed moves svc_gp in and out of an area a few times (its
// organisation, roles and practitioners move with it, each placement stored once), then prunes the
// log in steps: a narrowed reader's feed reads what is left exactly as before, pruning everything
// leaves only the placements records keep (and the empty and the newest one), and a placement made
// after that takes an ID never used before.
func TestPruningKeepsOnlyThePlacementsEventsNeed(t *testing.T) {
	ctx := context.Background()
	s, d, _ := openSmall(t)
	const home = `"catchment":["postcode:2007","lga:17200"]`
	fixture := readFixtureString(t)
	if !strings.Contains(fixture, home) {
		t.Fatal("the fixture's svc_gp has another catchment")
	}
	for _, areas := range []string{`"postcode:2250"`, `"postcode:2037"`, `"postcode:2250","postcode:2037"`} {
		MustImport(t, s, []byte(strings.Replace(fixture, home, `"catchment":["postcode:2007",`+areas+`]`, 1)))
		MustImport(t, s, []byte(fixture))
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(s.Root(), "dirs", "small", "directory.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	count := func(query string) int {
		t.Helper()
		var n int
		if err := db.QueryRow(query).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	const kept = "SELECT count(DISTINCT id) FROM places WHERE id = 0 OR id = (SELECT max(id) FROM places) OR id IN (SELECT place_id FROM feed_places)"
	places, needed := count("SELECT count(*) FROM places"), count(kept)
	if places <= needed {
		t.Fatalf("%d placements, %d of them kept by records: the moves made none that only events need", places, needed)
	}
	narrowed := dirsvc.FeedReader{Viewer: dirsvc.Viewer{Audience: dirsvc.Partner, Narrowing: dirsvc.Narrowing{Areas: []string{"postcode:2250"}}}, Practitioners: true}
	all := everyChange(t, d, narrowed, 500)
	total := countChanges(t, s.Root(), "small")
	for _, step := range []int{total / 3, total / 3} {
		if n, err := d.PruneChanges(ctx, time.Now().Add(time.Hour), step); err != nil || n != step {
			t.Fatalf("pruned %d (%v), want %d", n, err, step)
		}
		var floor int64
		if err := db.QueryRow("SELECT seq FROM change_floor").Scan(&floor); err != nil {
			t.Fatal(err)
		}
		var want []dirsvc.Change
		for _, c := range all {
			if c.Seq > floor {
				want = append(want, c)
			}
		}
		got := everyChange(t, d, narrowed, 7)
		if len(got) != len(want) {
			t.Fatalf("above %d the narrowed feed holds %d events, want %d", floor, len(got), len(want))
		}
		for i := range got {
			if got[i].Seq != want[i].Seq || got[i].EventType != want[i].EventType || got[i].Version != want[i].Version {
				t.Fatalf("event %d: %+v, want %+v", i, got[i], want[i])
			}
		}
		if n := count(`SELECT count(*) FROM changes c WHERE c.placed_before NOT IN (SELECT id FROM places)
    OR c.placed_after NOT IN (SELECT id FROM places)`); n != 0 {
			t.Fatalf("%d events name a placement that was pruned", n)
		}
	}
	for {
		n, err := d.PruneChanges(ctx, time.Now().Add(time.Hour), 1000)
		if err != nil {
			t.Fatal(err)
		}
		if n < 1000 {
			break
		}
	}
	if got, want := count("SELECT count(*) FROM places"), count(kept); got != want || got >= places {
		t.Fatalf("after pruning every event, %d placements (of %d), want the %d records keep", got, places, want)
	}
	newest := count("SELECT max(id) FROM places")
	MustImport(t, s, []byte(strings.Replace(fixture, home, `"catchment":["postcode:2007","postcode:2009"]`, 1)))
	if n := count("SELECT count(*) FROM places WHERE id > " + strconv.Itoa(newest)); n == 0 {
		t.Fatal("a move to a new area stored no new placement")
	}
	everyChange(t, d, dirsvc.FeedReader{Viewer: dirsvc.Viewer{Audience: dirsvc.Partner,
		Narrowing: dirsvc.Narrowing{Areas: []string{"postcode:2009"}}}, Practitioners: true}, 500) // fails on a placement it cannot read
}
