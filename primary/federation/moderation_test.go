package federation_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/edge"
	"github.com/dirsvc/dirsvc/primary"
)

// moderators names the test directory's moderators: cara a curator, sam a steward of Coast
// Counselling (org_coast), hal a steward of Harbour Health.
func (s *fedService) moderators(t *testing.T) {
	t.Helper()
	for _, m := range []dirsvc.Moderator{{Name: "cara", Role: dirsvc.RoleCurator}, {Name: "sam", Role: dirsvc.RoleSteward, Organisation: "org_coast"},
		{Name: "hal", Role: dirsvc.RoleSteward, Organisation: "org_harbour"}} {
		if err := s.svc.AddModerator(context.Background(), "small", m); err != nil {
			t.Fatal(err)
		}
	}
}

// act takes an operator's action through the admin API.
func (s *fedService) act(t *testing.T, id, action, operator string) (answer, dirsvc.ForwardedItem) {
	t.Helper()
	a := send(t, s.admin(t), "POST", s.URL+"/admin/v1/d/small/moderation/"+id+"/"+action, primary.ModerationRequest{Operator: operator, Note: "checked by phone"})
	var it dirsvc.ForwardedItem
	if a.status == 200 {
		if err := json.Unmarshal(a.body, &it); err != nil {
			t.Fatal(err)
		}
	}
	return a, it
}

// service reads a service as the client sees it.
func (s *fedService) service(t *testing.T, c *http.Client, id string) map[string]any {
	t.Helper()
	a := send(t, c, "GET", s.URL+"/v1/d/small/services/"+id+"?view=brief", nil)
	var v map[string]any
	if a.status != 200 || json.Unmarshal(a.body, &v) != nil {
		t.Fatalf("read %s: %d %s", id, a.status, a.body)
	}
	return v
}

// feed returns the client's change feed items of a record.
func (s *fedService) feed(t *testing.T, c *http.Client, id string) []edge.FeedItem {
	t.Helper()
	var out []edge.FeedItem
	url := s.URL + "/v1/d/small/changes?limit=500"
	for {
		a := send(t, c, "GET", url, nil)
		var p edge.FeedPage
		if a.status != 200 || json.Unmarshal(a.body, &p) != nil {
			t.Fatalf("feed: %d %s", a.status, a.body)
		}
		for _, it := range p.Items {
			if it.PublicID == id {
				out = append(out, it)
			}
		}
		if !p.HasMore {
			return out
		}
		url = s.URL + "/v1/d/small/changes?limit=500&since=" + p.NextCursor
	}
}

func (s *fedService) receiptOf(t *testing.T, c *http.Client, id string) string {
	t.Helper()
	return send(t, c, "GET", s.receiptURL(id), nil).receipt(t).Status
}

