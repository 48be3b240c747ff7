package replicate

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/dirsvc/dirsvc"
)

// A lineage names the history of a replicated file. Positions count on within one lineage; a file
// restored from a replica starts a new one, since it may go back to an earlier state and then count
// on past positions an edge already holds from the old history, and so does a file whose
// replication starts afresh. Edges follow each file within one lineage and bootstrap it afresh when
// it changes. Litestream's own files carry no checksum chain that would show this.
//
// A data folder has a lineage (data/lineage, new after every restore into it); a file whose
// replication started afresh has its own (beside it, <file>.db-lineage).

const lineageFile = "lineage"

// Lineage returns the lineage of a data folder, starting one if it has none.
func Lineage(data string) (string, error) {
	b, err := os.ReadFile(filepath.Join(data, lineageFile))
	if err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b)), nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	return NewLineage(data)
}

// NewLineage starts a new lineage for a data folder (after a restore into it).
func NewLineage(data string) (string, error) {
	b := make([]byte, 12)
	rand.Read(b)
	id := hex.EncodeToString(b)
	if err := os.MkdirAll(data, 0o700); err != nil {
		return "", err
	}
	return id, writeFileAtomic(filepath.Join(data, lineageFile), []byte(id+"\n"))
}

// writeFileAtomic writes a small file whole or not at all.
func writeFileAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// fileLineage returns the lineage of a file of a data folder: its own, else the folder's.
func fileLineage(data, name string) (string, error) {
	b, err := os.ReadFile(dirsvc.FilePath(data, name) + "-lineage")
	if err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b)), nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	return Lineage(data)
}

// newFileLineage starts a new lineage for one file of a data folder.
func newFileLineage(data, name string) (string, error) {
	b := make([]byte, 12)
	rand.Read(b)
	id := hex.EncodeToString(b)
	return id, writeFileAtomic(dirsvc.FilePath(data, name)+"-lineage", []byte(id+"\n"))
}
