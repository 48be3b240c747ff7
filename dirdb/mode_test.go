package dirdb_test

import (
	"context"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dirsvc/dirsvc/dirdb"
)

// TestNewDataFolderIsPrivate imports into a data folder the store creates: no file or folder in it,
// the SQLite -wal and -shm files included, may be read by the group or others.
func TestNewDataFolderIsPrivate(t *testing.T) {
	root := filepath.Join(t.TempDir(), "data")
	s, err := dirdb.Open(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	MustImport(t, s, readFixture(t))
	// Open, the directory's published file has its -wal and -shm files.
	if _, err := s.Directory(context.Background(), "small"); err != nil {
		t.Fatal(err)
	}
	var names []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		names = append(names, d.Name())
		if perm := fi.Mode().Perm(); perm&0o077 != 0 {
			t.Errorf("%s: mode %v, want no group or other bits", path, fi.Mode())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(names, " ")
	for _, want := range []string{"platform.db", "directory.db", "ops.db", "directory.db-wal", "directory.db-shm"} {
		if !strings.Contains(all, want) {
			t.Errorf("the data folder lacks %s (the test looks at it): %s", want, all)
		}
	}
}
