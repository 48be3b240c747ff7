package dirdb

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/primary/demo"
)

// placedByServices is the narrowing check of an organisation, a site or a practitioner written the
// way it was before narrowing keys: from the record's services, each read in turn. The narrowing
// keys must place every record exactly as it does.
func placedByServices(kind dirsvc.Kind, idExpr string, n dirsvc.Narrowing, bit int64) sqlCond {
	visibleRef := func(kind dirsvc.Kind, col, idExpr string, cond sqlCond) sqlCond {
		return sqlCond{fmt.Sprintf(`EXISTS (SELECT 1 FROM records x JOIN projections xp ON xp.public_id = x.public_id AND xp.audiences & ? != 0
WHERE x.%s = %s AND x.kind = ? AND %s)`, col, idExpr, cond.sql), append([]any{bit, string(kind)}, cond.args...)}
	}
	switch kind {
	case dirsvc.KindLocation:
		c := hasKey(idExpr, keyArea, n.Areas, bit)
		if len(n.Categories) > 0 {
			c = and(c, visibleRef(dirsvc.KindService, "location_id", idExpr, hasKey("x.public_id", keyCat, n.Categories, bit)))
		}
		return c
	case dirsvc.KindOrganisation:
		c := visibleRef(dirsvc.KindService, "organisation_id", idExpr, serviceInPlace("x.public_id", n, bit))
		if len(n.Categories) == 0 {
			site := visibleRef(dirsvc.KindLocation, "organisation_id", idExpr, hasKey("x.public_id", keyArea, n.Areas, bit))
			c = sqlCond{"(" + c.sql + " OR " + site.sql + ")", append(c.args, site.args...)}
		}
		return c
	case dirsvc.KindPractitioner:
		// An active role the audience sees, whose service it sees too.
		return activeRole(idExpr, bit, visibleRef(dirsvc.KindService, "public_id", "ro.service_id", serviceInPlace("x.public_id", n, bit)))
	}
	panic(kind)
}

// insideIDs returns the records of kind that cond (on r.public_id) holds for.
func insideIDs(t *testing.T, d *Directory, kind dirsvc.Kind, cond sqlCond) []string {
	t.Helper()
	r := kindRange("r.public_id", kind)
	rows, err := d.readers.Query("SELECT r.public_id FROM records r WHERE "+r.sql+" AND "+cond.sql+" ORDER BY 1", append(r.args, cond.args...)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, cond.sql)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		rows.Scan(&id)
		out = append(out, id)
	}
	return out
}

// commonKeys returns up to n of the list keys with prefix that most records carry, without the prefix.
func commonKeys(t *testing.T, d *Directory, prefix string, n int) []string {
	t.Helper()
	rows, err := d.readers.Query("SELECT key FROM list_keys WHERE key >= ? AND key < ? GROUP BY key ORDER BY count(*) DESC, key LIMIT ?",
		prefix, prefix+"\xff", n)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var k string
		rows.Scan(&k)
		out = append(out, strings.TrimPrefix(k, prefix))
	}
	return out
}

// checkPlacement compares, for every served audience and a set of narrowings made of the
// directory's own areas and categories, the records inside by the narrowing keys with those inside
// by their services.
func checkPlacement(t *testing.T, d *Directory) {
	t.Helper()
	states, postcodes, cats := commonKeys(t, d, keyArea+"state:", 2), commonKeys(t, d, keyArea+"postcode:", 3), commonKeys(t, d, keyCat, 3)
	if len(states) == 0 || len(postcodes) < 2 || len(cats) < 2 {
		t.Fatalf("the directory has too few areas and categories (%v %v %v) to test narrowing", states, postcodes, cats)
	}
	narrowings := []dirsvc.Narrowing{
		{Areas: states[:1]}, {Areas: postcodes}, {Categories: cats[:1]}, {Categories: cats},
		{Areas: states, Categories: cats[:1]}, {Areas: postcodes[:2], Categories: cats},
	}
	checked, found := 0, 0
	for _, a := range dirsvc.ServedAudiences {
		for _, n := range narrowings {
			v := dirsvc.Viewer{Audience: a, Narrowing: n}
			for _, kind := range placed {
				got := insideIDs(t, d, kind, inside(kind, "r.public_id", v))
				want := insideIDs(t, d, kind, placedByServices(kind, "r.public_id", n, audienceBit(a)))
				if !slices.Equal(got, want) {
					t.Errorf("%s %+v, %ss: inside by narrowing keys\n%v\nby their services\n%v", a, n, kind, got, want)
				}
				checked++
				found += len(want)
			}
		}
	}
	if found < checked {
		t.Fatalf("%d records inside in %d checks: the test would prove little", found, checked)
	}
}

