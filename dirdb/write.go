package dirdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/dirsvc/dirsvc"
)

// writeTx is one write to a directory: a transaction on directory.db (published views, change log)
// and one on ops.db (canonical records). directory.db commits first; ops.db only after it, so a
// failure before the first commit changes nothing at all.
type writeTx struct {
	ctx   context.Context
	pub   *sql.Tx
	ops   *sql.Tx
	now   time.Time
	stats dirsvc.ImportStats
	stmts map[*sql.Tx]map[string]*sql.Stmt
	// The records whose narrowing keys the write's changes touch (narrowing.go): those placed, and
	// the services whose roles' practitioners are.
	placing         map[string]bool
	placingServices []string
	placeAll        bool // so many are touched that every record's keys are made anew
	// The records whose publication changed, for the search documents they bear on (searchwrite.go).
	searching map[string]bool
	searchAll bool // so many that every service's documents are made anew
	// The search documents the write removed and added, whose words go to the full-text indexes
	// when it has made them all (searchwrite.go).
	searchDropped []storedDoc
	searchWords   []storedWords
	wordsKept     bool // some wait in a temporary table instead (keepWords)
	// The change-log rows the write logs, by record and in the order it made them, and the records
	// whose narrowing keys it made anew (all of them, with feedAll): whose placements the feed logs
	// (feedwrite.go).
	logged     map[string][]loggedEvent
	changes    []loggedChange
	feedPlaced map[string]bool
	feedAll    bool
	placeIDs   map[string]int64 // placements stored, by text
	placeTexts map[int64]string // and by ID
	placeSeed  *placeSource     // every record's keys, when the write made every narrowing key anew
	published  *publishedRows   // rows of records, views and keys waiting to go in (rowbatch.go)
	// fresh says the write is the first of a file built aside (build.go): nothing was stored before
	// it and nothing reads the file during it. lateIndexes, if set, makes the indexes the write makes
	// after all its steps (deferIndexes).
	fresh       bool
	lateIndexes func() error
	// ahead, if set, are the search documents being made beside the steps before the search step
	// (searchAhead).
	ahead *docsAhead
	// taxonomyStale says the write imported a taxonomy or changed a service's views: each audience's
	// taxonomy, which lists what the services it sees use, is published again (refreshTaxonomy).
	taxonomyStale bool
}

// exec runs a statement in tx, preparing each distinct statement once per write: an import runs the
// same few statements hundreds of thousands of times.
func (w *writeTx) exec(tx *sql.Tx, query string, args ...any) error {
	_, err := w.execResult(tx, query, args...)
	return err
}

// execResult is exec, returning the statement's result.
func (w *writeTx) execResult(tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	st, err := w.stmt(tx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(w.ctx, args...)
}

// stmt returns the write's prepared statement of query in tx, preparing it on first use.
func (w *writeTx) stmt(tx *sql.Tx, query string) (*sql.Stmt, error) {
	byQuery := w.stmts[tx]
	if byQuery == nil {
		byQuery = map[string]*sql.Stmt{}
		w.stmts[tx] = byQuery
	}
	st, ok := byQuery[query]
	if !ok {
		var err error
		if st, err = tx.PrepareContext(w.ctx, query); err != nil {
			return nil, err
		}
		byQuery[query] = st
	}
	return st, nil
}

// keptReader reads in a transaction of the write through the write's prepared statements: the
// feed's bookkeeping reads a row or two for each of hundreds of thousands of records, and parsing
// each read again costs more than running it.
type keptReader struct {
	w  *writeTx
	tx *sql.Tx
}

// QueryRowContext runs query in the transaction with a statement kept for its text.
func (p keptReader) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := p.w.stmt(p.tx, query)
	if err != nil {
		return p.tx.QueryRowContext(ctx, query, args...) // the error comes again, with the row
	}
	return st.QueryRowContext(ctx, args...)
}

// write runs fn inside a write of the directory.
func (d *Directory) write(ctx context.Context, fn func(w *writeTx) error) (dirsvc.ImportStats, error) {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	return d.writeLocked(ctx, fn)
}

// ErrWriteBusy: a background write found the directory busy with another write (an import, say) and
// did not wait for it.
var ErrWriteBusy = errors.New("the directory is busy with another write")

// tryWrite is write for background work (pruning), which never queues behind another write: it
// answers ErrWriteBusy at once when one is under way in this process.
func (d *Directory) tryWrite(ctx context.Context, fn func(w *writeTx) error) (dirsvc.ImportStats, error) {
	if !d.wmu.TryLock() {
		return dirsvc.ImportStats{}, ErrWriteBusy
	}
	defer d.wmu.Unlock()
	return d.writeLocked(ctx, fn)
}

