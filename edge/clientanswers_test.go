package edge_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/edge"
)

// answersPrimary is corsPrimary, every route of a primary mounted, with each answer checked against
// the OpenAPI document.
func answersPrimary(t *testing.T) *testServer {
	t.Helper()
	s := corsPrimary(t, corsUnlimited)
	s.client = &http.Client{Transport: checked(t, http.DefaultTransport),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return s
}

// TestWebhookRoutesAnswerACallWithoutTokenAsOtherScopedRoutes: every webhook route answers a caller
// without a token exactly as the practitioner list does (403 forbidden-scope, the same problem and
// headers but for the detail), and never 401, which would say a token was presented and refused.
func TestWebhookRoutesAnswerACallWithoutTokenAsOtherScopedRoutes(t *testing.T) {
	s := answersPrimary(t)
	ref := s.get(t, "/v1/d/small/practitioners")
	if ref.status != http.StatusForbidden || ref.json(t)["code"] != dirsvc.EForbiddenScope {
		t.Fatalf("the practitioner list, anonymous: %d %s", ref.status, ref.body)
	}
	want := ref.json(t)
	const id = "00000000-0000-4000-8000-000000000000"
	for _, c := range []struct{ method, path string }{
		{"GET", "/v1/d/small/webhooks"},
		{"POST", "/v1/d/small/webhooks"},
		{"GET", "/v1/d/small/webhooks/" + id},
		{"PATCH", "/v1/d/small/webhooks/" + id},
		{"DELETE", "/v1/d/small/webhooks/" + id},
		{"POST", "/v1/d/small/webhooks/" + id + "/rotate"},
		{"POST", "/v1/d/small/webhooks/" + id + "/test"},
		{"GET", "/v1/d/small/webhooks/" + id + "/deliveries"},
		{"GET", "/v1/d/small/webhooks/" + id + "/deliveries/" + id},
		{"POST", "/v1/d/small/webhooks/" + id + "/deliveries/" + id + "/replay"},
	} {
		var r response
		if c.method == "POST" || c.method == "PATCH" {
			r = s.send(t, c.method, c.path, strings.NewReader(`{"url":"https://hooks.example/x"}`), "Content-Type", "application/json")
		} else {
			r = s.do(t, c.method, c.path)
		}
		if r.status != ref.status {
			t.Errorf("%s %s: %d %s, want %d", c.method, c.path, r.status, r.body, ref.status)
			continue
		}
		got := r.json(t)
		for _, k := range []string{"type", "title", "status", "code"} {
			if got[k] != want[k] {
				t.Errorf("%s %s: %s %v, want %v", c.method, c.path, k, got[k], want[k])
			}
		}
		for _, h := range []string{"Content-Type", "Cache-Control", "X-Content-Type-Options", "WWW-Authenticate"} {
			if r.header.Get(h) != ref.header.Get(h) {
				t.Errorf("%s %s: %s %q, want %q", c.method, c.path, h, r.header.Get(h), ref.header.Get(h))
			}
		}
		if !strings.Contains(r.json(t)["detail"].(string), dirsvc.ScopeWebhooksManage) {
			t.Errorf("%s %s: the detail does not name the scope: %s", c.method, c.path, r.body)
		}
	}
}

// TestEveryUnauthorizedAnswerSaysHowToAuthenticate: each 401 the service answers carries a
// WWW-Authenticate challenge of the credentials its route takes: a Bearer token (with RFC 6750's
// error invalid_token when one was presented and refused), or HTTP Basic at the routes a client
// authenticates to with its ID and secret.
func TestEveryUnauthorizedAnswerSaysHowToAuthenticate(t *testing.T) {
	s := answersPrimary(t)
	const bad = "Bearer not-a-token"
	form := "application/x-www-form-urlencoded"
	for _, c := range []struct {
		name, method, path, body string
		header                   []string
		want                     string
		undocumented             bool
	}{
		{name: "a read with a refused token", method: "GET", path: "/v1/d/small/services", header: []string{"Authorization", bad},
			want: `Bearer realm="dirsvc", error="invalid_token"`},
		{name: "a FHIR read with a refused token", method: "GET", path: "/v1/d/small/fhir/HealthcareService", header: []string{"Authorization", bad},
			want: `Bearer realm="dirsvc", error="invalid_token"`},
		{name: "webhooks with a refused token", method: "GET", path: "/v1/d/small/webhooks", header: []string{"Authorization", bad},
			want: `Bearer realm="dirsvc", error="invalid_token"`},
		{name: "exports with a refused token", method: "GET", path: "/v1/d/small/exports", header: []string{"Authorization", bad},
			want: `Bearer realm="dirsvc", error="invalid_token"`},
		{name: "the token endpoint with a wrong secret", method: "POST", path: edge.TokenPath,
			body:   "grant_type=client_credentials&client_id=dirp_nobody&client_secret=wrong",
			header: []string{"Content-Type", form}, want: `Basic realm="dirsvc", charset="UTF-8"`},
		{name: "an access request without credentials", method: "POST", path: edge.AccessRequestsPath,
			body: `{"directory":"small","scopes":["graph:read"]}`, header: []string{"Content-Type", "application/json"},
			want: `Basic realm="dirsvc", charset="UTF-8"`},
		{name: "the admin API without its token", method: "GET", path: "/admin/v1/d/small/moderation",
			want: `Bearer realm="dirsvc-admin"`},
		{name: "the admin API with a wrong token", method: "GET", path: "/admin/v1/d/small/moderation", header: []string{"Authorization", bad},
			want: `Bearer realm="dirsvc-admin", error="invalid_token"`},
		// The replication stream is for edges, not in the OpenAPI document: its answers are not checked
		// against it.
		{name: "the replication stream without its token", method: "GET", path: "/replication/v1/files",
			want: `Bearer realm="dirsvc-replication"`, undocumented: true},
		{name: "the replication stream with a wrong token", method: "GET", path: "/replication/v1/files", header: []string{"Authorization", bad},
			want: `Bearer realm="dirsvc-replication", error="invalid_token"`, undocumented: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			client := s.client
			if c.undocumented {
				s.client = http.DefaultClient
			}
			r := s.send(t, c.method, c.path, strings.NewReader(c.body), c.header...)
			s.client = client
			if r.status != http.StatusUnauthorized || r.header.Get("WWW-Authenticate") != c.want {
				t.Errorf("%d, WWW-Authenticate %q; want 401 with %s\n%s", r.status, r.header.Get("WWW-Authenticate"), c.want, r.body)
			}
		})
	}
}

