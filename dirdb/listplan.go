package dirdb

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/dirsvc/dirsvc"
)

// How a list page is found. A page is the first services, in public-ID order after the cursor, that
// meet every filter; read in that order from an index, a page costs about as many rows as it returns.
// SQLite's planner, left to choose, walks the services and sorts them for a small LIMIT (it flipped at
// 62/63 on 100,000 services) and checks every service for a filter. So each query here names its
// driving index and the index of every lookup (INDEXED BY; a primary key's index is
// sqlite_autoindex_<table>_1, which NOT INDEXED does not pin: with statistics SQLite looked keys up in
// list_keys_key despite it) and its join order (CROSS JOIN), leaving the planner no choice that
// statistics could change. No directory file is ever analysed, and one that carries sqlite_stat1 (a
// copy made elsewhere) plans the same (TestListPlans).
//
// The driver is one filter's candidates in public-ID order:
//   - type, category and area filters walk list_keys_key for each of their keys, merged (UNION);
//   - the organisation filter walks records_organisation for each organisation, merged;
//   - updatedSince, whose candidates no index holds in public-ID order, drives only when at most
//     gatherCap services changed: they are gathered (projections_updated_*) into SQLite's sorted IN
//     list;
//   - without a filter, the services' views themselves (the projections primary key).
//
// With several filters the one with fewest candidates after the cursor drives, and the others are
// checked on each candidate by primary-key lookups. Candidates are counted up to countCap, each
// filter only up to the fewest counted so far; when every filter has more, a type or category
// drives if there is one, else an area. A page then reads about limit/f candidates, f the share of the driver's candidates that
// meet the other filters: filters that each hold many services but few together (anti-correlated)
// are the one case that reads many.

// countCap bounds the candidates counted of a filter (a covering index range; about 0.3 µs a row).
const countCap = 5000

// gatherCap bounds the services an updatedSince filter gathers to drive a page. Past it the filter is
// checked on each service instead, and a page reads about limit*services/gatherCap of them when
// changes are spread over the service IDs (random): 2,000 bounds a page of 100 of 100,000 services
// to about 5,000.
const gatherCap = 2000

// listFilter is one filter of the service list; every one must hold.
type listFilter struct {
	// arms are SELECTs of candidate public IDs, each in public-ID order over an index; the
	// filter's candidates are their union, a superset of its members.
	arms []sqlCond
	// gather, for a filter without arms, is a SELECT of its candidates in no order.
	gather sqlCond
	// member is the filter's exact condition on the service id (its record r, its view p).
	member func(id string) sqlCond
	// exact says the candidates are the members: driving, the filter need not be checked again.
	exact bool
	// record says member reads the service's record r.
	record bool
	// rank orders the counts (driver): filters likely to hold few services first, so the ones after
	// are counted only up to them.
	rank int
}

// pageBounds are the public IDs a page lies between: lower (after op) and below upper.
type pageBounds struct {
	op           string // ">=" from the kind's first ID, ">" after a cursor
	lower, upper string
}

func boundsOf(kind dirsvc.Kind, after string) pageBounds {
	r := kindRange("", kind)
	b := pageBounds{">=", r.args[0].(string), r.args[1].(string)}
	if after >= b.lower {
		b.op, b.lower = ">", after
	}
	return b
}

// on is the condition that col lies within the bounds.
func (b pageBounds) on(col string) sqlCond {
	return sqlCond{col + " " + b.op + " ? AND " + col + " < ?", []any{b.lower, b.upper}}
}

// servicePlan holds the statements of one service list page: the viewer's audience bit, the bounds
// of the page and its filters.
type servicePlan struct {
	bit     int64
	bounds  pageBounds
	limit   int
	filters []listFilter
	// keysOnly pages read the views' public IDs and entity tags, not their bodies (ServiceQuery.Held).
	keysOnly bool
}

