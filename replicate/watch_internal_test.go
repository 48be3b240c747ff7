package replicate

import (
	"database/sql"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/benbjohnson/litestream"
	_ "modernc.org/sqlite"
)

// TestTheWatcherSeesEveryCommitAtTheNextLook commits to a file through a connection of its own (as
// a command run beside the primary does) after the file was idle for longer than any quiet period:
// the watcher's next look finds each commit, and a look without one finds none.
func TestTheWatcherSeesEveryCommitAtTheNextLook(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	conn, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetMaxOpenConns(1)
	if _, err := conn.Exec("CREATE TABLE t (x)"); err != nil {
		t.Fatal(err)
	}
	looks, dbs := map[string]look{}, map[string]*litestream.DB{"x": litestream.NewDB(path)}
	tick := 0
	look := func() []string {
		tick++
		return changedSince(looks, dbs, tick, time.Now())
	}
	if due := look(); !slices.Equal(due, []string{"x"}) {
		t.Fatalf("the first look: %v", due)
	}
	for range 2 * quietLooks {
		if due := look(); len(due) != 0 {
			t.Fatalf("look %d without a commit: %v", tick, due)
		}
	}
	for i := range 3 * quietEvery {
		if _, err := conn.Exec("INSERT INTO t VALUES (?)", i); err != nil {
			t.Fatal(err)
		}
		if due := look(); !slices.Equal(due, []string{"x"}) {
			t.Fatalf("the look after commit %d: %v", i, due)
		}
		if due := look(); len(due) != 0 {
			t.Fatalf("a second look after commit %d: %v", i, due)
		}
	}
}
