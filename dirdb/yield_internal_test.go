package dirdb

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// smallDirectory returns a store holding the directory "small", imported from testdata; the store
// closes when the test ends.
func smallDirectory(t *testing.T) (*Store, *Directory) {
	t.Helper()
	ctx := context.Background()
	s, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	b, err := os.ReadFile(filepath.Join("..", "testdata", "small.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.CreateDirectory(ctx, "small")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Import(ctx, parseForTest(t, b)); err != nil {
		t.Fatal(err)
	}
	return s, d
}

// TestAChangeDoesNotWaitForLongReads holds a long read open (one that runs until its context ends,
// as an interrupted query does), and applies a change with Exclusive: the change goes through
// without the read ending by itself, and the read runs again after it, on the changed file, and
// succeeds.
func TestAChangeDoesNotWaitForLongReads(t *testing.T) {
	ctx := context.Background()
	s, d := smallDirectory(t)

	var applied atomic.Bool
	var runs []bool // whether the change was applied when each run of the read started
	started := make(chan struct{})
	readDone := make(chan error)
	go func() {
		readDone <- d.longRead(ctx, func(ctx context.Context) error {
			runs = append(runs, applied.Load())
			if len(runs) == 1 {
				close(started)
				select { // a long query, interrupted only by its context
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(10 * time.Second): // never interrupted: the change waited for it
					return nil
				}
			}
			var n int
			return d.readers.QueryRowContext(ctx, "SELECT count(*) FROM records").Scan(&n)
		})
	}()
	<-started
	if err := s.Exclusive(ctx, "small", func() error { applied.Store(true); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := <-readDone; err != nil {
		t.Fatalf("the read that gave way: %v", err)
	}
	if len(runs) != 2 || runs[0] || !runs[1] {
		t.Errorf("runs of the long read (change applied at each start): %v, want [false true]", runs)
	}
}

// TestALoadThatMovesOnGivesWayToEveryChange: a read that keeps what it did when it gives way
// (loadingRead) gives way to more changes than maxYields, as long as each of its runs moves it on.
// Each run here moves it on and then runs until a change interrupts it, except the last, which
// ends by itself: had the read held the gate after maxYields changes, the next change would have
// waited for the read's context to end, and that run would have ended with an error.
func TestALoadThatMovesOnGivesWayToEveryChange(t *testing.T) {
	ctx := context.Background()
	s, d := smallDirectory(t)

	const changes = 2 * maxYields
	var progress atomic.Uint64
	started := make(chan struct{}, 1)
	readDone := make(chan error, 1)
	readCtx, cancel := context.WithTimeout(ctx, 30*time.Second) // ends a run only if it held the gate
	defer cancel()
	go func() {
		readDone <- d.loadingRead(readCtx, func(ctx context.Context) error {
			n := progress.Add(1)
			started <- struct{}{}
			if n > changes {
				return nil
			}
			<-ctx.Done()
			return ctx.Err()
		}, progress.Load)
	}()
	for range changes {
		<-started
		if err := s.Exclusive(ctx, "small", func() error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	<-started
	if err := <-readDone; err != nil {
		t.Fatalf("the read that gave way %d times: %v", changes, err)
	}
	if got := progress.Load(); got != changes+1 {
		t.Errorf("the read ran %d times, want %d (once, and again after each change)", got, changes+1)
	}
}
