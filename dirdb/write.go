package dirdb

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sort"
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
}

// exec runs a statement in tx, preparing each distinct statement once per write: an import runs the
// same few statements hundreds of thousands of times.
func (w *writeTx) exec(tx *sql.Tx, query string, args ...any) error {
	byQuery := w.stmts[tx]
	if byQuery == nil {
		byQuery = map[string]*sql.Stmt{}
		w.stmts[tx] = byQuery
	}
	st, ok := byQuery[query]
	if !ok {
		var err error
		if st, err = tx.PrepareContext(w.ctx, query); err != nil {
			return err
		}
		byQuery[query] = st
	}
	_, err := st.ExecContext(w.ctx, args...)
	return err
}

// write runs fn inside a write of the directory.
func (d *Directory) write(ctx context.Context, fn func(w *writeTx) error) (dirsvc.ImportStats, error) {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	ops, err := d.opsDB(ctx)
	if err != nil {
		return dirsvc.ImportStats{}, err
	}
	opsTx, err := ops.BeginTx(ctx, nil)
	if err != nil {
		return dirsvc.ImportStats{}, fmt.Errorf("begin ops write: %w", err)
	}
	defer opsTx.Rollback()
	pubTx, err := d.writer.BeginTx(ctx, nil)
	if err != nil {
		return dirsvc.ImportStats{}, fmt.Errorf("begin directory write: %w", err)
	}
	defer pubTx.Rollback()
	w := &writeTx{ctx: ctx, pub: pubTx, ops: opsTx, now: dirsvc.Now(), stmts: map[*sql.Tx]map[string]*sql.Stmt{}}
	if err := fn(w); err != nil {
		return dirsvc.ImportStats{}, err
	}
	if err := pubTx.Commit(); err != nil {
		return dirsvc.ImportStats{}, fmt.Errorf("commit directory write: %w", err)
	}
	d.changed()
	if err := opsTx.Commit(); err != nil {
		return w.stats, fmt.Errorf("commit ops write after the directory committed: %w", err)
	}
	return w.stats, nil
}

