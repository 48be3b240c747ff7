package dirdb

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
)

// listShape is one service list query: a viewer and a query.
type listShape struct {
	name string
	v    dirsvc.Viewer
	q    dirsvc.ServiceQuery
}

// listShapes returns every shape of the service list: no filter; type, category, area, organisation
// and updatedSince alone and in every combination; one value and several; with and without a
// cursor; limits 1, 50, 62, 63 and 100 (the planner once flipped between 62 and 63); every served
// audience, with and without a narrowing.
func listShapes() []listShape {
	type filter struct {
		name  string
		apply func(q *dirsvc.ServiceQuery, many bool)
	}
	filters := []filter{
		{"type", func(q *dirsvc.ServiceQuery, many bool) { q.Types = pick(many, "gp", "counselling") }},
		{"category", func(q *dirsvc.ServiceQuery, many bool) { q.Categories = pick(many, "primary_care", "mental_health") }},
		{"area", func(q *dirsvc.ServiceQuery, many bool) { q.Areas = pick(many, "postcode:2007", "state:nsw") }},
		{"organisation", func(q *dirsvc.ServiceQuery, many bool) { q.Organisations = pick(many, "org_harbour", "org_coast") }},
		{"updatedSince", func(q *dirsvc.ServiceQuery, many bool) { q.UpdatedSince = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }},
	}
	narrowings := []dirsvc.Narrowing{{}, {Areas: []string{"state:nsw"}, Categories: []string{"primary_care"}}}
	var shapes []listShape
	add := func(set int, many bool, after string, limit int, a dirsvc.Audience, n dirsvc.Narrowing) {
		q := dirsvc.ServiceQuery{After: after, Limit: limit}
		var names []string
		for i, f := range filters {
			if set&(1<<i) != 0 {
				f.apply(&q, many)
				names = append(names, f.name)
			}
		}
		name := fmt.Sprintf("%s many=%t after=%q limit=%d %s narrowed=%t", strings.Join(names, "+"), many, after, limit, a, n.Narrowed())
		shapes = append(shapes, listShape{name, dirsvc.Viewer{Audience: a, Narrowing: n}, q})
	}
	// Every filter set with and without a cursor for every audience, narrowed or not; several
	// values each; and every limit.
	for set := 0; set < 1<<len(filters); set++ {
		for _, after := range []string{"", "svc_gp"} {
			for _, n := range narrowings {
				for _, a := range dirsvc.ServedAudiences {
					add(set, false, after, 50, a, n)
				}
				if set != 0 {
					add(set, true, after, 50, dirsvc.Partner, n)
				}
				for _, limit := range []int{1, 62, 63, 100} {
					add(set, false, after, limit, dirsvc.Public, n)
				}
			}
		}
	}
	return shapes
}

func pick(many bool, values ...string) []string {
	if many {
		return values
	}
	return values[:1]
}

// statements returns every statement a service list of the shape may run: the count of each
// filter's candidates, and the page driven by each filter that can drive it and by the views.
func (pl servicePlan) statements() map[string]sqlCond {
	out := map[string]sqlCond{"page by views": pl.page(walk)}
	for i, f := range pl.filters {
		out[fmt.Sprintf("count %d", i)] = pl.count(i, countCap+1)
		if len(f.arms) > 0 || f.gather.sql != "" {
			out[fmt.Sprintf("page by %d", i)] = pl.page(i)
		}
	}
	return out
}