// TestModerationLoop: a client proposes a new description of a service; an operator accepts it and
// the service's steward approves it; the new description is in the REST read and in the client's
// change feed as a new version, and the receipt says accepted with that version. A rejected
// proposal leaves the record as it was.
func TestModerationLoop(t *testing.T) {
	s := newFedService(t)
	s.moderators(t)
	c := s.aggregator(t, dirsvc.Partner)
	before := s.service(t, c, "svc_counsel")
	feedBefore := s.feed(t, c, "svc_counsel")
	const text = "Free counselling for young people and new parents, weekdays."
	r := s.propose(t, c, map[string]any{"publicId": "svc_counsel", "changes": map[string]string{"description": text}, "reference": "AGG-7"})

	// The queue routes it to the service's steward and to curators, not to another organisation's.
	for name, want := range map[string]bool{"sam": true, "cara": true, "hal": false} {
		a := send(t, s.admin(t), "GET", s.URL+"/admin/v1/d/small/moderation?status=pending&for="+name, nil)
		var q primary.ModerationQueue
		json.Unmarshal(a.body, &q)
		if got := len(q.Items) == 1 && q.Items[0].ID == r.ID; a.status != 200 || got != want {
			t.Errorf("queue for %s: %d %s, want the proposal: %v", name, a.status, a.body, want)
		}
	}
	if a, _ := s.act(t, r.ID, "approve", "sam"); a.status != 409 {
		t.Errorf("approve before accept: %d %s", a.status, a.body)
	}
	if a, _ := s.act(t, r.ID, "accept", "hal"); a.status != 403 || a.problem(t).Code != "forbidden-scope" {
		t.Errorf("another organisation's steward accepts: %d %s", a.status, a.body)
	}
	if a, _ := s.act(t, r.ID, "accept", "nobody"); a.status != 403 {
		t.Errorf("a stranger accepts: %d %s", a.status, a.body)
	}
	a, it := s.act(t, r.ID, "accept", "cara")
	if a.status != 200 || it.Status != dirsvc.ForwardedApproving {
		t.Fatalf("accept: %d %s", a.status, a.body)
	}
	// Accepted, not yet approved: nothing is published, and the receipt still says pending.
	if got := s.service(t, c, "svc_counsel")["description"]; got != before["description"] || s.receiptOf(t, c, r.ID) != "pending" {
		t.Errorf("after accept: description %v, receipt %s", got, s.receiptOf(t, c, r.ID))
	}
	if a, _ := s.act(t, r.ID, "approve", "hal"); a.status != 403 {
		t.Errorf("another organisation's steward approves: %d %s", a.status, a.body)
	}
	if a, _ := s.act(t, r.ID, "approve", "cara"); a.status != 403 {
		t.Errorf("a curator approves where the record has a steward: %d %s", a.status, a.body)
	}
	a, it = s.act(t, r.ID, "approve", "sam")
	if a.status != 200 || it.Status != dirsvc.ForwardedAccepted || it.PublishedVersion == 0 {
		t.Fatalf("approve: %d %s", a.status, a.body)
	}
	after := s.service(t, c, "svc_counsel")
	if after["description"] != text || after["version"].(float64) <= before["version"].(float64) ||
		int64(after["version"].(float64)) != it.PublishedVersion {
		t.Errorf("published: description %v version %v (before %v), receipt version %d", after["description"], after["version"], before["version"], it.PublishedVersion)
	}
	feedAfter := s.feed(t, c, "svc_counsel")
	if len(feedAfter) != len(feedBefore)+1 || feedAfter[len(feedAfter)-1].Version != it.PublishedVersion ||
		feedAfter[len(feedAfter)-1].EventType != dirsvc.EventUpdated {
		t.Errorf("feed of svc_counsel: %+v before, %+v after", feedBefore, feedAfter)
	}
	rc := send(t, c, "GET", s.receiptURL(r.ID), nil).receipt(t)
	if rc.Status != "accepted" || rc.PublishedVersion != it.PublishedVersion {
		t.Errorf("receipt: %+v", rc)
	}
	if a, _ := s.act(t, r.ID, "reject", "sam"); a.status != 409 {
		t.Errorf("reject once published: %d %s", a.status, a.body)
	}
	if w := send(t, c, "POST", s.receiptURL(r.ID)+"/withdraw", nil); w.status != 409 {
		t.Errorf("withdraw once published: %d %s", w.status, w.body)
	}
	// The history says who did what.
	full := send(t, s.admin(t), "GET", s.URL+"/admin/v1/d/small/moderation/"+r.ID, nil)
	var item dirsvc.ForwardedItem
	json.Unmarshal(full.body, &item)
	var steps []string
	for _, h := range item.History {
		steps = append(steps, h.Action+":"+h.Operator+":"+h.Role)
	}
	if got := strings.Join(steps, " "); got != "forward:: accept:cara:curator approve:sam:steward" {
		t.Errorf("history %q", got)
	}

	// A rejected proposal changes nothing.
	r2 := s.propose(t, c, map[string]any{"publicId": "svc_counsel", "changes": map[string]string{"description": "Closed forever."}})
	s.act(t, r2.ID, "accept", "sam")
	if a, it := s.act(t, r2.ID, "reject", "sam"); a.status != 200 || it.Status != dirsvc.ForwardedRejected {
		t.Fatalf("reject: %d %s", a.status, a.body)
	}
	if a, _ := s.act(t, r2.ID, "approve", "sam"); a.status != 409 {
		t.Errorf("approve once rejected: %d %s", a.status, a.body)
	}
	if got := s.service(t, c, "svc_counsel"); got["description"] != text || got["version"] != after["version"] {
		t.Errorf("after a rejection: %v version %v", got["description"], got["version"])
	}
	if len(s.feed(t, c, "svc_counsel")) != len(feedAfter) || s.receiptOf(t, c, r2.ID) != "rejected" {
		t.Errorf("a rejection reached the feed, or the receipt says %s", s.receiptOf(t, c, r2.ID))
	}

	// Issues are resolved or closed with no action, by a steward or a curator.
	is := send(t, c, "POST", s.issues(), map[string]any{"publicId": "svc_gp", "category": "closed"}).receipt(t)
	if a, _ := s.act(t, is.ID, "accept", "hal"); a.status != 409 {
		t.Errorf("accept an issue: %d %s", a.status, a.body)
	}
	if a, it := s.act(t, is.ID, "no-action", "hal"); a.status != 200 || it.Status != dirsvc.ForwardedNoAction || s.receiptOf(t, c, is.ID) != "no_action" {
		t.Errorf("no action: %d %s", a.status, a.body)
	}
	if a, _ := s.act(t, is.ID, "resolve", "cara"); a.status != 409 {
		t.Errorf("resolve a closed issue: %d %s", a.status, a.body)
	}
	if a, _ := s.act(t, is.ID, "publish", "cara"); a.status != 400 || a.problem(t).Param != "action" {
		t.Errorf("an unknown action: %d %s", a.status, a.body)
	}
}