// planServices returns the filters of a service list query, the viewer's narrowing among them (a
// narrowed client's areas and categories are filters like the query's own).
func planServices(v dirsvc.Viewer, q dirsvc.ServiceQuery) servicePlan {
	bit := audienceBit(v.Audience)
	pl := servicePlan{bit: bit, bounds: boundsOf(dirsvc.KindService, q.After), limit: q.Limit, keysOnly: q.Held != nil}
	add := func(f listFilter, ok bool) {
		if ok {
			pl.filters = append(pl.filters, f)
		}
	}
	// Types with categories: the services that have both carry one of the pairs' keys, so the pairs
	// take the place of both filters and count exactly what the page walks (a type's services are
	// all of one category: a type and another category share none, found at once).
	if len(q.Types) > 0 && (len(q.Categories) > 0 || len(v.Narrowing.Categories) > 0) {
		for _, cats := range [][]string{q.Categories, v.Narrowing.Categories} {
			add(pl.typeCatFilter(q.Types, cats), len(cats) > 0)
		}
	} else {
		add(pl.keyFilter(keyType, q.Types), len(q.Types) > 0)
		add(pl.keyFilter(keyCat, q.Categories), len(q.Categories) > 0)
		add(pl.keyFilter(keyCat, v.Narrowing.Categories), len(v.Narrowing.Categories) > 0)
	}
	add(pl.areaFilter(q.Areas), len(q.Areas) > 0)
	add(pl.areaFilter(v.Narrowing.Areas), len(v.Narrowing.Areas) > 0)
	add(pl.organisationFilter(q.Organisations), len(q.Organisations) > 0)
	if !q.UpdatedSince.IsZero() {
		pl.filters = append(pl.filters, pl.sinceFilter(ceilMilli(q.UpdatedSince)))
	}
	return pl
}

// keyArms returns an arm for each key prefix+value of prefixes and values.
func (pl servicePlan) keyArms(prefixes, values []string) []sqlCond {
	var arms []sqlCond
	for _, p := range prefixes {
		for _, v := range values {
			in := pl.bounds.on("public_id")
			arms = append(arms, sqlCond{"SELECT public_id FROM list_keys INDEXED BY list_keys_key WHERE key = ? AND " + in.sql +
				" AND audiences & ? != 0", append(append([]any{p + v}, in.args...), pl.bit)})
		}
	}
	return arms
}

// typeCatFilter is the filter that the service has one of the types and one of the categories.
func (pl servicePlan) typeCatFilter(types, cats []string) listFilter {
	var pairs []string
	for _, t := range types {
		for _, c := range cats {
			pairs = append(pairs, t+"|"+c)
		}
	}
	return pl.keyFilter(keyTypeCat, pairs)
}

// keyFilter is the filter that the service carries, for the audience, one of the keys prefix+value.
func (pl servicePlan) keyFilter(prefix string, values []string) listFilter {
	member := func(id string) sqlCond { return keyMember(id, prefix, values, pl.bit) }
	return listFilter{arms: pl.keyArms([]string{prefix}, values), member: member, exact: true, rank: 2}
}

// areaFilter is the filter that the service lies in one of the areas as the audience sees it: its
// catchment reaches one, or its site, seen by the audience, lies in one. Its candidates are the
// services whose catchment or whose view of their site names one (the site keys); a site key is a
// candidate only, since the site's own key for the audience decides, as it always has.
func (pl servicePlan) areaFilter(areas []string) listFilter {
	// A service none of whose own keys names an area fails at once, before its record is read.
	var keys []string
	for _, a := range areas {
		keys = append(keys, keyArea+a, keySite+a)
	}
	member := func(id string) sqlCond {
		candidate := keyMember(id, "", keys, pl.bit)
		own, site := keyMember(id, keyArea, areas, pl.bit), keyMember("r.location_id", keyArea, areas, pl.bit)
		return and(candidate, sqlCond{own.sql + " OR " + site.sql, append(own.args, site.args...)})
	}
	return listFilter{arms: pl.keyArms([]string{keyArea, keySite}, areas), member: member, record: true, rank: 1}
}

// organisationFilter is the filter that the service belongs to one of the organisations.
func (pl servicePlan) organisationFilter(orgs []string) listFilter {
	f := listFilter{exact: true, record: true, rank: 0}
	for _, o := range orgs {
		in := pl.bounds.on("public_id")
		f.arms = append(f.arms, sqlCond{"SELECT public_id FROM records INDEXED BY records_organisation WHERE organisation_id = ? AND " +
			in.sql, append([]any{o}, in.args...)})
	}
	args := make([]any, len(orgs))
	for i, o := range orgs {
		args[i] = o
	}
	f.member = func(string) sqlCond { return sqlCond{"r.organisation_id IN (" + placeholders(len(orgs)) + ")", args} }
	return f
}

