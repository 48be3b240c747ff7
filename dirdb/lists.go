package dirdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/dirsvc/dirsvc"
)

// The lists filter on list_keys (see keys.go), which hold per audience what each record is found by,
// so a list never finds a record by a detail the caller may not see. Narrowing is the same filters,
// added to every list and checked on every single read of a narrowed client.

// sqlCond is a boolean SQL expression and its arguments.
type sqlCond struct {
	sql  string
	args []any
}

var (
	condTrue  = sqlCond{sql: "1"}
	condFalse = sqlCond{sql: "0"}
)

func and(cs ...sqlCond) sqlCond {
	var parts []string
	var args []any
	for _, c := range cs {
		if c.sql == "1" {
			continue
		}
		parts, args = append(parts, "("+c.sql+")"), append(args, c.args...)
	}
	if len(parts) == 0 {
		return condTrue
	}
	return sqlCond{strings.Join(parts, " AND "), args}
}

func placeholders(n int) string { return strings.TrimSuffix(strings.Repeat("?, ", n), ", ") }

// hasKey is the condition that the record idExpr carries, for the audience bit, one of the keys
// prefix+value; true when values is empty.
func hasKey(idExpr, prefix string, values []string, bit int64) sqlCond {
	if len(values) == 0 {
		return condTrue
	}
	return keyMember(idExpr, prefix, values, bit)
}

// every is the condition that all of cs hold, and some that one does, written as sums so that
// SQLite evaluates every one of cs whatever the others' values: a narrowing's conditions then cost
// a single read the same work whether the record is missing, outside the narrowing by one of them
// or by another. (AND and OR stop at the first value that decides them.)
func every(cs ...sqlCond) sqlCond {
	parts, args := terms(cs)
	switch len(parts) {
	case 0:
		return condTrue
	case 1:
		return sqlCond{parts[0], args}
	}
	return sqlCond{fmt.Sprintf("(%s) = %d", strings.Join(parts, " + "), len(parts)), args}
}

func some(cs ...sqlCond) sqlCond {
	for _, c := range cs {
		if c.sql == condTrue.sql {
			return condTrue
		}
	}
	parts, args := terms(cs)
	return sqlCond{"(" + strings.Join(parts, " + ") + ") > 0", args}
}

// terms returns the conditions' expressions, parenthesized, and their arguments, leaving out those
// always true.
func terms(cs []sqlCond) (parts []string, args []any) {
	for _, c := range cs {
		if c.sql != condTrue.sql {
			parts, args = append(parts, "("+c.sql+")"), append(args, c.args...)
		}
	}
	return parts, args
}

// siteOf is the expression of the site (location) of the service idExpr: the empty string for a
// service without one, or a record the directory does not hold, so that a condition on the site
// probes the same index either way.
func siteOf(idExpr string) string {
	return fmt.Sprintf("COALESCE((SELECT sl.location_id FROM records sl WHERE sl.public_id = %s), '')", idExpr)
}

// serviceInAreas is the condition that the service idExpr is located in one of the areas (its site's
// areas, when the audience sees the site) or its catchment reaches one; true when areas is empty.
func serviceInAreas(idExpr string, areas []string, bit int64) sqlCond {
	if len(areas) == 0 {
		return condTrue
	}
	return some(hasKey(idExpr, keyArea, areas, bit), hasKey(siteOf(idExpr), keyArea, areas, bit))
}

// serviceInPlace is the condition that the service idExpr lies in the narrowing's areas and
// categories, as the audience sees it.
func serviceInPlace(idExpr string, n dirsvc.Narrowing, bit int64) sqlCond {
	return every(serviceInAreas(idExpr, n.Areas, bit), hasKey(idExpr, keyCat, n.Categories, bit))
}

