package edge_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc/edge"
)

// otherDirectory returns the small fixture as a directory of another slug, whose per-directory
// admission bound is not small's.
func otherDirectory(t *testing.T) (slug string, fixture []byte) {
	t.Helper()
	for i := range 100 {
		slug = fmt.Sprintf("other%d", i)
		if edge.ShardOf(slug) != edge.ShardOf("small") {
			return slug, bytes.ReplaceAll(bytes.Replace(smallFixture(t), []byte(`"slug":"small"`), []byte(`"slug":"`+slug+`"`), 1), []byte(`"small:`), []byte(`"`+slug+`:`))
		}
	}
	t.Fatal("no slug outside small's shard")
	return "", nil
}

// shed checks a shed request's answer: 503 with Retry-After, a problem.
func shed(t *testing.T, what string, r response) {
	t.Helper()
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") != "1" ||
		r.header.Get("Content-Type") != "application/problem+json" || !bytes.Contains(r.body, []byte(`"code":"unavailable"`)) {
		t.Errorf("%s: %d Retry-After %q %s, want 503 with Retry-After 1", what, r.status, r.header.Get("Retry-After"), r.body)
	}
}

// TestOverloadIsShedNotQueued fills the node's bound of reads in flight: a read waits no longer than
// the admission wait and is answered 503 with Retry-After; once a slot is free it is served. Lists
// are admitted by bounds of their own.
func TestOverloadIsShedNotQueued(t *testing.T) {
	s := newTestServerWith(t, func(c *edge.Config) { c.Admission = edge.Admission{Wait: 20 * time.Millisecond} }, smallFixture(t))
	release := s.edge.Occupy("in-flight")
	start := time.Now()
	r := s.get(t, "/v1/d/small/services/svc_gp?view=brief")
	waited := time.Since(start)
	shed(t, "a read past the bound of requests in flight", r)
	if waited > 2*time.Second {
		t.Errorf("the shed read waited %v", waited)
	}
	if r := s.get(t, "/v1/d/small/services"); r.status != 200 { // lists have bounds of their own
		t.Errorf("a list with the bound of reads in flight full: %d", r.status)
	}
	release()
	if r := s.get(t, "/v1/d/small/services/svc_gp?view=brief"); r.status != 200 {
		t.Errorf("a read once a slot is free: %d", r.status)
	}
}

// TestPagesCannotTakeWhatBriefReadsNeed fills each of the two bounds of record reads in turn: with
// the bound of pages full, a page is shed and brief views (and documents) are served; with the bound
// of brief reads full, pages are still served.
func TestPagesCannotTakeWhatBriefReadsNeed(t *testing.T) {
	s := newTestServerWith(t, func(c *edge.Config) {
		c.Admission = edge.Admission{Wait: 20 * time.Millisecond, PageWait: 20 * time.Millisecond}
	}, smallFixture(t))
	pages := []string{"/v1/d/small/services/svc_gp", "/v1/d/small/services/svc_gp?view=page", "/v1/d/small/locations/loc_ultimo"}
	cheap := []string{"/v1/d/small/services/svc_gp?view=brief", "/v1/d/small/locations/loc_ultimo?view=brief", "/v1/d/small/developers"}
	release := s.edge.Occupy("pages")
	for _, path := range pages {
		shed(t, path+" with the bound of pages full", s.get(t, path))
	}
	for _, path := range cheap {
		if r := s.get(t, path); r.status != 200 {
			t.Errorf("%s with the bound of pages full: %d %s", path, r.status, r.body)
		}
	}
	if r := s.get(t, "/v1/d/small/services/svc_gp?view=nonsense"); r.status != 400 {
		t.Errorf("a bad view with the bound of pages full: %d, want 400 (it takes no page slot)", r.status)
	}
	release()
	release = s.edge.Occupy("in-flight")
	defer release()
	for _, path := range cheap {
		shed(t, path+" with the bound of brief reads full", s.get(t, path))
	}
	for _, path := range pages {
		if r := s.get(t, path); r.status != 200 {
			t.Errorf("%s with the bound of brief reads full: %d %s", path, r.status, r.body)
		}
	}
}

// TestPagesWaitLongerThanBriefReads holds the bound of pages full for ten times the cheap reads'
// wait: a page asked for meanwhile waits, parked, and is served once a slot frees; a brief read held
// as long by its own bound is shed. A page shed at once would come straight back from a client that
// retries, and queue before the brief reads on the CPUs again.
func TestPagesWaitLongerThanBriefReads(t *testing.T) {
	const wait = 20 * time.Millisecond
	s := newTestServerWith(t, func(c *edge.Config) {
		c.Admission = edge.Admission{Wait: wait, PageWait: time.Minute}
	}, smallFixture(t))
	for _, c := range []struct {
		bound, path string
		want        int
	}{
		{"pages", "/v1/d/small/services/svc_gp", http.StatusOK},
		{"in-flight", "/v1/d/small/services/svc_gp?view=brief", http.StatusServiceUnavailable},
	} {
		release := s.edge.Occupy(c.bound)
		got := make(chan response, 1)
		go func() { got <- s.get(t, c.path) }()
		var r response
		select {
		case r = <-got:
			release()
		case <-time.After(10 * wait): // the time a slot stays taken: what is under test
			release()
			r = <-got
		}
		if r.status != c.want {
			t.Errorf("%s with the bound of %s full for %v: %d %s, want %d", c.path, c.bound, 10*wait, r.status, r.body, c.want)
		}
	}
}