// TestGatedFieldNeedsACurator: a name change is published only by a curator's approval; the
// steward's alone leaves the record unchanged.
func TestGatedFieldNeedsACurator(t *testing.T) {
	s := newFedService(t)
	s.moderators(t)
	c := s.aggregator(t, dirsvc.Public)
	r := s.propose(t, c, map[string]any{"publicId": "svc_counsel", "changes": map[string]string{"name": "Coast Family Counselling", "description": "For families."}})
	s.act(t, r.ID, "accept", "sam")
	if a, _ := s.act(t, r.ID, "approve", "sam"); a.status != 403 || !strings.Contains(a.problem(t).Detail, "curator") {
		t.Errorf("the steward approves a name: %d %s", a.status, a.body)
	}
	if got := s.service(t, c, "svc_counsel"); got["name"] != "Coast Counselling" || got["description"] != nil || s.receiptOf(t, c, r.ID) != "pending" {
		t.Fatalf("after the steward's approval: %v, %v, receipt %s", got["name"], got["description"], s.receiptOf(t, c, r.ID))
	}
	a, it := s.act(t, r.ID, "approve", "cara")
	if a.status != 200 || it.Status != dirsvc.ForwardedAccepted {
		t.Fatalf("the curator approves: %d %s", a.status, a.body)
	}
	if got := s.service(t, c, "svc_counsel"); got["name"] != "Coast Family Counselling" || got["description"] != "For families." {
		t.Errorf("published: %v", got)
	}
}

// TestStaleProposalIsRejected: a field changed between the proposal and its approval; approving
// it changes nothing and closes it as rejected (stale).
func TestStaleProposalIsRejected(t *testing.T) {
	s := newFedService(t)
	s.moderators(t)
	c := s.aggregator(t, dirsvc.Public)
	r := s.propose(t, c, map[string]any{"publicId": "loc_coast", "changes": map[string]string{"description": "Upstairs, lift access."}})
	s.act(t, r.ID, "accept", "sam")
	// The directory changes the site itself meanwhile.
	w, err := s.store.Writer(context.Background(), "small")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := w.Source(context.Background(), "loc_coast")
	if err != nil {
		t.Fatal(err)
	}
	rec.(*dirsvc.Location).Description = "Ground floor."
	if err := primary.RecordUpdater(s.store)(context.Background(), "small", rec); err != nil {
		t.Fatal(err)
	}
	a, it := s.act(t, r.ID, "approve", "sam")
	if a.status != 200 || it.Status != dirsvc.ForwardedRejected || it.Reason != "stale" {
		t.Fatalf("approve a stale proposal: %d %s", a.status, a.body)
	}
	rc := send(t, c, "GET", s.receiptURL(r.ID), nil).receipt(t)
	if rc.Status != "rejected" || rc.Reason != "stale" {
		t.Errorf("receipt %+v", rc)
	}
	rec, _ = w.Source(context.Background(), "loc_coast")
	if d := rec.(*dirsvc.Location).Description; d != "Ground floor." {
		t.Errorf("the site's description is %q", d)
	}
}
