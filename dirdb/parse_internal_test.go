package dirdb

import (
	"bytes"
	"testing"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/primary"
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
