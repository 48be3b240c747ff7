package dirdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"

	"github.com/dirsvc/dirsvc"
)

// Update replaces one record, or adds it, and republishes what depends on it.
func (d *Directory) Update(ctx context.Context, rec dirsvc.Record) (dirsvc.ImportStats, error) {
	return d.write(ctx, func(w *writeTx) error {
		lk, err := newTxLookup(ctx, w.ops, w.pub)
		if err != nil {
			return err
		}
		clearVersions(rec)
		m := rec.Base()
		old := lk.get(m.PublicID)
		if old != nil && old.Base().Origin != "" {
			return refuseMirrored(old)
		}
		if m.Origin != "" {
			return dirsvc.InvalidParam("origin", "the origin of a record is set only by mirroring")
		}
		if old != nil {
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
		if rec.Base().Origin != "" {
			return refuseMirrored(rec)
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
	if d.writer == nil {
		return nil, errReplica
	}
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
