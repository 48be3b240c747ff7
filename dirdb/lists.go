package dirdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
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
	args := make([]any, 0, len(values)+1)
	for _, v := range values {
		args = append(args, prefix+v)
	}
	args = append(args, bit)
	return sqlCond{fmt.Sprintf("EXISTS (SELECT 1 FROM list_keys k WHERE k.public_id = %s AND k.key IN (%s) AND k.audiences & ? != 0)",
		idExpr, placeholders(len(values))), args}
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

// visibleRef is the condition that some record of kind, referring to idExpr by column col, is
// visible to the audience and meets cond (written on the alias x).
func visibleRef(kind dirsvc.Kind, col, idExpr string, bit int64, cond sqlCond) sqlCond {
	return sqlCond{fmt.Sprintf(`EXISTS (SELECT 1 FROM records x JOIN projections xp ON xp.public_id = x.public_id AND xp.audiences & ? != 0
WHERE x.%s = %s AND x.kind = ? AND %s)`, col, idExpr, cond.sql), append([]any{bit, string(kind)}, cond.args...)}
}

// inside is the condition that the record idExpr, of kind, is inside the viewer's narrowing:
//   - a service when it lies in the areas and categories;
//   - a location when it lies in the areas and, with categories, a service of those is there;
//   - an organisation when one of its services is inside, or, without categories, one of its sites
//     lies in the areas;
//   - a role when its service is inside, a practitioner when an active role of theirs is.
//
// Kinds outside the narrowing's record types are never inside. It does not check visibility.
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
		c := hasKey(idExpr, keyArea, n.Areas, bit)
		if len(n.Categories) > 0 {
			c = and(c, visibleRef(dirsvc.KindService, "location_id", idExpr, bit, hasKey("x.public_id", keyCat, n.Categories, bit)))
		}
		return c
	case dirsvc.KindOrganisation:
		c := visibleRef(dirsvc.KindService, "organisation_id", idExpr, bit, serviceInPlace("x.public_id", n, bit))
		if len(n.Categories) == 0 {
			site := visibleRef(dirsvc.KindLocation, "organisation_id", idExpr, bit, hasKey("x.public_id", keyArea, n.Areas, bit))
			c = sqlCond{"(" + c.sql + " OR " + site.sql + ")", append(c.args, site.args...)}
		}
		return c
	case dirsvc.KindRole:
		return serviceInPlace(fmt.Sprintf("COALESCE((SELECT ro.service_id FROM records ro WHERE ro.public_id = %s), '')", idExpr), n, bit)
	case dirsvc.KindPractitioner:
		return activeRole(idExpr, bit, serviceInPlace("ro.service_id", n, bit))
	}
	return condFalse
}

// activeRole is the condition that the practitioner idExpr has a role, active and visible to the
// audience, that meets cond (written on the alias ro).
func activeRole(idExpr string, bit int64, cond sqlCond) sqlCond {
	return sqlCond{fmt.Sprintf(`EXISTS (SELECT 1 FROM records ro JOIN list_keys ra ON ra.public_id = ro.public_id AND ra.key = '`+keyActive+`' AND ra.audiences & ? != 0
WHERE ro.practitioner_id = %s AND ro.kind = 'role' AND %s)`, idExpr, cond.sql), append([]any{bit}, cond.args...)}
}

// insideNarrowing reports whether a record is inside the viewer's narrowing (always, for a viewer
// without one); a record the directory does not hold is not.
func (d *Directory) insideNarrowing(ctx context.Context, publicID string, v dirsvc.Viewer) (bool, error) {
	if !v.Narrowing.Narrowed() {
		return true, nil
	}
	kind := dirsvc.KindOfID(publicID)
	c := inside(kind, "r.public_id", v)
	d.gate.RLock()
	defer d.gate.RUnlock()
	var one int
	err := d.readers.QueryRowContext(ctx, "SELECT 1 FROM records r WHERE r.public_id = ? AND "+c.sql,
		append([]any{publicID}, c.args...)...).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("check narrowing of %s: %w", publicID, err)
	}
	return true, nil
}

// kindRange is the condition that the public ID column col names a record of kind: IDs start with
// their kind's prefix, so this is a range of the primary key.
func kindRange(col string, kind dirsvc.Kind) sqlCond {
	p := kind.IDPrefix()
	upper := p[:len(p)-1] + string(p[len(p)-1]+1)
	return sqlCond{col + " >= ? AND " + col + " < ?", []any{p, upper}}
}

