package edge_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/edge"
)

// TestHealthSaysWhetherTheNodeIsReady reads the public health route and the full report of nodes
// healthy or not, ready or not: a load balancer gets 503 unless the node is both, and the public
// body says only the role, healthy and ready; the full report also names the directories warming.
func TestHealthSaysWhetherTheNodeIsReady(t *testing.T) {
	for _, tc := range []struct {
		name         string
		healthy      bool
		ready        func() (bool, []string)
		status       int
		public, full string
	}{
		{"a node with no readiness to wait for is ready", true, nil, 200,
			`{"role":"primary","healthy":true,"ready":true}`, `{"role":"primary","healthy":true,"ready":true}`},
		{"a node loading its directories answers 503", true, func() (bool, []string) { return false, []string{"small"} }, 503,
			`{"role":"primary","healthy":true,"ready":false}`, `{"role":"primary","healthy":true,"ready":false,"warming":["small"]}`},
		{"a ready node still warming a directory added later answers 200", true, func() (bool, []string) { return true, []string{"later"} }, 200,
			`{"role":"primary","healthy":true,"ready":true}`, `{"role":"primary","healthy":true,"ready":true,"warming":["later"]}`},
		{"an unhealthy node answers 503 though ready", false, func() (bool, []string) { return true, nil }, 503,
			`{"role":"primary","healthy":false,"ready":true}`, `{"role":"primary","healthy":false,"ready":true}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestServerWith(t, func(c *edge.Config) {
				c.Status = func(context.Context) dirsvc.NodeStatus {
					return dirsvc.NodeStatus{Role: dirsvc.RolePrimary, Healthy: tc.healthy}
				}
				c.Ready = tc.ready
			}, smallFixture(t))
			r := send(t, "GET", s.URL+"/healthz")
			if r.status != tc.status || string(r.body) != tc.public {
				t.Errorf("public: %d %s, want %d %s", r.status, r.body, tc.status, tc.public)
			}
			w := httptest.NewRecorder()
			s.edge.Report().ServeHTTP(w, httptest.NewRequest("GET", "/healthz", nil))
			if w.Code != tc.status || w.Body.String() != tc.full {
				t.Errorf("full report: %d %s, want %d %s", w.Code, w.Body, tc.status, tc.full)
			}
			if got := r.header.Get("Cache-Control"); got != "no-store" {
				t.Errorf("Cache-Control = %q", got)
			}
		})
	}
}
