package dirdb

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/dirsvc/dirsvc"
)

// Browsing: the services each category finds, counted from list_keys alone (the covering index
// list_keys_key walks each of a category's keys), the places where most of a category's services
// are, and the published collections.

// categoryKeys returns the list keys of the services category c finds: each of its platform types'
// (type:, what the service list's type filter finds) and each of its local types' (lt:), so that a
// category made of local types finds exactly the services tagged with them.
func categoryKeys(c dirsvc.CategoryServices) []string {
	var keys []string
	for _, t := range c.Types {
		keys = append(keys, keyType+t)
	}
	for _, lt := range c.LocalTypes {
		keys = append(keys, keyLocal+lt)
	}
	return keys
}

// countStatement returns the statement that counts, in one read, the services the viewer finds by
// each group of keys: rows (group index, count) for the groups that find any.
func countStatement(v dirsvc.Viewer, groups [][]string) (sqlCond, bool) {
	var values []string
	var args []any
	for i, keys := range groups {
		for _, k := range keys {
			values, args = append(values, "(?, ?)"), append(args, i, k)
		}
	}
	if len(values) == 0 {
		return sqlCond{}, false
	}
	// The keys walked are aliased ck: inside's conditions use k for their own.
	in := inside(dirsvc.KindService, "ck.public_id", v)
	q := sqlCond{`WITH c (grp, key) AS (VALUES ` + strings.Join(values, ", ") + `)
SELECT c.grp, count(DISTINCT ck.public_id)
FROM c CROSS JOIN list_keys ck INDEXED BY list_keys_key ON ck.key = c.key
WHERE ck.audiences & ? != 0 AND (` + in.sql + `)
GROUP BY c.grp`, append(append(args, audienceBit(v.Audience)), in.args...)}
	return q, true
}

