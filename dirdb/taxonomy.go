package dirdb

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dirsvc/dirsvc"
)

// refreshTaxonomy publishes the taxonomy as each served audience sees it again when the write may
// have changed it: it imported a directory (whose taxonomy may be new), or changed the views of a
// service (which may start or end an audience's use of an entry). It runs once the write has
// published its records, reading their keys, so every write that changes what an audience sees
// updates that audience's taxonomy with it.
func (w *writeTx) refreshTaxonomy() error {
	if !w.taxonomyStale {
		return nil
	}
	var doc []byte
	err := w.ops.QueryRowContext(w.ctx, "SELECT taxonomy FROM source_directory WHERE id = 1").Scan(&doc)
	if errors.Is(err, sql.ErrNoRows) {
		return nil // a directory never imported publishes no taxonomy
	} else if err != nil {
		return fmt.Errorf("read source taxonomy: %w", err)
	}
	var t dirsvc.Taxonomy
	if err := json.Unmarshal(doc, &t); err != nil {
		return fmt.Errorf("decode source taxonomy: %w", err)
	}
	return w.putTaxonomy(&t)
}

// taxonomyUse returns, for each served audience, what of t the services it sees use: read from the
// list keys of their views (type:, lt:, pg:, tg:), which exist only for what some served audience
// sees, so that what only services for staff use is never published.
func (w *writeTx) taxonomyUse(t *dirsvc.Taxonomy) (map[dirsvc.Audience]dirsvc.TaxonomyUse, error) {
	use := map[dirsvc.Audience]dirsvc.TaxonomyUse{}
	for _, a := range dirsvc.ServedAudiences {
		use[a] = dirsvc.TaxonomyUse{PlatformTypes: map[string]bool{}, LocalTypes: map[string]bool{},
			Programs: map[string]bool{}, TargetGroups: map[string]bool{}}
	}
	mark := func(prefix string, codes []string, set func(dirsvc.TaxonomyUse) map[string]bool) error {
		for _, code := range codes {
			seen, err := w.keyAudiences(prefix + code)
			if err != nil {
				return fmt.Errorf("read the use of %s%s: %w", prefix, code, err)
			}
			for _, a := range dirsvc.ServedAudiences {
				if seen&audienceBit(a) != 0 {
					set(use[a])[code] = true
				}
			}
		}
		return nil
	}
	var types, locals, programs, groups []string
	for _, pt := range t.PlatformTypes {
		types = append(types, pt.Code)
	}
	for _, lt := range t.LocalTypes {
		locals = append(locals, lt.Code)
	}
	for _, p := range t.Programs {
		programs = append(programs, p.Code)
	}
	for _, g := range t.TargetGroups {
		groups = append(groups, g.Code)
	}
	return use, errors.Join(
		mark(keyType, types, func(u dirsvc.TaxonomyUse) map[string]bool { return u.PlatformTypes }),
		mark(keyLocal, locals, func(u dirsvc.TaxonomyUse) map[string]bool { return u.LocalTypes }),
		mark(keyProgram, programs, func(u dirsvc.TaxonomyUse) map[string]bool { return u.Programs }),
		mark(keyTargetGroup, groups, func(u dirsvc.TaxonomyUse) map[string]bool { return u.TargetGroups }))
}

// keyAudiences returns the served audiences some of whose views carry the list key. Its rows are
// read until every served audience is found: most often at the first.
func (w *writeTx) keyAudiences(key string) (int64, error) {
	var all int64
	for _, a := range dirsvc.ServedAudiences {
		all |= audienceBit(a)
	}
	st, err := w.stmt(w.pub, "SELECT audiences FROM list_keys INDEXED BY list_keys_key WHERE key = ?")
	if err != nil {
		return 0, err
	}
	rows, err := st.QueryContext(w.ctx, key)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var seen int64
	for seen&all != all && rows.Next() {
		var aud int64
		if err := rows.Scan(&aud); err != nil {
			return 0, err
		}
		seen |= aud
	}
	return seen & all, rows.Err()
}

