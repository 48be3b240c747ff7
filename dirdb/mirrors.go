package dirdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dirsvc/dirsvc"
)

// Mirrors: a directory's configured harvests of other directories, their state, and the records
// each owns (ops.db, primary only). A mirror's records are written only through ApplyMirror; the
// directory's own writes (Update, Transition, Import) refuse them (refuseMirrored).

// errNoMirror is the answer for a mirror name the directory does not have.
func errNoMirror(name string) error {
	return dirsvc.Errorf(dirsvc.ENotFound, "The directory has no mirror named %q.", name)
}

// mirrorDirectory returns the directory slug of a primary's store; a replica has no mirrors.
func (s *Store) mirrorDirectory(ctx context.Context, slug string) (*Directory, error) {
	if s.replica {
		return nil, errReplica
	}
	return s.Directory(ctx, slug)
}

// opsLocked runs fn on the directory's ops.db with the write lock held: a change of a mirror's
// configuration or state that touches no record.
func (d *Directory) opsLocked(ctx context.Context, fn func(ops *sql.DB) error) error {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	if d.writer == nil {
		return errReplica
	}
	ops, err := d.opsDB(ctx)
	if err != nil {
		return err
	}
	return fn(ops)
}

// AddMirror adds a mirror to a directory; a conflict when the name is taken.
func (s *Store) AddMirror(ctx context.Context, slug string, m dirsvc.Mirror) error {
	d, err := s.mirrorDirectory(ctx, slug)
	if err != nil {
		return err
	}
	return d.opsLocked(ctx, func(ops *sql.DB) error {
		res, err := ops.ExecContext(ctx, `
INSERT INTO mirrors (name, upstream, upstream_dir, client_id, client_secret, audiences, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (name) DO NOTHING`,
			m.Name, m.Upstream, m.UpstreamDir, m.ClientID, m.Secret, int64(m.Audiences), m.CreatedAt.UTC().Format(time.RFC3339Nano))
		if err != nil {
			return fmt.Errorf("add mirror: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return dirsvc.Errorf(dirsvc.EConflict, "The directory already has a mirror named %q.", m.Name)
		}
		return nil
	})
}

const mirrorColumns = `name, upstream, upstream_dir, client_id, client_secret, audiences, created_at, cursor, tier,
    generation, full_harvest, harvested, last_success, last_error`

func scanMirror(sc scanner) (dirsvc.Mirror, error) {
	var m dirsvc.Mirror
	var aud int64
	var created, success string
	err := sc.Scan(&m.Name, &m.Upstream, &m.UpstreamDir, &m.ClientID, &m.Secret, &aud, &created, &m.Cursor, &m.Tier,
		&m.Generation, &m.FullHarvest, &m.Harvested, &success, &m.LastError)
	if err != nil {
		return m, err
	}
	m.Audiences = dirsvc.Audiences(aud)
	m.CreatedAt, _ = time.Parse(time.RFC3339Nano, created)
	if success != "" {
		m.LastSuccess, _ = time.Parse(time.RFC3339Nano, success)
	}
	return m, nil
}

// Mirrors returns a directory's mirrors, by name (see dirsvc.MirrorStore).
func (s *Store) Mirrors(ctx context.Context, slug string) ([]dirsvc.Mirror, error) {
	d, err := s.mirrorDirectory(ctx, slug)
	if err != nil {
		return nil, err
	}
	var out []dirsvc.Mirror
	err = d.opsLocked(ctx, func(ops *sql.DB) error {
		rows, err := ops.QueryContext(ctx, "SELECT "+mirrorColumns+" FROM mirrors ORDER BY name")
		if err != nil {
			return fmt.Errorf("read mirrors: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			m, err := scanMirror(rows)
			if err != nil {
				return fmt.Errorf("read mirrors: %w", err)
			}
			out = append(out, m)
		}
		return rows.Err()
	})
	return out, err
}

// SetMirrorSecret replaces a mirror's stored client secret (see dirsvc.MirrorStore).
func (s *Store) SetMirrorSecret(ctx context.Context, slug, name, secret string) error {
	d, err := s.mirrorDirectory(ctx, slug)
	if err != nil {
		return err
	}
	return d.opsLocked(ctx, func(ops *sql.DB) error {
		res, err := ops.ExecContext(ctx, "UPDATE mirrors SET client_secret = ? WHERE name = ?", secret, name)
		if err != nil {
			return fmt.Errorf("store the mirror's client secret: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errNoMirror(name)
		}
		return nil
	})
}

// MirrorFailed records a harvest's failure (see dirsvc.MirrorStore).
func (s *Store) MirrorFailed(ctx context.Context, slug, name, msg string) error {
	d, err := s.mirrorDirectory(ctx, slug)
	if err != nil {
		return err
	}
	return d.opsLocked(ctx, func(ops *sql.DB) error {
		_, err := ops.ExecContext(ctx, "UPDATE mirrors SET last_error = ? WHERE name = ?", msg, name)
		return err
	})
}

// RestartMirror begins a new full harvest of a mirror (see dirsvc.MirrorStore).
func (s *Store) RestartMirror(ctx context.Context, slug, name, tier string) error {
	d, err := s.mirrorDirectory(ctx, slug)
	if err != nil {
		return err
	}
	return d.opsLocked(ctx, func(ops *sql.DB) error {
		res, err := ops.ExecContext(ctx, `UPDATE mirrors SET cursor = '', tier = ?, generation = generation + 1,
    full_harvest = 1 WHERE name = ?`, tier, name)
		if err != nil {
			return fmt.Errorf("restart mirror %s: %w", name, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errNoMirror(name)
		}
		return nil
	})
}

// UnseenMirrored returns records of the mirror its current full harvest has not seen (see
// dirsvc.MirrorStore).
func (s *Store) UnseenMirrored(ctx context.Context, slug, name, after string, limit int) ([]string, error) {
	d, err := s.mirrorDirectory(ctx, slug)
	if err != nil {
		return nil, err
	}
	var ids []string
	err = d.opsLocked(ctx, func(ops *sql.DB) error {
		ids, err = queryStrings(ctx, ops, `SELECT public_id FROM mirrored_records
WHERE mirror = ?1 AND generation < (SELECT generation FROM mirrors WHERE name = ?1) AND public_id > ?2
ORDER BY public_id LIMIT ?3`, name, after, limit)
		return err
	})
	return ids, err
}

// ApplyMirror writes a batch of a mirror's harvest (see dirsvc.MirrorStore).
func (s *Store) ApplyMirror(ctx context.Context, slug string, b dirsvc.MirrorBatch) (dirsvc.MirrorStats, error) {
	d, err := s.mirrorDirectory(ctx, slug)
	if err != nil {
		return dirsvc.MirrorStats{}, err
	}
	return d.ApplyMirror(ctx, b)
}

// ApplyMirror writes a batch of a mirror's harvest in one write: each record as the upstream shows it,
// each tombstone as the lifecycle state it names, then every view that depends on them, and the
// mirror's state after the batch. A record this directory holds of its own (or of another mirror) is
// left alone and counted as refused; so is a record that refers to one that is not here. A bulk batch
// is laid over every record of the directory and written as an import of the whole would be: a write
// of many records pays the incremental upkeep of narrowing keys, feed placements and search documents
// for each, the bulk path once for all.
func (d *Directory) ApplyMirror(ctx context.Context, b dirsvc.MirrorBatch) (dirsvc.MirrorStats, error) {
	var st dirsvc.MirrorStats
	// The write lets go of the batch's records once it has laid them over the directory: a bulk
	// batch's later steps have the memory they held.
	ops := b.Ops
	b.Ops = nil
	ws, err := d.write(ctx, func(w *writeTx) error {
		st = dirsvc.MirrorStats{}
		var gen int64
		err := w.ops.QueryRowContext(w.ctx, "SELECT generation FROM mirrors WHERE name = ?", b.Mirror).Scan(&gen)
		if isNoRows(err) {
			return errNoMirror(b.Mirror)
		} else if err != nil {
			return fmt.Errorf("read mirror %s: %w", b.Mirror, err)
		}
		var t mirrorTarget
		var snap *dirsvc.Snapshot
		if b.Bulk {
			if snap, err = w.loadSnapshot(); err != nil {
				return err
			}
			t = newSnapTarget(snap)
		} else {
			lk, err := newTxLookup(w.ctx, w.ops, w.pub)
			if err != nil {
				return err
			}
			t = lkTarget{lk}
		}
		// A bulk batch reads which mirror owns each record once for all, not once a record.
		var owners map[string]string
		if b.Bulk {
			if owners, err = w.mirrorOwners(); err != nil {
				return err
			}
		}
		var roots []string
		fresh := map[string]bool{}
		for _, op := range ops {
			id := op.PublicID
			if op.Record != nil {
				id = op.Record.Base().PublicID
			}
			owner := owners[id]
			if owners == nil {
				err := (keptReader{w, w.ops}).QueryRowContext(w.ctx, "SELECT mirror FROM mirrored_records WHERE public_id = ?", id).Scan(&owner)
				if err != nil && !isNoRows(err) {
					return fmt.Errorf("read the owner of %s: %w", id, err)
				}
			}
			ok, err := mirrorOp(t, owner, b.Mirror, op, fresh)
			if err != nil {
				return err
			}
			if !ok {
				st.Refused++
				continue
			}
			if err := w.exec(w.ops, `INSERT INTO mirrored_records (public_id, mirror, generation) VALUES (?, ?, ?)
ON CONFLICT (public_id) DO UPDATE SET generation = excluded.generation`, id, b.Mirror, gen); err != nil {
				return fmt.Errorf("mark %s mirrored: %w", id, err)
			}
			if owners != nil {
				owners[id] = b.Mirror
			}
			roots = append(roots, id)
			st.Written++
		}
		ops = nil
		if snap != nil {
			err = w.importSnapshot(snap, nil)
		} else {
			err = w.republish(t.(lkTarget).lk, roots, fresh)
		}
		if err != nil {
			return err
		}
		return w.exec(w.ops, `UPDATE mirrors SET cursor = ?, tier = ?, full_harvest = ?, harvested = harvested + ?,
    last_success = ?, last_error = '' WHERE name = ?`,
			b.Cursor, b.Tier, b.FullHarvest, st.Written, w.now.Format(time.RFC3339Nano), b.Mirror)
	})
	st.Steps = ws.Steps
	return st, err
}

// mirrorTarget is what a batch's changes are laid over: the write's lookup of stored records, or
// (bulk) a snapshot of the whole directory.
type mirrorTarget interface {
	get(id string) (dirsvc.Record, error) // nil when there is none
	put(rec dirsvc.Record)
}

type lkTarget struct{ lk *txLookup }

func (t lkTarget) get(id string) (dirsvc.Record, error) { r := t.lk.get(id); return r, t.lk.err }
func (t lkTarget) put(rec dirsvc.Record)                { t.lk.put(rec) }

type snapTarget struct {
	snap *dirsvc.Snapshot
	at   map[string]int // index in snap.Records by public ID
}

func newSnapTarget(snap *dirsvc.Snapshot) *snapTarget {
	t := &snapTarget{snap: snap, at: make(map[string]int, len(snap.Records))}
	for i, r := range snap.Records {
		t.at[r.Base().PublicID] = i
	}
	return t
}

func (t *snapTarget) get(id string) (dirsvc.Record, error) {
	if i, ok := t.at[id]; ok {
		return t.snap.Records[i], nil
	}
	return nil, nil
}

func (t *snapTarget) put(rec dirsvc.Record) {
	id := rec.Base().PublicID
	if i, ok := t.at[id]; ok {
		t.snap.Records[i] = rec
		return
	}
	t.at[id] = len(t.snap.Records)
	t.snap.Records = append(t.snap.Records, rec)
}

// mirrorOp lays one harvested change over t; false when the record is not the mirror's to write
// (owner names the mirror that owns the record now, if any). A record that was not here before is
// added to fresh.
func mirrorOp(t mirrorTarget, owner, mirror string, op dirsvc.MirrorOp, fresh map[string]bool) (bool, error) {
	id := op.PublicID
	if op.Record != nil {
		id = op.Record.Base().PublicID
	}
	existing, err := t.get(id)
	if err != nil {
		return false, err
	}
	if owner != mirror && (existing != nil || owner != "") {
		return false, nil
	}
	if rec := op.Record; rec != nil {
		if existing != nil && existing.Kind() != rec.Kind() {
			return false, nil
		}
		for kind, ids := range rec.Refs() {
			for _, ref := range ids {
				if ref == "" {
					continue // a location the upstream does not show the client
				}
				if r, err := t.get(ref); r == nil || r.Kind() != kind {
					return false, err
				}
			}
		}
		clearVersions(rec)
		t.put(rec)
		if existing == nil {
			fresh[id] = true
		}
		return true, nil
	}
	if existing == nil {
		return false, nil // a tombstone of a record never harvested
	}
	m := existing.Base()
	m.Survivor = ""
	switch op.Tombstone {
	case dirsvc.EventClosed:
		m.State = dirsvc.StateClosed
	case dirsvc.EventMerged:
		s, err := t.get(op.Survivor)
		if err != nil {
			return false, err
		}
		if s != nil && s.Kind() == existing.Kind() && op.Survivor != id && s.Base().Origin == m.Origin &&
			(s.Base().State == dirsvc.StateLive || s.Base().State == dirsvc.StateVisibilityReduced) {
			m.State, m.Survivor = dirsvc.StateMerged, op.Survivor
		} else {
			m.State = dirsvc.StateRemoved // a survivor that is not here: nothing to send readers to
		}
	case dirsvc.EventVisibilityReduced:
		// The client no longer sees the record: nobody here does.
		m.State, m.VisibleTo = dirsvc.StateVisibilityReduced, dirsvc.StaffOnly
	default: // deleted
		m.State = dirsvc.StateRemoved
	}
	t.put(existing)
	return true, nil
}

// republish saves the records roots (laid over lk) and every record whose views depend on them, each
// once, in kind order. No stored record refers to one that was not here before the write (fresh): of
// those, only a location has dependents to look for (its organisation, whose view it changes).
func (w *writeTx) republish(lk *txLookup, roots []string, fresh map[string]bool) error {
	seen := map[string]bool{}
	var ids []string
	for _, id := range roots {
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	for _, root := range ids[:len(ids):len(ids)] {
		if fresh[root] && dirsvc.KindOfID(root) != dirsvc.KindLocation {
			continue
		}
		deps, err := w.dependents(lk, root)
		if err != nil {
			return err
		}
		for _, id := range deps {
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	slices.SortStableFunc(ids, func(a, b string) int {
		return kindRank(dirsvc.KindOfID(a)) - kindRank(dirsvc.KindOfID(b))
	})
	return w.batchRows(func() error {
		for _, id := range ids {
			if err := w.saveFromLookup(lk, id); err != nil {
				return err
			}
		}
		return nil
	})
}

// saveFromLookup saves the record id as lk holds it, against its stored row and canonical hash.
func (w *writeTx) saveFromLookup(lk *txLookup, id string) error {
	rec := lk.get(id)
	if lk.err != nil || rec == nil {
		return lk.err
	}
	prev, err := loadRow(w.ctx, keptReader{w, w.pub}, id)
	if err != nil {
		return err
	}
	var own []byte
	if err := (keptReader{w, w.ops}).QueryRowContext(w.ctx, "SELECT own_hash FROM source_records WHERE public_id = ?", id).Scan(&own); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("read source hash of %s: %w", id, err)
	}
	if err := w.save(rec, lk, prev, own); err != nil {
		return err
	}
	return lk.err
}

// RemoveMirror removes a mirror: every record it harvested is removed here (readers get 410, the
// feed a deleted tombstone) and the mirror's configuration and state are deleted.
func (s *Store) RemoveMirror(ctx context.Context, slug, name string) (dirsvc.MirrorStats, error) {
	d, err := s.mirrorDirectory(ctx, slug)
	if err != nil {
		return dirsvc.MirrorStats{}, err
	}
	var st dirsvc.MirrorStats
	_, err = d.write(ctx, func(w *writeTx) error {
		st = dirsvc.MirrorStats{}
		res, err := w.ops.ExecContext(w.ctx, "DELETE FROM mirrors WHERE name = ?", name)
		if err != nil {
			return fmt.Errorf("remove mirror %s: %w", name, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errNoMirror(name)
		}
		ids, err := queryStrings(w.ctx, w.ops, "SELECT public_id FROM mirrored_records WHERE mirror = ? ORDER BY public_id", name)
		if err != nil {
			return fmt.Errorf("list the records of mirror %s: %w", name, err)
		}
		lk, err := newTxLookup(w.ctx, w.ops, w.pub)
		if err != nil {
			return err
		}
		var roots []string
		for _, id := range ids {
			if rec := lk.get(id); rec != nil && rec.Base().State != dirsvc.StateRemoved {
				rec.Base().State, rec.Base().Survivor = dirsvc.StateRemoved, ""
				lk.put(rec)
				roots = append(roots, id)
			}
			if lk.err != nil {
				return lk.err
			}
		}
		st.Written = len(roots)
		if err := w.republish(lk, roots, nil); err != nil {
			return err
		}
		_, err = w.ops.ExecContext(w.ctx, "DELETE FROM mirrored_records WHERE mirror = ?", name)
		return err
	})
	return st, err
}

// refuseMirrored is the answer to a local write of a record that carries an origin: a mirror
// would overwrite the change with the upstream's next one.
func refuseMirrored(rec dirsvc.Record) error {
	m := rec.Base()
	return dirsvc.Errorf(dirsvc.EMirrored, "%s is mirrored from %s and read-only here: a local change would be overwritten by the next harvest; propose the change upstream (dirsvc mirror forward)",
		m.PublicID, strings.TrimSuffix(m.Origin, "/federation/manifest"))
}

// mirroredIDs returns the public IDs of the records the directory's mirrors own.
func (w *writeTx) mirroredIDs() (map[string]bool, error) {
	ids, err := queryStrings(w.ctx, w.ops, "SELECT public_id FROM mirrored_records")
	if err != nil {
		return nil, fmt.Errorf("read mirrored records: %w", err)
	}
	out := make(map[string]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out, nil
}

// mirrorOwners returns the mirror that owns each mirrored record of the directory, by public ID.
func (w *writeTx) mirrorOwners() (map[string]string, error) {
	out := map[string]string{}
	err := w.eachRow(w.ops, "SELECT public_id, mirror FROM mirrored_records", nil, func(s scanner) error {
		var id, mirror string
		if err := s.Scan(&id, &mirror); err != nil {
			return err
		}
		out[id] = mirror
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read mirrored records: %w", err)
	}
	return out, nil
}

// MirrorOf returns the name of the mirror that owns the record publicID; not found when no mirror
// of the directory does.
func (s *Store) MirrorOf(ctx context.Context, slug, publicID string) (string, error) {
	d, err := s.mirrorDirectory(ctx, slug)
	if err != nil {
		return "", err
	}
	var name string
	err = d.opsLocked(ctx, func(ops *sql.DB) error {
		err := ops.QueryRowContext(ctx, "SELECT mirror FROM mirrored_records WHERE public_id = ?", publicID).Scan(&name)
		if isNoRows(err) {
			return dirsvc.Errorf(dirsvc.ENotFound, "%s is not a mirrored record of directory %s.", publicID, slug)
		}
		return err
	})
	return name, err
}
