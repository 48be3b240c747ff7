package edge_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/dirsvc/dirsvc/edge"
)

// TestNodesOfADeploymentAcceptEachOthersCursors serves one store from three nodes: two of one
// deployment (the same cursor secret), one of another. A cursor one node gave is taken by its sibling,
// as a client balanced between a primary and its edges needs, and refused by the stranger.
func TestNodesOfADeploymentAcceptEachOthersCursors(t *testing.T) {
	s := newTestServerWith(t, func(c *edge.Config) { c.CursorSecret = []byte("one deployment's replication token") },
		demoFiles(t)["demo"])
	node := func(secret string) *testServer {
		srv := httptest.NewServer(edge.New(edge.Config{Catalog: s.store, Logger: discardLogger(),
			AnonymousLimits: edge.Limits{PerMinute: 1 << 30, PerDay: 1 << 30}, Keys: testKeys,
			CursorSecret: []byte(secret)}))
		t.Cleanup(srv.Close)
		return &testServer{Server: srv, store: s.store, client: &http.Client{Transport: checked(t, http.DefaultTransport)}}
	}
	sibling, stranger := node("one deployment's replication token"), node("another deployment's token")
	cur, ok := s.get(t, "/v1/d/demo/services?limit=3").json(t)["nextCursor"].(string)
	if !ok {
		t.Fatal("the service list has one page")
	}
	want := s.get(t, "/v1/d/demo/services?limit=3&cursor="+cur)
	if got := sibling.get(t, "/v1/d/demo/services?limit=3&cursor="+cur); got.status != 200 || string(got.body) != string(want.body) {
		t.Errorf("the sibling answers the cursor %d %s, want %d %s", got.status, got.body, want.status, want.body)
	}
	if got := stranger.get(t, "/v1/d/demo/services?limit=3&cursor="+cur); got.status != 400 || got.json(t)["param"] != "cursor" {
		t.Errorf("another deployment answers the cursor %d %s", got.status, got.body)
	}
}
