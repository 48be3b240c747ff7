package edge_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/primary"
	"github.com/dirsvc/dirsvc/primary/demo"
)

// feedItem is what a consumer reads of a feed item.
type feedItem struct {
	PublicID      string          `json:"publicId"`
	EntityType    dirsvc.Kind     `json:"entityType"`
	Version       int64           `json:"version"`
	LocalRevision int64           `json:"localRevision"`
	EventType     string          `json:"eventType"`
	Cursor        string          `json:"cursor"`
	Survivor      string          `json:"survivorPublicId"`
	Entity        json.RawMessage `json:"entity"`
}

type feedPage struct {
	Items      []feedItem `json:"items"`
	NextCursor string     `json:"nextCursor"`
	HasMore    bool       `json:"hasMore"`
}

// feedCaller is a tier caller as a feed reader: whether it receives practitioners in bulk.
type feedCaller struct {
	caller
	practitioners bool
}

// feedCallers are the tier callers of the leak scan with feed:read, and a partner client without
// practitioners:read. The demo directory opens its public feed and does not let anyone list
// practitioners, so the anonymous caller reads the feed without them.
func feedCallers(tb testing.TB, dir, area string) []feedCaller {
	var out []feedCaller
	for _, c := range tierCallers(tb, dir, area) {
		out = append(out, feedCaller{c, c.tok != ""})
	}
	return append(out, feedCaller{caller{"partner without practitioners", token(tb, grant{dir: dir, tier: dirsvc.Partner,
		scopes: "graph:read feed:read"}), dirsvc.Partner}, false})
}

// feedServer serves the demo directory with its public feed open.
func feedServer(t *testing.T) (*testServer, []byte) {
	t.Helper()
	file := demoFiles(t)["demo"]
	s := newTestServer(t)
	snap := parseDemo(t, file)
	w, err := s.store.Create(context.Background(), "demo")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Import(context.Background(), snap); err != nil {
		t.Fatal(err)
	}
	return s, file
}

// parseDemo parses the demo file, with the public feed open.
func parseDemo(tb testing.TB, file []byte) *dirsvc.Snapshot {
	snap, err := primary.ParseImport(bytes.NewReader(file))
	if err != nil {
		tb.Fatal(err)
	}
	snap.Directory.Settings.PublicFeed = true
	return snap
}

// harvest reads a caller's feed from since ("" for the start) to its end, with expand=entity, and
// scans every byte of every page for a canary the caller may not see. It returns the items and the
// cursor to go on from.
func harvest(t *testing.T, s *testServer, c feedCaller, since string, limit int) ([]feedItem, string) {
	t.Helper()
	var items []feedItem
	for range 10000 {
		path := fmt.Sprintf("/v1/d/demo/changes?expand=entity&limit=%d", limit)
		if since != "" {
			path += "&since=" + url.QueryEscape(since)
		}
		r := s.getAs(t, c.tok, path)
		if r.status != http.StatusOK {
			t.Fatalf("%s: GET %s: %d %s", c.name, path, r.status, r.body)
		}
		var head strings.Builder
		for k, vs := range r.header {
			head.WriteString(k + ": " + strings.Join(vs, " ") + "\n")
		}
		if leaks := demo.Leaks(append([]byte(head.String()), r.body...), c.aud); len(leaks) > 0 {
			t.Errorf("GET %s leaks %v to %s", path, leaks, c.name)
		}
		var p feedPage
		if err := json.Unmarshal(r.body, &p); err != nil {
			t.Fatal(err)
		}
		if len(p.Items) > limit {
			t.Fatalf("%s: %d items on a page of %d", c.name, len(p.Items), limit)
		}
		items = append(items, p.Items...)
		since = p.NextCursor
		if !p.HasMore {
			return items, since
		}
	}
	t.Fatalf("%s: the feed did not end", c.name)
	return nil, ""
}

// replay applies feed items to a consumer's copy: a tombstone removes the record, any other item
// puts the entity it carries (and removes a record the caller no longer sees).
func replay(m map[string]string, items []feedItem) {
	for _, it := range items {
		if dirsvc.Tombstone(it.EventType) || it.Entity == nil {
			delete(m, it.PublicID)
		} else {
			m[it.PublicID] = string(it.Entity)
		}
	}
}

