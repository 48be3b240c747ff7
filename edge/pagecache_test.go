package edge_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/edge"
	"github.com/dirsvc/dirsvc/primary"
)

// TestKeptPagesFollowChangesTheClockAndTheReader reads record pages again after what they are
// composed from changes: a related record (a commit), the minute of the clock (the open status),
// the caller's audience and narrowing. Each time the page must be the one composed now.
func TestKeptPagesFollowChangesTheClockAndTheReader(t *testing.T) {
	s := newTestServer(t, smallFixture(t))
	sydney := mustZone(t, "Australia/Sydney")
	c := &clock{t: time.Date(2026, 11, 23, 8, 59, 10, 0, sydney)} // a Monday; loc_ultimo opens at 09:00
	srv := httptest.NewServer(edge.New(edge.Config{Catalog: s.store, Logger: discardLogger(), Now: c.Now, Keys: testKeys,
		AnonymousLimits: edge.Limits{PerMinute: 1 << 30, PerDay: 1 << 30}}))
	t.Cleanup(srv.Close)
	s.Server = srv
	page := func(tok, path string) string {
		t.Helper()
		r := s.getAs(t, tok, path)
		if r.status != 200 {
			t.Fatalf("%s: %d %s", path, r.status, r.body)
		}
		return string(r.body)
	}
	status := func(body string) string {
		_, after, _ := strings.Cut(body, `"openStatus":{"status":"`)
		st, _, _ := strings.Cut(after, `"`)
		return st
	}

	// The clock: the same page for the whole minute, the page of the next minute after it.
	const ultimo = "/v1/d/small/locations/loc_ultimo"
	before := page("", ultimo)
	c.Add(40 * time.Second) // 08:59:50
	if again := page("", ultimo); again != before {
		t.Errorf("the page changed within a minute:\n%s\n%s", before, again)
	}
	c.Add(20 * time.Second) // 09:00:10
	if got := page("", ultimo); status(got) != "open" || status(before) == "open" {
		t.Errorf("open status %q at 08:59, %q at 09:00", status(before), status(got))
	}

	// A commit to a related record: the page shows it at once.
	const coast = "/v1/d/small/locations/loc_coast"
	if got := page("", coast); !strings.Contains(got, `"Coast Counselling"`) {
		t.Fatalf("loc_coast's page has no organisation name: %s", got)
	}
	_, err := primary.UpdateRecord(context.Background(), s.store, "small",
		[]byte(`{"kind":"organisation","publicId":"org_coast","name":"Coast Counselling Renamed","ownershipType":{"code":"small:community_controlled","display":"Community controlled"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := page("", coast); !strings.Contains(got, "Coast Counselling Renamed") {
		t.Errorf("loc_coast's page after its organisation was renamed: %s", got)
	}

	// The reader: the partner's page is kept, and neither the public nor a partner narrowed to
	// one postcode receives it.
	const harbour = "/v1/d/small/organisations/org_harbour"
	partner := token(t, grant{dir: "small", tier: dirsvc.Partner, scopes: "graph:read", issued: c.Now()})
	narrowed := token(t, grant{dir: "small", tier: dirsvc.Partner, scopes: "graph:read", issued: c.Now(),
		narrowing: dirsvc.Narrowing{Areas: []string{"postcode:2007"}}})
	got := page(partner, harbour)
	if !strings.Contains(got, "loc_unlisted") || !strings.Contains(got, "svc_unlisted") {
		t.Fatalf("the partner's page of org_harbour has no loc_unlisted or svc_unlisted: the fixture does not test it: %s", got)
	}
	if got := page("", harbour); strings.Contains(got, "loc_unlisted") || !strings.Contains(got, "loc_ultimo") {
		t.Errorf("the public receives org_harbour's page as: %s", got)
	}
	if got := page(narrowed, harbour); strings.Contains(got, "svc_unlisted") || !strings.Contains(got, "svc_gp") {
		t.Errorf("a partner narrowed to postcode:2007 receives org_harbour's page as: %s", got)
	}
}