// inside is the condition that the record idExpr, of kind, is inside the viewer's narrowing:
//   - a service when it lies in the areas and categories;
//   - a location when it lies in the areas and, with categories, a service of those is there;
//   - an organisation when one of its services is inside, or, without categories, one of its sites
//     lies in the areas;
//   - a role when its service is inside, a practitioner when an active role of theirs is at a
//     service inside that the audience sees.
//
// Kinds outside the narrowing's record types are never inside. It does not check visibility. What
// it reads is the same whether the directory holds the record or not: the record's own keys, its
// narrowing keys (narrowing.go), and for a service or a role the keys of one site.
func inside(kind dirsvc.Kind, idExpr string, v dirsvc.Viewer) sqlCond {
	n, bit := v.Narrowing, audienceBit(v.Audience)
	switch {
	case !n.Narrowed():
		return condTrue
	case !n.AllowsKind(kind):
		return condFalse
	case len(n.Areas) == 0 && len(n.Categories) == 0:
		return condTrue
	}
	switch kind {
	case dirsvc.KindService:
		return serviceInPlace(idExpr, n, bit)
	case dirsvc.KindLocation:
		return every(hasKey(idExpr, keyArea, n.Areas, bit), narrowingKey(idExpr, keyInCat, n.Categories, bit))
	case dirsvc.KindOrganisation, dirsvc.KindPractitioner:
		return placedInside(idExpr, n, bit)
	case dirsvc.KindRole:
		return serviceInPlace(fmt.Sprintf("COALESCE((SELECT ro.service_id FROM records ro WHERE ro.public_id = %s), '')", idExpr), n, bit)
	}
	return condFalse
}

// activeRole is the condition that the practitioner idExpr has a role, active and visible to the
// audience, that meets cond (written on the alias ro). Its roles are found by their public IDs'
// range rather than their kind: records_practitioner then covers the search, where reading the
// kind read each role's row (a count of the 50,000 practitioners of a generated directory with this
// condition took 0.48 s of CPU that way, 0.11 s this way).
func activeRole(idExpr string, bit int64, cond sqlCond) sqlCond {
	roles := kindRange("ro.public_id", dirsvc.KindRole)
	return sqlCond{fmt.Sprintf(`EXISTS (SELECT 1 FROM records ro INDEXED BY records_practitioner
CROSS JOIN list_keys ra INDEXED BY sqlite_autoindex_list_keys_1 ON ra.public_id = ro.public_id AND ra.key = '`+keyActive+`' AND ra.audiences & ? != 0
WHERE ro.practitioner_id = %s AND %s AND %s LIMIT 1)`, idExpr, roles.sql, cond.sql), append(append([]any{bit}, roles.args...), cond.args...)}
}

// insideNarrowing reports whether a record is inside the viewer's narrowing (always, for a viewer
// without one); a record the directory does not hold is not.
func (d *Directory) insideNarrowing(ctx context.Context, publicID string, v dirsvc.Viewer) (bool, error) {
	if !v.Narrowing.Narrowed() {
		return true, nil
	}
	d.gate.RLock()
	defer d.gate.RUnlock()
	return d.insideNarrowingLocked(ctx, publicID, v)
}

// insideSQL is the statement of insideNarrowing: one row when the record publicID lies inside the
// viewer's narrowing.
func insideSQL(publicID string, v dirsvc.Viewer) sqlCond {
	c := inside(dirsvc.KindOfID(publicID), "r.public_id", v)
	return sqlCond{"SELECT 1 FROM records r WHERE r.public_id = ? AND " + c.sql, append([]any{publicID}, c.args...)}
}

// insideNarrowingLocked is insideNarrowing for a caller that holds the gate's read side.
func (d *Directory) insideNarrowingLocked(ctx context.Context, publicID string, v dirsvc.Viewer) (bool, error) {
	if !v.Narrowing.Narrowed() {
		return true, nil
	}
	q := insideSQL(publicID, v)
	var one int
	err := d.readers.QueryRowContext(ctx, q.sql, q.args...).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("check narrowing of %s: %w", publicID, err)
	}
	return true, nil
}

// kindRange is the condition that the public ID column col names a record of kind: IDs start with
// their kind's prefix, so this is a range of the primary key.
func kindRange(col string, kind dirsvc.Kind) sqlCond { return prefixRange(col, kind.IDPrefix()) }

// prefixRange is the condition that the text column col starts with prefix (which does not end in
// the largest byte): a range of any index on it.
func prefixRange(col, prefix string) sqlCond {
	upper := prefix[:len(prefix)-1] + string(prefix[len(prefix)-1]+1)
	return sqlCond{col + " >= ? AND " + col + " < ?", []any{prefix, upper}}
}

// listPage runs a page query of views (viewsPage).
func (d *Directory) listPage(ctx context.Context, v dirsvc.Viewer, kind dirsvc.Kind, after string, limit int, cond sqlCond) (dirsvc.Page, error) {
	var page dirsvc.Page
	err := d.longRead(ctx, func(ctx context.Context) (err error) {
		page, err = d.readPage(ctx, viewsPage(v, kind, after, limit, cond), limit)
		return err
	})
	if err != nil {
		return dirsvc.Page{}, fmt.Errorf("list %ss: %w", kind, err)
	}
	return page, nil
}