// readable returns every record of ids the caller may read through the record API (its brief
// representation), but practitioners when the caller does not receive them in bulk.
func readable(t *testing.T, s *testServer, c feedCaller, ids []string) map[string]string {
	t.Helper()
	paths := map[dirsvc.Kind]string{dirsvc.KindService: "services/%s?view=brief", dirsvc.KindLocation: "locations/%s?view=brief",
		dirsvc.KindOrganisation: "organisations/%s?view=brief", dirsvc.KindPractitioner: "practitioners/%s?view=brief",
		dirsvc.KindRole: "roles/%s"}
	out := map[string]string{}
	for _, id := range ids {
		kind := dirsvc.KindOfID(id)
		if kind == dirsvc.KindPractitioner && !c.practitioners {
			continue
		}
		r := s.getAs(t, c.tok, "/v1/d/demo/"+fmt.Sprintf(paths[kind], id))
		if r.status == http.StatusOK {
			out[id] = string(r.body)
		}
	}
	return out
}

// feedPlan is what feedStages does to the demo directory: the live services it works on and the
// site each of moved goes to.
type feedPlan struct {
	live  []*dirsvc.Service
	moved map[string]*dirsvc.Location // by service
	first string                      // the first service moved
}

// planFeed picks the services feedStages changes: a few for lifecycle operations, and six that move
// to a site of another organisation whose areas differ.
func planFeed(t *testing.T, snap *dirsvc.Snapshot) feedPlan {
	p := feedPlan{moved: map[string]*dirsvc.Location{}}
	var sites []*dirsvc.Location
	byID := map[string]dirsvc.Record{}
	for _, r := range snap.Records {
		byID[r.Base().PublicID] = r
		switch x := r.(type) {
		case *dirsvc.Service:
			if x.State == dirsvc.StateLive && !strings.Contains(x.Name, "canary-") {
				p.live = append(p.live, x)
			}
		case *dirsvc.Location:
			if x.State == dirsvc.StateLive {
				sites = append(sites, x)
			}
		}
	}
	for i, sv := range p.live {
		from, ok := byID[sv.Location].(*dirsvc.Location)
		if i < 7 || i == len(p.live)-1 || len(p.moved) == 6 || !ok {
			continue
		}
		for _, l := range sites {
			if l.PublicID != sv.Location && l.Organisation != sv.Organisation && !slices.Equal(l.Areas, from.Areas) {
				p.moved[sv.PublicID] = l
				if p.first == "" {
					p.first = sv.PublicID
				}
				break
			}
		}
	}
	if len(p.moved) == 0 {
		t.Fatal("no service to move")
	}
	return p
}

// feedStages changes the demo directory step by step: lifecycle operations (close, merge, reduced
// visibility, take-down), then an import that moves services between sites of different areas and
// organisations (so organisations, sites and practitioners move with them, with no event of their
// own), brings back what the operations ended and removes a record, then more operations.
func feedStages(t *testing.T, s *testServer, file []byte, p feedPlan) []func() {
	ctx := context.Background()
	w, err := s.store.Writer(ctx, "demo")
	if err != nil {
		t.Fatal(err)
	}
	transition := func(id string, tr dirsvc.Transition) {
		if _, err := w.Transition(ctx, id, tr); err != nil {
			t.Fatalf("%s to %s: %v", id, tr.To, err)
		}
	}
	return []func(){
		func() {
			closeAndMerge(t, s, "demo", parseDemo(t, file))
			transition(p.live[3].PublicID, dirsvc.Transition{To: dirsvc.StateVisibilityReduced, VisibleTo: dirsvc.AudiencesOf(dirsvc.Partner)})
			transition(p.live[4].PublicID, dirsvc.Transition{To: dirsvc.StateTakedown})
		},
		func() {
			next := parseDemo(t, file)
			for _, r := range next.Records {
				if l, ok := p.moved[r.Base().PublicID]; ok {
					x := r.(*dirsvc.Service)
					x.Location, x.Organisation = l.PublicID, l.Organisation
				}
			}
			// One record is gone from the import: removed.
			gone := p.live[len(p.live)-1].PublicID
			next.Records = slices.DeleteFunc(next.Records, func(r dirsvc.Record) bool { return r.Base().PublicID == gone })
			if _, err := w.Import(ctx, next); err != nil {
				t.Fatal(err)
			}
		},
		func() {
			transition(p.live[5].PublicID, dirsvc.Transition{To: dirsvc.StateClosed})
			transition(p.live[6].PublicID, dirsvc.Transition{To: dirsvc.StateVisibilityReduced, VisibleTo: dirsvc.AudiencesOf(dirsvc.Professional, dirsvc.Partner)})
		},
	}
}