// sinceFilter is the filter that the service, its site or its organisation changed at or after ms
// (Unix milliseconds), as the viewer sees them: each view's head holds the time of the last change
// its audience could see.
func (pl servicePlan) sinceFilter(ms int64) listFilter {
	bit := pl.bit
	sin := pl.bounds.on("s.public_id")
	// The partial indexes are used only where the query repeats their ranges as written. The
	// services' views changed are in time order, not ID order: the cursor cannot bound their range,
	// and the page leaves out those before it.
	gather := sqlCond{`SELECT public_id FROM projections INDEXED BY projections_updated_service
WHERE updated_ms >= ? AND public_id >= 'svc_' AND public_id < 'svc` + "`" + `' AND audiences & ? != 0
UNION ALL
SELECT s.public_id FROM projections lp INDEXED BY projections_updated_location
CROSS JOIN records s INDEXED BY records_location ON s.location_id = lp.public_id AND ` + sin.sql + `
WHERE lp.updated_ms >= ? AND lp.public_id >= 'loc_' AND lp.public_id < 'loc` + "`" + `' AND lp.audiences & ? != 0
UNION ALL
SELECT s.public_id FROM projections op INDEXED BY projections_updated_organisation
CROSS JOIN records s INDEXED BY records_organisation ON s.organisation_id = op.public_id AND ` + sin.sql + `
WHERE op.updated_ms >= ? AND op.public_id >= 'org_' AND op.public_id < 'org` + "`" + `' AND op.audiences & ? != 0`, nil}
	gather.args = append(gather.args, ms, bit)
	gather.args = append(gather.args, sin.args...)
	gather.args = append(gather.args, ms, bit)
	gather.args = append(gather.args, sin.args...)
	gather.args = append(gather.args, ms, bit)
	return listFilter{gather: gather, exact: true, record: true, rank: 3, member: func(string) sqlCond {
		return sqlCond{`max(p.updated_ms,
    COALESCE((SELECT lp.updated_ms FROM projections lp INDEXED BY sqlite_autoindex_projections_1 WHERE lp.public_id = r.location_id AND lp.audiences & ? != 0), 0),
    COALESCE((SELECT op.updated_ms FROM projections op INDEXED BY sqlite_autoindex_projections_1 WHERE op.public_id = r.organisation_id AND op.audiences & ? != 0), 0)) >= ?`,
			[]any{bit, bit, ms}}
	}}
}

// keyMember is the condition that the record idExpr carries, for the audience bit, one of the keys
// prefix+value: a lookup of the list_keys primary key (public_id, key).
func keyMember(idExpr, prefix string, values []string, bit int64) sqlCond {
	return keyIn("list_keys", idExpr, prefix, values, bit)
}

// keyIn is the condition that the record idExpr holds, in the table of keys (list_keys or
// narrowing_keys), one of the keys prefix+value for the audience bit: one probe of the table's
// primary key (public_id, key) a value, whether or not the directory holds the record. LIMIT 1 keeps
// SQLite from making an EXISTS a join, whose place in the join order it chose by statistics; every
// EXISTS of the lists has one.
func keyIn(table, idExpr, prefix string, values []string, bit int64) sqlCond {
	args := make([]any, 0, len(values)+1)
	for _, v := range values {
		args = append(args, prefix+v)
	}
	args = append(args, bit)
	return sqlCond{fmt.Sprintf("EXISTS (SELECT 1 FROM %[1]s k INDEXED BY sqlite_autoindex_%[1]s_1 WHERE k.public_id = %[2]s AND k.key IN (%[3]s) AND k.audiences & ? != 0 LIMIT 1)",
		table, idExpr, placeholders(len(values))), args}
}

// candidates returns the SELECT of a filter's candidates (arms or gather).
func (f listFilter) candidates() sqlCond {
	if len(f.arms) == 0 {
		return f.gather
	}
	return union(f.arms, "UNION ALL")
}

func union(arms []sqlCond, op string) sqlCond {
	var parts []string
	var args []any
	for _, a := range arms {
		parts, args = append(parts, a.sql), append(args, a.args...)
	}
	return sqlCond{strings.Join(parts, "\n"+op+"\n"), args}
}

// count returns the statement counting filter i's candidates after the cursor, up to max.
func (pl servicePlan) count(i, max int) sqlCond {
	c := pl.filters[i].candidates()
	return sqlCond{"SELECT count(*) FROM (SELECT 1 FROM (" + c.sql + ") LIMIT ?)", append(c.args, max)}
}