// explain returns the query plan of q, one step a line, indented by depth.
func explain(t *testing.T, db *sql.DB, q sqlCond) string {
	t.Helper()
	rows, err := db.Query("EXPLAIN QUERY PLAN "+q.sql, q.args...)
	if err != nil {
		t.Fatalf("explain %s: %v", q.sql, err)
	}
	defer rows.Close()
	depth := map[int]int{}
	var b strings.Builder
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		depth[id] = depth[parent] + 1
		b.WriteString(strings.Repeat("  ", depth[id]-1) + detail + "\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// badStep returns the first step of a plan that reads a whole table or index (a SCAN of anything but
// a subquery's rows), sorts (a temporary B-tree) or builds an index for the query; "" when none. A
// statement driven by a filter must also start from the filter's own index: its first search may
// not be the range of every service's ID (checking each service for the filter).
func badStep(plan string, driven bool) string {
	subqueries := map[string]bool{}
	for i, line := range strings.Split(plan, "\n") {
		step := strings.TrimSpace(line)
		if i == 0 && driven && strings.HasSuffix(step, "(public_id>? AND public_id<?)") {
			return step
		}
		for _, p := range []string{"CO-ROUTINE ", "MATERIALIZE "} {
			if name, ok := strings.CutPrefix(step, p); ok {
				subqueries[name] = true
			}
		}
		switch {
		case strings.HasPrefix(step, "SCAN "):
			name, _, _ := strings.Cut(strings.TrimPrefix(step, "SCAN "), " ")
			if !subqueries[name] && !strings.HasPrefix(name, "(subquery-") {
				return step
			}
		case strings.Contains(step, "TEMP B-TREE"), strings.Contains(step, "AUTOMATIC"):
			return step
		}
	}
	return ""
}

// plans explains every statement of every shape on db.
func plans(t *testing.T, db *sql.DB) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, s := range listShapes() {
		pl := planServices(s.v, s.q)
		for name, q := range pl.statements() {
			// The views drive the page for no filter, or a filter whose candidates no index holds
			// in order; the other statements are driven by a filter.
			driven := name != "page by views"
			out[s.name+": "+name] = fmt.Sprintf("driven=%t\n", driven) + explain(t, db, q) + "--\n" + q.sql
		}
	}
	// The change feed's statements.
	for name, q := range feedStatements() {
		out["feed: "+name] = "driven=false\n" + explain(t, db, q) + "--\n" + q.sql
	}
	// The practitioner list, as Practitioners asks for it.
	for _, a := range dirsvc.ServedAudiences {
		for _, n := range []dirsvc.Narrowing{{}, {Areas: []string{"state:nsw"}, Categories: []string{"primary_care"}}} {
			for _, after := range []string{"", "prac_a"} {
				v := dirsvc.Viewer{Audience: a, Narrowing: n}
				q := viewsPage(v, dirsvc.KindPractitioner, after, 50, activeRole("p.public_id", audienceBit(a), condTrue))
				out[fmt.Sprintf("practitioners %s narrowed=%t after=%q", a, n.Narrowed(), after)] = "driven=false\n" + explain(t, db, q) + "--\n" + q.sql
			}
		}
	}
	// The related records of pages and FHIR references (Related), every reference a page follows.
	for _, rel := range []struct{ kind, ref dirsvc.Kind }{{dirsvc.KindService, dirsvc.KindLocation},
		{dirsvc.KindService, dirsvc.KindOrganisation}, {dirsvc.KindLocation, dirsvc.KindOrganisation},
		{dirsvc.KindRole, dirsvc.KindService}, {dirsvc.KindRole, dirsvc.KindPractitioner}} {
		for _, n := range []dirsvc.Narrowing{{}, {Areas: []string{"state:nsw"}, Categories: []string{"primary_care"}}} {
			q, err := relatedSQL(dirsvc.Viewer{Audience: dirsvc.Public, Narrowing: n}, rel.kind, rel.ref, rel.ref.IDPrefix()+"a")
			if err != nil {
				t.Fatal(err)
			}
			out[fmt.Sprintf("related %ss of a %s narrowed=%t", rel.kind, rel.ref, n.Narrowed())] = "driven=false\n" + explain(t, db, q) + "--\n" + q.sql
		}
	}
	// The identifier search of the REST API and FHIR (Identified), by a system and by a type code,
	// and the narrowing check of each record it finds (insideNarrowing), every kind.
	for _, a := range dirsvc.ServedAudiences {
		for _, system := range []string{"http://hl7.org.au/id/abn", "abn"} {
			q := identifiedSQL(system, "51824753556", audienceBit(a))
			out[fmt.Sprintf("identified %s by %s", a, system)] = "driven=false\n" + explain(t, db, q) + "--\n" + q.sql
		}
	}
	for _, kind := range dirsvc.Kinds {
		v := dirsvc.Viewer{Audience: dirsvc.Partner, Narrowing: dirsvc.Narrowing{Areas: []string{"state:nsw"}, Categories: []string{"primary_care"}}}
		q := insideSQL(kind.IDPrefix()+"a", v)
		out[fmt.Sprintf("identified %s inside the narrowing", kind)] = "driven=false\n" + explain(t, db, q) + "--\n" + q.sql
	}
	// The sitemap's count and walk of each kind's public pages (PublicPageCount, PublicPages).
	for _, kind := range publicPageKinds {
		for _, after := range []string{"", kind.IDPrefix() + "a"} {
			lo, hi := kindBounds(kind, after)
			out[fmt.Sprintf("sitemap count %s after=%q", kind, after)] = "driven=false\n" + explain(t, db, sqlCond{publicPagesCountSQL, []any{lo, hi}}) + "--\n" + publicPagesCountSQL
			out[fmt.Sprintf("sitemap page %s after=%q", kind, after)] = "driven=false\n" + explain(t, db, sqlCond{publicPagesSQL, []any{lo, hi, 1000, 0}}) + "--\n" + publicPagesSQL
		}
	}
	// A published image and the records whose views name it (Image).
	out["image"] = "driven=false\n" + explain(t, db, sqlCond{imageSQL, []any{"ab"}}) + "--\n" + imageSQL
	out["image namers"] = "driven=false\n" + explain(t, db, sqlCond{imageNamersSQL, []any{keyImage + "ab", int64(1), maxImageNamers}}) + "--\n" + imageNamersSQL
	// The record walks of the FHIR searches (Records), every kind.
	for _, kind := range dirsvc.Kinds {
		for _, n := range []dirsvc.Narrowing{{}, {Areas: []string{"state:nsw"}, Categories: []string{"primary_care"}}} {
			for _, after := range []string{"", kind.IDPrefix() + "a"} {
				v := dirsvc.Viewer{Audience: dirsvc.Professional, Narrowing: n}
				q := viewsPage(v, kind, after, 101, condTrue)
				out[fmt.Sprintf("records %s narrowed=%t after=%q", kind, n.Narrowed(), after)] = "driven=false\n" + explain(t, db, q) + "--\n" + q.sql
			}
		}
	}
	return out
}

// TestListPlans explains every statement every shape of the service list may run and fails on a plan
// that reads a whole table or index or sorts: each must walk an index in list order. The plans must
// be the same whatever statistics the file carries (none, as every directory file is made; those of
// ANALYZE; statistics that call every index useless, or perfect), since a copy of the file made
// elsewhere may carry any.
func TestListPlans(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	s, err := Open(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	d, err := s.CreateDirectory(ctx, "small")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join("..", "testdata", "small.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Import(ctx, parseForTest(t, b)); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := d.readers.QueryRow("SELECT count(*) FROM sqlite_schema WHERE name = 'sqlite_stat1'").Scan(&n); err != nil || n != 0 {
		t.Fatalf("a new directory file carries statistics (%d, %v): plans would depend on them", n, err)
	}
	want := plans(t, d.readers)
	checked := 0
	for name, plan := range want {
		driven, plan, _ := strings.Cut(plan, "\n")
		if step := badStep(plan, driven == "driven=true"); step != "" {
			t.Errorf("%s: %s\n%s", name, step, plan)
			if checked++; checked > 5 {
				t.Fatal("more plans fail")
			}
		}
	}
	if t.Failed() {
		return
	}

	path := filepath.Join(root, "dirs", "small", "directory.db")
	for _, stats := range []struct{ name, sql string }{
		{"those of ANALYZE", "ANALYZE"},
		{"calling every index useless", "ANALYZE; UPDATE sqlite_stat1 SET stat = '1000000 1000000 1000000 1000000'"},
		{"calling every index perfect", "ANALYZE; UPDATE sqlite_stat1 SET stat = '1000000 1 1 1'"},
	} {
		t.Run("with statistics "+stats.name, func(t *testing.T) {
			if _, err := d.writer.Exec(stats.sql); err != nil {
				t.Fatal(err)
			}
			// Statistics are read when a connection loads the schema: a new pool reads them.
			db, err := sql.Open("sqlite", dsn(path, reading))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			got := plans(t, db)
			failed := 0
			for name, plan := range got {
				if plan != want[name] {
					t.Errorf("%s: plan\n%s\nwithout statistics\n%s", name, plan, want[name])
					if failed++; failed > 3 {
						t.Fatal("more plans differ")
					}
				}
			}
		})
	}
}

// referencePage is the service list page as it was asked for before the plans were pinned: one
// statement with every filter a correlated condition, the planner free. Pinned plans must find the
// same services.
func referencePage(v dirsvc.Viewer, q dirsvc.ServiceQuery) sqlCond {
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
		conds = append(conds, sqlCond{`max(p.updated_ms,
    COALESCE((SELECT lp.updated_ms FROM projections lp WHERE lp.public_id = r.location_id AND lp.audiences & ? != 0), 0),
    COALESCE((SELECT op.updated_ms FROM projections op WHERE op.public_id = r.organisation_id AND op.audiences & ? != 0), 0)) >= ?`,
			[]any{bit, bit, ceilMilli(q.UpdatedSince)}})
	}
	bounds := kindRange("r.public_id", dirsvc.KindService)
	if q.After >= bounds.args[0].(string) {
		bounds = sqlCond{"r.public_id > ? AND r.public_id < ?", []any{q.After, bounds.args[1]}}
	}
	where := and(append([]sqlCond{bounds, inside(dirsvc.KindService, "r.public_id", v)}, conds...)...)
	return sqlCond{"SELECT r.public_id, p.body, p.etag FROM records r JOIN projections p ON p.public_id = r.public_id AND p.audiences & ? != 0 WHERE " +
		where.sql + " ORDER BY r.public_id LIMIT ?", append(append([]any{bit}, where.args...), q.Limit+1)}
}

// TestListPlansFindWhatTheListFoundBefore lists the demo directory's services in every shape, driven
// by each filter that can drive and by the views, and holds each page to the one the statement
// before pinned plans returns: the same services for every audience, filter and narrowing.
func TestListPlansFindWhatTheListFoundBefore(t *testing.T) {
	ctx := context.Background()
	d := demoDirectory(t)
	// Values the directory holds: the most common keys of each kind, and two organisations.
	common := func(prefix string, n int) []string {
		rows, err := d.readers.Query("SELECT substr(key, ?) FROM list_keys WHERE key GLOB ? GROUP BY key ORDER BY count(*) DESC, key LIMIT ?",
			len(prefix)+1, prefix+"*", n)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var v string
			rows.Scan(&v)
			out = append(out, v)
		}
		if len(out) < n {
			t.Fatalf("the demo directory has %d keys %s*", len(out), prefix)
		}
		return out
	}
	var orgs []string
	rows, err := d.readers.Query("SELECT organisation_id FROM records WHERE kind = 'service' GROUP BY organisation_id ORDER BY count(*) DESC LIMIT 2")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var o string
		rows.Scan(&o)
		orgs = append(orgs, o)
	}
	rows.Close()
	var lastMs int64
	if err := d.readers.QueryRow("SELECT max(updated_ms) FROM projections").Scan(&lastMs); err != nil {
		t.Fatal(err)
	}
	last := time.UnixMilli(lastMs)
	postcodes, lgas, states := common("area:postcode:", 2), common("area:lga:", 1), common("area:state:", 1)
	types, cats := common("type:", 2), common("cat:", 2)
	queries := []dirsvc.ServiceQuery{
		{},
		{Types: types[:1]}, {Types: types}, {Categories: cats[:1]}, {Categories: cats},
		{Areas: postcodes[:1]}, {Areas: append(postcodes, lgas...)}, {Areas: states},
		{Organisations: orgs[:1]}, {Organisations: orgs},
		{UpdatedSince: last}, {UpdatedSince: last.Add(time.Millisecond)}, {UpdatedSince: last.Add(-time.Hour)},
		{Types: types, Areas: states}, {Categories: cats[:1], Areas: lgas}, {Types: types[:1], Organisations: orgs},
		{Areas: states, UpdatedSince: last}, {Types: types, Categories: cats, Areas: states, Organisations: orgs, UpdatedSince: last},
	}
	narrowings := []dirsvc.Narrowing{{}, {Areas: states, Categories: cats[:1]}, {Areas: postcodes},
		{Kinds: []dirsvc.Kind{dirsvc.KindService}}, {Kinds: []dirsvc.Kind{dirsvc.KindLocation}}}
	ids := func(q sqlCond) []string {
		rows, err := d.readers.Query(q.sql, q.args...)
		if err != nil {
			t.Fatalf("%v\n%s", err, q.sql)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var id string
			var body []byte
			var etag string
			if err := rows.Scan(&id, &body, &etag); err != nil {
				t.Fatal(err)
			}
			out = append(out, id)
		}
		return out
	}
	found := 0
	for _, a := range dirsvc.ServedAudiences {
		for _, n := range narrowings {
			for _, q := range queries {
				v := dirsvc.Viewer{Audience: a, Narrowing: n}
				all := q
				all.Limit = 1000
				everything := ids(referencePage(v, all))
				found += len(everything)
				afters := []string{""}
				if len(everything) > 3 {
					afters = append(afters, everything[2], everything[len(everything)-2])
				}
				for _, after := range afters {
					for _, limit := range []int{1, 7, 100} {
						q.After, q.Limit = after, limit
						wantIDs := ids(referencePage(v, q))
						want := strings.Join(wantIDs, " ")
						if n.AllowsKind(dirsvc.KindService) {
							for name, st := range planServices(v, q).statements() {
								if !strings.HasPrefix(name, "page") {
									continue
								}
								if got := strings.Join(ids(st), " "); got != want {
									t.Errorf("%s %+v %+v, %s: found\n%s\nwant\n%s", a, n, q, name, got, want)
								}
							}
						}
						p, err := d.Services(ctx, v, q)
						if err != nil {
							t.Fatal(err)
						}
						var got []string
						for _, it := range p.Items {
							got = append(got, it.PublicID)
						}
						if w := wantIDs[:min(limit, len(wantIDs))]; strings.Join(got, " ") != strings.Join(w, " ") || p.More != (len(wantIDs) > limit) {
							t.Errorf("Services %s %+v %+v: found %v (more %t), want %v of\n%s", a, n, q, got, p.More, w, want)
						}
						// A caller that holds every other view has the same page, with the others'
						// bodies only.
						held := map[string]bool{}
						for i, it := range p.Items {
							held[it.PublicID] = i%2 == 1
						}
						q.Held = func(id, etag string) bool { return held[id] }
						hp, err := d.Services(ctx, v, q)
						q.Held = nil
						if err != nil {
							t.Fatal(err)
						}
						if len(hp.Items) != len(p.Items) || hp.More != p.More {
							t.Fatalf("Services %s %+v %+v holding views: %d views (more %t), want %d (more %t)", a, n, q, len(hp.Items), hp.More, len(p.Items), p.More)
						}
						for i, it := range hp.Items {
							want := p.Items[i]
							if it.PublicID != want.PublicID || it.ETag != want.ETag || (it.Body == nil) != held[it.PublicID] ||
								(!held[it.PublicID] && string(it.Body) != string(want.Body)) {
								t.Errorf("Services %s %+v %+v holding views: view %d is %s %s (body %d bytes), want %s %s (held %t)", a, n, q, i,
									it.PublicID, it.ETag, len(it.Body), want.PublicID, want.ETag, held[want.PublicID])
							}
						}
					}
				}
			}
		}
	}
	if found < 1000 {
		t.Fatalf("the lists found %d services in all: the test would prove little", found)
	}
}