// TestReplayingTheFeedGivesWhatTheCallerMayRead replays every tier's feed (expand=entity) into a
// map after a sequence of imports and lifecycle operations, and holds it to exactly the records the
// caller may read through the record API, with the same brief bodies: a consumer that reads the
// whole feed at the end, one that read it after every step, and ones that start at random cursors
// with what they had there. Every page of every tier is scanned for canaries; each caller's items
// are unique by the dedupe tuple.
func TestReplayingTheFeedGivesWhatTheCallerMayRead(t *testing.T) {
	s, file := feedServer(t)
	snap := parseDemo(t, file)
	area := broadArea(snap)
	var ids []string
	for _, r := range snap.Records {
		ids = append(ids, r.Base().PublicID)
	}
	plan := planFeed(t, snap)
	cat := snap.Taxonomy.PlatformType(serviceType(snap, plan.first)).Category
	callers := append(feedCallers(t, "demo", area),
		feedCaller{caller{"partner narrowed to a category", token(t, grant{dir: "demo", tier: dirsvc.Partner,
			scopes: "feed:read graph:read practitioners:read", narrowing: dirsvc.Narrowing{Categories: []string{cat}}}), dirsvc.Partner}, true},
		feedCaller{caller{"professional narrowed to an area and a category", token(t, grant{dir: "demo", tier: dirsvc.Professional,
			scopes: "feed:read graph:read practitioners:read", narrowing: dirsvc.Narrowing{Areas: []string{area}, Categories: []string{cat}}}), dirsvc.Professional}, true})
	stages := feedStages(t, s, file, plan)

	// Consumers that read their feed after every step, each from where it stopped.
	steady := make([]map[string]string, len(callers))
	cursors := make([]string, len(callers))
	readAll := func() {
		for i, c := range callers {
			if steady[i] == nil {
				steady[i] = map[string]string{}
			}
			var items []feedItem
			items, cursors[i] = harvest(t, s, c, cursors[i], 37)
			replay(steady[i], items)
		}
	}
	readAll()
	for _, stage := range stages {
		stage()
		readAll()
	}

	rnd := rand.New(rand.NewPCG(1, 2))
	for i, c := range callers {
		t.Run(c.name, func(t *testing.T) {
			want := readable(t, s, c, ids)
			if len(want) == 0 {
				t.Fatal("the caller may read no record: the test would prove nothing")
			}
			items, _ := harvest(t, s, c, "", 500)
			whole := map[string]string{}
			replay(whole, items)
			compareCopies(t, "the whole feed", whole, want)
			compareCopies(t, "a consumer that read after every step", steady[i], want)

			type tuple struct {
				id            string
				version, lrev int64
				event         string
			}
			seen := map[tuple]bool{}
			kinds := map[dirsvc.Kind]int{}
			for _, it := range items {
				k := tuple{it.PublicID, it.Version, it.LocalRevision, it.EventType}
				if seen[k] {
					t.Errorf("the tuple %+v comes twice", k)
				}
				seen[k] = true
				kinds[it.EntityType]++
				if it.EntityType != dirsvc.KindOfID(it.PublicID) {
					t.Errorf("%s is of entity type %s", it.PublicID, it.EntityType)
				}
			}
			if got := kinds[dirsvc.KindPractitioner] > 0; got != c.practitioners {
				t.Errorf("practitioner items: %d; the caller receives practitioners: %v", kinds[dirsvc.KindPractitioner], c.practitioners)
			}
			if kinds[dirsvc.KindRole] == 0 {
				t.Error("no role items")
			}
			for range 5 {
				k := rnd.IntN(len(items))
				copyAt := map[string]string{}
				replay(copyAt, items[:k+1])
				rest, _ := harvest(t, s, c, items[k].Cursor, 1+rnd.IntN(100))
				replay(copyAt, rest)
				compareCopies(t, fmt.Sprintf("a consumer that starts after item %d", k), copyAt, want)
			}
		})
	}
}

