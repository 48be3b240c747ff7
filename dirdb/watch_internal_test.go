package dirdb

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/dirsvc/dirsvc/internal/walindex"
)

// TestFileWatchSeesEveryCommit commits to a WAL file through a connection the watch knows nothing
// of: every commit is seen, and a look without one sees none; read from the mapping and from the
// file.
func TestFileWatchSeesEveryCommit(t *testing.T) {
	for _, mapped := range []bool{true, false} {
		t.Run(fmt.Sprintf("mapped=%v", mapped), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.db")
			db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			db.SetMaxOpenConns(1)
			if _, err := db.Exec("CREATE TABLE t (x)"); err != nil {
				t.Fatal(err)
			}
			w, err := newFileWatch(path)
			if err != nil {
				t.Fatal(err)
			}
			if w.index.Mapped() != (runtime.GOOS != "windows") {
				t.Fatalf("mapped: %v on %s", w.index.Mapped(), runtime.GOOS)
			}
			if !mapped {
				w.index = walindex.Unmapped(w.index)
			}
			changes := 0
			look := func() {
				t.Helper()
				if err := w.check(func() error { changes++; return nil }); err != nil {
					t.Fatal(err)
				}
			}
			for i := range 50 {
				look()
				if changes != i {
					t.Fatalf("%d changes seen after %d commits", changes, i)
				}
				if _, err := db.Exec("INSERT INTO t VALUES (?)", i); err != nil {
					t.Fatal(err)
				}
				look()
				if changes != i+1 {
					t.Fatalf("%d changes seen after %d commits", changes, i+1)
				}
			}
			// A commit of this process, marked as such, is not seen again.
			if _, err := db.Exec("INSERT INTO t VALUES (0)"); err != nil {
				t.Fatal(err)
			}
			w.committed(func() {})
			look()
			if changes != 50 {
				t.Fatalf("a commit marked as seen was seen again: %d changes", changes)
			}
		})
	}
}

// BenchmarkFreshnessCheck measures the look every read runs when nothing changed: one pread of a
// WAL file's index header, and its digest (BenchmarkStoreDirectory measures the two a request runs).
func BenchmarkFreshnessCheck(b *testing.B) {
	s, err := Open(b.Context(), b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for b.Loop() {
		if err := s.pwatch.check(func() error { b.Fatal("changed"); return nil }); err != nil {
			b.Fatal(err)
		}
	}
}
