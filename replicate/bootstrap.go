package replicate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/benbjohnson/litestream"
	"github.com/superfly/ltx"
)

// bootstrap makes a fresh copy of a directory's file: it restores the latest state c holds into a
// new file beside the copy (checked page by page), then puts it in place of the copy: by a rename
// when there is none yet, or, inside the gate, by writing it over the copy that readers have open.
// When files of the latest state fail verification, it restores the latest state before them (see
// restoreGood).
func (f *Follower) bootstrap(ctx context.Context, slug, lineage string, c litestream.ReplicaClient) error {
	err := f.bootstrapPast(ctx, slug, lineage, c, 0)
	if errors.Is(err, litestream.ErrTxNotAvailable) {
		return nil // nothing replicated yet
	}
	return err
}

// bootstrapPast bootstraps a directory's copy, as bootstrap does, to a point past the position past
// (0: any): with errNotPast, and the copy left as it is, when c holds no such point whose files
// verify.
func (f *Follower) bootstrapPast(ctx context.Context, slug, lineage string, c litestream.ReplicaClient, past ltx.TXID) error {
	start := time.Now()
	path := f.path(slug)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	fresh := path + ".bootstrap"
	os.Remove(fresh)
	defer os.Remove(fresh)
	pos, err := f.restoreGood(ctx, slug, c, fresh, past)
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	// Litestream creates the restored file with the default mode (0644 less the umask): a copy holds
	// every tier's views and is for the service's user alone (a copy written over keeps its mode).
	if err := os.Chmod(fresh, 0o600); err != nil {
		return err
	}
	if err := toRollback(fresh); err != nil {
		return err
	}
	f.mu.Lock()
	fl := f.files[slug]
	f.mu.Unlock()
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		if err := os.Rename(fresh, path); err != nil {
			return err
		}
	} else if err := f.cfg.Host.Exclusive(ctx, slug, func() error { return overwrite(path, fresh) }); err != nil {
		return fmt.Errorf("put the bootstrap in place: %w", err)
	}
	if fl == nil {
		fl = &followed{slug: slug}
		f.mu.Lock()
		f.files[slug] = fl
		f.mu.Unlock()
	}
	if err := f.setPosition(fl, lineage, pos); err != nil {
		return err
	}
	f.cfg.Log.Info("bootstrapped a directory", "directory", slug, "position", uint64(pos.TXID),
		"source", c.Type(), "duration", time.Since(start).Round(time.Millisecond))
	return nil
}

// postApplyChecksum reads the checksum of the database after the file info names, from its trailer.
func postApplyChecksum(ctx context.Context, c litestream.ReplicaClient, info *ltx.FileInfo) (ltx.Checksum, error) {
	if info.Size < ltx.HeaderSize+ltx.TrailerSize {
		return 0, fmt.Errorf("LTX file %s is too short", ltx.FormatFilename(info.MinTXID, info.MaxTXID))
	}
	rc, err := c.OpenLTXFile(ctx, info.Level, info.MinTXID, info.MaxTXID, info.Size-ltx.TrailerSize, ltx.TrailerSize)
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, ltx.TrailerSize+1))
	if err != nil {
		return 0, err
	}
	var t ltx.Trailer
	if len(b) != ltx.TrailerSize {
		return 0, fmt.Errorf("LTX file %s: want a %d-byte trailer", ltx.FormatFilename(info.MinTXID, info.MaxTXID), ltx.TrailerSize)
	}
	if err := t.UnmarshalBinary(b); err != nil {
		return 0, err
	}
	return t.PostApplyChecksum, nil
}

// toRollback marks a restored file (written in WAL mode) as a rollback-journal copy.
func toRollback(path string) error {
	pageSize, pages, err := geometry(path)
	if err != nil {
		return err
	}
	return writeCopy(path, pageSize, pages, func(*os.File) error { return nil })
}

// overwrite writes the file at from over the copy at path, which readers have open.
func overwrite(path, from string) error {
	pageSize, pages, err := geometry(from)
	if err != nil {
		return err
	}
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	return writeCopy(path, pageSize, pages, func(dst *os.File) error {
		if _, err := dst.Seek(0, io.SeekStart); err != nil {
			return err
		}
		_, err := io.Copy(dst, src)
		return err
	})
}

// geometry returns a SQLite file's page size and its size in pages.
func geometry(path string) (pageSize, pages uint32, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	hdr := make([]byte, 100)
	if _, err := io.ReadFull(f, hdr); err != nil {
		return 0, 0, fmt.Errorf("read the header of %s: %w", path, err)
	}
	pageSize = sqlitePageSize(hdr)
	return pageSize, uint32(st.Size() / int64(pageSize)), nil
}

// bootstrapFromStorage bootstraps every directory from object storage: the platform JSON the
// primary writes there for edges tells which there are (see EdgePlatformKey). It reads nothing of
// the bucket but that JSON and the directory files: never the platform file or an ops file, which
// edge credentials need not reach.
func (f *Follower) bootstrapFromStorage(ctx context.Context) error {
	target := Target{S3: f.cfg.Storage}
	p, err := ReadEdgePlatform(ctx, target)
	if err != nil {
		return err
	}
	f.cfg.Log.Info("the primary is away: bootstrapping from object storage", "directories", len(p.Directories))
	for _, d := range p.Directories {
		c, err := target.bucketClient(directoryName(d.Slug))
		if err != nil {
			return err
		}
		// The lineage is unknown here: the primary's, once it answers, makes the copy bootstrap
		// afresh from it.
		if err := f.bootstrap(ctx, d.Slug, "", c); err != nil {
			f.cfg.Log.Error("bootstrap a directory from object storage", "directory", d.Slug, "err", err)
		}
	}
	return f.syncPlatform(ctx, p)
}
