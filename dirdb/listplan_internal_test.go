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
		out[fmt.Sprintf("count %d", i)] = pl.count(i)
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
// a subquery's rows), sorts (a temporary B-tree) or builds an index for the query; "" when none.
func badStep(plan string) string {
	subqueries := map[string]bool{}
	for _, line := range strings.Split(plan, "\n") {
		step := strings.TrimSpace(line)
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
			out[s.name+": "+name] = explain(t, db, q) + "--\n" + q.sql
		}
	}
	// The practitioner list, as Practitioners asks for it.
	for _, a := range dirsvc.ServedAudiences {
		for _, n := range []dirsvc.Narrowing{{}, {Areas: []string{"state:nsw"}, Categories: []string{"primary_care"}}} {
			for _, after := range []string{"", "prac_a"} {
				v := dirsvc.Viewer{Audience: a, Narrowing: n}
				q := viewsPage(v, dirsvc.KindPractitioner, after, 50, activeRole("p.public_id", audienceBit(a), condTrue))
				out[fmt.Sprintf("practitioners %s narrowed=%t after=%q", a, n.Narrowed(), after)] = explain(t, db, q) + "--\n" + q.sql
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
		if step := badStep(plan); step != "" {
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
			db, err := sql.Open("sqlite", dsn(path, false))
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