// TestListsCannotTakeWhatRecordReadsNeed fills the bounds of expensive requests, the node's and then
// one directory's: lists are shed, record reads are served at once; another directory's lists are
// served while one directory's bound is full.
func TestListsCannotTakeWhatRecordReadsNeed(t *testing.T) {
	other, fixture := otherDirectory(t)
	s := newTestServerWith(t, func(c *edge.Config) {
		c.Admission = edge.Admission{ExpensiveWait: 20 * time.Millisecond}
	}, smallFixture(t), fixture)
	for _, bound := range []string{"expensive", "small"} {
		release := s.edge.Occupy(bound)
		shed(t, "a service list with the "+bound+" bound full", s.get(t, "/v1/d/small/services?limit=5"))
		shed(t, "a practitioner list with the "+bound+" bound full", s.get(t, "/v1/d/small/practitioners"))
		shed(t, "an identifier search with the "+bound+" bound full", s.get(t, "/v1/d/small/identifiers/search?system=x&value=y"))
		for _, path := range []string{"/v1/d/small/services/svc_gp", "/v1/d/small/services/svc_gp?view=brief", "/v1/d/small/developers"} {
			if r := s.get(t, path); r.status != 200 {
				t.Errorf("%s with the %s bound full: %d %s", path, bound, r.status, r.body)
			}
		}
		want := http.StatusServiceUnavailable // the node's bound covers every directory
		if bound == "small" {
			want = 200
		}
		if r := s.get(t, "/v1/d/"+other+"/services?limit=5"); r.status != want {
			t.Errorf("another directory's list with the %s bound full: %d, want %d", bound, r.status, want)
		}
		release()
		if r := s.get(t, "/v1/d/small/services?limit=5"); r.status != 200 {
			t.Errorf("a list once the %s bound has room: %d %s", bound, r.status, r.body)
		}
	}
}

// TestAnExpensiveRequestWaitsOnceForBothBounds fills the directory's bound and the node's, and frees
// the directory's late in the wait: the list is shed when its one wait ends, not after a second wait
// for the node's bound.
func TestAnExpensiveRequestWaitsOnceForBothBounds(t *testing.T) {
	const wait = time.Second
	s := newTestServerWith(t, func(c *edge.Config) {
		c.Admission = edge.Admission{ExpensiveWait: wait}
	}, smallFixture(t))
	defer s.edge.Occupy("expensive")()
	releaseDir := s.edge.Occupy("small")
	freed := time.AfterFunc(wait*8/10, releaseDir) // another directory's list ends late in the wait
	defer freed.Stop()
	start := time.Now()
	shed(t, "a list with both bounds full", s.get(t, "/v1/d/small/services?limit=5"))
	if took := time.Since(start); took >= wait*16/10 {
		t.Errorf("the list was shed after %v: it waited again for the node's bound (its wait is %v)", took, wait)
	}
}

// TestAnExpensiveRequestHasATimeBudget gives lists no time: a list is answered 503 with Retry-After
// (its query interrupted), logged as a warning; record reads have no such budget.
func TestAnExpensiveRequestHasATimeBudget(t *testing.T) {
	var logs strings.Builder
	s := newTestServerWith(t, func(c *edge.Config) {
		c.Admission = edge.Admission{ExpensiveBudget: time.Nanosecond}
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	}, smallFixture(t))
	shed(t, "a list out of its time budget", s.get(t, "/v1/d/small/services"))
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "time budget") || strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("logged:\n%s", logs.String())
	}
	if r := s.get(t, "/v1/d/small/services/svc_gp"); r.status != 200 {
		t.Errorf("a record read: %d", r.status)
	}
}

// TestListsCanCostMore counts lists as three requests of an anonymous limit of six a minute: two
// lists spend it; record reads (on another server) still count one each.
func TestListsCanCostMore(t *testing.T) {
	s := newTestServerWith(t, func(c *edge.Config) {
		c.ListCost = 3
		c.AnonymousLimits = edge.Limits{PerMinute: 6, PerDay: 1000}
	}, smallFixture(t))
	for i, want := range []int{200, 200, 429} {
		if r := s.get(t, "/v1/d/small/services?limit=5"); r.status != want {
			t.Errorf("list %d: %d, want %d", i+1, r.status, want)
		}
	}
	// Record reads from another caller: six of them.
	s2 := newTestServerWith(t, func(c *edge.Config) {
		c.ListCost = 3
		c.AnonymousLimits = edge.Limits{PerMinute: 6, PerDay: 1000}
	}, smallFixture(t))
	for i := range 6 {
		if r := s2.get(t, "/v1/d/small/services/svc_gp"); r.status != 200 {
			t.Errorf("record read %d: %d", i+1, r.status)
		}
	}
	if r := s2.get(t, "/v1/d/small/services/svc_gp"); r.status != 429 {
		t.Errorf("the seventh record read: %d, want 429", r.status)
	}
}