// viewsPage returns the page query of the records of kind visible to the viewer after the public ID
// after that meet cond (written on p.public_id) and are inside the narrowing, in public-ID order,
// limit of them (and one more). It walks the kind's views in order (see listplan.go): the
// practitioner list, whose condition most practitioners meet.
func viewsPage(v dirsvc.Viewer, kind dirsvc.Kind, after string, limit int, cond sqlCond) sqlCond {
	in := boundsOf(kind, after).on("p.public_id")
	where := and(cond, inside(kind, "p.public_id", v))
	q := sqlCond{"SELECT p.public_id, p.body, p.etag\nFROM projections p INDEXED BY sqlite_autoindex_projections_1\nWHERE " + in.sql +
		" AND p.audiences & ? != 0 AND (" + where.sql + ")\nORDER BY p.public_id LIMIT ?", nil}
	q.args = append(append(append(in.args, audienceBit(v.Audience)), where.args...), limit+1)
	return q
}

// pageItemsPrealloc bounds the items a page's slice is made for before any is read. yieldRows is how
// many views a page reads between yields of the CPU (readPage): about half a millisecond of SQLite's
// work.
const (
	pageItemsPrealloc = 128
	yieldRows         = 16
)

// ownBody returns a view's body as scanned into sql.RawBytes, kept without a copy. database/sql lets
// a driver reuse the memory of RawBytes at the next row, but modernc.org/sqlite never does: it copies
// every blob it reads into a slice of its own (conn.columnBlob), so the body stays whole. Copying it
// again, as a driver that reused its buffers would need, doubled what lists allocate (they are the
// reads that allocate most, and every byte allocated brings the next collection closer).
// TestPageBodiesOutliveTheirRows fails if a version of the driver reuses them.
func ownBody(body sql.RawBytes) []byte { return body[:len(body):len(body)] }

// readPage runs the page statement q, which asks for limit+1 views.
func (d *Directory) readPage(ctx context.Context, q sqlCond, limit int) (dirsvc.Page, error) {
	rows, err := d.lists.query(ctx, d.readers, q.sql, q.args...)
	if err != nil {
		return dirsvc.Page{}, err
	}
	defer rows.Close()
	page := dirsvc.Page{Items: make([]dirsvc.Published, 0, min(limit+1, pageItemsPrealloc))}
	for rows.Next() {
		var p dirsvc.Published
		var body sql.RawBytes
		if err := rows.Scan(&p.PublicID, &body, &p.ETag); err != nil {
			return dirsvc.Page{}, err
		}
		p.Body = ownBody(body)
		page.Items = append(page.Items, p)
		if len(page.Items)%yieldRows == 0 {
			// Go preempts a running goroutine only after 10 ms: a long page yields the CPU now and
			// then, so that the cheap reads queued behind it wait for a part of it, not all of it.
			runtime.Gosched()
		}
	}
	if err := rows.Err(); err != nil {
		return dirsvc.Page{}, err
	}
	if len(page.Items) > limit {
		page.Items, page.More = page.Items[:limit], true
	}
	return page, nil
}

// Services returns a page of the service list as the viewer sees it. A narrowing's areas and
// categories are filters like the query's own (planServices).
func (d *Directory) Services(ctx context.Context, v dirsvc.Viewer, q dirsvc.ServiceQuery) (dirsvc.Page, error) {
	if !v.Narrowing.AllowsKind(dirsvc.KindService) {
		return dirsvc.Page{}, nil
	}
	pl := planServices(v, q)
	var page dirsvc.Page
	err := d.longRead(ctx, func(ctx context.Context) error {
		driver, err := d.driver(ctx, pl)
		if err != nil {
			return err
		}
		page, err = d.readPage(ctx, pl.page(driver), pl.limit)
		if err != nil || q.Held == nil {
			return err
		}
		return d.readUnheld(ctx, v, &page, q.Held)
	})
	if err != nil {
		return dirsvc.Page{}, fmt.Errorf("list services: %w", err)
	}
	return page, nil
}

