package walindex

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestALookAtAFileCutShorterDoesNotCrash maps an empty file, as a -shm file is while a first opener
// sets it up: reading the mapping faults, and the look reports it instead of crashing the process.
func TestALookAtAFileCutShorterDoesNotCrash(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no shared mappings here")
	}
	db := filepath.Join(t.TempDir(), "x.db")
	if err := os.WriteFile(db+"-shm", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	x, err := Open(db)
	if err != nil || !x.Mapped() {
		t.Fatalf("map an empty file: %v", err)
	}
	var b [HeaderSize]byte
	if copyMapped(b[:], x.mem) {
		t.Fatal("reading past the end of the file did not fault")
	}
	if _, err := x.Digest(); err == nil {
		t.Fatal("a look at an empty index found a header")
	}
	if y, err := Open(db); err != nil || y != x {
		t.Fatalf("a second open of the same file: %v, %v", y == x, err)
	}
}
