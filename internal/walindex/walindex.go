// Package walindex tells whether a WAL-mode SQLite file changed, by whichever connection or process:
// it reads the header of the file's wal-index (the first 48 bytes of its -shm file), which SQLite
// rewrites on every commit (its change counter iChange moves each time;
// https://www.sqlite.org/walformat.html, "the WAL-index header"). The database header's own change
// counter does not move on WAL commits. The -shm file is mapped read-only and shared, so a look is a
// few loads from memory (about 20 to 50 ns); where it cannot be mapped, a look reads the file (about
// 0.7 µs). PRAGMA data_version, which starts and ends a read transaction, costs about 4 µs: too much
// for every read.
//
// Both the store (to keep its readers fresh) and the replicator (to find commits to copy) look at
// the same files; this package gives them one descriptor and one mapping per file.
package walindex

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"unsafe"
)

// HeaderSize is the size of the wal-index header that looks compare.
const HeaderSize = 48

// Index is the wal-index of one WAL-mode database file, opened once per process.
//
// Its descriptor is never closed, and its mapping never unmapped, while the process runs: closing
// any descriptor of a file drops every POSIX lock the process holds on it, and SQLite's (and
// Litestream's) WAL locks on -shm are POSIX locks: closing one would let another process reset the
// WAL index under this one. A file dropped and made anew by another process leaves one behind.
type Index struct {
	f    *os.File
	info os.FileInfo
	mem  []byte // the file's first page, mapped; nil where it could not be
}

// indexes are the process's indexes by -shm path. Package state, because the locks it protects
// belong to the process, not to a store or a replicator: all of them share one descriptor a file.
var indexes = struct {
	sync.Mutex
	m map[string]*Index
}{m: map[string]*Index{}}

// Open returns the process's index of the WAL-mode database at dbPath, which a connection must have
// open (its -shm file exists from then on until the last connection of every process closes).
func Open(dbPath string) (*Index, error) {
	path := dbPath + "-shm"
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	indexes.Lock()
	defer indexes.Unlock()
	if x, ok := indexes.m[path]; ok && os.SameFile(x.info, st) {
		return x, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	x := &Index{f: f}
	if x.info, err = f.Stat(); err != nil {
		return nil, err // f stays open: see Index
	}
	x.mem, _ = mapHeader(f) // without a mapping, looks read the file
	indexes.m[path] = x
	return x, nil
}

// Mapped reports whether a look reads memory (else it reads the file).
func (x *Index) Mapped() bool { return x.mem != nil }

// Digest returns a digest of the header (FNV-1a over its words): it changes with every commit.
func (x *Index) Digest() (uint64, error) {
	var b [HeaderSize]byte
	if x.mem == nil || !copyMapped(b[:], x.mem) {
		if _, err := x.f.ReadAt(b[:], 0); err != nil {
			return 0, fmt.Errorf("read the wal-index header %s: %w", x.f.Name(), err)
		}
	}
	h := uint64(14695981039346656037)
	for i := 0; i < HeaderSize; i += 8 {
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

// Unmapped returns an index of the same file whose looks read the file, as where it cannot be
// mapped (for tests of that path).
func Unmapped(x *Index) *Index { return &Index{f: x.f, info: x.info} }
