package replicate_test

import (
	"context"
	"io/fs"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
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

// TestAnEdgesCopiesArePrivate lets an edge bootstrap a directory from its primary's stream, follow a
// change, and bootstrap it afresh over the copy its readers have open: no file or folder of the
// edge's data folder (the copies, their positions, the platform file) may be read by the group or
// others, whatever the umask.
func TestAnEdgesCopiesArePrivate(t *testing.T) {
	ctx := context.Background()
	data, store := smallFolder(t)
	r, err := replicate.Open(ctx, data, replicate.Target{Dir: t.TempDir()}, smallFiles, replicate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close(); r.Close(ctx) })
	stream, err := replicate.Stream(r, followToken, store.Platform)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(stream)
	t.Cleanup(srv.Close)
	sync := func() uint64 {
		t.Helper()
		txid, err := r.SyncFile(ctx, "dirs/small/directory")
		if err != nil {
			t.Fatal(err)
		}
		return txid
	}

	edgeData := filepath.Join(t.TempDir(), "edge") // a folder the edge creates
	e := startEdge(t, edgeData, replicate.FollowConfig{Primary: srv.URL})
	e.waitServed(t, "small", sync())
	rename(t, store, "Followed")
	e.waitServed(t, "small", sync())
	e.stop()
	// Another history of the primary's file makes the edge bootstrap afresh over its copy.
	posFile := filepath.Join(edgeData, "dirs", "small", "directory.db-pos")
	b, err := os.ReadFile(posFile)
	if err != nil {
		t.Fatal(err)
	}
	_, pos, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
	if err := os.WriteFile(posFile, []byte("an-older-history "+pos+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e = startEdge(t, edgeData, replicate.FollowConfig{Primary: srv.URL})
	rename(t, store, "Bootstrapped Afresh")
	e.waitServed(t, "small", sync())
	if got := publicName(t, e.store, "svc_counsel"); got != "Bootstrapped Afresh" {
		t.Fatalf("the edge serves %q", got)
	}
	e.stop()

	files := 0
	err = filepath.WalkDir(edgeData, func(path string, d fs.DirEntry, err error) error {
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
	if files < 3 {
		t.Errorf("the edge's folder holds %d files, want the platform file, the copy and its position", files)
	}
}
