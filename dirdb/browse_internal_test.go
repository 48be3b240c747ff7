package dirdb

import (
	"strings"
	"testing"

	"github.com/dirsvc/dirsvc"
)

// TestBrowsePlans explains the statements that count categories' services and find their places,
// for every tier with and without a narrowing, on the demo directory: each walks list_keys_key for
// the category's keys and probes primary keys for the rest; none reads a whole table or index (the
// projections least of all) or builds an automatic index. Sorting the category's own services
// (DISTINCT, GROUP BY) is allowed: it costs what the category holds, not the directory.
func TestBrowsePlans(t *testing.T) {
	d := demoDirectory(t)
	cat := dirsvc.CategoryServices{Code: "womens_health", Types: []string{"gp", "sexual_health"},
		LocalTypes: []string{"womens_health", "menopause"}}
	for _, a := range dirsvc.ServedAudiences {
		for _, n := range []dirsvc.Narrowing{{}, {Areas: []string{"state:nsw"}}, {Areas: []string{"state:nsw"}, Categories: []string{"primary_care"}}} {
			v := dirsvc.Viewer{Audience: a, Narrowing: n}
			count, _ := countStatement(v, [][]string{categoryKeys(cat), {"type:gp"}})
			for name, q := range map[string]sqlCond{"count": count, "places": placesStatement(v, categoryKeys(cat), "lga")} {
				plan := explain(t, d.readers, q)
				if step := fullRead(plan); step != "" || !strings.Contains(plan, "SEARCH ck USING COVERING INDEX list_keys_key") {
					t.Errorf("%s as %s narrowed %v: %s\n%s\n--\n%s", name, a, n, step, plan, q.sql)
				}
			}
		}
	}
}

// fullRead returns the first step of a plan that reads a whole table or index, or builds an index
// for the query; "" when none.
func fullRead(plan string) string {
	for line := range strings.SplitSeq(plan, "\n") {
		step := strings.TrimSpace(line)
		if name, ok := strings.CutPrefix(step, "SCAN "); ok && !strings.HasSuffix(step, " CONSTANT ROWS") {
			name, _, _ = strings.Cut(name, " ")
			if name != "c" && name != "s" && !strings.HasPrefix(name, "(subquery-") {
				return step
			}
		}
		if strings.Contains(step, "AUTOMATIC") {
			return step
		}
	}
	return ""
}
