// Package dirdb holds every SQL statement of the service: it opens, pools and gates the SQLite files of
// the platform and of each directory, writes records with their projections and change-log rows in one
// transaction, and reads published projections for the edge.
package dirdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"runtime"

	"github.com/dirsvc/dirsvc/schema"
	_ "modernc.org/sqlite" // registers the pure-Go "sqlite" driver
)

// connKind is what a connection to a file is for.
type connKind int

const (
	reading  connKind = iota // one of the file's pool of read-only connections
	writing                  // the file's one writer
	building                 // the one connection of a file built aside, which nothing else opens (build.go)
)

// dsn returns a modernc DSN for a connection of kind to path. Pragmas ride in the DSN so every pooled
// connection gets them, busy_timeout first (the driver runs them in alphabetical order). Writers take
// the write lock at BEGIN (_txlock=immediate).
func dsn(path string, kind connKind) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "foreign_keys(1)")
	if kind != reading {
		if kind == building {
			// A file built aside is thrown away whole if its build fails, and synced once when it
			// is done (build.finish): it needs no journal, no syncs and no shared locks, and
			// each page is written once, where a WAL writes it twice (to the WAL, then at the
			// checkpoint).
			q.Add("_pragma", "journal_mode(OFF)")
			q.Add("_pragma", "locking_mode(EXCLUSIVE)")
			q.Add("_pragma", "synchronous(OFF)")
		} else {
			q.Add("_pragma", "journal_mode(WAL)")
			q.Add("_pragma", "synchronous(NORMAL)")
		}
		// A large import touches every page of every index: a page cache of up to 128 MiB keeps the
		// writer from re-reading and spilling pages mid-transaction. Memory is taken only as used.
		q.Add("_pragma", "cache_size(-131072)")
		q.Add("_pragma", "temp_store(MEMORY)")
		q.Set("_txlock", "immediate")
	} else {
		q.Set("mode", "ro")
		q.Add("_pragma", "query_only(1)")
		// Readers map the file: a point read of a large directory touches a few pages of a B-tree
		// that no per-connection cache holds, and mapped pages cost no read call and no copy.
		q.Add("_pragma", fmt.Sprintf("mmap_size(%d)", readerMmapSize))
		// Up to 32 MiB of parsed pages per reader: the 2 MiB default holds 128 pages, fewer than the
		// inner pages of a large directory's indexes, so random reads re-parse them every time.
		q.Add("_pragma", "cache_size(-32768)")
	}
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}

// readerMmapSize is how much of a file each reader maps (see dsn).
const readerMmapSize = 4 << 30

// pageSize is the page size of new files: 16 KiB pages keep a record's views (1 to 3 KiB each)
// inline in the WITHOUT ROWID projections table, where 4 KiB pages spill each to an overflow page.
const pageSize = 16384

// createFile makes a new, empty database file with the service's page size. The size must be set
// before WAL mode, and the driver runs DSN pragmas in alphabetical order (journal_mode first), so it
// is set here, on a connection of its own.
func createFile(ctx context.Context, path string) error {
	if _, err := os.Stat(path); err == nil || !errors.Is(err, os.ErrNotExist) {
		return err
	}
	// SQLite would create the file 0644 (less the umask); an empty file is a valid database, and
	// SQLite gives the -wal and -shm files the mode of the database file.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return nil // another process made it a moment ago
	} else if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath())
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, fmt.Sprintf("PRAGMA page_size = %d; VACUUM", pageSize))
	return err
}

// openWriter opens the single writer connection of a file, creating and migrating it as needed.
func openWriter(ctx context.Context, path string, f schema.File) (*sql.DB, error) {
	return openOwner(ctx, path, f, writing)
}

// openOwner opens the single connection of kind writing or building to a file, creating and
// migrating the file as needed.
func openOwner(ctx context.Context, path string, f schema.File, kind connKind) (*sql.DB, error) {
	if err := createFile(ctx, path); err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	db, err := sql.Open("sqlite", dsn(path, kind))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	if _, err := schema.Migrate(ctx, db, f); err != nil {
		db.Close()
		return nil, fmt.Errorf("migrate %s: %w", path, err)
	}
	return db, nil
}

// openReaders opens the pool of read-only connections of a file: reserved ones for the single
// record reads, and as many again for every other read.
func openReaders(path string, reserved int) (*sql.DB, error) {
	db, err := sql.Open("sqlite", dsn(path, reading))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	n := reserved + 2*runtime.GOMAXPROCS(0)
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	db.SetConnMaxLifetime(0)
	return db, nil
}