// writeLocked is write, with wmu held.
func (d *Directory) writeLocked(ctx context.Context, fn func(w *writeTx) error) (dirsvc.ImportStats, error) {
	if d.writer == nil {
		return dirsvc.ImportStats{}, errReplica
	}
	ops, err := d.opsDB(ctx)
	if err != nil {
		return dirsvc.ImportStats{}, err
	}
	return writeFiles(ctx, d.writer, ops, fn, d.committed)
}

// writeFiles runs fn inside a write of a directory's published file (pub) and its operations file
// (ops), and calls committed once the published file has committed.
func writeFiles(ctx context.Context, pub, ops *sql.DB, fn func(w *writeTx) error, committed func()) (dirsvc.ImportStats, error) {
	opsTx, err := ops.BeginTx(ctx, nil)
	if err != nil {
		return dirsvc.ImportStats{}, fmt.Errorf("begin ops write: %w", err)
	}
	defer opsTx.Rollback()
	pubTx, err := pub.BeginTx(ctx, nil)
	if err != nil {
		return dirsvc.ImportStats{}, fmt.Errorf("begin directory write: %w", err)
	}
	defer pubTx.Rollback()
	w := &writeTx{ctx: ctx, pub: pubTx, ops: opsTx, now: writeClock(), stmts: map[*sql.Tx]map[string]*sql.Stmt{}, published: newPublishedRows()}
	defer func() {
		if w.ahead != nil {
			w.ahead.stop.Store(true) // the write ended before its search step
		}
	}()
	start := time.Now()
	if err := fn(w); err != nil {
		return dirsvc.ImportStats{}, err
	}
	if err := w.refreshTaxonomy(); err != nil {
		return dirsvc.ImportStats{}, err
	}
	w.step("records", start, 0) // with the steps fn noted inside it (an import's indexes)
	commitOps := opsTx.Commit
	if w.fresh {
		// Nothing orders the commits of files built aside (build.go), and the steps after the
		// records do not touch the operations file: it commits beside them.
		done := make(chan error, 1)
		go func() { done <- opsTx.Commit() }()
		commitOps = sync.OnceValue(func() error { return <-done })
		defer commitOps() // a write that fails returns once the commit has ended
	}
	prog := dirsvc.ProgressOf(ctx)
	for _, s := range []struct {
		name string
		run  func() error
	}{{"narrowing", w.refreshNarrowing}, {"feed", w.logFeed}, {"search", w.refreshSearch}} {
		start := time.Now()
		prog.Step(s.name, 0)
		if err := s.run(); err != nil {
			return dirsvc.ImportStats{}, err
		}
		w.step(s.name, start, len(w.stats.Steps))
		prog.StepDone(0)
	}
	if w.lateIndexes != nil {
		start := time.Now()
		prog.Step("late-indexes", 0)
		if err := w.lateIndexes(); err != nil {
			return dirsvc.ImportStats{}, err
		}
		w.step("late-indexes", start, len(w.stats.Steps))
		prog.StepDone(0)
	}
	start = time.Now()
	prog.Step("commit", 0)
	if err := pubTx.Commit(); err != nil {
		return dirsvc.ImportStats{}, fmt.Errorf("commit directory write: %w", err)
	}
	w.step("commit", start, len(w.stats.Steps))
	prog.StepDone(0)
	committed()
	start = time.Now()
	prog.Step("ops-commit", 0)
	if err := commitOps(); err != nil {
		return w.stats, fmt.Errorf("commit ops write after the directory committed: %w", err)
	}
	w.step("ops-commit", start, len(w.stats.Steps))
	prog.StepDone(0)
	return w.stats, nil
}

// step notes a step of the write that began at start. The steps noted from stats.Steps[from] on
// ran inside it: it goes before them, with its own time, less theirs.
func (w *writeTx) step(name string, start time.Time, from int) {
	took := time.Since(start)
	for _, s := range w.stats.Steps[from:] {
		took -= s.Took
	}
	w.stats.Steps = slices.Insert(w.stats.Steps, from, dirsvc.Step{Name: name, Took: took})
}

// writeClock gives a write its time; a variable so a test can fix it and compare whole files.
var writeClock = dirsvc.Now

// clearVersions clears what the store assigns, so a record's canonical form holds none of it.
func clearVersions(rec dirsvc.Record) {
	m := rec.Base()
	m.Version, m.LocalRevision, m.UpdatedAt = 0, 0, time.Time{}
}

func kindRank(k dirsvc.Kind) int { return slices.Index(dirsvc.Kinds, k) }

// save stores a record's canonical form when it changed and publishes its views.
func (w *writeTx) save(rec dirsvc.Record, lk dirsvc.Lookup, prev row, prevOwn []byte) error {
	pr, err := prepare(rec, lk, prev, prevOwn, w.now)
	if err != nil {
		return err
	}
	return w.store(pr)
}

