//go:build unix

package walindex

import (
	"os"
	"syscall"
)

// mapHeader maps the first page of f, read-only and shared: what other processes write to the file
// shows in it.
func mapHeader(f *os.File) ([]byte, error) {
	return syscall.Mmap(int(f.Fd()), 0, os.Getpagesize(), syscall.PROT_READ, syscall.MAP_SHARED)
}