// compareCopies fails the test where a consumer's copy differs from the records the caller may
// read.
func compareCopies(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	for id, body := range want {
		if g, ok := got[id]; !ok {
			t.Errorf("%s: %s is missing", what, id)
		} else if g != body {
			t.Errorf("%s: %s is\n%s\nwant\n%s", what, id, g, body)
		}
	}
	for id := range got {
		if _, ok := want[id]; !ok {
			t.Errorf("%s: %s is there but the caller may not read it", what, id)
		}
	}
}

// serviceType returns the platform type of a service of the snapshot.
func serviceType(snap *dirsvc.Snapshot, id string) string {
	for _, r := range snap.Records {
		if sv, ok := r.(*dirsvc.Service); ok && sv.PublicID == id {
			return sv.Type
		}
	}
	return ""
}

// TestFeedAnswers checks the feed's access rules and its answers to bad input: a 400 naming the
// parameter (never a 500), 403 without feed:read or, for an anonymous caller, where the directory
// keeps its feed to clients, and 410 for a cursor older than the oldest event kept.
func TestFeedAnswers(t *testing.T) {
	s, file := feedServer(t)
	closed := newTestServer(t, file) // the demo as generated: its feed is for clients only
	partner := token(t, grant{dir: "demo", tier: dirsvc.Partner, scopes: "feed:read"})
	professional := token(t, grant{dir: "demo", tier: dirsvc.Professional, scopes: "feed:read"})
	narrowed := token(t, grant{dir: "demo", tier: dirsvc.Partner, scopes: "feed:read", narrowing: dirsvc.Narrowing{Kinds: []dirsvc.Kind{dirsvc.KindService}}})
	other := token(t, grant{dir: "demo-nz", tier: dirsvc.Partner, scopes: "feed:read"})
	noFeed := token(t, grant{dir: "demo", tier: dirsvc.Partner, scopes: "graph:read practitioners:read"})

	page := func(tok, query string) (response, feedPage) {
		t.Helper()
		r := s.getAs(t, tok, "/v1/d/demo/changes"+query)
		var p feedPage
		if r.status == http.StatusOK {
			if err := json.Unmarshal(r.body, &p); err != nil {
				t.Fatal(err)
			}
		}
		return r, p
	}
	_, first := page(partner, "?limit=3")
	if len(first.Items) != 3 || !first.HasMore {
		t.Fatalf("first page: %+v", first)
	}
	_, nfirst := page(narrowed, "?limit=3")
	long := strings.Repeat("A", 201)
	tampered := []byte(first.NextCursor)
	tampered[10] ^= 1
	for _, c := range []struct {
		tok, query string
		status     int
		param      string
	}{
		{partner, "?limit=0", 400, "limit"},
		{partner, "?limit=501", 400, "limit"},
		{partner, "?limit=500", 200, ""},
		{partner, "?limit=x", 400, "limit"},
		{partner, "?types=service,bogus", 400, "types"},
		{partner, "?types=service,role", 200, ""},
		{partner, "?expand=everything", 400, "expand"},
		{partner, "?expand=entity&expand=entity", 400, "expand"},
		{partner, "?since=" + long, 400, "since"},
		{partner, "?since=" + url.QueryEscape(string(tampered)), 400, "since"},
		{partner, "?since=not-a-cursor", 400, "since"},
		{professional, "?since=" + first.NextCursor, 400, "since"}, // another tier's
		{partner, "?since=" + nfirst.NextCursor, 400, "since"},     // another narrowing's
		{partner, "?since=" + first.NextCursor, 200, ""},
		{partner, "?cursor=" + first.NextCursor, 400, "cursor"},
		{other, "", 403, ""},
		{noFeed, "", 403, ""},
		{"", "?limit=2", 200, ""},
	} {
		r, _ := page(c.tok, c.query)
		if r.status != c.status {
			t.Errorf("GET changes%s: %d, want %d\n%s", c.query, r.status, c.status, r.body)
			continue
		}
		if c.param != "" {
			if got := r.json(t)["param"]; got != c.param {
				t.Errorf("GET changes%s names %v, want %s", c.query, got, c.param)
			}
		}
	}
	if r := closed.get(t, "/v1/d/demo/changes"); r.status != http.StatusForbidden {
		t.Errorf("an anonymous read of a feed kept to clients: %d", r.status)
	}
	if r := closed.get(t, "/v1/d/demo/developers"); r.json(t)["changeFeedAccess"] != "client" {
		t.Errorf("developer information of a feed kept to clients: %s", r.body)
	}
	if r := s.get(t, "/v1/d/demo/developers"); r.json(t)["changeFeedAccess"] != "public" {
		t.Errorf("developer information of an open feed: %s", r.body)
	}

	// A page's items resume exactly: the items after the second item's cursor are the page's rest.
	_, three := page(partner, "?limit=3&since="+first.Items[1].Cursor)
	if len(three.Items) != 3 || three.Items[0].Cursor != first.Items[2].Cursor {
		t.Errorf("after the second item: %+v, want %+v first", three.Items, first.Items[2])
	}

	d, err := s.store.Directory(context.Background(), "demo")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := d.PruneChanges(context.Background(), time.Now().Add(time.Hour), 3); err != nil || n != 3 {
		t.Fatalf("pruned %d, %v", n, err)
	}
	if r, _ := page(partner, "?since="+first.Items[1].Cursor); r.status != http.StatusGone {
		t.Errorf("a cursor below the floor: %d %s", r.status, r.body)
	}
	if r, p := page(partner, "?since="+first.NextCursor+"&limit=1"); r.status != http.StatusOK || len(p.Items) != 1 {
		t.Errorf("the floor's cursor: %d %s", r.status, r.body)
	}
	if _, p := page(partner, "?limit=1"); len(p.Items) != 1 || p.Items[0].Cursor == first.Items[0].Cursor {
		t.Errorf("from the oldest event kept: %+v", p.Items)
	}
}