// walk is the driver of a plan without a usable filter: the services' views.
const walk = -1

// page returns the page statement driven by filter driver, or by the services' views (walk). Driven
// by a filter's arms, the other filters are checked on the candidate d and its record r before its
// view p is read (SQLite tests a condition in the innermost loop it names), which most candidates
// of a sparse combination fail.
func (pl servicePlan) page(driver int) sqlCond {
	id := "p.public_id"
	if driver != walk && len(pl.filters[driver].arms) > 0 {
		id = "d.public_id"
	}
	var members []sqlCond
	join := ""
	for i, f := range pl.filters {
		if i != driver || !f.exact {
			members = append(members, f.member(id))
			if f.record {
				join = "\nCROSS JOIN records r INDEXED BY sqlite_autoindex_records_1 ON r.public_id = " + id
			}
		}
	}
	where := and(members...)
	body := "p.body"
	if pl.keysOnly {
		body = "NULL"
	}
	var q sqlCond
	switch {
	case driver == walk:
		in := pl.bounds.on("p.public_id")
		q.sql = "SELECT p.public_id, " + body + ", p.etag\nFROM projections p INDEXED BY sqlite_autoindex_projections_1" + join +
			"\nWHERE " + in.sql + " AND p.audiences & ? != 0 AND (" + where.sql + ")\nORDER BY p.public_id LIMIT ?"
		q.args = append(append(in.args, pl.bit), where.args...)
	case len(pl.filters[driver].arms) == 0:
		// SQLite reads an IN list in order: the sorted list drives the page.
		// The bounds' unary + keeps them from the primary key's search.
		g, in := pl.filters[driver].gather, pl.bounds.on("+p.public_id")
		q.sql = "SELECT p.public_id, " + body + ", p.etag\nFROM projections p INDEXED BY sqlite_autoindex_projections_1" + join +
			"\nWHERE p.public_id IN (" + g.sql + ") AND " + in.sql + " AND p.audiences & ? != 0 AND (" + where.sql + ")\nORDER BY p.public_id LIMIT ?"
		q.args = append(append(append(g.args, in.args...), pl.bit), where.args...)
	default:
		// One arm is read in index order; several are merged in order (MERGE (UNION)), which also
		// drops a service two keys find.
		d := union(pl.filters[driver].arms, "UNION")
		if len(pl.filters[driver].arms) > 1 {
			d.sql += "\nORDER BY 1"
		}
		q.sql = "SELECT d.public_id, " + body + ", p.etag\nFROM (" + d.sql + ") d" + join +
			"\nCROSS JOIN projections p INDEXED BY sqlite_autoindex_projections_1 ON p.public_id = d.public_id AND p.audiences & ? != 0" +
			"\nWHERE " + where.sql + "\nORDER BY d.public_id LIMIT ?"
		q.args = append(append(d.args, pl.bit), where.args...)
	}
	q.args = append(q.args, pl.limit+1)
	return q
}

// driver chooses the filter that drives the page (see the top of this file).
func (d *Directory) driver(ctx context.Context, pl servicePlan) (int, error) {
	switch {
	case len(pl.filters) == 0:
		return walk, nil
	case len(pl.filters) == 1 && len(pl.filters[0].arms) > 0:
		return 0, nil
	}
	order := make([]int, len(pl.filters))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return pl.filters[a].rank - pl.filters[b].rank })
	best, bestN := walk, countCap+1
	for _, i := range order {
		f := pl.filters[i]
		max := bestN
		if len(f.arms) == 0 {
			max = min(max, gatherCap+1)
		}
		c := pl.count(i, max)
		var n int
		if err := d.lists.queryRow(ctx, d.readers, c.sql, c.args...).Scan(&n); err != nil {
			return 0, fmt.Errorf("count candidates: %w", err)
		}
		if n < max {
			best, bestN = i, n
		}
		if bestN == 0 {
			return best, nil // an empty page, found at once
		}
	}
	if best == walk {
		// Every filter holds more than countCap: a type or category drives rather than an area,
		// which is often a whole state or country, and whose candidates need a second check.
		for _, i := range slices.Backward(order) {
			if len(pl.filters[i].arms) > 0 {
				return i, nil
			}
		}
	}
	return best, nil
}
