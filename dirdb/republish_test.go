package dirdb_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
)

// TestRepublishReplacesViewsAnOlderBuildStored stores views as an older build of the projection
// would have (a location's address shown to the public), then republishes: the stale views are
// replaced by what the projection makes now, as a new version with its event, and a second
// republish, like one of an unchanged directory, changes nothing.
func TestRepublishReplacesViewsAnOlderBuildStored(t *testing.T) {
	ctx := context.Background()
	s, d, before := openSmall(t)
	if st, err := d.Republish(ctx); err != nil || st.Events != 0 || st.Updated != 0 {
		t.Fatalf("republishing an unchanged directory: %+v, %v", st, err)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(s.Root(), "dirs", "small", "directory.db")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	stale := `"address":{"lines":["9 Quiet Lane canary-staff-x"]`
	if _, err := db.Exec(`UPDATE projections SET body = CAST(replace(CAST(body AS TEXT), '"address":null', ?) AS BLOB) WHERE public_id = 'loc_refuge' AND audiences & 1 != 0`, stale); err != nil {
		t.Fatal(err)
	}
	// The hashes the older build kept were of its own views: the record's, and the public's head.
	var heads []byte
	if err := db.QueryRow(`SELECT audience_heads FROM records WHERE public_id = 'loc_refuge'`).Scan(&heads); err != nil || len(heads) < 40 {
		t.Fatalf("audience heads %x: %v", heads, err)
	}
	copy(heads[24:40], make([]byte, 16))
	if _, err := db.Exec(`UPDATE records SET view_hash = x'00', audience_heads = ? WHERE public_id = 'loc_refuge'`, heads); err != nil {
		t.Fatal(err)
	}
	body := func() string {
		var b string
		if err := db.QueryRow(`SELECT CAST(body AS TEXT) FROM projections WHERE public_id = 'loc_refuge' AND audiences & 1 != 0`).Scan(&b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	if !strings.Contains(body(), stale) {
		t.Fatal("the stale view was not stored")
	}
	// Views an older version of the rules made are known as such.
	if stale, err := s.StaleViews(ctx, "small"); err != nil || stale {
		t.Fatalf("views made by the current rules said stale: %v %v", stale, err)
	}
	if _, err := db.Exec(`UPDATE projection SET version = 1`); err != nil {
		t.Fatal(err)
	}
	if stale, err := s.StaleViews(ctx, "small"); err != nil || !stale {
		t.Fatalf("views of version 1 not said stale: %v %v", stale, err)
	}
	st, err := d.Republish(ctx)
	if err != nil || st.Updated != 1 || st.Events != 1 {
		t.Fatalf("republish: %+v, %v", st, err)
	}
	if strings.Contains(body(), "canary-staff-x") || !strings.Contains(body(), `"address":null`) {
		t.Errorf("the stale view is still served: %s", body())
	}
	if stale, err := s.StaleViews(ctx, "small"); err != nil || stale {
		t.Errorf("republished views still said stale: %v %v", stale, err)
	}
	if got := countChanges(t, s.Root(), "small"); got != before+st.Events {
		t.Errorf("change log grew by %d, republish reported %d events", got-before, st.Events)
	}
	if st, err := d.Republish(ctx); err != nil || st.Events != 0 || st.Updated != 0 {
		t.Errorf("second republish: %+v, %v", st, err)
	}
}

// TestRepublishMakesNarrowingKeysAnOlderBuildLacked empties the narrowing keys as a file an older
// build wrote has them (the migration adds the table empty): the directory is said stale until a
// republish makes them, without a new version or event.
func TestRepublishMakesNarrowingKeysAnOlderBuildLacked(t *testing.T) {
	ctx := context.Background()
	s, d, _ := openSmall(t)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(s.Root(), "dirs", "small", "directory.db")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	count := func() (n int) {
		if err := db.QueryRow("SELECT count(*) FROM narrowing_keys").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	made := count()
	if made == 0 {
		t.Fatal("the import made no narrowing keys")
	}
	if _, err := db.Exec("DELETE FROM narrowing_keys; UPDATE projection SET narrowing_filled = 0"); err != nil {
		t.Fatal(err)
	}
	if stale, err := s.StaleViews(ctx, "small"); err != nil || !stale {
		t.Fatalf("a directory without narrowing keys not said stale: %v %v", stale, err)
	}
	if st, err := d.Republish(ctx); err != nil || st.Events != 0 || st.Updated != 0 {
		t.Fatalf("republish: %+v, %v", st, err)
	}
	if got := count(); got != made {
		t.Errorf("republishing made %d narrowing keys, the import %d", got, made)
	}
	if stale, err := s.StaleViews(ctx, "small"); err != nil || stale {
		t.Errorf("the directory is still said stale: %v %v", stale, err)
	}
}
