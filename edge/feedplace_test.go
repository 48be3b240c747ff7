package edge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/dirsvc/dirsvc"
)

// fhirTypes are the FHIR resource types of the record kinds the test moves.
var fhirTypes = map[dirsvc.Kind]string{dirsvc.KindOrganisation: "Organization", dirsvc.KindRole: "PractitionerRole",
	dirsvc.KindPractitioner: "Practitioner"}

// TestARecordThatMovesInOutAndInAgainComesBack moves records into a narrowed client's area, out of
// it and into it again without a change of their own: svc_gp comes to serve the area (its
// catchment), which places its organisation, its roles and their practitioner there too. Each
// caller harvests the feed through the real handler after every step, as a consumer that keeps
// every dedupe tuple it has seen and drops an item whose tuple it has seen before (section 6.1).
// No caller may receive a tuple twice, every item's version is the version of the entity it carries,
// and after every step each consumer's copy is exactly what the caller may read, so the records that
// came back are shown again. The version a record's last item names is the one its record read and
// its FHIR read show.
func TestARecordThatMovesInOutAndInAgainComesBack(t *testing.T) {
	const area = "postcode:2250" // where Coast Counselling is, and Harbour Health is not
	ctx := context.Background()
	s := newTestServer(t)
	snap := parseDemo(t, smallFixture(t))
	snap.Directory.Slug = "demo" // the feed helpers read demo
	w, err := s.store.Create(ctx, "demo")
	if err != nil {
		t.Fatal(err)
	}
	importWith := func(catchment []string) {
		t.Helper()
		next := parseDemo(t, smallFixture(t))
		next.Directory.Slug = "demo"
		for _, r := range next.Records {
			if sv, ok := r.(*dirsvc.Service); ok && sv.PublicID == "svc_gp" {
				sv.Catchment = catchment
			}
		}
		if _, err := w.Import(ctx, next); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Import(ctx, snap); err != nil {
		t.Fatal(err)
	}
	var home []string
	var ids []string
	for _, r := range snap.Records {
		ids = append(ids, r.Base().PublicID)
		if sv, ok := r.(*dirsvc.Service); ok && sv.PublicID == "svc_gp" {
			home = sv.Catchment
		}
	}
	all := "graph:read feed:read practitioners:read"
	callers := []feedCaller{
		{caller{"partner narrowed to an area", token(t, grant{dir: "demo", tier: dirsvc.Partner, scopes: all,
			narrowing: dirsvc.Narrowing{Areas: []string{area}}}), dirsvc.Partner}, true},
		{caller{"public client narrowed to an area", token(t, grant{dir: "demo", tier: dirsvc.Public, scopes: all,
			narrowing: dirsvc.Narrowing{Areas: []string{area}}}), dirsvc.Public}, true},
		{caller{"partner narrowed to an area and a category", token(t, grant{dir: "demo", tier: dirsvc.Partner, scopes: all,
			narrowing: dirsvc.Narrowing{Areas: []string{area}, Categories: []string{"primary_care"}}}), dirsvc.Partner}, true},
		{caller{"partner", token(t, grant{dir: "demo", tier: dirsvc.Partner, scopes: all}), dirsvc.Partner}, true},
		{caller{"anonymous", "", dirsvc.Public}, false},
	}
	type tuple struct {
		id            string
		version, lrev int64
		event         string
	}
	type consumer struct {
		cursor string
		seen   map[tuple]bool
		copy   map[string]string
		last   map[string]feedItem // the last item of each record
	}
	consumers := make([]consumer, len(callers))
	for i := range consumers {
		consumers[i] = consumer{seen: map[tuple]bool{}, copy: map[string]string{}, last: map[string]feedItem{}}
	}
	moving := []string{"org_harbour", "role_jo", "prac_jo"} // placed by svc_gp, with no event of their own
	step := func(name string, inside bool) {
		t.Helper()
		for i, c := range callers {
			cs := &consumers[i]
			var items []feedItem
			items, cs.cursor = harvest(t, s, c, cs.cursor, 3)
			var fresh []feedItem
			for _, it := range items {
				k := tuple{it.PublicID, it.Version, it.LocalRevision, it.EventType}
				if cs.seen[k] {
					t.Errorf("%s, %s: the tuple %+v comes again", name, c.name, k)
					continue // what a consumer that deduplicates does
				}
				cs.seen[k] = true
				cs.last[it.PublicID] = it
				fresh = append(fresh, it)
				if it.Entity != nil {
					var head struct {
						Version       int64 `json:"version"`
						LocalRevision int64 `json:"localRevision"`
					}
					if err := json.Unmarshal(it.Entity, &head); err != nil {
						t.Fatal(err)
					}
					if head.Version < it.Version {
						t.Errorf("%s, %s: %s item of version %d carries its entity at version %d", name, c.name, it.PublicID, it.Version, head.Version)
					}
				}
			}
			replay(cs.copy, fresh)
			want := readable(t, s, c, ids)
			compareCopies(t, fmt.Sprintf("%s, %s", name, c.name), cs.copy, want)
			if c.name == callers[0].name {
				for _, id := range moving {
					if _, ok := want[id]; ok != inside {
						t.Fatalf("%s: the narrowed partner may read %s: %v; the test expects %v", name, id, ok, inside)
					}
				}
			}
			// The version of a record's last item is the one its record read and its FHIR read show:
			// a move is a change of the record on every surface.
			for _, id := range moving {
				body, ok := want[id]
				if !ok {
					continue
				}
				var read struct {
					Version int64 `json:"version"`
				}
				if err := json.Unmarshal([]byte(body), &read); err != nil {
					t.Fatal(err)
				}
				if got := cs.last[id]; got.Version != read.Version || dirsvc.Tombstone(got.EventType) {
					t.Errorf("%s, %s: the last item of %s is %s of version %d; its read shows version %d", name, c.name, id, got.EventType, got.Version, read.Version)
				}
				path := "/v1/d/demo/fhir/" + fhirTypes[dirsvc.KindOfID(id)] + "/" + strings.ReplaceAll(id, "_", "-")
				r := s.getAs(t, c.tok, path)
				if r.status != http.StatusOK {
					t.Fatalf("%s, %s: GET %s: %d %s", name, c.name, path, r.status, r.body)
				}
				meta, _ := r.json(t)["meta"].(map[string]any)
				if got, want := fmt.Sprint(meta["versionId"]), fmt.Sprint(read.Version); got != want {
					t.Errorf("%s, %s: %s has meta.versionId %s, its read version %s", name, c.name, path, got, want)
				}
			}
		}
	}
	step("the first import", false)
	for round := range 2 {
		importWith(append(slices.Clone(home), area))
		step(fmt.Sprintf("svc_gp serves the area (%d)", round+1), true)
		importWith(home)
		step(fmt.Sprintf("svc_gp no longer serves it (%d)", round+1), false)
	}
	importWith(append(slices.Clone(home), area))
	step("svc_gp serves the area again", true)
}
