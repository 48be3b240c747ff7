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
// What is written out is synced to the disk as it goes, by a sync in the background for every
// syncAhead bytes, so that the sync of a large file when it is complete (commit) has little left to
// do, and the export does not wait for the disk at its end.
type partFile struct {
	name        string
	path        string
	f           *os.File
	w           *bufio.Writer
	count       int64
	partRecords int
	sinceFlush  int
	written     int64      // bytes given to Write
	syncedTo    int64      // written when the last background sync began
	syncEvery   int64      // bytes written between background syncs (syncAhead)
	syncing     chan error // the background sync running, which sends its error; nil if none
}

// syncAhead is how many bytes a file is written between background syncs.
const syncAhead = 64 << 20

func createPart(dir, name string, partRecords int) (*partFile, error) {
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path+partSuffix, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", name, err)
	}
	return &partFile{name: name, path: path, f: f, w: bufio.NewWriterSize(f, 256<<10), partRecords: partRecords, syncEvery: syncAhead}, nil
}

// Write writes bytes to the file.
func (p *partFile) Write(b []byte) (int, error) {
	p.written += int64(len(b))
	return p.w.Write(b)
}

// WriteString writes a string to the file.
func (p *partFile) WriteString(s string) (int, error) {
	p.written += int64(len(s))
	return p.w.WriteString(s)
}

// recorded counts a record written, and writes the part out when it is full.
func (p *partFile) recorded() error {
	p.count++
	p.sinceFlush++
	if p.sinceFlush >= p.partRecords {
		p.sinceFlush = 0
		if err := p.w.Flush(); err != nil {
			return err
		}
		return p.syncBehind()
	}
	return nil
}

// syncBehind begins a background sync of what was written out once syncAhead bytes were written
// since the last one began, unless that one still runs; it returns the error of one that ended.
func (p *partFile) syncBehind() error {
	if p.syncing != nil {
		select {
		case err := <-p.syncing:
			p.syncing = nil
			if err != nil {
				return fmt.Errorf("sync %s: %w", p.name, err)
			}
		default:
			return nil
		}
	}
	if p.written-p.syncedTo < p.syncEvery {
		return nil
	}
	p.syncedTo = p.written
	done := make(chan error, 1)
	p.syncing = done
	go func() { done <- p.f.Sync() }()
	return nil
}

// settle writes out the buffer and begins a background sync of everything written, unless nothing
// was written since the last began. It does not wait for a sync that still runs: the new one begins
// when that one ends, and reports its error.
func (p *partFile) settle() error {
	if p.written == p.syncedTo {
		return nil
	}
	if err := p.w.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", p.name, err)
	}
	p.syncedTo = p.written
	before, done := p.syncing, make(chan error, 1)
	p.syncing = done
	go func() {
		if before != nil {
			if err := <-before; err != nil {
				done <- err
				return
			}
		}
		done <- p.f.Sync()
	}()
	return nil
}

// synced waits for the background sync, if one runs, and returns its error.
func (p *partFile) synced() error {
	if p.syncing == nil {
		return nil
	}
	err := <-p.syncing
	p.syncing = nil
	return err
}

// commit writes the rest, syncs the file and gives it its name; it returns the file's size.
func (p *partFile) commit() (int64, error) {
	if err := p.w.Flush(); err != nil {
		p.abort()
		return 0, fmt.Errorf("write %s: %w", p.name, err)
	}
	if err := p.synced(); err != nil {
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
	p.synced()
	p.f.Close()
	os.Remove(p.path + partSuffix)
}
