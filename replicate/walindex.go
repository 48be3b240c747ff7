package replicate

import (
	"os"
	"runtime/debug"
	"sync/atomic"
	"unsafe"
)

// walIndex is the header of a WAL file's index (the first 48 bytes of its -shm file), which SQLite
// rewrites on every commit by any connection of any process (https://www.sqlite.org/walformat.html):
// mapped, a look at it costs a few loads, where a stat of the WAL cost about 1.5 µs. The watcher
// looks at every file this way at every interval, so a commit by another process (a command run
// beside the primary) is copied at the next look however long the file was idle. (dirdb reads the
// same header to keep its readers fresh; the two packages may not import each other.)
//
// The descriptor is never closed, and the mapping never unmapped, while the process runs: closing
// any descriptor of a file drops every POSIX lock the process holds on it, Litestream's connection's
// WAL locks on -shm included.
type walIndex struct {
	f   *os.File
	mem []byte
}

// openWALIndex maps the index of the WAL-mode database at path; an error where there is none yet (no
// connection has the file open) or it cannot be mapped.
func openWALIndex(path string) (*walIndex, error) {
	f, err := os.Open(path + "-shm")
	if err != nil {
		return nil, err
	}
	mem, err := mapHeader(f)
	if err != nil {
		return nil, err // f stays open: see walIndex
	}
	return &walIndex{f, mem}, nil
}

// digest returns FNV-1a over the header's words; false if the mapping faults (the file was cut
// shorter, which SQLite does only while no process has it open).
func (w *walIndex) digest() (h uint64, ok bool) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	h = 14695981039346656037
	for i := 0; i < 48; i += 8 {
		h = (h ^ atomic.LoadUint64((*uint64)(unsafe.Pointer(&w.mem[i])))) * 1099511628211
	}
	return h, true
}
