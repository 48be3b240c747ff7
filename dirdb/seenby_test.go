package dirdb_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/schema"
)

// TestSeenByMigrationForgetsRecordsNobodySaw stores seen_by as the older build did (every audience
// that would see a tombstoned record were it live, even one imported closed), then runs migration
// 0003: a record imported closed or merged is seen by nobody, and one closed after being live keeps
// the audiences its tombstone event went to.
func TestSeenByMigrationForgetsRecordsNobodySaw(t *testing.T) {
	ctx := context.Background()
	s, d, _ := openSmall(t)
	if _, err := d.Transition(ctx, "svc_reduced", dirsvc.Transition{To: dirsvc.StateClosed}); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(s.Root(), "dirs", "small", "directory.db")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	seen := func(id string) int64 {
		var v int64
		if err := db.QueryRow("SELECT seen_by FROM records WHERE public_id = ?", id).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	if got := seen("svc_reduced"); got&7 != 6 {
		t.Fatalf("svc_reduced, closed after being live for professional and partner: seen_by %d", got)
	}
	if _, err := db.Exec("UPDATE records SET seen_by = 15 WHERE state IN ('closed', 'merged', 'removed')"); err != nil {
		t.Fatal(err)
	}
	ms, err := schema.Migrations(schema.Directory)
	if err != nil || len(ms) < 3 || ms[2].Version != 3 {
		t.Fatalf("migrations: %v", err)
	}
	if _, err := db.Exec(ms[2].SQL); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]int64{"svc_closed": 0, "svc_old": 0, "svc_hiddenmerge": 0, "svc_reduced": 6} {
		if got := seen(id); got != want {
			t.Errorf("%s: seen_by %d after the migration, want %d", id, got, want)
		}
	}
}
