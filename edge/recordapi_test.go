package edge_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/edge"
	"github.com/dirsvc/dirsvc/primary"
)

func TestLeadershipNeedsTheScopeAndBothSwitches(t *testing.T) {
	s := newTestServer(t, smallFixture(t))
	ctx := context.Background()
	const path = "/v1/d/small/organisations/org_harbour/leadership"
	holder := token(t, grant{dir: "small", tier: dirsvc.Professional, scopes: "graph:read leadership:read"})
	reader := token(t, grant{dir: "small", tier: dirsvc.Professional, scopes: "graph:read"})
	missing := s.getAs(t, holder, "/v1/d/small/organisations/org_nothing/leadership").wire()
	// The directory switched it on; the platform has not made it available.
	if r := s.getAs(t, holder, path); r.wire() != missing {
		t.Errorf("leadership before the platform makes it available:\n%s", r.wire())
	}
	if r := s.getAs(t, holder, "/v1/d/small/organisations/org_harbour?view=brief"); strings.Contains(string(r.body), "leadership") {
		t.Errorf("the organisation carries leadership while it is off: %s", r.body)
	}
	if err := s.store.SetSeniorManagementAvailable(ctx, "small", true); err != nil {
		t.Fatal(err)
	}
	r := s.getAs(t, holder, path)
	var got struct {
		PublicID   string              `json:"publicId"`
		Leadership []dirsvc.LeaderView `json:"leadership"`
	}
	if err := json.Unmarshal(r.body, &got); err != nil || r.status != 200 {
		t.Fatalf("leadership: %d %s", r.status, r.body)
	}
	var names []string
	for _, l := range got.Leadership {
		names = append(names, l.Group+":"+l.Name)
	}
	// Executives then board; the chair whose appointment ended is not shown.
	if want := []string{"executive:Ada Chief", "board:Bea Board"}; !slices.Equal(names, want) {
		t.Errorf("leadership %v, want %v", names, want)
	}
	if !strings.Contains(string(r.body), "ada.canary-professional.partner-x@example.org") || strings.Contains(string(r.body), "staff") {
		t.Errorf("leadership shows other than what leaders show to professionals: %s", r.body)
	}
	for name, c := range map[string]struct {
		tok  string
		want bool
	}{"a holder": {holder, true}, "a reader without the scope": {reader, false}, "anonymous": {"", false}} {
		for _, q := range []string{"?view=brief", ""} {
			r := s.getAs(t, c.tok, "/v1/d/small/organisations/org_harbour"+q)
			if has := strings.Contains(string(r.body), `"leadership":[{"name":"Ada Chief"`); has != c.want {
				t.Errorf("%s reads the organisation%s with leadership %v, want %v", name, q, has, c.want)
			}
		}
	}
}

func TestPractitionerReadsKeepPrivacy(t *testing.T) {
	s := newTestServer(t, smallFixture(t))
	partner := token(t, grant{dir: "small", tier: dirsvc.Partner, scopes: "graph:read"})
	// The public may see Jo's name but not the bio, nor "prefer not to say".
	r := s.get(t, "/v1/d/small/practitioners/prac_jo")
	m := r.json(t)
	if r.status != 200 || m["bio"] != nil || m["gender"] != nil || m["roles"] != nil {
		t.Errorf("public brief practitioner: %d %s", r.status, r.body)
	}
	if _, ok := m["contacts"]; ok {
		t.Errorf("the public sees a practitioner contact: %s", r.body)
	}
	r = s.getAs(t, partner, "/v1/d/small/practitioners/prac_jo?view=page")
	m = r.json(t)
	if r.status != 200 || m["bio"] == nil || m["gender"] != "prefer_not_to_say" {
		t.Errorf("partner practitioner page: %d %s", r.status, r.body)
	}
	roles, _ := m["roles"].([]any)
	services, _ := m["services"].([]any)
	if len(roles) != 1 || len(services) != 1 || services[0].(map[string]any)["publicId"] != "svc_gp" {
		t.Errorf("the page's roles %v and services %v", roles, services)
	}
	contacts, _ := m["contacts"].([]any)
	if len(contacts) != 1 || contacts[0].(map[string]any)["restricted"] != true {
		t.Errorf("partner sees contacts %v, want the one email marked restricted", contacts)
	}
	// A practitioner whose name the public may not see has no page for them.
	missing := s.get(t, "/v1/d/small/practitioners/prac_nothing").wire()
	for _, q := range []string{"", "?view=page", "?view=brief"} {
		if r := s.get(t, "/v1/d/small/practitioners/prac_hidden"+q); r.wire() != missing {
			t.Errorf("hidden practitioner%s: %s", q, r.wire())
		}
	}
	if r := s.getAs(t, partner, "/v1/d/small/practitioners/prac_hidden"); r.status != 200 {
		t.Errorf("partner reads the practitioner who shows partners their name: %d", r.status)
	}
	// The role names the practitioner by ID only where the name is hidden.
	r = s.get(t, "/v1/d/small/roles/role_hidden")
	if r.status != 200 || strings.Contains(string(r.body), "Quiet") || !strings.Contains(string(r.body), "prac_hidden") {
		t.Errorf("public role of a hidden practitioner: %d %s", r.status, r.body)
	}
}