// listPage runs a page query of views: the records r of kind visible to the viewer after the public
// ID after that meet cond and are inside the narrowing, in public-ID order, limit of them.
func (d *Directory) listPage(ctx context.Context, v dirsvc.Viewer, kind dirsvc.Kind, after string, limit int, cond sqlCond) (dirsvc.Page, error) {
	bit := audienceBit(v.Audience)
	// One lower bound only: given two on the column, SQLite seeks by one and filters by the other,
	// which read every record of the kind before the cursor.
	bounds := kindRange("r.public_id", kind)
	if after >= bounds.args[0].(string) {
		bounds = sqlCond{"r.public_id > ? AND r.public_id < ?", []any{after, bounds.args[1]}}
	}
	where := and(bounds, cond, inside(kind, "r.public_id", v))
	args := append([]any{bit}, where.args...)
	args = append(args, limit+1)
	d.gate.RLock()
	defer d.gate.RUnlock()
	rows, err := d.readers.QueryContext(ctx, `
SELECT r.public_id, p.body, p.etag
FROM records r JOIN projections p ON p.public_id = r.public_id AND p.audiences & ? != 0
WHERE `+where.sql+`
ORDER BY r.public_id LIMIT ?`, args...)
	if err != nil {
		return dirsvc.Page{}, fmt.Errorf("list %ss: %w", kind, err)
	}
	defer rows.Close()
	var page dirsvc.Page
	for rows.Next() {
		var p dirsvc.Published
		if err := rows.Scan(&p.PublicID, &p.Body, &p.ETag); err != nil {
			return dirsvc.Page{}, err
		}
		page.Items = append(page.Items, p)
	}
	if err := rows.Err(); err != nil {
		return dirsvc.Page{}, err
	}
	if len(page.Items) > limit {
		page.Items, page.More = page.Items[:limit], true
	}
	return page, nil
}

// Services returns a page of the service list as the viewer sees it.
func (d *Directory) Services(ctx context.Context, v dirsvc.Viewer, q dirsvc.ServiceQuery) (dirsvc.Page, error) {
	bit := audienceBit(v.Audience)
	conds := []sqlCond{serviceInAreas("r.public_id", q.Areas, bit), hasKey("r.public_id", keyType, q.Types, bit),
		hasKey("r.public_id", keyCat, q.Categories, bit)}
	if len(q.Organisations) > 0 {
		args := make([]any, len(q.Organisations))
		for i, o := range q.Organisations {
			args[i] = o
		}
		conds = append(conds, sqlCond{"r.organisation_id IN (" + placeholders(len(args)) + ")", args})
	}
	if !q.UpdatedSince.IsZero() {
		// The service, its location or its organisation changed, as the viewer sees them, at or
		// after the time: each view's head holds the time of the last change its audience could see
		// (p is the service's view in listPage).
		conds = append(conds, sqlCond{`max(p.updated_ms,
    COALESCE((SELECT lp.updated_ms FROM projections lp WHERE lp.public_id = r.location_id AND lp.audiences & ? != 0), 0),
    COALESCE((SELECT op.updated_ms FROM projections op WHERE op.public_id = r.organisation_id AND op.audiences & ? != 0), 0)) >= ?`,
			[]any{bit, bit, ceilMilli(q.UpdatedSince)}})
	}
	return d.listPage(ctx, v, dirsvc.KindService, q.After, q.Limit, and(conds...))
}

// Practitioners returns a page of the practitioners with an active role at a service the viewer can
// see, as the viewer sees them (only those whose name the viewer may see have a view).
func (d *Directory) Practitioners(ctx context.Context, v dirsvc.Viewer, after string, limit int) (dirsvc.Page, error) {
	return d.listPage(ctx, v, dirsvc.KindPractitioner, after, limit, activeRole("r.public_id", audienceBit(v.Audience), condTrue))
}

// maxIdentified bounds the records an identifier search returns.
const maxIdentified = 100

// Identified returns the public IDs of the records the viewer may see and that carry, as the viewer
// sees them, the identifier value of system (a system URI or a type code such as abn).
func (d *Directory) Identified(ctx context.Context, v dirsvc.Viewer, system, value string) ([]string, error) {
	bit := audienceBit(v.Audience)
	d.gate.RLock()
	rows, err := d.readers.QueryContext(ctx, `
SELECT k.public_id FROM list_keys k
WHERE k.key = ? AND k.audiences & ? != 0
ORDER BY k.public_id LIMIT ?`, keyID+system+"|"+identifierValue(value), bit, maxIdentified)
	if err != nil {
		d.gate.RUnlock()
		return nil, fmt.Errorf("search identifiers: %w", err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			d.gate.RUnlock()
			return nil, err
		}
		ids = append(ids, id)
	}
	rows.Close()
	d.gate.RUnlock()
	if err := rows.Err(); err != nil {
		return nil, err
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
