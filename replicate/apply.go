package replicate

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/benbjohnson/litestream"
	"github.com/dirsvc/dirsvc"
	"github.com/superfly/ltx"
)

// apply fetches one LTX file, verifies all of it, and only then writes its pages into the copy,
// inside the directory's gate. A file that fails verification is a *corruptError.
func (f *Follower) apply(ctx context.Context, fl *followed, c litestream.ReplicaClient, info *ltx.FileInfo) error {
	return f.fetchVerified(ctx, fl.slug, c, info, func(body spooled, hdr ltx.Header, post ltx.Pos) error {
		return f.applyPages(ctx, fl, info, body, hdr, post)
	})
}

// fetchVerified fetches one LTX file of the directory slug whole (into memory, or a temporary file
// in the directory's folder), verifies all of it, and runs fn on it, read again from its start,
// with its header and the position after it. A file that fails verification is a *corruptError; one
// gone since it was listed (compacted away) is errGap.
func (f *Follower) fetchVerified(ctx context.Context, slug string, c litestream.ReplicaClient, info *ltx.FileInfo,
	fn func(body spooled, hdr ltx.Header, post ltx.Pos) error) error {
	name := ltx.FormatFilename(info.MinTXID, info.MaxTXID)
	rc, err := c.OpenLTXFile(ctx, info.Level, info.MinTXID, info.MaxTXID, 0, 0)
	if errors.Is(err, os.ErrNotExist) {
		return errGap // compacted away since it was listed
	} else if err != nil {
		return err
	}
	body, err := spool(rc, dirsvc.DirectoryFolder(f.cfg.Data, slug))
	rc.Close()
	if err != nil {
		return fmt.Errorf("fetch %s: %w", name, err)
	}
	defer body.Close()
	dec := ltx.NewDecoder(body)
	if err := dec.Verify(); err != nil {
		return &corruptError{file: name, err: err}
	}
	if _, err := body.Seek(0, io.SeekStart); err != nil {
		return err
	}
	return fn(body, dec.Header(), dec.PostApplyPos())
}

// applyPages writes the pages of a verified LTX file into the copy, inside the directory's gate, and
// records the copy's new position.
func (f *Follower) applyPages(ctx context.Context, fl *followed, info *ltx.FileInfo, body io.Reader, hdr ltx.Header, post ltx.Pos) error {
	pos := f.position(fl)
	if hdr.MinTXID != pos.TXID+1 || (!hdr.NoChecksum() && hdr.PreApplyChecksum != pos.PostApplyChecksum) {
		return errGap
	}
	dec := ltx.NewDecoder(body)
	if err := dec.DecodeHeader(); err != nil {
		return err
	}
	err := f.cfg.Host.Exclusive(ctx, fl.slug, func() error {
		return writeCopy(f.path(fl.slug), hdr.PageSize, hdr.Commit, func(file *os.File) error {
			data := make([]byte, hdr.PageSize)
			for {
				var ph ltx.PageHeader
				if err := dec.DecodePage(&ph, data); errors.Is(err, io.EOF) {
					return nil
				} else if err != nil {
					return err
				}
				if _, err := file.WriteAt(data, int64(ph.Pgno-1)*int64(hdr.PageSize)); err != nil {
					return err
				}
			}
		})
	})
	if err != nil {
		return fmt.Errorf("apply %s: %w", ltx.FormatFilename(info.MinTXID, info.MaxTXID), err)
	}
	return f.setPosition(fl, fl.lineage, post)
}

// writeCopy changes a copy in place: fn writes pages, then the file is cut to commit pages and its
// header marked as in rollback-journal mode with a new change counter, so every pooled reader drops
// what it cached of the file before its next read.
func writeCopy(path string, pageSize, commit uint32, fn func(*os.File) error) error {
	file, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer file.Close()
	hdr := make([]byte, 100)
	if _, err := io.ReadFull(file, hdr); err != nil {
		return fmt.Errorf("read the copy's header: %w", err)
	}
	if got := sqlitePageSize(hdr); got != pageSize {
		return fmt.Errorf("the copy has %d-byte pages, the change %d-byte pages", got, pageSize)
	}
	counter := binary.BigEndian.Uint32(hdr[24:28])
	if err := fn(file); err != nil {
		return err
	}
	if err := file.Truncate(int64(commit) * int64(pageSize)); err != nil {
		return err
	}
	if _, err := file.ReadAt(hdr, 0); err != nil {
		return err
	}
	markRollback(hdr, counter+1, commit)
	if _, err := file.WriteAt(hdr, 0); err != nil {
		return err
	}
	return file.Sync()
}

// markRollback sets a SQLite header to rollback-journal mode (bytes 18-19), with the change counter
// (24-27), the size in pages (28-31) and the version-valid-for number (92-95) that makes the size
// trusted.
func markRollback(hdr []byte, counter, pages uint32) {
	hdr[18], hdr[19] = 1, 1
	binary.BigEndian.PutUint32(hdr[24:28], counter)
	binary.BigEndian.PutUint32(hdr[28:32], pages)
	binary.BigEndian.PutUint32(hdr[92:96], counter)
}

func sqlitePageSize(hdr []byte) uint32 {
	n := uint32(binary.BigEndian.Uint16(hdr[16:18]))
	if n == 1 {
		return 65536
	}
	return n
}

// spoolInMemory is the size of an LTX file kept in memory while it is verified and applied; a larger
// one (a large import) goes to a temporary file.
const spoolInMemory = 16 << 20

type spooled interface {
	io.ReadSeeker
	io.Closer
}

type memSpool struct{ *bytes.Reader }

func (memSpool) Close() error { return nil }

type fileSpool struct{ *os.File }

func (s fileSpool) Close() error {
	err := s.File.Close()
	os.Remove(s.File.Name())
	return err
}

// spool reads r whole, into memory or, past spoolInMemory, into a temporary file in dir.
func spool(r io.Reader, dir string) (spooled, error) {
	head, err := io.ReadAll(io.LimitReader(r, spoolInMemory+1))
	if err != nil {
		return nil, err
	}
	if len(head) <= spoolInMemory {
		return memSpool{bytes.NewReader(head)}, nil
	}
	tmp, err := os.CreateTemp(dir, ".ltx-*")
	if err != nil {
		return nil, err
	}
	s := fileSpool{tmp}
	if _, err := tmp.Write(head); err != nil {
		s.Close()
		return nil, err
	}
	if _, err := io.Copy(tmp, r); err != nil {
		s.Close()
		return nil, err
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}
