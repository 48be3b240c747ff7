package dirdb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/dirsvc/dirsvc"
)

// Republish publishes every record of the directory again from the canonical forms ops.db keeps,
// exactly as importing the same directory again would: a view that the projection now makes
// differently (after an upgrade that changed what an audience may see) is published as a new
// version, with its events; everything else changes nothing and writes no event. It reads and
// writes in one write, so no change made meanwhile is undone.
func (d *Directory) Republish(ctx context.Context) (dirsvc.ImportStats, error) {
	return d.write(ctx, func(w *writeTx) error {
		prog := dirsvc.ProgressOf(ctx)
		prog.Step("load", 0)
		snap, err := w.loadSnapshot()
		if err != nil {
			return err
		}
		prog.StepDone(len(snap.Records))
		return w.importSnapshot(snap, nil)
	})
}

// StaleViews reports whether the stored views of the directory were made by an older version of
// the projection rules than dirsvc.ProjectionVersion, or its narrowing keys, search documents or the
// feed's placements (feedwrite.go) were never made (Republish makes them all anew). It reads the file
// with a connection of its own, without opening the directory: a primary asks it of every directory
// at start, and opens only those it must republish.
func (s *Store) StaleViews(ctx context.Context, slug string) (bool, error) {
	if s.replica {
		return false, errReplica
	}
	path := dirsvc.FilePath(s.root, dirsvc.FileName(dirsvc.DirectoryFile, slug))
	if _, err := os.Stat(path); err != nil {
		return false, fmt.Errorf("directory %q: %w", slug, err)
	}
	db, err := sql.Open("sqlite", dsn(path, reading))
	if err != nil {
		return false, err
	}
	defer db.Close()
	var v, filled, searchFilled, feedFilled int
	err = db.QueryRowContext(ctx, "SELECT version, narrowing_filled, search_filled, feed_filled FROM projection WHERE id = 1").Scan(&v, &filled, &searchFilled, &feedFilled)
	if err != nil && (strings.Contains(err.Error(), "no such table") || strings.Contains(err.Error(), "no such column")) {
		return true, nil // a file of a build before versions (narrowing keys, search documents) were kept
	} else if err != nil {
		return false, fmt.Errorf("read the projection version of %q: %w", slug, err)
	}
	return v < dirsvc.ProjectionVersion || filled == 0 || searchFilled == 0 || feedFilled == 0, nil
}

// Release closes a directory that is open and not in use, so a process that opened many at once (a
// start republishing them) does not keep them all open; the next request opens it again.
func (s *Store) Release(slug string) {
	s.mu.Lock()
	e, ok := s.dirs[slug]
	if ok {
		select {
		case <-e.ready:
			delete(s.dirs, slug)
		default:
			ok = false // being opened
		}
	}
	s.mu.Unlock()
	if ok && e.d != nil {
		e.d.retire()
	}
}

// loadSnapshot reads the directory as last written: its description, taxonomy, collections and the
// canonical form of every record.
func (w *writeTx) loadSnapshot() (*dirsvc.Snapshot, error) { return loadSnapshot(w.ctx, w.ops) }

// loadSnapshot reads a directory from a transaction of its operations file (loadSnapshot above).
func loadSnapshot(ctx context.Context, ops *sql.Tx) (*dirsvc.Snapshot, error) {
	snap := &dirsvc.Snapshot{}
	var dirDoc, taxDoc []byte
	err := ops.QueryRowContext(ctx, "SELECT directory, taxonomy FROM source_directory WHERE id = 1").Scan(&dirDoc, &taxDoc)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, dirsvc.ErrNotFound
	} else if err != nil {
		return nil, fmt.Errorf("read source directory: %w", err)
	}
	if err := json.Unmarshal(dirDoc, &snap.Directory); err != nil {
		return nil, fmt.Errorf("decode source directory: %w", err)
	}
	if err := json.Unmarshal(taxDoc, &snap.Taxonomy); err != nil {
		return nil, fmt.Errorf("decode source taxonomy: %w", err)
	}
	// In the order they were imported (putDirectory writes them in order into an emptied table): the
	// directory's order is the order collections are shown in, and the snapshot must hash as the
	// import did.
	if err := eachRow(ctx, ops, "SELECT doc FROM source_collections ORDER BY rowid", nil, func(rows scanner) error {
		var doc []byte
		var c dirsvc.Collection
		if err := rows.Scan(&doc); err != nil {
			return err
		}
		if err := json.Unmarshal(doc, &c); err != nil {
			return fmt.Errorf("decode source collection: %w", err)
		}
		snap.Collections = append(snap.Collections, c)
		return nil
	}); err != nil {
		return nil, err
	}
	err = eachRow(ctx, ops, "SELECT kind, doc FROM source_records ORDER BY public_id", nil, func(rows scanner) error {
		var kind string
		var doc []byte
		if err := rows.Scan(&kind, &doc); err != nil {
			return err
		}
		rec, err := decodeRecord(dirsvc.Kind(kind), doc)
		if err != nil {
			return err
		}
		snap.Records = append(snap.Records, rec)
		return nil
	})
	return snap, err
}

// eachRow runs a query in tx and calls fn on each row.
func (w *writeTx) eachRow(tx *sql.Tx, query string, args []any, fn func(scanner) error) error {
	return eachRow(w.ctx, tx, query, args, fn)
}

// eachRow is writeTx.eachRow, in any transaction.
func eachRow(ctx context.Context, tx *sql.Tx, query string, args []any, fn func(scanner) error) error {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("read rows: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}