// Import makes the directory equal to the snapshot (see dirsvc.DirectoryWriter).
func (d *Directory) Import(ctx context.Context, snap *dirsvc.Snapshot) (dirsvc.ImportStats, error) {
	if snap.Directory.Slug != d.slug {
		return dirsvc.ImportStats{}, dirsvc.InvalidParam("directory.slug",
			"the file describes directory %q, not %q", snap.Directory.Slug, d.slug)
	}
	// Kind order keeps the change log readable (organisations before their sites and services); ID
	// order within a kind makes every primary-key insert an append, which is most of an import's work.
	recs := slices.Clone(snap.Records)
	sort.Slice(recs, func(i, j int) bool {
		ki, kj := kindRank(recs[i].Kind()), kindRank(recs[j].Kind())
		return ki < kj || ki == kj && recs[i].Base().PublicID < recs[j].Base().PublicID
	})
	for _, rec := range recs {
		clearVersions(rec)
	}
	lk := newMemLookup(snap)
	return d.write(ctx, func(w *writeTx) (err error) {
		if err := w.putDirectory(snap); err != nil {
			return err
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
			if !inFile[id] && r.state != dirsvc.StateRemoved {
				gone = append(gone, id)
			}
		}
		if len(prev) == 0 && len(recs) >= bulkThreshold {
			rebuild, derr := w.deferIndexes()
			if derr != nil {
				return derr
			}
			defer func() {
				if err == nil {
					err = rebuild() // err is the write's result: rebuild only after a write that worked
				}
			}()
		}
		// ops.db is a file of its own: its canonical records are written on another goroutine, beside
		// the publication on this one.
		sources, opsDone := w.sourceWriter()
		err = prepareAll(ctx, recs, func(rec dirsvc.Record) (prepared, error) {
			id := rec.Base().PublicID
			return prepare(rec, lk, prev[id], own[id], w.now)
		}, func(pr prepared) error {
			if pr.ownChanged {
				sources <- pr
			}
			return w.apply(pr.rec.Base(), pr.pub)
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
		}
		return nil
	})
}

// Update replaces one record, or adds it, and republishes what depends on it.
func (d *Directory) Update(ctx context.Context, rec dirsvc.Record) (dirsvc.ImportStats, error) {
	return d.write(ctx, func(w *writeTx) error {
		lk, err := newTxLookup(ctx, w.ops, w.pub)
		if err != nil {
			return err
		}
		clearVersions(rec)
		m := rec.Base()
		if old := lk.get(m.PublicID); old != nil {
			if old.Kind() != rec.Kind() {
				return dirsvc.InvalidParam("publicId", "%s is a %s, not a %s", m.PublicID, old.Kind(), rec.Kind())
			}
			if m.State == "" {
				m.State, m.Survivor = old.Base().State, old.Base().Survivor
			}
		}
		if m.State == "" {
			m.State = dirsvc.StateLive
		}
		for kind, ids := range rec.Refs() {
			for _, id := range ids {
				if r := lk.get(id); r == nil || r.Kind() != kind {
					return dirsvc.InvalidParam(string(kind), "%s %s does not exist", kind, id)
				}
			}
		}
		lk.put(rec)
		return w.cascade(lk, m.PublicID)
	})
}

// Transition applies a lifecycle operation to a record and republishes what depends on it.
func (d *Directory) Transition(ctx context.Context, publicID string, t dirsvc.Transition) (dirsvc.ImportStats, error) {
	return d.write(ctx, func(w *writeTx) error {
		lk, err := newTxLookup(ctx, w.ops, w.pub)
		if err != nil {
			return err
		}
		rec := lk.get(publicID)
		if rec == nil {
			return dirsvc.ErrNotFound
		}
		m := rec.Base()
		m.Survivor = ""
		switch t.To {
		case dirsvc.StateMerged:
			s := lk.get(t.Survivor)
			if s == nil || s.Kind() != rec.Kind() || t.Survivor == publicID ||
				(s.Base().State != dirsvc.StateLive && s.Base().State != dirsvc.StateVisibilityReduced) {
				return dirsvc.InvalidParam("survivor", "the survivor must be another live %s", rec.Kind())
			}
			m.Survivor = t.Survivor
		case dirsvc.StateVisibilityReduced:
			if t.VisibleTo == 0 || !t.VisibleTo.Restricted() {
				return dirsvc.InvalidParam("audiences", "reducing visibility needs the audiences that may still see the record, fewer than all")
			}
			m.VisibleTo = t.VisibleTo
		case dirsvc.StateLive:
			if t.VisibleTo != 0 {
				m.VisibleTo = t.VisibleTo
			}
		case dirsvc.StateClosed, dirsvc.StateRemoved, dirsvc.StateTakedown:
		default:
			return dirsvc.InvalidParam("state", "%q is not a lifecycle state", t.To)
		}
		m.State = t.To
		lk.put(rec)
		return w.cascade(lk, publicID)
	})
}

// Source returns the canonical form of a record, with every detail.
func (d *Directory) Source(ctx context.Context, publicID string) (dirsvc.Record, error) {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	ops, err := d.opsDB(ctx)
	if err != nil {
		return nil, err
	}
	tx, err := ops.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	rec, err := loadSource(ctx, tx, publicID)
	if err != nil {
		return nil, err
	}
	prev, err := loadRow(ctx, d.writer, publicID)
	if err != nil {
		return nil, err
	}
	m := rec.Base()
	m.Version, m.LocalRevision, m.UpdatedAt = prev.version, prev.localRevision, prev.updatedAt
	return rec, nil
}

// cascade saves the record root (already laid over lk) and republishes every record whose views
// depend on it.
func (w *writeTx) cascade(lk *txLookup, root string) error {
	ids, err := w.dependents(lk, root)
	if err != nil {
		return err
	}
	for _, id := range append([]string{root}, ids...) {
		rec := lk.get(id)
		if lk.err != nil {
			return lk.err
		}
		if rec == nil {
			continue
		}
		prev, err := loadRow(w.ctx, w.pub, id)
		if err != nil {
			return err
		}
		var own []byte
		if err := w.ops.QueryRowContext(w.ctx, "SELECT own_hash FROM source_records WHERE public_id = ?", id).Scan(&own); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("read source hash of %s: %w", id, err)
		}
		if err := w.save(rec, lk, prev, own); err != nil {
			return err
		}
		if lk.err != nil {
			return lk.err
		}
	}
	return nil
}