// TestFeedPagesNameTheNextInALinkHeader: a page with more after it names the next in its Link
// header (rel="next"): the same request with since set to the page's nextCursor, the other
// parameters kept; following the links reads the same items as following nextCursor; the last page
// names none.
func TestFeedPagesNameTheNextInALinkHeader(t *testing.T) {
	s, _ := feedServer(t)
	partner := token(t, grant{dir: "demo", tier: dirsvc.Partner, scopes: "feed:read"})
	next := regexp.MustCompile(`^<([^>]*)>; rel="next"$`)
	path, pages := "/v1/d/demo/changes?types=service,location&limit=40&expand=entity", 0
	var byLink []string
	for path != "" {
		r := s.getAs(t, partner, path)
		if r.status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, r.status, r.body)
		}
		var p feedPage
		if err := json.Unmarshal(r.body, &p); err != nil {
			t.Fatal(err)
		}
		for _, it := range p.Items {
			byLink = append(byLink, it.Cursor)
		}
		link := r.header.Values("Link")
		pages++
		if !p.HasMore {
			if len(link) != 0 {
				t.Errorf("the last page (page %d) names a next page: %q", pages, link)
			}
			break
		}
		m := []string(nil)
		if len(link) == 1 {
			m = next.FindStringSubmatch(link[0])
		}
		if m == nil {
			t.Fatalf("page %d, with more after it, has the Link header %q", pages, link)
		}
		u, err := url.Parse(m[1])
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		if u.Path != "/v1/d/demo/changes" || q.Get("since") != p.NextCursor || q.Get("types") != "service,location" ||
			q.Get("limit") != "40" || q.Get("expand") != "entity" || len(q) != 4 {
			t.Fatalf("page %d names %s as the next, want since=%s and the request's other parameters", pages, m[1], p.NextCursor)
		}
		path = m[1]
	}
	var byCursor []string
	for query := ""; ; {
		r := s.getAs(t, partner, "/v1/d/demo/changes?types=service,location&limit=40&expand=entity"+query)
		var p feedPage
		if err := json.Unmarshal(r.body, &p); err != nil {
			t.Fatal(err)
		}
		for _, it := range p.Items {
			byCursor = append(byCursor, it.Cursor)
		}
		if !p.HasMore {
			break
		}
		query = "&since=" + url.QueryEscape(p.NextCursor)
	}
	if len(byLink) < 100 || !slices.Equal(byLink, byCursor) {
		t.Errorf("following the links read %d items, following nextCursor %d; want the same (and more than 100)", len(byLink), len(byCursor))
	}
}
