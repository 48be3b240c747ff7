package dirdb

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Any process may commit to a file (the service, a command run beside it such as `dirsvc record`),
// and every reader of the file must see the commit from its next read on. What a long-running
// process keeps of a WAL file (hot readers' snapshots, views, descriptions, keys) is therefore
// checked against the file whenever it is handed out, by a fileWatch.
//
// The check reads the header of the file's wal-index, the first 48 bytes of its -shm file, which
// SQLite rewrites on every commit by any connection of any process (its change counter iChange
// moves each time; https://www.sqlite.org/walformat.html, "the WAL-index header"). The database
// header's own change counter does not move on WAL commits. The -shm file is mapped, so a look is a
// few loads from memory (20 to 50 ns, BenchmarkFreshnessCheck); where it cannot be mapped, a pread
// (about 0.7 µs). PRAGMA data_version, which starts and ends a read transaction, cost about 4 µs
// here: too much for every read.
//
// An edge's copies of directory files are in rollback-journal mode and are changed only by the
// edge's follower, in process, inside Store.Exclusive: they need no watch.

// watchedFile is a -shm file a watch reads, opened once per process. Closing any descriptor of a
// file drops every POSIX lock the process holds on it, and SQLite's WAL locks on -shm are POSIX
// locks: closing one would let another process reset the WAL index under this one. So the
// descriptor is never closed, and the mapping never unmapped (a watch may still read it), while the
// process runs: one per -shm file the process ever watched (a directory dropped and made anew by
// another process leaves one behind).
type watchedFile struct {
	f    *os.File
	info os.FileInfo
	mem  []byte // the file's first page, mapped; nil where it could not be
}

// watchedFiles are the process's -shm files by path (see watchedFile). Package state, because the
// locks it protects belong to the process, not to a Store: two stores of one process share them.
var watchedFiles = struct {
	sync.Mutex
	m map[string]watchedFile
}{m: map[string]watchedFile{}}

// openWatched returns the process's watched file at path.
func openWatched(path string) (watchedFile, error) {
	st, err := os.Stat(path)
	if err != nil {
		return watchedFile{}, err
	}
	watchedFiles.Lock()
	defer watchedFiles.Unlock()
	if w, ok := watchedFiles.m[path]; ok && os.SameFile(w.info, st) {
		return w, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return watchedFile{}, err
	}
	w := watchedFile{f: f}
	if w.info, err = f.Stat(); err != nil {
		return watchedFile{}, err // f stays open: see watchedFile
	}
	w.mem, _ = mapHeader(f) // without a mapping, looks read the file
	watchedFiles.m[path] = w
	return w, nil
}

// walIndexHeader is the size of the wal-index header that looks compare.
const walIndexHeader = 48

// fileWatch tells whether a WAL-mode SQLite file changed since the last look, by whichever
// connection or process, and runs the change's consequences once.
type fileWatch struct {
	shm watchedFile

	mu   sync.Mutex    // held while a change's consequences run
	last atomic.Uint64 // digest of the header at the last look whose consequences ran
}

// newFileWatch returns a watch of the WAL-mode SQLite file at path, which a connection of this
// process must have open (its -shm file exists from then on until the last connection of every
// process closes). Its first look is now.
func newFileWatch(path string) (*fileWatch, error) {
	shm, err := openWatched(path + "-shm")
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", path, err)
	}
	w := &fileWatch{shm: shm}
	v, err := w.look()
	if err != nil {
		return nil, err
	}
	w.last.Store(v)
	return w, nil
}

// look returns a digest of the wal-index header (FNV-1a over its words).
func (w *fileWatch) look() (uint64, error) {
	var b [walIndexHeader]byte
	if w.shm.mem == nil || !copyMapped(b[:], w.shm.mem) {
		if _, err := w.shm.f.ReadAt(b[:], 0); err != nil {
			return 0, fmt.Errorf("watch %s: %w", w.shm.f.Name(), err)
		}
	}
	h := uint64(14695981039346656037)
	for i := 0; i < walIndexHeader; i += 8 {
		h = (h ^ binary.NativeEndian.Uint64(b[i:])) * 1099511628211
	}
	return h, nil
}

// copyMapped copies the mapped header into dst, a word at a time (another process writes it); false
// if the mapping faults (the file was cut shorter, which SQLite does only while no process has it
// open: then the file is read instead).
func copyMapped(dst, mem []byte) (ok bool) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	for i := 0; i+8 <= len(dst); i += 8 {
		binary.NativeEndian.PutUint64(dst[i:], atomic.LoadUint64((*uint64)(unsafe.Pointer(&mem[i]))))
	}
	return true
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
