package edge_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/primary/demo"
)

// staffOnly returns the canary markers in b that no served tier may see.
func staffOnly(b []byte) []string {
	var out []string
	for _, c := range demo.Canaries(b) {
		hiddenFromAll := true
		for _, a := range []dirsvc.Audience{dirsvc.Public, dirsvc.Professional, dirsvc.Partner} {
			hiddenFromAll = hiddenFromAll && len(demo.Leaks([]byte(c), a)) > 0
		}
		if hiddenFromAll {
			out = append(out, c)
		}
	}
	return out
}

// fileBytes returns the bytes of a SQLite file with its write-ahead log, if it has one.
func fileBytes(tb testing.TB, path string) []byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	if wal, err := os.ReadFile(path + "-wal"); err == nil {
		b = append(b, wal...)
	} else if !os.IsNotExist(err) {
		tb.Fatal(err)
	}
	return b
}

// TestDirectoryFilesHoldNoStaffOnlyDetail imports the demo directories, whose records carry staff
// notes and details for staff only (each marked canary-staff-x, or a number of the canary range for
// staff), and scans every byte of each directory.db, write-ahead log included: that file travels to
// edges and holds only what some served tier may see, so no staff-only marker may be in it. The
// primary-only ops.db keeps them, staff notes included, with the canonical records.
func TestDirectoryFilesHoldNoStaffOnlyDetail(t *testing.T) {
	files := demoFiles(t)
	s := newTestServer(t, files["demo"], files["demo-nz"])
	for slug, file := range files {
		if len(staffOnly(file)) == 0 {
			t.Fatalf("%s holds no staff-only marker: the scan would prove nothing", slug)
		}
		dir := filepath.Join(s.store.Root(), "dirs", slug)
		pub := fileBytes(t, filepath.Join(dir, "directory.db"))
		if len(demo.Canaries(pub)) == 0 {
			t.Fatalf("%s: directory.db holds no canary at all: the scan reads the wrong file", slug)
		}
		if leaks := staffOnly(pub); len(leaks) > 0 {
			t.Errorf("%s: directory.db holds staff-only details %q", slug, leaks)
		}
		ops := fileBytes(t, filepath.Join(dir, "ops.db"))
		if len(staffOnly(ops)) == 0 {
			t.Errorf("%s: ops.db holds no staff-only detail: the canonical records lost them", slug)
		}
	}
}