// dependents returns, in kind order, the records whose views depend on the record id.
func (w *writeTx) dependents(lk *txLookup, id string) ([]string, error) {
	rec := lk.get(id)
	if rec == nil {
		return nil, lk.err
	}
	var out []string
	add := func(kind dirsvc.Kind, col, ref string) ([]string, error) {
		ids, err := referrers(w.ctx, w.pub, kind, col, ref)
		out = append(out, ids...)
		return ids, err
	}
	var services []string
	switch r := rec.(type) {
	case *dirsvc.Organisation:
		if _, err := add(dirsvc.KindLocation, "organisation_id", id); err != nil {
			return nil, err
		}
		ids, err := add(dirsvc.KindService, "organisation_id", id)
		if err != nil {
			return nil, err
		}
		services = ids
	case *dirsvc.Location:
		out = append(out, r.Organisation)
		prev, err := loadRow(w.ctx, w.pub, id)
		if err != nil {
			return nil, err
		}
		if old := prev.refs[0]; old != "" && old != r.Organisation {
			out = append(out, old)
		}
		ids, err := add(dirsvc.KindService, "location_id", id)
		if err != nil {
			return nil, err
		}
		services = ids
	case *dirsvc.Service:
		services = []string{id}
	case *dirsvc.Practitioner:
		if _, err := add(dirsvc.KindRole, "practitioner_id", id); err != nil {
			return nil, err
		}
	}
	for _, s := range services {
		if _, err := add(dirsvc.KindRole, "service_id", s); err != nil {
			return nil, err
		}
	}
	seen := map[string]bool{id: true}
	uniq := out[:0]
	for _, x := range out {
		if !seen[x] {
			seen[x] = true
			uniq = append(uniq, x)
		}
	}
	sort.SliceStable(uniq, func(i, j int) bool {
		return kindRank(dirsvc.KindOfID(uniq[i])) < kindRank(dirsvc.KindOfID(uniq[j]))
	})
	return uniq, nil
}

// bulkThreshold is the size from which a first import builds directory.db's secondary indexes after
// loading rather than row by row: SQLite builds an index from one sort far faster than from random
// inserts.
var bulkThreshold = 5000 // a variable so tests can take the bulk path with a small fixture

