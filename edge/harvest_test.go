package edge_test

import (
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/dirsvc/dirsvc"
)

// demoIDRE matches a public ID of the demo directory wherever an answer carries one: in REST bodies
// (svc_1a2b3c4d) and as FHIR ids and references (svc-1a2b3c4d).
var demoIDRE = regexp.MustCompile(`\b(org|loc|svc|prac|role)[_-]([a-z0-9]{8})\b`)

// TestAnAggregatorReceivesOnlyItsHarvestScope reads the demo directory on every read surface as an
// aggregator client (federation:harvest) whose harvest scope is an area, a category and three record
// kinds: record reads, lists, identifier lookups, search (services, grouped by organisation, and
// organisations), autocomplete, the change feed with entities, and FHIR search and reads. The records
// it may read one by one are its scope; every public ID any other answer carries must be one of them,
// and every record of its scope must reach it through the feed.
func TestAnAggregatorReceivesOnlyItsHarvestScope(t *testing.T) {
	s, file := feedServer(t)
	snap := parseDemo(t, file)
	var area, cat string
	for _, r := range snap.Records {
		if sv, ok := r.(*dirsvc.Service); ok && sv.VisibleTo.Has(dirsvc.Partner) && sv.Location != "" {
			cat = snap.Taxonomy.PlatformType(sv.Type).Category
			break
		}
	}
	for _, r := range snap.Records {
		if l, ok := r.(*dirsvc.Location); ok && l.VisibleTo.Has(dirsvc.Partner) {
			for _, a := range l.Areas {
				if strings.HasPrefix(a, "state:") {
					area = a
				}
			}
			if area != "" {
				break
			}
		}
	}
	scope := dirsvc.Narrowing{Areas: []string{area}, Categories: []string{cat},
		Kinds: []dirsvc.Kind{dirsvc.KindService, dirsvc.KindLocation, dirsvc.KindOrganisation}}
	agg := feedCaller{caller{"aggregator", token(t, grant{dir: "demo", tier: dirsvc.Partner,
		scopes: "federation:harvest graph:read feed:read search:read", narrowing: scope}), dirsvc.Partner}, false}
	whole := feedCaller{caller{"partner", token(t, grant{dir: "demo", tier: dirsvc.Partner,
		scopes: "graph:read feed:read search:read"}), dirsvc.Partner}, false}

	var ids []string
	for _, r := range snap.Records {
		ids = append(ids, r.Base().PublicID)
	}
	inScope := readable(t, s, agg, ids)
	all := readable(t, s, whole, ids)
	kinds := map[dirsvc.Kind]int{}
	for id := range inScope {
		kinds[dirsvc.KindOfID(id)]++
	}
	if kinds[dirsvc.KindService] == 0 || len(inScope) >= len(all) || kinds[dirsvc.KindPractitioner]+kinds[dirsvc.KindRole] > 0 {
		t.Fatalf("the scope %+v holds %v of %d readable records: the test would prove nothing", scope, kinds, len(all))
	}

	seen := map[string]bool{}
	scan := func(path string) response {
		t.Helper()
		r := s.getAs(t, agg.tok, "/v1/d/demo"+path)
		for _, m := range demoIDRE.FindAllStringSubmatch(string(r.body), -1) {
			id := m[1] + "_" + m[2]
			seen[id] = true
			if _, ok := inScope[id]; !ok {
				t.Errorf("GET %s carries %s, outside the harvest scope", path, id)
			}
		}
		return r
	}
	for _, rec := range snap.Records {
		id := rec.Base().PublicID
		switch rec.Kind() {
		case dirsvc.KindService:
			scan("/services/" + id)
			scan("/fhir/HealthcareService/" + strings.Replace(id, "_", "-", 1))
		case dirsvc.KindLocation:
			scan("/locations/" + id)
			scan("/fhir/Location/" + strings.Replace(id, "_", "-", 1))
		case dirsvc.KindOrganisation:
			scan("/organisations/" + id)
			scan("/fhir/Organization/" + strings.Replace(id, "_", "-", 1) + "?_elements=name,partOf")
		case dirsvc.KindPractitioner:
			scan("/practitioners/" + id)
		case dirsvc.KindRole:
			scan("/roles/" + id)
		}
		for _, ident := range identifiersOf(rec) {
			scan("/identifiers/search?system=" + url.QueryEscape(ident.Type) + "&value=" + url.QueryEscape(ident.Value))
		}
	}
	for _, list := range []string{"/services?limit=100", "/practitioners?limit=100"} {
		for next := list; next != ""; {
			r := scan(next)
			next = ""
			if c, ok := r.json(t)["nextCursor"].(string); ok && r.status == 200 {
				next = list + "&cursor=" + url.QueryEscape(c)
			}
		}
	}
	for _, q := range []string{"health", "clinic", "gp", "dental", "mental health", "children"} {
		scan("/search/services?limit=50&q=" + url.QueryEscape(q))
		scan("/search/services?limit=20&group=organisation&q=" + url.QueryEscape(q))
		scan("/search/organisations?q=" + url.QueryEscape(q))
		scan("/autocomplete?q=" + url.QueryEscape(q[:2]))
	}
	for _, typ := range []string{"HealthcareService", "Location", "Organization", "PractitionerRole", "Practitioner"} {
		next := "/fhir/" + typ + "?_count=100"
		if typ == "HealthcareService" {
			next += "&_include=HealthcareService:organization&_include=HealthcareService:location"
		}
		for range 1000 {
			r := scan(next)
			link := ""
			if r.status == 200 {
				for _, l := range asSlice(r.json(t)["link"]) {
					if l := l.(map[string]any); l["relation"] == "next" {
						link = l["url"].(string)
					}
				}
			}
			if link == "" {
				break
			}
			u, err := url.Parse(link)
			if err != nil {
				t.Fatal(err)
			}
			next = strings.TrimPrefix(u.RequestURI(), "/v1/d/demo")
		}
	}
	for cursor := ""; ; {
		path := "/changes?expand=entity&limit=500"
		if cursor != "" {
			path += "&since=" + url.QueryEscape(cursor)
		}
		r := scan(path)
		m := r.json(t)
		if len(asSlice(m["items"])) == 0 {
			break
		}
		cursor, _ = m["nextCursor"].(string)
	}
	for id := range inScope {
		if !seen[id] {
			t.Errorf("%s, inside the harvest scope, reached the aggregator through no list, search or feed", id)
		}
	}
	if !slices.ContainsFunc(slices.Collect(mapKeys(seen)), func(id string) bool { return dirsvc.KindOfID(id) == dirsvc.KindOrganisation }) {
		t.Error("no organisation reached the aggregator: its scope names organisations")
	}
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
