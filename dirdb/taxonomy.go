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

// putTaxonomy publishes the taxonomy as each served audience sees it, when that differs from what is
// published (or nothing is, as in a file an earlier version made).
func (w *writeTx) putTaxonomy(t *dirsvc.Taxonomy) error {
	var views []viewRow
	for _, a := range dirsvc.ServedAudiences {
		b, err := json.Marshal(dirsvc.ProjectTaxonomy(t, a))
		if err != nil {
			return fmt.Errorf("encode the taxonomy: %w", err)
		}
		views = withView(views, viewRow{audiences: audienceBit(a), body: b})
	}
	var stored []viewRow
	err := w.eachRow(w.pub, "SELECT audiences, body FROM taxonomy_views ORDER BY audiences", nil, func(sc scanner) error {
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
