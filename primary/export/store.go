package export

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dirsvc/dirsvc"
)

// With object storage configured (Config.Store), an export's files go to the bucket too, so that a
// download works on any primary of the platform: one restored from the bucket after the first was
// lost with its disk included. The files are copied as the export ends, each under
// <id>/<name>, and its status (<id>/export.json) last: a status in the bucket names files the
// bucket holds. The export answers succeeded only once the bucket holds them all; a bucket that
// will not take them after a few tries fails the export. A node that lacks an export's folder reads
// its status and files from the bucket. Expired exports are removed from the bucket as from the
// folder, those another node ran included.

// Store keeps blobs in object storage (see replicate.Blobs); names are paths relative to its
// prefix. Missing blobs are os.ErrNotExist.
type Store interface {
	Put(ctx context.Context, name string, body io.ReadSeeker, size int64, contentType string) error
	Get(ctx context.Context, name string, limit int64) ([]byte, error)
	Open(ctx context.Context, name string) (Blob, error)
	Delete(ctx context.Context, names ...string) error
	List(ctx context.Context, under string, limit int) ([]string, error)
}

// Blob is a stored file open for reading, as http.ServeContent takes it.
type Blob interface {
	io.ReadSeekCloser
	ModTime() time.Time
}

// Bounds of the copies to the bucket.
const (
	// storeTries is how many times a file is offered to the bucket before the export fails.
	storeTries = 3
	// maxStatus bounds a status read from the bucket.
	maxStatus = 1 << 20
	// maxStored bounds the blobs one pruning round lists.
	maxStored = 100_000
)

// storeDelay is the wait before the second try of a copy (doubled before each later one).
var storeDelay = time.Second

// store copies an ended export's files, then its status, to the bucket.
func (s *Service) store(ctx context.Context, j *job) error {
	for _, f := range j.Files {
		if err := s.storeFile(ctx, j.ID, f.Name); err != nil {
			return err
		}
	}
	b, err := json.Marshal(j)
	if err != nil {
		return err
	}
	return s.retry(ctx, func() error {
		return s.cfg.Store.Put(ctx, j.ID+"/"+statusFile, strings.NewReader(string(b)), int64(len(b)), "application/json")
	})
}

// storeFile copies one file of export id to the bucket.
func (s *Service) storeFile(ctx context.Context, id, name string) error {
	f, err := os.Open(filepath.Join(s.folder(id), name))
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	return s.retry(ctx, func() error {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		return s.cfg.Store.Put(ctx, id+"/"+name, f, st.Size(), contentType(name))
	})
}

// retry calls put up to storeTries times, waiting longer between each.
func (s *Service) retry(ctx context.Context, put func() error) error {
	delay := storeDelay
	var err error
	for try := 1; ; try++ {
		if err = put(); err == nil || try == storeTries {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(delay):
		}
		delay *= 2
	}
}

// unstore removes export id's blobs from the bucket: its files and its status (last, so that what
// a failed removal leaves is still found by the next pruning).
func (s *Service) unstore(ctx context.Context, id string) error {
	if s.cfg.Store == nil {
		return nil
	}
	names, err := s.cfg.Store.List(ctx, id+"/", maxStored)
	if err != nil {
		return err
	}
	var files []string
	for _, n := range names {
		if n != id+"/"+statusFile {
			files = append(files, n)
		}
	}
	if err := s.cfg.Store.Delete(ctx, files...); err != nil {
		return err
	}
	return s.cfg.Store.Delete(ctx, id+"/"+statusFile)
}

// loadStored reads export id's status from the bucket: ErrNotFound when there is none (or no
// bucket).
func (s *Service) loadStored(ctx context.Context, id string) (*job, error) {
	if s.cfg.Store == nil {
		return nil, dirsvc.ErrNotFound
	}
	b, err := s.cfg.Store.Get(ctx, id+"/"+statusFile, maxStatus)
	if errors.Is(err, os.ErrNotExist) {
		return nil, dirsvc.ErrNotFound
	} else if err != nil {
		return nil, fmt.Errorf("read export %s from object storage: %w", id, err)
	}
	var j job
	if err := json.Unmarshal(b, &j); err != nil || j.ID != id {
		return nil, fmt.Errorf("read export %s from object storage: not an export's status", id)
	}
	return &j, nil
}

// maxListedBlobs bounds the blobs of the bucket the export list reads (a few pages of its listing):
// the list finds there the exports whose status is among them.
const maxListedBlobs = 5000

// stored returns the exports whose status the bucket holds among its first maxListedBlobs blobs,
// but for those of skip (the node's own). A status in the bucket is final (written once, as the
// export succeeded): each is read once, and kept while the bucket lists it.
func (s *Service) stored(ctx context.Context, skip map[string]bool) ([]*job, error) {
	names, err := s.cfg.Store.List(ctx, "", maxListedBlobs)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	known := s.statuses
	s.mu.Unlock()
	kept := map[string]*job{}
	var out []*job
	for _, n := range names {
		id, rest, _ := strings.Cut(n, "/")
		if rest != statusFile || !dirsvc.ValidUUID(id) || skip[id] {
			continue
		}
		j := known[id]
		if j == nil {
			if j, err = s.loadStored(ctx, id); errors.Is(err, dirsvc.ErrNotFound) {
				continue // removed meanwhile
			} else if err != nil {
				s.cfg.Log.Error("exports: read a status from object storage", "export", id, "err", err)
				continue
			}
		}
		kept[id] = j
		out = append(out, j)
	}
	s.mu.Lock()
	s.statuses = kept
	s.mu.Unlock()
	return out, nil
}

// openFile opens file name of export id: from the export's folder, or from the bucket when the
// node does not hold it.
func (s *Service) openFile(ctx context.Context, id, name string) (Blob, error) {
	f, err := os.Open(filepath.Join(s.folder(id), name))
	if err == nil {
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, err
		}
		return localFile{f, st.ModTime()}, nil
	}
	if !errors.Is(err, os.ErrNotExist) || s.cfg.Store == nil {
		return nil, err
	}
	return s.cfg.Store.Open(ctx, id+"/"+name)
}

// localFile is a file of the export's folder as a Blob.
type localFile struct {
	*os.File
	mod time.Time
}

func (f localFile) ModTime() time.Time { return f.mod }

// pruneStored removes from the bucket the exports past their retention that the node's folder does
// not hold (ran by a node since lost, or removed here by a round whose removal from the bucket
// failed), and those left without a status.
func (s *Service) pruneStored(ctx context.Context) {
	if s.cfg.Store == nil {
		return
	}
	names, err := s.cfg.Store.List(ctx, "", maxStored)
	if err != nil {
		s.cfg.Log.Error("exports: list object storage", "err", err)
		return
	}
	ids := map[string]bool{}
	for _, n := range names {
		id, rest, _ := strings.Cut(n, "/")
		if !dirsvc.ValidUUID(id) {
			continue
		}
		ids[id] = ids[id] || rest == statusFile
	}
	now := s.cfg.Now()
	for id, hasStatus := range ids {
		if _, err := os.Stat(s.folder(id)); err == nil {
			continue // the folder's own pruning removes it from both
		}
		remove := !hasStatus // a copy that stopped before its status: never answered succeeded
		if hasStatus {
			j, err := s.loadStored(ctx, id)
			remove = err == nil && j.ExpiresAt != nil && now.After(*j.ExpiresAt)
		}
		if remove {
			if err := s.unstore(ctx, id); err != nil {
				s.cfg.Log.Error("exports: remove from object storage", "export", id, "err", err)
			}
		}
	}
}
