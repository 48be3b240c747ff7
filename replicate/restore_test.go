package replicate_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/superfly/ltx"

	"github.com/dirsvc/dirsvc/replicate"
)

// TestARestoreAtATimeSaysWhichPointItReached replicates three changes to a folder and then does what
// Litestream's retention does after five minutes: the level-0 files of the last two are compacted
// into one level-1 file and dropped. A restore at a time between those two can only reach the point
// before them: it says so, and refuses unless told how much earlier it may land.
func TestARestoreAtATimeSaysWhichPointItReached(t *testing.T) {
	ctx := context.Background()
	data, store := smallFolder(t)
	folder := t.TempDir()
	target := replicate.Target{Dir: folder}
	r, err := replicate.Open(ctx, data, target, smallFiles, replicate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Sync(ctx); err != nil { // every file has a point before the changes
		t.Fatal(err)
	}
	const name = "dirs/small/directory"
	level0 := filepath.Join(folder, "dirs", "small", "directory", "ltx", "0")
	change := func(to string) (uint64, time.Time) {
		rename(t, store, to)
		pos, err := r.SyncFile(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(filepath.Join(level0, ltx.FormatFilename(ltx.TXID(pos), ltx.TXID(pos))))
		if err != nil {
			t.Fatal(err)
		}
		// The next change is written in a later millisecond than this one's file says.
		for !time.Now().After(st.ModTime().Add(5 * time.Millisecond)) {
			time.Sleep(time.Millisecond)
		}
		return pos, st.ModTime()
	}
	first, firstAt := change("First Name")
	second, secondAt := change("Second Name")
	third, _ := change("Third Name")
	store.Close()
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if first+1 != second || second+1 != third {
		t.Fatalf("positions %d, %d, %d: one sync a change expected", first, second, third)
	}
	compact(t, filepath.Dir(level0), second, third)

	between := secondAt.Add(time.Millisecond) // after the second change, before the third
	restoreAt := func(at replicate.At) (replicate.Restored, string, error) {
		out := t.TempDir()
		var point replicate.Restored
		for _, n := range smallFiles {
			p, err := replicate.Restore(ctx, out, target, n, at)
			if err != nil {
				return p, "", err
			}
			if n == name {
				point = p
			}
		}
		return point, serviceName(t, out, "svc_counsel"), nil
	}
	at := replicate.At{Time: between, Tolerance: time.Nanosecond}
	if p, _, err := restoreAt(at); !errors.Is(err, replicate.ErrTooCoarse) {
		t.Fatalf("a restore at %s that can only reach position %d: %v (point %+v)", between, first, err, p)
	}
	at.Tolerance = -1 // accept any earlier point
	p, got, err := restoreAt(at)
	if err != nil {
		t.Fatal(err)
	}
	// The point's time is when the file that reached it was written: the first change's own, or a
	// snapshot's taken just after it.
	if p.TXID != first || p.Exact || p.Time.Before(firstAt) || !p.Time.Before(secondAt) || got != "First Name" {
		t.Errorf("restored %+v with %q; want position %d of %s (before %s), not exact, %q", p, got, first, firstAt, secondAt, "First Name")
	}
	// Just after the first change, within the default tolerance: restored, and said to be inexact
	// (the second change may have come before the time asked for).
	p, got, err = restoreAt(replicate.At{Time: firstAt.Add(time.Millisecond)})
	if err != nil || p.TXID != first || p.Exact || !p.Next.After(secondAt) || got != "First Name" {
		t.Errorf("restore just after the first change: %+v %q %v", p, got, err)
	}
	// The latest state is exact.
	p, got, err = restoreAt(replicate.At{})
	if err != nil || p.TXID != third || !p.Exact || got != "Third Name" {
		t.Errorf("latest restore: %+v %q %v", p, got, err)
	}
}

// compact merges the level-0 files from..to of a replicated file's folder into one level-1 file and
// drops them, as Litestream's compaction and level-0 retention do.
func compact(t *testing.T, dir string, from, to uint64) {
	t.Helper()
	var inputs []io.Reader
	var paths []string
	for txid := from; txid <= to; txid++ {
		p := filepath.Join(dir, "0", ltx.FormatFilename(ltx.TXID(txid), ltx.TXID(txid)))
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		inputs, paths = append(inputs, f), append(paths, p)
	}
	out := filepath.Join(dir, "1", ltx.FormatFilename(ltx.TXID(from), ltx.TXID(to)))
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ltx.NewCompactor(w, inputs)
	if err != nil {
		t.Fatal(err)
	}
	c.HeaderFlags = ltx.HeaderFlagNoChecksum
	if err := c.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	ts := time.UnixMilli(c.Header().Timestamp)
	if err := os.Chtimes(out, ts, ts); err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		os.Remove(p)
	}
}
