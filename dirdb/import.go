package dirdb

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/dirsvc/dirsvc"
)

// Import makes the directory equal to the snapshot (see dirsvc.DirectoryWriter).
func (d *Directory) Import(ctx context.Context, snap *dirsvc.Snapshot) (dirsvc.ImportStats, error) {
	if snap.Directory.Slug != d.slug {
		return dirsvc.ImportStats{}, dirsvc.InvalidParam("directory.slug",
			"the file describes directory %q, not %q", snap.Directory.Slug, d.slug)
	}
	stats, err := d.write(ctx, importing(snap))
	if err == nil {
		d.store.countImport(stats)
	}
	return stats, err
}

// importing is the write of an import of snap.
func importing(snap *dirsvc.Snapshot) func(w *writeTx) error {
	return func(w *writeTx) error {
		// Mirrored records are not the file's: it may neither hold nor remove them.
		mirrored, err := w.mirroredIDs()
		if err != nil {
			return err
		}
		for _, rec := range snap.Records {
			m := rec.Base()
			if m.Origin != "" {
				return dirsvc.InvalidParam("origin", "%s: the origin of a record is set only by mirroring", m.PublicID)
			}
			if mirrored[m.PublicID] {
				return dirsvc.Errorf(dirsvc.EMirrored, "%s is a mirrored record of this directory: the file may not hold it", m.PublicID)
			}
		}
		return w.importSnapshot(snap, mirrored)
	}
}

// importSnapshot makes the directory equal to the snapshot, inside the write w, except for the
// records named in keep (mirrored ones), which stay as they are though the snapshot lacks them.
func (w *writeTx) importSnapshot(snap *dirsvc.Snapshot, keep map[string]bool) (err error) {
	ctx := w.ctx
	// Kind order keeps the change log readable (organisations before their sites and services); ID
	// order within a kind makes every primary-key insert an append, which is most of an import's work.
	type ranked struct {
		kind int
		id   string
		rec  dirsvc.Record
	}
	order := make([]ranked, len(snap.Records))
	for i, rec := range snap.Records {
		order[i] = ranked{kindRank(rec.Kind()), rec.Base().PublicID, rec}
	}
	slices.SortFunc(order, func(a, b ranked) int {
		return cmp.Or(cmp.Compare(a.kind, b.kind), strings.Compare(a.id, b.id))
	})
	recs := make([]dirsvc.Record, len(order))
	for i, r := range order {
		recs[i] = r.rec
	}
	order = nil
	for _, rec := range recs {
		clearVersions(rec)
	}
	lk := newMemLookup(snap)
	if err := w.putDirectory(snap); err != nil {
		return err
	}
	w.taxonomyStale = true // published once the records are (refreshTaxonomy): it lists what they use
	if err := w.putCollections(snap.Collections, dirsvc.Today(w.now, snap.Directory.TimeZone)); err != nil {
		return err
	}
	// Every view is made now, by the current rules.
	if _, err := w.pub.ExecContext(ctx, "UPDATE projection SET version = ? WHERE id = 1", dirsvc.ProjectionVersion); err != nil {
		return fmt.Errorf("record the projection version: %w", err)
	}
	prev, err := w.loadRows()
	if err != nil {
		return err
	}
	own, err := w.loadOwnHashes()
	if err != nil {
		return err
	}
	// What the file no longer holds is removed, after everything it holds is saved.
	inFile := make(map[string]bool, len(recs))
	for _, rec := range recs {
		inFile[rec.Base().PublicID] = true
	}
	var gone []string
	for id, r := range prev {
		if !inFile[id] && !keep[id] && r.state != dirsvc.StateRemoved {
			gone = append(gone, id)
		}
	}
	prog := dirsvc.ProgressOf(ctx)
	prog.Step("records", len(recs)+len(gone))
	if bulkLoad(len(prev), len(recs)) {
		rebuild, derr := w.deferIndexes()
		if derr != nil {
			return derr
		}
		defer func() {
			if err == nil {
				// The indexes are built on one core: the search documents are made on the other,
				// from the views as they stand now. No write changes a view after importSnapshot
				// (Import, ApplyMirror and Republish end with it).
				if err = w.searchAhead(); err != nil {
					return
				}
				start := time.Now()
				prog.Step("indexes", 0)
				err = rebuild() // err is the write's result: rebuild only after a write that worked
				w.step("indexes", start, len(w.stats.Steps))
				if err == nil {
					prog.StepDone(0)
				}
			}
		}()
	}
	// ops.db is a file of its own: its canonical records are written on another goroutine, beside
	// the publication on this one.
	sources, opsDone := w.sourceWriter()
	written := 0
	err = w.batchRows(func() error {
		return prepareAll(ctx, recs, func(rec dirsvc.Record) (prepared, error) {
			id := rec.Base().PublicID
			return prepare(rec, lk, prev[id], own[id], w.now)
		}, func(pr prepared) error {
			if pr.ownChanged {
				sources <- pr
			}
			if written++; written%prepareChunk == 0 {
				prog.Records(written)
			}
			return w.apply(pr.rec.Base(), pr.pub)
		})
	})
	close(sources)
	if serr := <-opsDone; err == nil {
		err = serr
	}
	if err != nil {
		return err
	}
	sort.Strings(gone)
	for _, id := range gone {
		rec, err := loadSource(ctx, w.ops, id)
		if err != nil {
			return err
		}
		rec.Base().State, rec.Base().Survivor = dirsvc.StateRemoved, ""
		if err := w.save(rec, lk, prev[id], own[id]); err != nil {
			return err
		}
		if written++; written%prepareChunk == 0 {
			prog.Records(written)
		}
	}
	prog.StepDone(written)
	return nil
}

