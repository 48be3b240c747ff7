package dirdb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
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
//
// What readers keep of the published file (the hot readers' snapshots, views, the description) is
// checked against the file whenever the store hands the directory out (Store.Directory), so a commit
// by any process is seen by every read that starts after it.
type Directory struct {
	slug  string
	store *Store
	gate  sync.RWMutex
	yield yielder     // the follower's signal to long reads (see yield.go)
	watch *fileWatch  // directory.db
	file  os.FileInfo // directory.db as opened: another process may drop it and make a new one

	readers *sql.DB
	records *recordReaders // single record reads, on connections of readers kept for them
	lists   stmtCache      // statements of list and related-record queries, by text
	cache   *viewCache
	search  searchIndex   // the search documents, in memory
	warmed  chan struct{} // closed when warmSearch ends, when the store warms directories it opens

	taxMu    sync.Mutex
	taxViews map[int64]keptTaxonomy // decoded taxonomies, by audience bit (taxonomyView)

	wmu    sync.Mutex // serialises writes across both files
	writer *sql.DB    // directory.db
	ops    *sql.DB    // ops.db, opened on first write
	// placesFloor is the change floor at which PruneChanges last pruned the placements no event
	// needs (under wmu); zero in a process that has not.
	placesFloor int64

	hmu   sync.Mutex // guards the opening of hooks (never held with wmu: see webhooks.go)
	hooks *hookDB    // webhooks.db, on the primary, opened on first use

	infoMu sync.Mutex
	info   cachedInfo
}

// cachedInfo is a directory's description with the generations of the two files it was read from.
type cachedInfo struct {
	info           *dirsvc.Directory
	gen, platforms uint64 // the directory file's and the platform file's (Store.platformGen)
}

// openDirectory opens a directory's file; create says it is new (CreateDirectory). A directory the
// platform lists whose file is missing is an error, never an empty directory: an empty file would
// be replicated as the directory's truth.
func openDirectory(ctx context.Context, s *Store, slug string, create bool) (*Directory, error) {
	path := dirsvc.FilePath(s.root, dirsvc.FileName(dirsvc.DirectoryFile, slug))
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
	if s.replica {
		checkReplicaSchema(ctx, slug, r)
	}
	d := &Directory{slug: slug, store: s, readers: r, writer: w, cache: newViewCache(&s.cached)}
	if d.records, err = openRecordReaders(ctx, r, hot); err != nil {
		d.close()
		return nil, err
	}
	// Watched once a connection has the file open (a WAL file's index exists from then on), and before
	// anything is kept of it. An edge's copy changes only inside Exclusive, which calls changed.
	if d.file, err = os.Stat(path); err == nil && !s.replica {
		d.watch, err = newFileWatch(path)
	}
	if err != nil {
		d.close()
		return nil, fmt.Errorf("open directory %q: %w", slug, err)
	}
	return d, nil
}

// checkReplicaSchema logs an error when an edge's copy of a directory has an older schema than this
// binary's: edges never migrate a file (it changes only by replication), so an edge upgraded before
// its primary reads a file made for older queries, and some of its lists fail until the primary is
// upgraded too.
func checkReplicaSchema(ctx context.Context, slug string, r *sql.DB) {
	ms, err := schema.Migrations(schema.Directory)
	var v int
	if err == nil {
		err = r.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v)
	}
	if err != nil {
		slog.Error("read the schema version of a directory's copy", "directory", slug, "err", err)
	} else if v < len(ms) {
		slog.Error("this edge runs a newer version than its primary: some lists fail until the primary is upgraded (upgrade the primary first)",
			"directory", slug, "schema", v, "wanted", len(ms))
	}
}

// fresh drops what readers keep of the published file if any connection or process committed to it
// since the last look.
func (d *Directory) fresh() error {
	if d.watch == nil {
		return nil
	}
	// Under the gate's read side, as a read: a directory being retired is closed under its write side.
	d.gate.RLock()
	defer d.gate.RUnlock()
	return d.watch.check(func() error { d.changed(); return nil })
}

// committed drops what readers keep of the published file after a commit of this process.
func (d *Directory) committed() {
	if d.watch == nil {
		d.changed()
		return
	}
	d.watch.committed(d.changed)
}

// replaced reports whether the directory's file is no longer the one it opened (another process
// dropped the directory, and maybe made it anew).
func (d *Directory) replaced() bool {
	st, err := os.Stat(dirsvc.FilePath(d.store.root, dirsvc.FileName(dirsvc.DirectoryFile, d.slug)))
	return err != nil || !os.SameFile(st, d.file)
}

func (d *Directory) close() error {
	d.cache.clear()
	var errs []error
	if d.records != nil {
		errs = append(errs, d.records.close())
	}
	errs = append(errs, d.lists.close(), d.readers.Close())
	if d.writer != nil {
		errs = append(errs, d.writer.Close())
	}
	if d.ops != nil {
		errs = append(errs, d.ops.Close())
	}
	if d.hooks != nil {
		errs = append(errs, d.hooks.Close())
	}
	return errors.Join(errs...)
}

// opsDB returns the primary's operational file, opening it on first use. Callers hold wmu.
func (d *Directory) opsDB(ctx context.Context) (*sql.DB, error) {
	if d.ops == nil {
		db, err := openWriter(ctx, dirsvc.FilePath(d.store.root, dirsvc.FileName(dirsvc.OpsFile, d.slug)), schema.Ops)
		if err != nil {
			return nil, err
		}
		d.ops = db
	}
	return d.ops, nil
}

// Info returns the directory's published description, with the platform's switches as of the last
// look at the platform file (Store.Directory looks); ErrNotFound before its first import.
func (d *Directory) Info(ctx context.Context) (*dirsvc.Directory, error) {
	gen, platforms := d.records.gen.Load(), d.store.platformGen.Load()
	d.infoMu.Lock()
	c := d.info
	d.infoMu.Unlock()
	if c.info != nil && c.gen == gen && c.platforms == platforms {
		return c.info, nil
	}
	// The gate is taken without infoMu held: the follower holds the gate while it calls changed.
	d.gate.RLock()
	var doc []byte
	err := d.readers.QueryRowContext(ctx, "SELECT doc FROM directory WHERE id = 1").Scan(&doc)
	d.gate.RUnlock()
	if errors.Is(err, sql.ErrNoRows) {
		return nil, dirsvc.ErrNotFound
	} else if err != nil {
		return nil, fmt.Errorf("read directory %q: %w", d.slug, err)
	}
	info := new(dirsvc.Directory)
	if err := json.Unmarshal(doc, info); err != nil {
		return nil, fmt.Errorf("decode directory %q: %w", d.slug, err)
	}
	on, err := d.store.SeniorManagementAvailable(ctx, d.slug)
	if err != nil {
		return nil, err
	}
	info.SeniorManagementAvailable = on
	d.infoMu.Lock()
	// Kept only if neither file changed since the generations were read: a description read before
	// a change is never kept after it.
	if d.records.gen.Load() == gen && d.store.platformGen.Load() == platforms {
		d.info = cachedInfo{info, gen, platforms}
	}
	d.infoMu.Unlock()
	return info, nil
}

// changed drops what readers keep of the published file: the hot readers' snapshots, the cached
// views and, by the generation, the cached description. Call it after every commit to directory.db
// (on an edge, after applying replicated changes, under the gate); the watch calls it for commits
// of other processes. The generation moves first, so a description or view read before the change
// is never kept after it.
func (d *Directory) changed() {
	d.records.changed()
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
