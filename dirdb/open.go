// Package dirdb holds every SQL statement of the service: it opens, pools and gates the SQLite files of
// the platform and of each directory, writes records with their projections and change-log rows in one
// transaction, and reads published projections for the edge.
package dirdb

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"runtime"

	"github.com/dirsvc/dirsvc/schema"
	_ "modernc.org/sqlite" // registers the pure-Go "sqlite" driver
)

// dsn returns a modernc DSN for path. Pragmas ride in the DSN so every pooled connection gets them,
// busy_timeout first. Writers take the write lock at BEGIN (_txlock=immediate).
func dsn(path string, write bool) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "foreign_keys(1)")
	if write {
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous(NORMAL)")
		q.Set("_txlock", "immediate")
	} else {
		q.Set("mode", "ro")
		q.Add("_pragma", "query_only(1)")
	}
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}

// openWriter opens the single writer connection of a file and migrates it.
func openWriter(ctx context.Context, path string, f schema.File) (*sql.DB, error) {
	db, err := sql.Open("sqlite", dsn(path, true))
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

// openReaders opens the pool of read-only connections of a file.
func openReaders(path string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", dsn(path, false))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	n := 2 * runtime.GOMAXPROCS(0)
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	db.SetConnMaxLifetime(0)
	return db, nil
}
