package export

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
)

// partSuffix marks a file being written: it gets its name only when complete (commit), so a file
// under its own name is always whole, and a stopped process leaves only part files behind.
const partSuffix = ".part"

// partFile is one export file being written, in parts: records go through a buffer that is written
// out every partRecords records (and whenever it fills), so memory stays bounded whatever the size.
type partFile struct {
	name        string
	path        string
	f           *os.File
	w           *bufio.Writer
	count       int64
	partRecords int
	sinceFlush  int
}

func createPart(dir, name string, partRecords int) (*partFile, error) {
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path+partSuffix, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", name, err)
	}
	return &partFile{name: name, path: path, f: f, w: bufio.NewWriterSize(f, 256<<10), partRecords: partRecords}, nil
}

// Write writes bytes to the file.
func (p *partFile) Write(b []byte) (int, error) { return p.w.Write(b) }

// WriteString writes a string to the file.
func (p *partFile) WriteString(s string) (int, error) { return p.w.WriteString(s) }

// recorded counts a record written, and writes the part out when it is full.
func (p *partFile) recorded() error {
	p.count++
	p.sinceFlush++
	if p.sinceFlush >= p.partRecords {
		p.sinceFlush = 0
		return p.w.Flush()
	}
	return nil
}

// commit writes the rest, syncs the file and gives it its name; it returns the file's size.
func (p *partFile) commit() (int64, error) {
	if err := p.w.Flush(); err != nil {
		p.abort()
		return 0, fmt.Errorf("write %s: %w", p.name, err)
	}
	if err := p.f.Sync(); err != nil {
		p.abort()
		return 0, fmt.Errorf("write %s: %w", p.name, err)
	}
	st, err := p.f.Stat()
	if err != nil {
		p.abort()
		return 0, fmt.Errorf("write %s: %w", p.name, err)
	}
	if err := p.f.Close(); err != nil {
		os.Remove(p.path + partSuffix)
		return 0, fmt.Errorf("write %s: %w", p.name, err)
	}
	if err := os.Rename(p.path+partSuffix, p.path); err != nil {
		return 0, fmt.Errorf("name %s: %w", p.name, err)
	}
	return st.Size(), nil
}

// abort closes and removes the file.
func (p *partFile) abort() {
	p.f.Close()
	os.Remove(p.path + partSuffix)
}