// TestPartnerBodiesRefuseNull: a body of null, or a member (at any depth) of null, answers 400
// naming it on every route that takes a JSON body, rather than reading as the member left out.
func TestPartnerBodiesRefuseNull(t *testing.T) {
	s := answersPrimary(t)
	bearer := func(scopes string) string {
		return "Bearer " + token(t, grant{dir: "small", tier: dirsvc.Partner, scopes: scopes})
	}
	exports, hooks, propose := bearer("graph:read export:run"), bearer("webhooks:manage feed:read"), bearer("graph:propose")
	const hook = "/v1/d/small/webhooks/00000000-0000-4000-8000-000000000000"
	for _, c := range []struct {
		name, method, path, auth, body, param string
	}{
		{"an export request of null", "POST", "/v1/d/small/exports", exports, `null`, "body"},
		{"export formats of null", "POST", "/v1/d/small/exports", exports, `{"formats":null}`, "formats"},
		{"export types of null", "POST", "/v1/d/small/exports", exports, `{"formats":["csv"],"types":null}`, "types"},
		{"an export since of null", "POST", "/v1/d/small/exports", exports, `{"since":null}`, "since"},
		{"an export format of null", "POST", "/v1/d/small/exports", exports, `{"formats":["csv",null]}`, "formats[1]"},
		{"a webhook registration of null", "POST", "/v1/d/small/webhooks", hooks, `null`, "body"},
		{"a webhook URL of null", "POST", "/v1/d/small/webhooks", hooks, `{"url":null}`, "url"},
		{"a webhook description of null", "POST", "/v1/d/small/webhooks", hooks, `{"url":"https://hooks.example/x","description":null}`, "description"},
		{"a webhook change of null", "PATCH", hook, hooks, `null`, "body"},
		{"a webhook state of null", "PATCH", hook, hooks, `{"state":null}`, "state"},
		{"a webhook description changed to null", "PATCH", hook, hooks, `{"description":null}`, "description"},
		{"a forwarded proposal of null", "POST", "/v1/d/small/federation/forwarded/proposals", propose, `null`, "body"},
		{"a proposed change of null", "POST", "/v1/d/small/federation/forwarded/proposals", propose,
			`{"publicId":"svc_gp","changes":{"name":null}}`, "changes.name"},
		{"a proposal's message of null", "POST", "/v1/d/small/federation/forwarded/proposals", propose,
			`{"publicId":"svc_gp","changes":{"name":"Harbour GP"},"message":null}`, "message"},
		{"a forwarded issue of null", "POST", "/v1/d/small/federation/forwarded/issues", propose, `null`, "body"},
		{"an issue's reporter of null", "POST", "/v1/d/small/federation/forwarded/issues", propose,
			`{"publicId":"svc_gp","category":"closed","reporter":null}`, "reporter"},
		{"an issue's reporter's email of null", "POST", "/v1/d/small/federation/forwarded/issues", propose,
			`{"publicId":"svc_gp","category":"closed","reporter":{"email":null,"consentToContact":true}}`, "reporter.email"},
		{"a position of null", "POST", "/v1/d/small/localities/nearest", "", `null`, "body"},
		{"a longitude of null", "POST", "/v1/d/small/localities/nearest", "", `{"latitude":-33.8,"longitude":null}`, "longitude"},
		{"a transition of null", "POST", "/admin/v1/d/small/records/svc_gp/transition", "Bearer " + corsAdminToken, `null`, "body"},
		{"a transition's survivor of null", "POST", "/admin/v1/d/small/records/svc_gp/transition", "Bearer " + corsAdminToken,
			`{"to":"merged","survivor":null}`, "survivor"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := []string{"Content-Type", "application/json"}
			if c.auth != "" {
				h = append(h, "Authorization", c.auth)
			}
			r := s.send(t, c.method, c.path, strings.NewReader(c.body), h...)
			if r.status != http.StatusBadRequest || r.json(t)["param"] != c.param {
				t.Errorf("%d %s, want 400 naming %s", r.status, r.body, c.param)
			}
		})
	}
}
