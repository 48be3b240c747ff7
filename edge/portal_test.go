package edge_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/dirsvc/dirsvc/edge"
)

func TestThePortalDocumentsEveryOperation(t *testing.T) {
	s := newTestServerWith(t, func(c *edge.Config) { c.SandboxDirectory = "small" }, smallFixture(t))
	r := s.get(t, edge.PortalPath("small"))
	if r.status != http.StatusOK || r.header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("portal: %d %s", r.status, r.header.Get("Content-Type"))
	}
	for name, want := range map[string]string{"Cache-Control": "public, max-age=300", "X-Content-Type-Options": "nosniff",
		"Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY"} {
		if got := r.header.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	csp := r.header.Get("Content-Security-Policy")
	if !strings.HasPrefix(csp, "default-src 'none'; style-src 'sha256-") || strings.Contains(csp, "unsafe") || strings.Contains(string(r.body), "<script") {
		t.Errorf("Content-Security-Policy %q, or the page holds a script", csp)
	}
	// Every operation of the served document is on the page: the reference is made from it.
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(edge.OpenAPIDocument(), &doc); err != nil {
		t.Fatal(err)
	}
	page := string(r.body)
	ops := 0
	for path, item := range doc.Paths {
		for method := range item {
			if method == "parameters" {
				continue
			}
			ops++
			if !strings.Contains(page, `<span class="method m-`+method+`">`+strings.ToUpper(method)+`</span> <code class="path">`+path+`</code>`) {
				t.Errorf("the portal lacks %s %s", strings.ToUpper(method), path)
			}
		}
	}
	if got := strings.Count(page, `<article class="op"`); got != ops {
		t.Errorf("the portal shows %d operations, the document has %d", got, ops)
	}
	if !strings.Contains(page, `href="`+edge.SandboxSignupPath("small")+`"`) {
		t.Error("the demonstration directory's portal does not link its sign-up")
	}
	// The examples use the directory's own records.
	if !regexp.MustCompile(`data-example="http://localhost/v1/d/small/services/svc_[a-z0-9_]+"`).MatchString(page) {
		t.Error("no example reads one of the directory's services")
	}

	t.Run("an entity tag that answers 304", func(t *testing.T) {
		tag := r.header.Get("ETag")
		if again := s.get(t, edge.PortalPath("small"), "If-None-Match", tag); tag == "" || again.status != http.StatusNotModified || len(again.body) != 0 {
			t.Errorf("If-None-Match %q: %d", tag, again.status)
		}
	})
	t.Run("the developer information links it", func(t *testing.T) {
		var info edge.DeveloperInfo
		if err := json.Unmarshal(s.get(t, "/v1/d/small/developers").body, &info); err != nil || info.DeveloperPortal != edge.DefaultBaseURL+edge.PortalPath("small") {
			t.Errorf("developerPortal %q, %v", info.DeveloperPortal, err)
		}
	})
	t.Run("an unknown directory and a parameter", func(t *testing.T) {
		if r := s.get(t, edge.PortalPath("nowhere")); r.status != http.StatusNotFound {
			t.Errorf("unknown directory: %d", r.status)
		}
		if r := s.get(t, edge.PortalPath("small")+"?x=1"); r.status != http.StatusBadRequest {
			t.Errorf("unknown parameter: %d", r.status)
		}
	})
}
