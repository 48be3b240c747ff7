package dirdb

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestPruningNeverWaitsForAWrite: while another write of the directory is under way (its lock held,
// as an import holds it), pruning answers ErrWriteBusy at once; afterwards it prunes.
func TestPruningNeverWaitsForAWrite(t *testing.T) {
	d := demoDirectory(t)
	d.wmu.Lock()
	start := time.Now()
	_, err := d.PruneChanges(context.Background(), time.Now().Add(time.Hour), 10)
	d.wmu.Unlock()
	if !errors.Is(err, ErrWriteBusy) || time.Since(start) > time.Second {
		t.Fatalf("pruning beside a write: %v after %v, want ErrWriteBusy at once", err, time.Since(start))
	}
	if n, err := d.PruneChanges(context.Background(), time.Now().Add(time.Hour), 10); err != nil || n != 10 {
		t.Errorf("pruning afterwards: %d, %v; want 10 events pruned", n, err)
	}
}
