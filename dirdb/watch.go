package dirdb

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/dirsvc/dirsvc/internal/walindex"
)

// Any process may commit to a file (the service, a command run beside it such as `dirsvc record`),
// and every reader of the file must see the commit from its next read on. What a long-running
// process keeps of a WAL file (hot readers' snapshots, views, descriptions, keys) is therefore
// checked against the file whenever it is handed out, by a fileWatch, which looks at the file's
// wal-index header (see internal/walindex: a few loads from memory).
//
// An edge's copies of directory files are in rollback-journal mode and are changed only by the
// edge's follower, in process, inside Store.Exclusive: they need no watch.

// fileWatch tells whether a WAL-mode SQLite file changed since the last look, by whichever
// connection or process, and runs the change's consequences once.
type fileWatch struct {
	index *walindex.Index

	mu   sync.Mutex    // held while a change's consequences run
	last atomic.Uint64 // digest of the header at the last look whose consequences ran
}

// newFileWatch returns a watch of the WAL-mode SQLite file at path, which a connection of this
// process must have open. Its first look is now.
func newFileWatch(path string) (*fileWatch, error) {
	x, err := walindex.Open(path)
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", path, err)
	}
	w := &fileWatch{index: x}
	v, err := w.look()
	if err != nil {
		return nil, err
	}
	w.last.Store(v)
	return w, nil
}

func (w *fileWatch) look() (uint64, error) { return w.index.Digest() }

// check runs changed if the file changed since the last look, and returns once it has run: a
// caller that finds the file unchanged, or that waited for another's changed, sees what was kept
// dropped already. An error of changed leaves the change to the next check.
func (w *fileWatch) check(changed func() error) error {
	v, err := w.look()
	if err != nil || v == w.last.Load() {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if v, err = w.look(); err != nil || v == w.last.Load() {
		return err
	}
	if err := changed(); err != nil {
		return err
	}
	w.last.Store(v)
	return nil
}

// committed runs changed after a commit this process made, and takes the file as it is now as
// looked at: the commit's consequences run once, not again at the next check.
func (w *fileWatch) committed(changed func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	v, err := w.look()
	changed()
	if err == nil {
		w.last.Store(v) // stored after changed ran: a check that finds v finds it done
	}
}
