package dirdb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/schema"
)

// Directory is one open directory: its published file (directory.db) with one writer connection and a
// pool of readers behind a read/write gate, and on the primary its operational file (ops.db).
//
// Readers hold the gate's read side for a whole read; the edge's follower takes the write side while it
// applies replicated pages, so no reader ever sees a half-applied transaction.
type Directory struct {
	slug  string
	store *Store
	gate  sync.RWMutex

	readers *sql.DB
	stmts   readStmts
	cache   *viewCache

	wmu    sync.Mutex // serialises writes across both files
	writer *sql.DB    // directory.db
	ops    *sql.DB    // ops.db, opened on first write

	infoMu sync.Mutex
	info   *dirsvc.Directory
}

// openDirectory opens a directory's file; create says it is new (CreateDirectory). A directory the
// platform lists whose file is missing is an error, never an empty directory: an empty file would
// be replicated as the directory's truth.
func openDirectory(ctx context.Context, s *Store, slug string, create bool) (*Directory, error) {
	path := filepath.Join(s.root, "dirs", slug, "directory.db")
	if !create {
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("open directory %q: the platform lists it but its file is unreadable or missing (restore it): %w", slug, err)
		}
	}
	var w *sql.DB // none on a replica: its file changes only by replication
	if !s.replica {
		var err error
		if w, err = openWriter(ctx, path, schema.Directory); err != nil {
			return nil, err
		}
	}
	hot := 2 * runtime.GOMAXPROCS(0)
	r, err := openReaders(path, hot)
	if err != nil {
		if w != nil {
			w.Close()
		}
		return nil, err
	}
	d := &Directory{slug: slug, store: s, readers: r, writer: w, cache: newViewCache(&s.cached)}
	if err := d.stmts.prepare(ctx, r, hot); err != nil {
		d.close()
		return nil, err
	}
	return d, nil
}

func (d *Directory) close() error {
	d.cache.clear()
	errs := []error{d.stmts.close(), d.readers.Close()}
	if d.writer != nil {
		errs = append(errs, d.writer.Close())
	}
	if d.ops != nil {
		errs = append(errs, d.ops.Close())
	}
	return errors.Join(errs...)
}

// opsDB returns the primary's operational file, opening it on first use. Callers hold wmu.
func (d *Directory) opsDB(ctx context.Context) (*sql.DB, error) {
	if d.ops == nil {
		db, err := openWriter(ctx, filepath.Join(d.store.root, "dirs", d.slug, "ops.db"), schema.Ops)
		if err != nil {
			return nil, err
		}
		d.ops = db
	}
	return d.ops, nil
}

// Info returns the directory's published description; ErrNotFound before its first import.
func (d *Directory) Info(ctx context.Context) (*dirsvc.Directory, error) {
	d.infoMu.Lock()
	info := d.info
	d.infoMu.Unlock()
	if info != nil {
		return info, nil
	}
	// The gate is taken without infoMu held: the follower holds the gate while it calls changed.
	d.gate.RLock()
	gen := d.stmts.views.gen.Load()
	var doc []byte
	err := d.readers.QueryRowContext(ctx, "SELECT doc FROM directory WHERE id = 1").Scan(&doc)
	d.gate.RUnlock()
	if errors.Is(err, sql.ErrNoRows) {
		return nil, dirsvc.ErrNotFound
	} else if err != nil {
		return nil, fmt.Errorf("read directory %q: %w", d.slug, err)
	}
	info = new(dirsvc.Directory)
	if err := json.Unmarshal(doc, info); err != nil {
		return nil, fmt.Errorf("decode directory %q: %w", d.slug, err)
	}
	on, err := d.store.SeniorManagementAvailable(ctx, d.slug)
	if err != nil {
		return nil, err
	}
	info.SeniorManagementAvailable = on
	d.infoMu.Lock()
	if d.stmts.views.gen.Load() == gen { // no change since it was read: keep it
		d.info = info
	}
	d.infoMu.Unlock()
	return info, nil
}

// changed drops what readers keep of the published file: the cached description, the hot readers'
// snapshots and the cached views. Call it after every commit to directory.db (on an edge, after applying
// replicated changes, under the gate). The generation moves first, so a description or view read
// before the change is never kept after it.
func (d *Directory) changed() {
	d.stmts.views.changed()
	d.infoMu.Lock()
	d.info = nil
	d.infoMu.Unlock()
	d.cache.clear()
}

// Reader returns the directory's reader; it satisfies dirsvc.Catalog.
func (s *Store) Reader(ctx context.Context, slug string) (dirsvc.DirectoryReader, error) {
	d, err := s.Directory(ctx, slug)
	if err != nil {
		return nil, err
	}
	return d, nil
}

// Writer returns the write side of a directory; it satisfies dirsvc.DirectoryStore.
func (s *Store) Writer(ctx context.Context, slug string) (dirsvc.DirectoryWriter, error) {
	if s.replica {
		return nil, errReplica
	}
	d, err := s.Directory(ctx, slug)
	if err != nil {
		return nil, err
	}
	return d, nil
}

// Create registers a new, empty directory; it satisfies dirsvc.DirectoryStore.
func (s *Store) Create(ctx context.Context, slug string) (dirsvc.DirectoryWriter, error) {
	d, err := s.CreateDirectory(ctx, slug)
	if err != nil {
		return nil, err
	}
	return d, nil
}

// Drop deletes a directory; it satisfies dirsvc.DirectoryStore.
func (s *Store) Drop(ctx context.Context, slug string) error { return s.DropDirectory(ctx, slug) }

var _ dirsvc.DirectoryStore = (*Store)(nil)