// CountServices returns, for each category, how many services the viewer finds in it: services its
// tier sees, inside its narrowing, that carry one of the category's keys (categoryKeys).
func (d *Directory) CountServices(ctx context.Context, v dirsvc.Viewer, cats []dirsvc.CategoryServices) ([]int, error) {
	counts := make([]int, len(cats))
	if !v.Narrowing.AllowsKind(dirsvc.KindService) {
		return counts, nil
	}
	groups := make([][]string, len(cats))
	for i, c := range cats {
		groups[i] = categoryKeys(c)
	}
	q, ok := countStatement(v, groups)
	if !ok {
		return counts, nil
	}
	err := d.longRead(ctx, func(ctx context.Context) error {
		clear(counts)
		rows, err := d.readers.QueryContext(ctx, q.sql, q.args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var i, n int
			if err := rows.Scan(&i, &n); err != nil {
				return err
			}
			counts[i] = n
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("count the services of categories: %w", err)
	}
	return counts, nil
}

// placesStatement returns the statement of the areas of type areaType where the viewer finds most
// of the services that carry one of keys: each service counts in the areas of its site, as the
// viewer's tier sees the site (a site hidden from the tier places nothing).
func placesStatement(v dirsvc.Viewer, keys []string, areaType string) sqlCond {
	bit := audienceBit(v.Audience)
	in := inside(dirsvc.KindService, "ck.public_id", v) // k is inside's own alias
	area := prefixRange("a.key", keyArea+areaType+":")
	args := make([]any, 0, len(keys)+len(in.args)+len(area.args)+3)
	for _, k := range keys {
		args = append(args, k)
	}
	args = append(append(append(args, bit), in.args...), area.args...)
	return sqlCond{`WITH s (id) AS MATERIALIZED (
    SELECT DISTINCT ck.public_id FROM list_keys ck INDEXED BY list_keys_key
    WHERE ck.key IN (` + placeholders(len(keys)) + `) AND ck.audiences & ? != 0 AND (` + in.sql + `)
)
SELECT substr(a.key, ` + fmt.Sprint(len(keyArea)+1) + `) AS area, count(*) AS n
FROM s CROSS JOIN records r ON r.public_id = s.id
CROSS JOIN list_keys a INDEXED BY sqlite_autoindex_list_keys_1 ON a.public_id = r.location_id
WHERE ` + area.sql + ` AND a.audiences & ? != 0
GROUP BY a.key ORDER BY n DESC, a.key LIMIT ?`, append(args, bit, dirsvc.MaxPlaces)}
}

// Places returns the areas where the viewer finds most of the category's services, most first (by
// area ID on a tie), at the first of dirsvc.PlaceAreaTypes any of them lies in; none when the
// category finds no service with a site the viewer sees.
func (d *Directory) Places(ctx context.Context, v dirsvc.Viewer, c dirsvc.CategoryServices) ([]dirsvc.PlaceCount, error) {
	keys := categoryKeys(c)
	places := []dirsvc.PlaceCount{}
	if len(keys) == 0 || !v.Narrowing.AllowsKind(dirsvc.KindService) {
		return places, nil
	}
	err := d.longRead(ctx, func(ctx context.Context) error {
		places = places[:0]
		for _, t := range dirsvc.PlaceAreaTypes {
			q := placesStatement(v, keys, t)
			rows, err := d.readers.QueryContext(ctx, q.sql, q.args...)
			if err != nil {
				return err
			}
			for rows.Next() {
				var p dirsvc.PlaceCount
				if err := rows.Scan(&p.Area, &p.Count); err != nil {
					rows.Close()
					return err
				}
				places = append(places, p)
			}
			if err := rows.Close(); err != nil {
				return err
			}
			if err := rows.Err(); err != nil || len(places) > 0 {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the places of category %s: %w", c.Code, err)
	}
	return places, nil
}

// collectionRow is a row of collection_views.
type collectionRow struct {
	slug     string
	position int
	viewRow
}

// putCollections publishes each collection to the audiences that may see it (drafts and those that
// ended before today to none), when that differs from what is published.
func (w *writeTx) putCollections(cols []dirsvc.Collection, today string) error {
	var rows []collectionRow
	for i := range cols {
		var views []viewRow
		for _, a := range dirsvc.ServedAudiences {
			v := dirsvc.ProjectCollection(&cols[i], a, today)
			if v == nil {
				continue
			}
			b, err := json.Marshal(v)
			if err != nil {
				return fmt.Errorf("encode collection %s: %w", cols[i].Slug, err)
			}
			views = withView(views, viewRow{audiences: audienceBit(a), body: b})
		}
		for _, v := range views {
			rows = append(rows, collectionRow{cols[i].Slug, i, v})
		}
	}
	var stored []collectionRow
	err := w.eachRow(w.pub, "SELECT slug, position, audiences, body FROM collection_views", nil, func(sc scanner) error {
		var r collectionRow
		err := sc.Scan(&r.slug, &r.position, &r.audiences, &r.body)
		stored = append(stored, r)
		return err
	})
	if err != nil {
		return fmt.Errorf("read the published collections: %w", err)
	}
	if sameCollections(stored, rows) {
		return nil
	}
	if err := w.exec(w.pub, "DELETE FROM collection_views"); err != nil {
		return fmt.Errorf("publish the collections: %w", err)
	}
	for _, r := range rows {
		if err := w.exec(w.pub, "INSERT INTO collection_views (slug, position, audiences, body) VALUES (?, ?, ?, ?)",
			r.slug, r.position, r.audiences, r.body); err != nil {
			return fmt.Errorf("publish collection %s: %w", r.slug, err)
		}
	}
	return nil
}

// sameCollections reports whether two sets of collection rows are the same.
func sameCollections(a, b []collectionRow) bool {
	key := func(rs []collectionRow) []string {
		out := make([]string, len(rs))
		for i, r := range rs {
			out[i] = fmt.Sprintf("%s\x00%d\x00%d\x00%s", r.slug, r.position, r.audiences, r.body)
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(key(a), key(b))
}

// Collections returns the collections published for audience a, in the directory's order, whatever
// their dates (the reader decides which are current).
func (d *Directory) Collections(ctx context.Context, a dirsvc.Audience) ([]dirsvc.CollectionView, error) {
	d.gate.RLock()
	defer d.gate.RUnlock()
	rows, err := d.readers.QueryContext(ctx, "SELECT body FROM collection_views WHERE audiences & ? != 0 ORDER BY position", audienceBit(a))
	if err != nil {
		return nil, fmt.Errorf("read the collections: %w", err)
	}
	defer rows.Close()
	out := []dirsvc.CollectionView{}
	for rows.Next() {
		var body []byte
		var c dirsvc.CollectionView
		if err := rows.Scan(&body); err != nil {
			return nil, fmt.Errorf("read the collections: %w", err)
		}
		if err := json.Unmarshal(body, &c); err != nil {
			return nil, fmt.Errorf("decode a collection: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the collections: %w", err)
	}
	return out, nil
}
