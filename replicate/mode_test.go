package replicate_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/primary"
	"github.com/dirsvc/dirsvc/replicate"
)

// TestReplicaAndRestoreArePrivate replicates a new data folder to a new replica folder and restores
// it into a new data folder: no file or folder of any (Litestream's own, LTX files, lineage,
// restored files) may be read by the group or others.
func TestReplicaAndRestoreArePrivate(t *testing.T) {
	ctx := context.Background()
	data := filepath.Join(t.TempDir(), "data") // a folder the store creates
	store, err := dirdb.Open(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join("..", "testdata", "small.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, _, err := primary.Import(ctx, store, f); err != nil {
		t.Fatal(err)
	}
	folder := filepath.Join(t.TempDir(), "replica")
	target := replicate.Target{Dir: folder}
	backupOnce(t, data, store, target)
	out := filepath.Join(t.TempDir(), "restored")
	if _, err := replicate.NewLineage(out); err != nil {
		t.Fatal(err)
	}
	for _, n := range smallFiles {
		if _, err := replicate.Restore(ctx, out, target, n, replicate.At{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, root := range []string{data, folder, out} {
		files := 0
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			if !d.IsDir() {
				files++
			}
			if fi.Mode().Perm()&0o077 != 0 {
				t.Errorf("%s: mode %v, want no group or other bits", path, fi.Mode())
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if files == 0 {
			t.Errorf("%s holds no file", root)
		}
	}
}
