package replicate_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/primary"
	"github.com/dirsvc/dirsvc/replicate"
)

// folderFiles names the files of a data folder to replicate, read by path as a primary does (see
// replicate.Options.Files): the platform file and each file of each directory it lists.
func folderFiles(data string) func(context.Context) ([]string, error) {
	return func(ctx context.Context) ([]string, error) {
		p, err := dirdb.ReadPlatform(ctx, dirsvc.FilePath(data, dirsvc.PlatformFile))
		if err != nil {
			return nil, err
		}
		names := []string{dirsvc.PlatformFile}
		for _, d := range p.Directories {
			for _, f := range dirsvc.DirectoryFiles {
				if _, err := os.Stat(dirsvc.FilePath(data, dirsvc.FileName(f, d.Slug))); err == nil {
					names = append(names, dirsvc.FileName(f, d.Slug))
				}
			}
		}
		return names, nil
	}
}

// importCopy imports the small fixture again as the directory slug.
func importCopy(t *testing.T, store *dirdb.Store, slug string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "small.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.ReplaceAll(b, []byte(`"slug":"small"`), []byte(`"slug":"`+slug+`"`))
	b = bytes.ReplaceAll(b, []byte(`"small:`), []byte(`"`+slug+`:`))
	if _, _, err := primary.Import(context.Background(), store, bytes.NewReader(b)); err != nil {
		t.Fatal(err)
	}
}

// restoresWhole restores the platform file the target holds and every directory it lists, as a
// whole-folder restore does, and returns the directories listed; it fails the test when a listed
// directory's published file or canonical records cannot be restored.
func restoresWhole(t *testing.T, target replicate.Target) []string {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	if _, err := replicate.Restore(ctx, dir, target, dirsvc.PlatformFile, replicate.At{}); err != nil {
		t.Fatalf("restore the platform file: %v", err)
	}
	p, err := dirdb.ReadPlatform(ctx, dirsvc.FilePath(dir, dirsvc.PlatformFile))
	if err != nil {
		t.Fatal(err)
	}
	var slugs []string
	for _, d := range p.Directories {
		slugs = append(slugs, d.Slug)
		for _, f := range []string{dirsvc.DirectoryFile, dirsvc.OpsFile} {
			if _, err := replicate.Restore(ctx, dir, target, dirsvc.FileName(f, d.Slug), replicate.At{}); err != nil {
				t.Errorf("the platform file lists %s, but: %v", d.Slug, err)
			}
		}
	}
	return slugs
}

// TestTheReplicaNeverListsADirectoryItLacks replicates a data folder with the watcher looking only
// once an hour, and creates directories after its look: a sync of the platform file (as a write
// that registers something does) copies the new directory's files to the folder first, and so does
// Close for a directory created after the last sync; at every point, each directory the replica's
// platform file lists restores whole.
func TestTheReplicaNeverListsADirectoryItLacks(t *testing.T) {
	ctx := context.Background()
	data, store := smallFolder(t)
	target := replicate.Target{Dir: t.TempDir()}
	r, err := replicate.Open(ctx, data, target, smallFiles, replicate.Options{Interval: time.Hour, Files: folderFiles(data)})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}

	t.Run("a platform change is copied after the files of the directory it registers", func(t *testing.T) {
		importCopy(t, store, "later")
		if _, err := r.SyncFile(ctx, dirsvc.PlatformFile); err != nil {
			t.Fatal(err)
		}
		if got := restoresWhole(t, target); !slices.Equal(got, []string{"later", "small"}) {
			t.Errorf("the replica lists %v, want [later small]", got)
		}
	})
	t.Run("close copies a directory created since the last look, before the platform file", func(t *testing.T) {
		importCopy(t, store, "last")
		store.Close() // the service's connections close first
		if err := r.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if got := restoresWhole(t, target); !slices.Equal(got, []string{"last", "later", "small"}) {
			t.Errorf("the replica lists %v, want [last later small]", got)
		}
	})
}