func TestPractitionerListFollowsTheSetting(t *testing.T) {
	s := newTestServer(t, smallFixture(t))
	holder := token(t, grant{dir: "small", tier: dirsvc.Public, scopes: "practitioners:read"})
	got := listIDs(t, s, holder, "/v1/d/small/practitioners")
	if !slices.Equal(got, []string{"prac_jo"}) {
		t.Errorf("public-tier holder lists %v, want only the practitioner who shows the public their name", got)
	}
	partner := token(t, grant{dir: "small", tier: dirsvc.Partner, scopes: "practitioners:read"})
	if got := listIDs(t, s, partner, "/v1/d/small/practitioners"); !slices.Equal(got, []string{"prac_hidden", "prac_jo"}) {
		t.Errorf("partner lists %v", got)
	}
}

func TestIdentifierSearchFindsWhatTheViewShows(t *testing.T) {
	file := demoFiles(t)["demo"]
	s := newTestServer(t, file)
	snap, err := primary.ParseImport(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	paths := map[dirsvc.Kind]string{dirsvc.KindOrganisation: "organisations", dirsvc.KindLocation: "locations",
		dirsvc.KindService: "services", dirsvc.KindPractitioner: "practitioners"}
	found, hidden := 0, 0
	for _, c := range tierCallers(t, "demo", "state:nsw")[:4] {
		for _, rec := range snap.Records {
			id := rec.Base().PublicID
			for _, ident := range identifiersOf(rec) {
				view := s.getAs(t, c.tok, "/v1/d/demo/"+paths[rec.Kind()]+"/"+id+"?view=brief")
				want := view.status == 200 && bytes.Contains(view.body, []byte(`"value":"`+ident.Value+`"`))
				for _, system := range []string{ident.Type, ident.System} {
					r := s.getAs(t, c.tok, "/v1/d/demo/identifiers/search?system="+url.QueryEscape(system)+"&value="+url.QueryEscape(ident.Value))
					has := strings.Contains(string(r.body), `{"entityType":"`+string(rec.Kind())+`","publicId":"`+id+`"}`)
					if r.status != 200 || has != want {
						t.Errorf("%s searching %s %s: %d found %s %v, want %v", c.name, system, ident.Value, r.status, id, has, want)
					}
				}
				if want {
					found++
				} else {
					hidden++
				}
			}
		}
	}
	if found == 0 || hidden == 0 {
		t.Errorf("identifier searches found %d and hid %d: the demo does not test both", found, hidden)
	}
	for _, q := range []string{"", "?system=abn", "?value=1", "?system=abn&value=" + strings.Repeat("1", 101)} {
		if r := s.get(t, "/v1/d/demo/identifiers/search"+q); r.status != 400 || r.json(t)["param"] == nil {
			t.Errorf("identifier search%s: %d %s", q, r.status, r.body)
		}
	}
}

func TestServiceListFiltersAndPages(t *testing.T) {
	file := demoFiles(t)["demo"]
	s := newTestServer(t, file)
	partner := token(t, grant{dir: "demo", tier: dirsvc.Partner, scopes: "graph:read"})
	for _, c := range []caller{{"anonymous", "", dirsvc.Public}, {"partner", partner, dirsvc.Partner}} {
		all := map[string]map[string]any{}
		var order []string
		for next := "/v1/d/demo/services?limit=100"; next != ""; {
			r := s.getAs(t, c.tok, next)
			m := r.json(t)
			next = ""
			for _, it := range m["items"].([]any) {
				v := it.(map[string]any)
				all[v["publicId"].(string)] = v
				order = append(order, v["publicId"].(string))
			}
			if cur, ok := m["nextCursor"].(string); ok {
				next = "/v1/d/demo/services?limit=100&cursor=" + cur
			}
		}
		if !slices.IsSorted(order) || len(order) != len(all) || len(all) < 100 {
			t.Fatalf("%s: %d services, in order %v", c.name, len(all), slices.IsSorted(order))
		}
		// Every filter, on one value taken from the first service that has it.
		var sample map[string]any
		for _, id := range order {
			if v := all[id]; v["categoryCode"] != nil && len(anySlice(v["areas"])) > 0 {
				sample = v
				break
			}
		}
		areas := anySlice(sample["areas"])
		filters := map[string]func(v map[string]any) bool{
			"area=" + areas[len(areas)-1]: func(v map[string]any) bool {
				return slices.Contains(anySlice(v["areas"]), areas[len(areas)-1]) || slices.Contains(anySlice(v["catchment"]), areas[len(areas)-1])
			},
			"type=" + sample["type"].(map[string]any)["code"].(string): func(v map[string]any) bool {
				return v["type"].(map[string]any)["code"] == sample["type"].(map[string]any)["code"]
			},
			"category=" + sample["categoryCode"].(string): func(v map[string]any) bool { return v["categoryCode"] == sample["categoryCode"] },
			"organisation=" + sample["organisation"].(map[string]any)["publicId"].(string): func(v map[string]any) bool {
				return v["organisation"].(map[string]any)["publicId"] == sample["organisation"].(map[string]any)["publicId"]
			},
			"updatedSince=" + url.QueryEscape(time.Now().Add(-time.Hour).Format(time.RFC3339)): func(map[string]any) bool { return true },
			"updatedSince=" + url.QueryEscape(time.Now().Add(time.Hour).Format(time.RFC3339)):  func(map[string]any) bool { return false },
		}
		for q, keep := range filters {
			got := listIDs(t, s, c.tok, "/v1/d/demo/services?limit=7&"+q)
			var want []string
			for _, id := range order {
				if keep(all[id]) {
					want = append(want, id)
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s %s: %d services, want %d", c.name, q, len(got), len(want))
			}
		}
	}
	r := s.get(t, "/v1/d/demo/services?limit=2")
	cur := r.json(t)["nextCursor"].(string)
	for q, param := range map[string]string{
		"limit=0": "limit", "limit=101": "limit", "limit=x": "limit", "limit=1&limit=2": "limit",
		"cursor=" + strings.Repeat("a", 201): "cursor", "cursor=garbage": "cursor",
		"cursor=" + cur + "&type=gp": "cursor", "updatedSince=yesterday": "updatedSince",
		"area=nsw": "area", "organisation=svc_x": "organisation", "type=": "type",
	} {
		if r := s.get(t, "/v1/d/demo/services?"+q); r.status != 400 || r.json(t)["param"] != param {
			t.Errorf("services?%s: %d %s, want 400 naming %s", q, r.status, r.body, param)
		}
	}
	if r := s.get(t, "/v1/d/demo/services?limit=2&cursor="+cur); r.status != 200 {
		t.Errorf("a cursor with its own query: %d", r.status)
	}
}

func anySlice(v any) []string {
	var out []string
	xs, _ := v.([]any)
	for _, x := range xs {
		out = append(out, x.(string))
	}
	return out
}

func TestLeadershipDropsAppointmentsOnceTheyEnd(t *testing.T) {
	tomorrow := time.Now().In(mustZone(t, "Australia/Sydney")).AddDate(0, 0, 1).Format(time.DateOnly)
	fixture := bytes.Replace(smallFixture(t), []byte(`{"name":"Bea Board","group":"board","title":"Chair","order":1}`),
		[]byte(`{"name":"Bea Board","group":"board","title":"Chair","order":1,"endDate":"`+tomorrow+`"}`), 1)
	if bytes.Equal(fixture, smallFixture(t)) {
		t.Fatal("the fixture no longer has Bea Board's appointment")
	}
	s := newTestServer(t, fixture)
	if err := s.store.SetSeniorManagementAvailable(context.Background(), "small", true); err != nil {
		t.Fatal(err)
	}
	c := &clock{t: time.Now()}
	srv := httptest.NewServer(edge.New(edge.Config{Catalog: s.store, Logger: discardLogger(), Now: c.Now, Keys: testKeys}))
	t.Cleanup(srv.Close)
	s.Server = srv
	holder := func() string { // a token issued by the server's clock, as the primary would
		return token(t, grant{dir: "small", tier: dirsvc.Partner, scopes: "leadership:read", issued: c.Now()})
	}
	const path = "/v1/d/small/organisations/org_harbour/leadership"
	if r := s.getAs(t, holder(), path); !strings.Contains(string(r.body), "Bea Board") {
		t.Fatalf("before the end date: %d %s", r.status, r.body)
	}
	c.Add(48 * time.Hour)
	if r := s.getAs(t, holder(), path); r.status != 200 || strings.Contains(string(r.body), "Bea Board") {
		t.Errorf("after the end date: %d %s", r.status, r.body)
	}
}

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	z, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return z
}

func TestUpdatedSinceCountsTheSitesAndOrganisationsTheCallerSees(t *testing.T) {
	s := newTestServer(t, smallFixture(t))
	ctx := context.Background()
	partner := token(t, grant{dir: "small", tier: dirsvc.Partner, scopes: "graph:read"})
	// lastUpdated returns a record's lastUpdated as the partner sees it.
	lastUpdated := func(path string) string {
		t.Helper()
		r := s.getAs(t, partner, path+"?view=brief")
		at, _ := r.json(t)["lastUpdated"].(string)
		return at
	}
	update := func(line string) {
		t.Helper()
		if _, err := primary.UpdateRecord(ctx, s.store, "small", []byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	// A change to a site the public sees brings its services into the public's list.
	update(`{"kind":"location","publicId":"loc_coast","organisation":"org_coast","name":"Coast Counselling Gosford (renamed)","address":{"lines":["5 Mann St"],"locality":"Gosford","state":"NSW","postcode":"2250"},"areas":["postcode:2250","state:nsw"],"remoteness":1}`)
	since := url.QueryEscape(lastUpdated("/v1/d/small/locations/loc_coast"))
	if got := listIDs(t, s, "", "/v1/d/small/services?updatedSince="+since); !slices.Equal(got, []string{"svc_counsel"}) {
		t.Errorf("public services changed since loc_coast changed: %v", got)
	}
	// A change to a site hidden from the public does not: only the partner learns of it.
	update(`{"kind":"location","publicId":"loc_unlisted","organisation":"org_harbour","name":"Harbour Clinic canary-professional.partner-x (renamed)","audiences":["professional","partner"],"address":{"lines":["3 Back St canary-professional.partner-x"],"locality":"Pyrmont","state":"NSW","postcode":"2009"},"areas":["postcode:2009"]}`)
	since = url.QueryEscape(lastUpdated("/v1/d/small/locations/loc_unlisted"))
	if got := listIDs(t, s, "", "/v1/d/small/services?updatedSince="+since); len(got) != 0 {
		t.Errorf("the public learns that a hidden site changed: %v", got)
	}
	if got := listIDs(t, s, partner, "/v1/d/small/services?updatedSince="+since); !slices.Equal(got, []string{"svc_unlisted"}) {
		t.Errorf("partner services changed since loc_unlisted changed: %v", got)
	}
	// A hidden site that leaves its area takes its organisation out of it for the partner (its
	// only site there): the organisation moves, a change of it for the partner alone, so every
	// service of it counts for the partner, none for the public.
	update(`{"kind":"location","publicId":"loc_unlisted","organisation":"org_harbour","name":"Harbour Clinic canary-professional.partner-x (renamed)","audiences":["professional","partner"],"address":{"lines":["3 Back St canary-professional.partner-x"],"locality":"Pyrmont","state":"NSW","postcode":"2009"}}`)
	since = url.QueryEscape(lastUpdated("/v1/d/small/locations/loc_unlisted"))
	if got := listIDs(t, s, "", "/v1/d/small/services?updatedSince="+since); len(got) != 0 {
		t.Errorf("the public learns that a hidden site moved: %v", got)
	}
	if got, want := listIDs(t, s, partner, "/v1/d/small/services?updatedSince="+since), []string{"svc_gp", "svc_refuge", "svc_unlisted"}; !slices.Equal(got, want) {
		t.Errorf("partner services changed since loc_unlisted left its area: %v, want %v", got, want)
	}
	if at := lastUpdated("/v1/d/small/organisations/org_harbour"); at != lastUpdated("/v1/d/small/locations/loc_unlisted") {
		t.Errorf("org_harbour last updated at %s for the partner, not with its site's move", at)
	}
}