// readUnheld reads, in one statement, the bodies of the views of a page read without them that held
// does not report held. The statement checks again that the viewer sees each record, and gives each
// view as it is now; a view gone since the page's statement keeps a nil body.
func (d *Directory) readUnheld(ctx context.Context, v dirsvc.Viewer, page *dirsvc.Page, held func(publicID, etag string) bool) error {
	var ids []any
	at := map[string]int{}
	for i := range page.Items {
		p := &page.Items[i]
		p.Body = nil
		if !held(p.PublicID, p.ETag) {
			ids = append(ids, p.PublicID)
			at[p.PublicID] = i
		}
	}
	if len(ids) == 0 {
		return nil
	}
	in := inside(dirsvc.KindService, "p.public_id", v)
	rows, err := d.lists.query(ctx, d.readers, "SELECT p.public_id, p.body, p.etag\nFROM projections p INDEXED BY sqlite_autoindex_projections_1\nWHERE p.public_id IN ("+
		placeholders(len(ids))+") AND p.audiences & ? != 0 AND ("+in.sql+")", append(append(ids, audienceBit(v.Audience)), in.args...)...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id, etag string
		var body sql.RawBytes
		if err := rows.Scan(&id, &body, &etag); err != nil {
			return err
		}
		i, ok := at[id]
		if !ok {
			continue
		}
		page.Items[i].Body, page.Items[i].ETag = ownBody(body), etag
	}
	return rows.Err()
}

// Practitioners returns a page of the practitioners with an active role at a service the viewer can
// see, as the viewer sees them (only those whose name the viewer may see have a view).
func (d *Directory) Practitioners(ctx context.Context, v dirsvc.Viewer, after string, limit int) (dirsvc.Page, error) {
	return d.listPage(ctx, v, dirsvc.KindPractitioner, after, limit, activeRole("p.public_id", audienceBit(v.Audience), condTrue))
}

// Records returns a page of the records of kind the viewer may read, as the viewer sees them, in
// public-ID order after the public ID after: one walk of the kind's views in order (viewsPage).
func (d *Directory) Records(ctx context.Context, v dirsvc.Viewer, kind dirsvc.Kind, after string, limit int) (dirsvc.Page, error) {
	if !v.Narrowing.AllowsKind(kind) {
		return dirsvc.Page{}, nil
	}
	return d.listPage(ctx, v, kind, after, limit, condTrue)
}

// maxIdentified bounds the records an identifier search returns.
const maxIdentified = 100

// identifiedSQL is the statement of Identified: it walks the identifier's entries of the list keys'
// index, in public-ID order (the plan test holds it).
func identifiedSQL(system, value string, bit int64) sqlCond {
	return sqlCond{`
SELECT k.public_id FROM list_keys k INDEXED BY list_keys_key
WHERE k.key = ? AND k.audiences & ? != 0
ORDER BY k.public_id LIMIT ?`, []any{keyID + system + "|" + identifierValue(value), bit, maxIdentified}}
}

// Identified returns the public IDs of the records the viewer may see and that carry, as the viewer
// sees them, the identifier value of system (a system URI or a type code such as abn).
func (d *Directory) Identified(ctx context.Context, v dirsvc.Viewer, system, value string) ([]string, error) {
	bit := audienceBit(v.Audience)
	var ids []string
	err := d.longRead(ctx, func(ctx context.Context) error {
		ids = ids[:0]
		q := identifiedSQL(system, value, bit)
		rows, err := d.readers.QueryContext(ctx, q.sql, q.args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return err
			}
			ids = append(ids, id)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("search identifiers: %w", err)
	}
	out := ids[:0]
	for _, id := range ids {
		ok, err := d.insideNarrowing(ctx, id, v)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, id)
		}
	}
	return out, nil
}

// Leadership returns the stored leadership view of an organisation (its current executives and
// board, as shown to holders of leadership:read); ErrNotFound when it has none.
func (d *Directory) Leadership(ctx context.Context, orgID string) (*dirsvc.Published, error) {
	d.gate.RLock()
	defer d.gate.RUnlock()
	p := &dirsvc.Published{PublicID: orgID}
	err := d.readers.QueryRowContext(ctx, "SELECT body, etag FROM projections WHERE public_id = ? AND audiences & ? != 0",
		orgID, leadershipBit).Scan(&p.Body, &p.ETag)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, dirsvc.ErrNotFound
	} else if err != nil {
		return nil, fmt.Errorf("read leadership of %s: %w", orgID, err)
	}
	return p, nil
}

// ceilMilli returns t in Unix milliseconds, rounded up: heads hold whole milliseconds, and a time
// between two of them is after the earlier one.
func ceilMilli(t time.Time) int64 {
	ms := t.UnixMilli()
	if t.Nanosecond()%int(time.Millisecond) != 0 {
		ms++
	}
	return ms
}