// TestPageBodiesOutliveTheirRows: a page's bodies are kept as the driver gave them (ownBody), so each
// must still be its record's view once every row after it has been read. A driver that reused its
// buffers would leave the bodies of a page overwritten by the rows after them.
func TestPageBodiesOutliveTheirRows(t *testing.T) {
	ctx := context.Background()
	d := demoDirectory(t)
	pub := dirsvc.Viewer{Audience: dirsvc.Public}
	check := func(what string, items []dirsvc.Published, least int) {
		t.Helper()
		if len(items) < least {
			t.Fatalf("%s: %d views, want %d at least for the test to prove anything", what, len(items), least)
		}
		for _, it := range items {
			st, err := d.Record(ctx, it.PublicID, pub)
			if err != nil {
				t.Fatal(err)
			}
			if st.View == nil || string(st.View.Body) != string(it.Body) || st.View.ETag != it.ETag {
				t.Errorf("%s: the body of %s is not its view as read alone", what, it.PublicID)
			}
		}
	}
	page, err := d.Services(ctx, pub, dirsvc.ServiceQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	check("a page of the service list", page.Items, 100)
	unheld, err := d.Services(ctx, pub, dirsvc.ServiceQuery{Limit: 100, Held: func(string, string) bool { return false }})
	if err != nil {
		t.Fatal(err)
	}
	check("a page whose bodies were read apart", unheld.Items, 100)
	var org string
	if err := d.readers.QueryRow(`SELECT r.organisation_id FROM records r JOIN projections p ON p.public_id = r.public_id
WHERE r.kind = 'service' AND p.audiences & ? != 0 GROUP BY r.organisation_id ORDER BY count(*) DESC LIMIT 1`, audienceBit(dirsvc.Public)).Scan(&org); err != nil {
		t.Fatal(err)
	}
	related, err := d.Related(ctx, pub, dirsvc.KindService, dirsvc.KindOrganisation, org)
	if err != nil {
		t.Fatal(err)
	}
	check("the services of an organisation", related, 2)
}
