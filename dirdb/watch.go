package dirdb

import (
	"fmt"
	"hash/fnv"
	"os"
	"sync"
	"sync/atomic"
)

// Any process may commit to a file (the service, a command run beside it, an edge's follower), and
// every reader of the file must see the commit from its next read on. What a long-running process
// keeps of a file (hot readers' snapshots, views, descriptions, keys) is therefore checked against
// the file on every read, by a fileWatch.
//
// The check reads a few bytes that SQLite changes on every commit, by any connection of any process:
//
//   - in WAL mode, the header of the wal-index in the -shm file (its first 48 bytes; the change
//     counter iChange at offset 8 moves on every commit, https://www.sqlite.org/walformat.html).
//     The database header's change counter does not move on WAL commits;
//   - in rollback-journal mode (an edge's copies), the database header (its change counter at offset
//     24 moves on every commit, and on every change the follower applies).
//
// One pread of those bytes costs about a microsecond (BenchmarkFreshnessCheck), where PRAGMA
// data_version, which starts and ends a read transaction, cost about 4 µs here: the check is cheap
// enough to run before every read, so a commit is seen by the next read, not after an interval.

// watchedFile is a descriptor a watch reads a file through. Closing any descriptor of a file drops
// every POSIX lock the process holds on it, SQLite's included (SQLite's WAL locks on -shm are POSIX
// locks), which would let another process reset a WAL or its index under this one. So descriptors
// are shared by every watch of the process and never closed while their file is in place: one per
// file the process ever watched. One whose file was replaced (a directory dropped and imported again)
// is closed then: no process can open a removed file, so its locks protect nothing.
type watchedFile struct {
	f    *os.File
	info os.FileInfo
}

// watchedFiles are the process's descriptors by path (see watchedFile). Package state, because the
// locks it protects belong to the process, not to a Store: two stores of one process share them.
var watchedFiles = struct {
	sync.Mutex
	m map[string]watchedFile
}{m: map[string]watchedFile{}}

// openWatched returns the process's descriptor of the file at path.
func openWatched(path string) (*os.File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	watchedFiles.Lock()
	defer watchedFiles.Unlock()
	if w, ok := watchedFiles.m[path]; ok {
		if os.SameFile(w.info, st) {
			return w.f, nil
		}
		w.f.Close() // a removed file (see watchedFile)
		delete(watchedFiles.m, path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if st, err = f.Stat(); err != nil {
		f.Close()
		return nil, err
	}
	watchedFiles.m[path] = watchedFile{f, st}
	return f, nil
}

// fileWatch tells whether a SQLite file changed since the last look, by whichever connection or
// process, and runs the change's consequences once.
type fileWatch struct {
	f    *os.File
	size int // the bytes at the file's start that change on every commit

	mu   sync.Mutex    // held while a change's consequences run
	last atomic.Uint64 // digest of the bytes at the last look whose consequences ran
}

// newFileWatch returns a watch of the SQLite file at path, which must exist and be open in this
// process (in WAL mode, its -shm file exists while a connection has it open). Its first look is now.
func newFileWatch(path string) (*fileWatch, error) {
	// The database file is read through the kept descriptor too: closing one of its own would drop
	// the SHARED lock every WAL connection of this process holds on it.
	db, err := openWatched(path)
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", path, err)
	}
	hdr := make([]byte, 100)
	if _, err := db.ReadAt(hdr, 0); err != nil {
		return nil, fmt.Errorf("watch %s: read the header: %w", path, err)
	}
	w := &fileWatch{f: db, size: 100}
	if hdr[18] == 2 { // WAL
		w.size = 48
		if w.f, err = openWatched(path + "-shm"); err != nil {
			return nil, fmt.Errorf("watch %s: %w", path, err)
		}
	}
	v, err := w.look()
	if err != nil {
		return nil, err
	}
	w.last.Store(v)
	return w, nil
}

// look returns a digest of the bytes that change on every commit.
func (w *fileWatch) look() (uint64, error) {
	var buf [100]byte
	b := buf[:w.size]
	if _, err := w.f.ReadAt(b, 0); err != nil {
		return 0, fmt.Errorf("watch %s: %w", w.f.Name(), err)
	}
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64(), nil
}

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