// deferIndexes drops the secondary indexes of directory.db inside the write and returns what
// recreates them, exactly as the schema defines them. The drop is part of the transaction, so a write
// that fails leaves them as they were.
func (w *writeTx) deferIndexes() (func() error, error) {
	rows, err := w.pub.QueryContext(w.ctx, "SELECT name, sql FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL ORDER BY name")
	if err != nil {
		return nil, fmt.Errorf("list indexes: %w", err)
	}
	var names, defs []string
	for rows.Next() {
		var name, def string
		if err := rows.Scan(&name, &def); err != nil {
			rows.Close()
			return nil, err
		}
		names, defs = append(names, name), append(defs, def)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, name := range names {
		if _, err := w.pub.ExecContext(w.ctx, `DROP INDEX "`+name+`"`); err != nil {
			return nil, fmt.Errorf("drop index %s: %w", name, err)
		}
	}
	return func() error {
		for i, def := range defs {
			if _, err := w.pub.ExecContext(w.ctx, def); err != nil {
				return fmt.Errorf("build index %s: %w", names[i], err)
			}
		}
		return nil
	}, nil
}

// clearVersions clears what the store assigns, so a record's canonical form holds none of it.
func clearVersions(rec dirsvc.Record) {
	m := rec.Base()
	m.Version, m.LocalRevision, m.UpdatedAt = 0, 0, time.Time{}
}

func kindRank(k dirsvc.Kind) int { return slices.Index(dirsvc.Kinds, k) }

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
	pr.pub, err = publish(rec, lk, prev, pr.ownChanged, now)
	return pr, err
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

// save stores a record's canonical form when it changed and publishes its views.
func (w *writeTx) save(rec dirsvc.Record, lk dirsvc.Lookup, prev row, prevOwn []byte) error {
	pr, err := prepare(rec, lk, prev, prevOwn, w.now)
	if err != nil {
		return err
	}
	return w.store(pr)
}

const saveSourceSQL = `
INSERT INTO source_records (public_id, kind, own_hash, doc) VALUES (?, ?, ?, ?)
ON CONFLICT (public_id) DO UPDATE SET kind = excluded.kind, own_hash = excluded.own_hash, doc = excluded.doc`

// store writes a prepared record: its canonical form when it changed, then its publication.
func (w *writeTx) store(pr prepared) error {
	if pr.ownChanged {
		if err := w.exec(w.ops, saveSourceSQL, pr.rec.Base().PublicID, string(pr.rec.Kind()), pr.hash, pr.doc); err != nil {
			return fmt.Errorf("save source of %s: %w", pr.rec.Base().PublicID, err)
		}
	}
	return w.apply(pr.rec.Base(), pr.pub)
}

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

// apply writes a publication: the record's row, its views, its areas and its change-log row.
func (w *writeTx) apply(m *dirsvc.Meta, p publication) error {
	if p.event == "" {
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
	err := w.exec(w.pub, `
INSERT INTO records (public_id, kind, state, visible_to, seen_by, survivor_id, version, local_revision,
    view_hash, organisation_id, location_id, service_id, practitioner_id, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (public_id) DO UPDATE SET kind = excluded.kind, state = excluded.state,
    visible_to = excluded.visible_to, seen_by = excluded.seen_by, survivor_id = excluded.survivor_id,
    version = excluded.version, local_revision = excluded.local_revision, view_hash = excluded.view_hash,
    organisation_id = excluded.organisation_id, location_id = excluded.location_id,
    service_id = excluded.service_id, practitioner_id = excluded.practitioner_id,
    updated_at = excluded.updated_at`,
		id, string(r.kind), string(r.state), int64(r.visibleTo), int64(r.seenBy), nullable(r.survivor),
		r.version, r.localRevision, r.viewHash, nullable(r.refs[0]), nullable(r.refs[1]),
		nullable(r.refs[2]), nullable(r.refs[3]), r.updatedAt.Format(time.RFC3339Nano))
	if err != nil {
		return fmt.Errorf("publish %s: %w", id, err)
	}
	if !p.isNew {
		if err := w.exec(w.pub, "DELETE FROM projections WHERE public_id = ?", id); err != nil {
			return fmt.Errorf("publish %s: %w", id, err)
		}
		if err := w.exec(w.pub, "DELETE FROM record_areas WHERE public_id = ?", id); err != nil {
			return fmt.Errorf("publish areas of %s: %w", id, err)
		}
	}
	for _, v := range p.views {
		if err := w.exec(w.pub, "INSERT INTO projections (public_id, audiences, body, etag) VALUES (?, ?, ?, ?)",
			id, v.audiences, v.body, etag(v.body)); err != nil {
			return fmt.Errorf("publish views of %s: %w", id, err)
		}
	}
	for _, area := range r.areas {
		if err := w.exec(w.pub, "INSERT INTO record_areas (area, public_id) VALUES (?, ?)", area, id); err != nil {
			return fmt.Errorf("publish areas of %s: %w", id, err)
		}
	}
	if err := w.exec(w.pub, `
INSERT INTO changes (kind, public_id, version, local_revision, event_type, survivor_id, origin, audiences, at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		string(r.kind), id, r.version, r.localRevision, p.event, nullable(r.survivor), nullable(m.Origin),
		int64(p.eventAudiences), w.now.Format(time.RFC3339Nano)); err != nil {
		return fmt.Errorf("log change of %s: %w", id, err)
	}
	w.stats.Events++
	switch {
	case p.isNew:
		w.stats.Created++
	case p.event == dirsvc.EventDeleted:
		w.stats.Removed++
	default:
		w.stats.Updated++
	}
	return nil
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

const rowColumns = `public_id, kind, state, visible_to, seen_by, COALESCE(survivor_id, ''), version,
    local_revision, view_hash, COALESCE(organisation_id, ''), COALESCE(location_id, ''),
    COALESCE(service_id, ''), COALESCE(practitioner_id, ''), updated_at`

type scanner interface{ Scan(...any) error }

func scanRow(s scanner) (string, row, error) {
	var (
		id, at    string
		vis, seen int64
		r         = row{exists: true}
	)
	err := s.Scan(&id, &r.kind, &r.state, &vis, &seen, &r.survivor, &r.version, &r.localRevision,
		&r.viewHash, &r.refs[0], &r.refs[1], &r.refs[2], &r.refs[3], &at)
	if err != nil {
		return "", row{}, err
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
