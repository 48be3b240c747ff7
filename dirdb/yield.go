package dirdb

import (
	"context"
	"errors"
	"sync"
)

// A long read (a list page: many records) holds the directory's gate for its whole query. On an
// edge, the follower needs the gate's write side to apply a replicated change, and Go's RWMutex
// holds every later reader back while a writer waits: one long read would hold up the change and,
// behind it, every read of the directory. So the follower does not wait for long reads: it asks
// them to yield (yielder.begin), which interrupts their query; each gives the gate up, waits until
// the change is applied (yielder.end) and runs again on the new file. Short reads (single records)
// finish in microseconds and are simply waited for.

// yielder is a directory's signal from the follower to its long reads.
type yielder struct {
	mu      sync.Mutex
	pending chan struct{} // closed while a change waits for the gate or is being applied
	applied chan struct{} // closed when that change is applied; nil while none is pending
}

// errYield is the cause of a long read's context ending for a change to be applied.
var errYield = errors.New("interrupted for a replicated change")

// maxYields bounds how often one long read gives way; after that it waits for changes like a short
// read (a file changing that often is being written by a bulk load). A read that keeps what it did
// when it gives way (loadingRead) counts only the runs that did not move it on.
const maxYields = 3

// state returns the current signal channels.
func (y *yielder) state() (pending, applied chan struct{}) {
	y.mu.Lock()
	defer y.mu.Unlock()
	if y.pending == nil {
		y.pending = make(chan struct{})
	}
	return y.pending, y.applied
}

// begin tells the long reads that a change waits for the gate.
func (y *yielder) begin() {
	y.mu.Lock()
	defer y.mu.Unlock()
	if y.pending == nil {
		y.pending = make(chan struct{})
	}
	if y.applied == nil {
		y.applied = make(chan struct{})
		close(y.pending)
	}
}

// end tells them the change is applied.
func (y *yielder) end() {
	y.mu.Lock()
	defer y.mu.Unlock()
	if y.applied != nil {
		close(y.applied)
		y.pending, y.applied = make(chan struct{}), nil
	}
}

// longRead runs read under the gate's read side, with a context that ends when the follower asks
// for the gate; read then runs again once the change is applied (up to maxYields times).
func (d *Directory) longRead(ctx context.Context, read func(context.Context) error) error {
	return d.loadingRead(ctx, read, nil)
}

// loadingRead is longRead for a read that keeps what it did when it gives way and carries on from
// there when it runs again, such as the search index's load of every document at a directory's
// first search (seconds at 100,000 services). progress reports how far it got; the read gives way
// to every change as long as each of its runs moves progress on, and holds the gate for a whole run
// only after maxYields runs in a row that did not. Held whole after its third change, the load held
// an edge's next replicated change back for as long as it had left (up to 2 s at 100,000 services).
func (d *Directory) loadingRead(ctx context.Context, read func(context.Context) error, progress func() uint64) error {
	for yields := 0; ; yields++ {
		d.gate.RLock()
		pending, applied := d.yield.state()
		if yields >= maxYields {
			err := read(ctx)
			d.gate.RUnlock()
			return err
		}
		select {
		case <-pending: // a change is waiting for the gate: let it go first
			d.gate.RUnlock()
			if err := wait(ctx, applied); err != nil {
				return err
			}
			continue
		default:
		}
		rctx, cancel := context.WithCancelCause(ctx)
		stop := make(chan struct{})
		go func() {
			select {
			case <-pending:
				cancel(errYield)
			case <-stop:
			}
		}()
		var before uint64
		if progress != nil {
			before = progress()
		}
		err := read(rctx)
		close(stop)
		yielded := errors.Is(context.Cause(rctx), errYield) && ctx.Err() == nil
		cancel(nil)
		d.gate.RUnlock()
		if err == nil || !yielded {
			return err
		}
		if progress != nil && progress() != before {
			yields = -1 // it moved on: it may give way maxYields times more
		}
		_, applied = d.yield.state()
		if err := wait(ctx, applied); err != nil {
			return err
		}
	}
}

// wait waits until ch is closed (at once for nil) or ctx ends.
func wait(ctx context.Context, ch chan struct{}) error {
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
