package dirdb

import (
	"bytes"
	"context"
	"testing"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/primary"
	"github.com/dirsvc/dirsvc/primary/demo"
)

// parseForTest parses an import file with the real ingest.
func parseForTest(t *testing.T, b []byte) *dirsvc.Snapshot {
	t.Helper()
	snap, err := primary.ParseImport(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// demoDirectory imports the demonstration directory into a new store, closed when the test ends.
func demoDirectory(t *testing.T) *Directory {
	t.Helper()
	ctx := context.Background()
	s, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	var buf bytes.Buffer
	if err := demo.Demo(&buf); err != nil {
		t.Fatal(err)
	}
	d, err := s.CreateDirectory(ctx, "demo")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Import(ctx, parseForTest(t, buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	return d
}