// narrowingKeys returns every row of narrowing_keys, one line each.
func narrowingKeys(t *testing.T, d *Directory) []string {
	t.Helper()
	rows, err := d.readers.Query("SELECT public_id, key, audiences FROM narrowing_keys ORDER BY public_id, key")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id, key string
		var aud int64
		rows.Scan(&id, &key, &aud)
		out = append(out, fmt.Sprintf("%s %s %d", id, key, aud))
	}
	return out
}

// TestNarrowingKeysPlaceAsServices holds the narrowing keys of a generated directory to the services
// that place each record, after its import and after writes that move, retype, hide and close
// services, deactivate roles and move sites; and the keys each write keeps to those a whole refresh
// makes.
func TestNarrowingKeysPlaceAsServices(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var buf bytes.Buffer
	if err := demo.Generate(&buf, demo.Options{Slug: "gen", Services: 600, Seed: demo.DefaultSeed}); err != nil {
		t.Fatal(err)
	}
	d, err := s.CreateDirectory(ctx, "gen")
	if err != nil {
		t.Fatal(err)
	}
	snap := parseForTest(t, buf.Bytes())
	if _, err := d.Import(ctx, snap); err != nil {
		t.Fatal(err)
	}
	checkPlacement(t, d)

	var services []*dirsvc.Service
	var roles []*dirsvc.PractitionerRole
	var sites []*dirsvc.Location
	for _, r := range snap.Records {
		switch x := r.(type) {
		case *dirsvc.Service:
			if x.State == dirsvc.StateLive {
				services = append(services, x)
			}
		case *dirsvc.PractitionerRole:
			if x.Active && x.State == dirsvc.StateLive {
				roles = append(roles, x)
			}
		case *dirsvc.Location:
			if x.State == dirsvc.StateLive && len(x.Areas) > 0 {
				sites = append(sites, x)
			}
		}
	}
	update := func(rec dirsvc.Record) {
		t.Helper()
		if _, err := d.Update(ctx, rec); err != nil {
			t.Fatalf("update %s: %v", rec.Base().PublicID, err)
		}
	}
	byID := map[string]*dirsvc.Service{}
	for _, sv := range services {
		byID[sv.PublicID] = sv
	}
	before := narrowingKeys(t, d)
	// The only service of an organisation moves to another organisation, none of whose services is
	// of its category, and to that one's site: both organisations' keys change.
	var only, target, targetSite string
	err = d.readers.QueryRow(`SELECT s.public_id, o.organisation_id, o.location_id
FROM records s JOIN list_keys c ON c.public_id = s.public_id AND c.key >= 'cat:' AND c.key < 'cat;' AND c.audiences & 1 != 0
JOIN records o ON o.kind = 'service' AND o.organisation_id != s.organisation_id AND o.location_id IS NOT NULL
WHERE s.kind = 'service' AND s.state = 'live'
    AND (SELECT count(*) FROM records x WHERE x.organisation_id = s.organisation_id AND x.kind = 'service') = 1
    AND NOT EXISTS (SELECT 1 FROM records y JOIN list_keys yc ON yc.public_id = y.public_id AND yc.key = c.key
        WHERE y.organisation_id = o.organisation_id AND y.kind = 'service')
ORDER BY s.public_id, o.public_id LIMIT 1`).Scan(&only, &target, &targetSite)
	if err != nil {
		t.Fatalf("no service to move: %v", err)
	}
	moved := *byID[only]
	from := moved.Organisation
	moved.Organisation, moved.Location = target, targetSite
	update(&moved)
	// Another service takes the type of a service of another category.
	var other, otherType string
	err = d.readers.QueryRow(`SELECT s.public_id, substr(ot.key, 6) FROM records s
JOIN list_keys c ON c.public_id = s.public_id AND c.key >= 'cat:' AND c.key < 'cat;'
JOIN list_keys ot ON ot.key >= 'type:' AND ot.key < 'type;'
WHERE s.kind = 'service' AND s.state = 'live' AND s.public_id != ? AND s.organisation_id NOT IN (?, ?)
    AND NOT EXISTS (SELECT 1 FROM list_keys oc WHERE oc.public_id = ot.public_id AND oc.key = c.key)
ORDER BY s.public_id LIMIT 1`, only, from, target).Scan(&other, &otherType)
	if err != nil {
		t.Fatalf("no service to retype: %v", err)
	}
	retyped := *byID[other]
	retyped.Type = otherType
	update(&retyped)
	changed := func(id string) bool {
		keys := func(all []string) []string {
			return slices.DeleteFunc(slices.Clone(all), func(k string) bool { return !strings.HasPrefix(k, id+" ") })
		}
		return !slices.Equal(keys(before), keys(narrowingKeys(t, d)))
	}
	for _, id := range []string{from, target, retyped.Organisation} {
		if !changed(id) {
			t.Errorf("the writes left the narrowing keys of %s as they were", id)
		}
	}
	// A service is seen by staff and partners only; another closes.
	if _, err := d.Transition(ctx, services[2].PublicID, dirsvc.Transition{To: dirsvc.StateVisibilityReduced,
		VisibleTo: dirsvc.AudiencesOf(dirsvc.Partner)}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Transition(ctx, services[3].PublicID, dirsvc.Transition{To: dirsvc.StateClosed}); err != nil {
		t.Fatal(err)
	}
	// A role ends; a site moves to another area.
	ended := *roles[0]
	ended.Active = false
	update(&ended)
	site := *sites[0]
	site.Areas = slices.Clone(sites[len(sites)-1].Areas)
	update(&site)
	checkPlacement(t, d)

	// A write that touches many records makes every record's keys anew: the service moves back.
	defer func(n int) { wholeRefresh = n }(wholeRefresh)
	wholeRefresh = 2
	update(byID[only])
	wholeRefresh = 1 << 30
	checkPlacement(t, d)

	kept := narrowingKeys(t, d)
	if _, err := d.write(ctx, func(w *writeTx) error {
		_, err := w.pub.ExecContext(ctx, "UPDATE projection SET narrowing_filled = 0 WHERE id = 1")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	whole := narrowingKeys(t, d)
	if !slices.Equal(kept, whole) {
		t.Errorf("the writes kept %d narrowing keys, a whole refresh makes %d:\n%s", len(kept), len(whole), firstDiff(strings.Join(kept, "\n"), strings.Join(whole, "\n")))
	}
	// The statements that make one record's keys, and every record's of a kind, make the same keys
	// as the whole refresh.
	for _, owners := range []string{oneRecord, allRecords} {
		if _, err := d.write(ctx, func(w *writeTx) error {
			if _, err := w.pub.ExecContext(ctx, "DELETE FROM narrowing_keys"); err != nil {
				return err
			}
			for _, kind := range placed {
				if owners == allRecords {
					if _, err := w.pub.ExecContext(ctx, fillNarrowingKeys(kind, owners)); err != nil {
						return err
					}
					continue
				}
				r := kindRange("public_id", kind)
				ids, err := queryStrings(ctx, w.pub, "SELECT public_id FROM records WHERE "+r.sql, r.args...)
				if err != nil {
					return err
				}
				for _, id := range ids {
					if _, err := w.pub.ExecContext(ctx, fillNarrowingKeys(kind, owners), id); err != nil {
						return err
					}
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if got := narrowingKeys(t, d); !slices.Equal(got, whole) {
			t.Errorf("the statements (owners %s) make %d narrowing keys, the whole refresh %d:\n%s", owners, len(got), len(whole), firstDiff(strings.Join(got, "\n"), strings.Join(whole, "\n")))
		}
	}
}

// TestNarrowingKeyPlans explains the statements that make a record's narrowing keys: each reads the
// record's services, sites and keys through indexes, never a whole table.
func TestNarrowingKeyPlans(t *testing.T) {
	d := demoDirectory(t)
	for _, st := range []struct {
		kind   dirsvc.Kind
		owners string
		args   []any
	}{{dirsvc.KindOrganisation, oneRecord, []any{"x"}}, {dirsvc.KindLocation, oneRecord, []any{"x"}}, {dirsvc.KindPractitioner, oneRecord, []any{"x"}},
		{dirsvc.KindOrganisation, allRecords, nil}, {dirsvc.KindLocation, allRecords, nil}, {dirsvc.KindPractitioner, allRecords, nil}} {
		kind := st.kind
		rows, err := d.readers.Query("EXPLAIN QUERY PLAN "+fillNarrowingKeys(kind, st.owners), st.args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			rows.Scan(&id, &parent, &unused, &detail)
			plan = append(plan, detail)
		}
		rows.Close()
		for _, step := range plan {
			if strings.HasPrefix(step, "SCAN ") && !strings.HasPrefix(step, "SCAN s") && !strings.HasPrefix(step, "SCAN a") &&
				!strings.HasPrefix(step, "SCAN c") && !strings.HasPrefix(step, "SCAN facts") {
				t.Errorf("%s: the statement scans a table:\n%s", kind, strings.Join(plan, "\n"))
				break
			}
		}
	}
}