// store writes a prepared record: its canonical form when it changed, then its publication.
func (w *writeTx) store(pr prepared) error {
	if pr.ownChanged {
		if err := w.exec(w.ops, saveSourceSQL, pr.rec.Base().PublicID, string(pr.rec.Kind()), pr.hash, pr.doc); err != nil {
			return fmt.Errorf("save source of %s: %w", pr.rec.Base().PublicID, err)
		}
	}
	return w.apply(pr.rec.Base(), pr.pub)
}

// apply writes a publication: the record's row, its views, its list keys and its change-log row.
func (w *writeTx) apply(m *dirsvc.Meta, p publication) error {
	if !p.changed {
		w.stats.Unchanged++
		return nil
	}
	id, r := m.PublicID, p.row
	nullable := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	rows := w.published
	rows.records.add(id, id, string(r.kind), string(r.state), int64(r.visibleTo), int64(r.seenBy), nullable(r.survivor),
		r.version, r.localRevision, r.viewHash, nullable(r.refs[0]), nullable(r.refs[1]),
		nullable(r.refs[2]), nullable(r.refs[3]), r.updatedAt.Format(time.RFC3339Nano), r.heads.encode())
	w.touched(r.kind, id, p.prevRefs, r.refs)
	w.touchedSearch(r.kind, id, p.prevRefs, r.refs)
	w.taxonomyStale = w.taxonomyStale || r.kind == dirsvc.KindService
	if !p.isNew {
		if err := w.exec(w.pub, "DELETE FROM projections WHERE public_id = ?", id); err != nil {
			return fmt.Errorf("publish %s: %w", id, err)
		}
		if err := w.exec(w.pub, "DELETE FROM list_keys WHERE public_id = ?", id); err != nil {
			return fmt.Errorf("publish list keys of %s: %w", id, err)
		}
	}
	for _, v := range p.views {
		if v.etag == "" {
			v.etag = dirsvc.ETag(v.body)
		}
		rows.views.add(id, id, v.audiences, v.body, v.etag, v.updatedMs)
	}
	for _, k := range p.keys {
		rows.keys.add(id, id, k.key, k.audiences)
	}
	if err := w.flushPublished(!rows.batching); err != nil {
		return err
	}
	// The change-log rows wait for the placements that logFeed gives them, and go in with them.
	for _, e := range p.events {
		w.changes = append(w.changes, loggedChange{
			kind: string(r.kind), id: id, version: e.version, localRevision: e.localRevision, event: e.kind,
			survivor: nullable(r.survivor), origin: nullable(m.Origin), audiences: e.audiences,
		})
		if w.logged == nil {
			w.logged = map[string][]loggedEvent{}
		}
		w.logged[id] = append(w.logged[id], loggedEvent{e.audiences})
	}
	w.stats.Events += len(p.events)
	switch {
	case p.isNew:
		w.stats.Created++
	case r.state == dirsvc.StateRemoved:
		w.stats.Removed++
	default:
		w.stats.Updated++
	}
	return nil
}

// maxKeysPerInsert keeps an insert of list keys well under SQLite's limit on bound parameters.
const maxKeysPerInsert = 500

const rowColumns = `public_id, kind, state, visible_to, seen_by, COALESCE(survivor_id, ''), version,
    local_revision, view_hash, COALESCE(organisation_id, ''), COALESCE(location_id, ''),
    COALESCE(service_id, ''), COALESCE(practitioner_id, ''), updated_at, audience_heads`

type scanner interface{ Scan(...any) error }

func scanRow(s scanner) (string, row, error) {
	var (
		id, at    string
		vis, seen int64
		hb        []byte
		r         = row{exists: true}
	)
	err := s.Scan(&id, &r.kind, &r.state, &vis, &seen, &r.survivor, &r.version, &r.localRevision,
		&r.viewHash, &r.refs[0], &r.refs[1], &r.refs[2], &r.refs[3], &at, &hb)
	if err != nil {
		return "", row{}, err
	}
	if r.heads, err = decodeHeads(hb); err != nil {
		return "", row{}, fmt.Errorf("record %s: %w", id, err)
	}
	r.visibleTo, r.seenBy = dirsvc.Audiences(vis), dirsvc.Audiences(seen)
	if r.updatedAt, err = time.Parse(time.RFC3339Nano, at); err != nil {
		return "", row{}, fmt.Errorf("record %s: bad updated_at %q: %w", id, at, err)
	}
	return id, r, nil
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// loadRow reads one record's row; a missing one is the zero row.
func loadRow(ctx context.Context, q querier, id string) (row, error) {
	_, r, err := scanRow(q.QueryRowContext(ctx, "SELECT "+rowColumns+" FROM records WHERE public_id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return row{}, nil
	}
	return r, err
}