// bulkThreshold is the size from which a write of a whole directory that is empty, or nearly (a
// first import; a mirror's first harvest into a directory of a few records of its own), builds
// directory.db's secondary indexes after loading rather than row by row: SQLite builds an index from
// one sort far faster than from random inserts.
var bulkThreshold = 5000 // a variable so tests can take the bulk path with a small fixture

// bulkLoad reports whether a write of n records over a directory that holds stored of them takes the
// bulk path: n is at least bulkThreshold and at least four times what was stored, so most of the
// indexes' rows are new (rebuilding them costs about what the stored rows cost to sort again).
func bulkLoad(stored, n int) bool {
	return n >= bulkThreshold && stored*4 <= n
}

// deferIndexes drops the secondary indexes of directory.db inside the write and returns what
// recreates them, exactly as the schema defines them. The drop is part of the transaction, so a write
// that fails leaves them as they were. The indexes of projections stay: a first import gives every
// view the same time, so their keys (a time and the view's public ID) arrive in the order they sort
// in, each an append, while building one afterwards reads every view's body again.
//
// In a file built aside (w.fresh), the indexes of the change log and of the search documents, which
// the feed and search steps fill after the records and which nothing of this write reads (a new
// file's feed and search documents are made whole), are made last instead, from their rows, by
// w.lateIndexes.
func (w *writeTx) deferIndexes() (func() error, error) {
	rows, err := w.pub.QueryContext(w.ctx, `SELECT name, tbl_name, sql FROM sqlite_schema
WHERE type = 'index' AND sql IS NOT NULL AND tbl_name != 'projections' ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list indexes: %w", err)
	}
	type index struct{ name, def string }
	var now, late []index
	for rows.Next() {
		var x index
		var table string
		if err := rows.Scan(&x.name, &table, &x.def); err != nil {
			rows.Close()
			return nil, err
		}
		if w.fresh && (table == "changes" || table == "search_docs") {
			late = append(late, x)
		} else {
			now = append(now, x)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, x := range append(slices.Clip(now), late...) {
		if _, err := w.pub.ExecContext(w.ctx, `DROP INDEX "`+x.name+`"`); err != nil {
			return nil, fmt.Errorf("drop index %s: %w", x.name, err)
		}
	}
	build := func(xs []index) func() error {
		return func() error {
			for _, x := range xs {
				if _, err := w.pub.ExecContext(w.ctx, x.def); err != nil {
					return fmt.Errorf("build index %s: %w", x.name, err)
				}
			}
			return nil
		}
	}
	if len(late) > 0 {
		w.lateIndexes = build(late)
	}
	return build(now), nil
}

// prepared is a record ready to store: its canonical form, and what it publishes.
type prepared struct {
	rec        dirsvc.Record
	hash, doc  []byte
	ownChanged bool
	pub        publication
}

// prepare works out, without touching the store, what saving rec means: whether its own information
// changed, and its publication. It only reads rec and lk, so many records can be prepared at once.
func prepare(rec dirsvc.Record, lk dirsvc.Lookup, prev row, prevOwn []byte, now time.Time) (prepared, error) {
	hash, doc, err := ownHash(rec)
	if err != nil {
		return prepared{}, err
	}
	pr := prepared{rec: rec, hash: hash, doc: doc, ownChanged: !bytes.Equal(hash, prevOwn)}
	if pr.pub, err = publish(rec, lk, prev, pr.ownChanged, now); err != nil {
		return prepared{}, err
	}
	for i, v := range pr.pub.views {
		pr.pub.views[i].etag = dirsvc.ETag(v.body)
	}
	return pr, nil
}

// prepareChunk is how many records are prepared together, a chunk ahead of the writer.
const prepareChunk = 256

// prepareAll prepares recs on every core, a chunk ahead, and hands the results to store one by one
// in order, on the calling goroutine (the one that owns the transactions).
func prepareAll(ctx context.Context, recs []dirsvc.Record, prep func(dirsvc.Record) (prepared, error), store func(prepared) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type batch struct {
		items []prepared
		err   error
	}
	out := make(chan batch, 2)
	go func() {
		defer close(out)
		workers := runtime.GOMAXPROCS(0)
		for start := 0; start < len(recs); start += prepareChunk {
			part := recs[start:min(start+prepareChunk, len(recs))]
			b := batch{items: make([]prepared, len(part))}
			errs := make([]error, workers)
			var wg sync.WaitGroup
			for k := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := k; i < len(part) && errs[k] == nil; i += workers {
						b.items[i], errs[k] = prep(part[i])
					}
				}()
			}
			wg.Wait()
			b.err = errors.Join(errs...)
			select {
			case out <- b:
			case <-ctx.Done():
				return
			}
			if b.err != nil {
				return
			}
		}
	}()
	for b := range out {
		if b.err != nil {
			return b.err
		}
		for _, pr := range b.items {
			if err := store(pr); err != nil {
				return err
			}
		}
	}
	return ctx.Err()
}

const saveSourceSQL = `
INSERT INTO source_records (public_id, kind, own_hash, doc) VALUES (?, ?, ?, ?)
ON CONFLICT (public_id) DO UPDATE SET kind = excluded.kind, own_hash = excluded.own_hash, doc = excluded.doc`

// sourceWriter saves canonical records sent to it in ops.db on a goroutine of its own, which alone
// uses the ops transaction until it reports on done. After an error it drains what it is sent.
func (w *writeTx) sourceWriter() (chan<- prepared, <-chan error) {
	in, done := make(chan prepared, prepareChunk), make(chan error, 1)
	go func() {
		st, err := w.ops.PrepareContext(w.ctx, saveSourceSQL)
		for pr := range in {
			if err == nil {
				if _, err = st.ExecContext(w.ctx, pr.rec.Base().PublicID, string(pr.rec.Kind()), pr.hash, pr.doc); err != nil {
					err = fmt.Errorf("save source of %s: %w", pr.rec.Base().PublicID, err)
				}
			}
		}
		if st != nil {
			st.Close()
		}
		done <- err
	}()
	return in, done
}

// putDirectory stores the directory's description and taxonomy when they changed.
func (w *writeTx) putDirectory(snap *dirsvc.Snapshot) error {
	dirDoc, err := json.Marshal(snap.Directory)
	if err != nil {
		return err
	}
	taxDoc, err := json.Marshal(snap.Taxonomy)
	if err != nil {
		return err
	}
	colDoc, err := json.Marshal(snap.Collections)
	if err != nil {
		return err
	}
	h := sha256Of(dirDoc, taxDoc, colDoc)
	var prev []byte
	err = w.ops.QueryRowContext(w.ctx, "SELECT own_hash FROM source_directory WHERE id = 1").Scan(&prev)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("read source directory: %w", err)
	}
	if bytes.Equal(prev, h) {
		return nil
	}
	at := w.now.Format(time.RFC3339Nano)
	if _, err := w.ops.ExecContext(w.ctx, `
INSERT INTO source_directory (id, directory, taxonomy, own_hash, updated_at) VALUES (1, ?, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET directory = excluded.directory, taxonomy = excluded.taxonomy,
    own_hash = excluded.own_hash, updated_at = excluded.updated_at`, dirDoc, taxDoc, h, at); err != nil {
		return fmt.Errorf("save source directory: %w", err)
	}
	if _, err := w.ops.ExecContext(w.ctx, "DELETE FROM source_collections"); err != nil {
		return err
	}
	for _, c := range snap.Collections {
		doc, err := json.Marshal(c)
		if err != nil {
			return err
		}
		if _, err := w.ops.ExecContext(w.ctx, "INSERT INTO source_collections (slug, doc) VALUES (?, ?)", c.Slug, doc); err != nil {
			return fmt.Errorf("save collection %s: %w", c.Slug, err)
		}
	}
	_, err = w.pub.ExecContext(w.ctx, `
INSERT INTO directory (id, doc, updated_at) VALUES (1, ?, ?)
ON CONFLICT (id) DO UPDATE SET doc = excluded.doc, updated_at = excluded.updated_at
WHERE directory.doc != excluded.doc`, dirDoc, at)
	return err
}

// loadRows reads every record's row.
func (w *writeTx) loadRows() (map[string]row, error) {
	rows, err := w.pub.QueryContext(w.ctx, "SELECT "+rowColumns+" FROM records")
	if err != nil {
		return nil, fmt.Errorf("read records: %w", err)
	}
	defer rows.Close()
	out := map[string]row{}
	for rows.Next() {
		id, r, err := scanRow(rows)
		if err != nil {
			return nil, err
		}
		out[id] = r
	}
	return out, rows.Err()
}

// loadOwnHashes reads the own-information hash of every canonical record.
func (w *writeTx) loadOwnHashes() (map[string][]byte, error) {
	rows, err := w.ops.QueryContext(w.ctx, "SELECT public_id, own_hash FROM source_records")
	if err != nil {
		return nil, fmt.Errorf("read source hashes: %w", err)
	}
	defer rows.Close()
	out := map[string][]byte{}
	for rows.Next() {
		var id string
		var h []byte
		if err := rows.Scan(&id, &h); err != nil {
			return nil, err
		}
		out[id] = h
	}
	return out, rows.Err()
}