// putTaxonomy publishes the taxonomy as each served audience sees it (what of it the services the
// audience sees use), when that differs from what is published (or nothing is, as in a file an
// earlier version made).
func (w *writeTx) putTaxonomy(t *dirsvc.Taxonomy) error {
	use, err := w.taxonomyUse(t)
	if err != nil {
		return err
	}
	var views []viewRow
	for _, a := range dirsvc.ServedAudiences {
		b, err := json.Marshal(dirsvc.ProjectTaxonomy(t, a, use[a]))
		if err != nil {
			return fmt.Errorf("encode the taxonomy: %w", err)
		}
		views = withView(views, viewRow{audiences: audienceBit(a), body: b})
	}
	var stored []viewRow
	err = w.eachRow(w.pub, "SELECT audiences, body FROM taxonomy_views ORDER BY audiences", nil, func(sc scanner) error {
		var v viewRow
		err := sc.Scan(&v.audiences, &v.body)
		stored = append(stored, v)
		return err
	})
	if err != nil {
		return fmt.Errorf("read the published taxonomy: %w", err)
	}
	if sameViews(stored, views) {
		return nil
	}
	if err := w.exec(w.pub, "DELETE FROM taxonomy_views"); err != nil {
		return fmt.Errorf("publish the taxonomy: %w", err)
	}
	for _, v := range views {
		if err := w.exec(w.pub, "INSERT INTO taxonomy_views (audiences, body, etag) VALUES (?, ?, ?)", v.audiences, v.body, dirsvc.ETag(v.body)); err != nil {
			return fmt.Errorf("publish the taxonomy: %w", err)
		}
	}
	return nil
}

// sameViews reports whether two sets of view rows hold the same bodies for the same audiences.
func sameViews(a, b []viewRow) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		found := false
		for _, y := range b {
			if x.audiences == y.audiences && bytes.Equal(x.body, y.body) {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// Taxonomy returns the directory's taxonomy as the audience sees it; ErrNotFound when the directory
// was never imported.
func (d *Directory) Taxonomy(ctx context.Context, a dirsvc.Audience) (*dirsvc.Published, error) {
	d.gate.RLock()
	defer d.gate.RUnlock()
	var p dirsvc.Published
	err := d.readers.QueryRowContext(ctx, "SELECT body, etag FROM taxonomy_views WHERE audiences & ? != 0", audienceBit(a)).Scan(&p.Body, &p.ETag)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, dirsvc.ErrNotFound
	} else if err != nil {
		return nil, fmt.Errorf("read the taxonomy: %w", err)
	}
	return &p, nil
}

// taxonomyView returns the taxonomy as audience a sees it, decoded; an empty one when the directory
// was never imported. The decoded taxonomies are kept for the file's generation they were read at
// (searches by category and autocomplete ask for them on every request): a caller must not change
// what it is given.
func (d *Directory) taxonomyView(ctx context.Context, a dirsvc.Audience) (dirsvc.TaxonomyView, error) {
	gen, bit := d.records.gen.Load(), audienceBit(a)
	d.taxMu.Lock()
	kept, ok := d.taxViews[bit]
	d.taxMu.Unlock()
	if ok && kept.gen == gen {
		return kept.view, nil
	}
	var tax dirsvc.TaxonomyView
	switch p, err := d.Taxonomy(ctx, a); {
	case errors.Is(err, dirsvc.ErrNotFound):
	case err != nil:
		return tax, err
	default:
		if err := json.Unmarshal(p.Body, &tax); err != nil {
			return tax, fmt.Errorf("decode the taxonomy: %w", err)
		}
	}
	// Read at gen or later: kept for gen, it is read again after the next change.
	d.taxMu.Lock()
	if d.taxViews == nil {
		d.taxViews = map[int64]keptTaxonomy{}
	}
	d.taxViews[bit] = keptTaxonomy{gen, tax}
	d.taxMu.Unlock()
	return tax, nil
}

// keptTaxonomy is a decoded taxonomy and the file's generation it was read at.
type keptTaxonomy struct {
	gen  uint64
	view dirsvc.TaxonomyView
}
