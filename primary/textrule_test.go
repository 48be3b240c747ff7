package primary_test

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/edge"
	"github.com/dirsvc/dirsvc/edge/edgetest"
	"github.com/dirsvc/dirsvc/fhir"
	"github.com/dirsvc/dirsvc/primary"
	"github.com/dirsvc/dirsvc/primary/export"
	"github.com/dirsvc/dirsvc/primary/federation"
	"github.com/dirsvc/dirsvc/primary/webhook"
)

// The text rule at every way in over HTTP: each route that takes a body refuses a text with a
// control or bidirectional character naming the field, a member given twice, and a body that is
// not JSON (or, for the sign-up, not a form); and takes a valid body.

const writeAdminToken = "q7Rz2kWv9XmP4tLs"

// writeService is the primary as `dirsvc serve` wires it, with every route that takes a body
// (the admin API with moderation, forwarding, webhooks, exports, sign-up and access requests), over
// the small directory on 127.0.0.1. Every answer is checked against the OpenAPI document.
type writeService struct {
	*httptest.Server
	store   *dirdb.Store
	fed     *federation.Service
	partner *http.Client // a client of the small directory with every scope a write route needs
	admin   *http.Client
	caller  *http.Client // no credentials
	browser *http.Client // with cookies, for the sign-up form
	org     string       // Basic credentials of a partner organisation's client
	csrf    string       // the sign-up form's token (its cookie is in browser's jar)
	hookURL string       // a receiver's address, for webhook registrations
	hook    string       // an endpoint of partner
	issue   string       // a pending forwarded issue, which the curator Cora moderates
}

func newWriteService(t *testing.T) *writeService {
	t.Helper()
	store, key, access := smallPrimary(t, nil)
	access.SandboxDirectory = "small"
	discard := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := edge.New(edge.Config{Catalog: store, Keys: store, ClientIPHeader: "X-Real-IP", SandboxDirectory: "small",
		AnonymousLimits: edge.Limits{PerMinute: 1 << 20, PerDay: 1 << 20}, Logger: discard})
	recv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(recv.Close)
	roots := x509.NewCertPool()
	roots.AddCert(recv.Certificate())
	hooks, err := webhook.New(webhook.Config{Store: store, Clients: store, Feed: primary.WebhookFeed(srv, store.ChangeHead),
		Directories: store.Slugs, SealKey: primary.WebhookSealKey(key), Log: discard, AllowNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, RootCAs: roots})
	if err != nil {
		t.Fatal(err)
	}
	exports, err := export.New(export.Config{Data: store.Root(), Catalog: store, LinkKey: primary.ExportLinkKey(key),
		BaseURL: edge.DefaultBaseURL, Log: discard})
	if err != nil {
		t.Fatal(err)
	}
	fed := federation.New(federation.Config{Directories: store, Store: store, Update: primary.RecordUpdater(store)})
	ps := &primary.Server{Edge: srv, Access: access, Webhooks: hooks, Exports: exports, Federation: fed, Log: discard,
		Admin:  &primary.AdminAPI{Store: store, Token: writeAdminToken, Moderation: fed},
		Portal: primary.NewPortal(access, srv, key, edge.DefaultSignupLimits, nil)}
	if err := ps.Mount(); err != nil {
		t.Fatal(err)
	}
	s := &writeService{Server: httptest.NewServer(srv), store: store, fed: fed, hookURL: recv.URL + "/hooks"}
	t.Cleanup(s.Close)
	check := edgetest.NewChecker(t)
	checked := check.Transport(t, http.DefaultTransport)
	s.caller = &http.Client{Transport: checked}
	s.admin = &http.Client{Transport: &bearer{writeAdminToken, checked}}
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	s.browser = &http.Client{Jar: jar, Transport: checked}
	s.callers(t, access, checked)
	s.prepare(t)
	return s
}

// callers makes the clients of the routes: a client of the small directory with every scope a
// write route needs, a partner organisation's client (Basic credentials), and the curator Cora.
func (s *writeService) callers(t *testing.T, access *primary.Access, checked http.RoundTripper) {
	t.Helper()
	ctx := context.Background()
	c, secret, err := access.CreateClient(ctx, primary.NewClient{Name: "aggregate", Directory: "small", Grants: []dirsvc.Grant{{
		Directory: "small", Tier: dirsvc.Partner, Limit: dirsvc.DefaultPartnerLimit,
		Scopes: dirsvc.NormalScopes([]string{dirsvc.ScopeGraphPropose, dirsvc.ScopeWebhooksManage, dirsvc.ScopeFeedRead, dirsvc.ScopeExportRun}),
	}}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &clientcredentials.Config{ClientID: c.ID, ClientSecret: secret, TokenURL: s.URL + edge.TokenPath, AuthStyle: oauth2.AuthStyleInHeader}
	s.partner = cfg.Client(context.WithValue(ctx, oauth2.HTTPClient, &http.Client{Transport: checked}))
	org, orgSecret, err := access.CreateClient(ctx, primary.NewClient{Name: "Partner"})
	if err != nil {
		t.Fatal(err)
	}
	s.org = "Basic " + basic(url.QueryEscape(org.ID)+":"+url.QueryEscape(orgSecret))
	if err := s.fed.AddModerator(ctx, "small", dirsvc.Moderator{Name: "Cora", Role: dirsvc.RoleCurator}); err != nil {
		t.Fatal(err)
	}
}

// prepare makes what the routes act on: the sign-up form's token, an endpoint, an issue.
func (s *writeService) prepare(t *testing.T) {
	t.Helper()
	a := s.send(t, s.browser, "GET", edge.SandboxSignupPath("small"), "", "", "Accept", "text/html")
	if m := csrfRE.FindStringSubmatch(a.body); a.status != http.StatusOK || m == nil {
		t.Fatalf("sign-up form: %d", a.status)
	} else {
		s.csrf = html.UnescapeString(m[1])
	}
	if a = s.send(t, s.partner, "POST", "/v1/d/small/webhooks", "application/json", `{"url":"`+s.hookURL+`"}`); a.status != http.StatusCreated {
		t.Fatalf("register an endpoint: %d %s", a.status, a.body)
	}
	var ep struct{ ID string }
	json.Unmarshal([]byte(a.body), &ep)
	a = s.send(t, s.partner, "POST", "/v1/d/small/federation/forwarded/issues", "application/json", `{"publicId":"svc_gp","category":"other","message":"Closed on Mondays now."}`)
	var it struct{ ID string }
	if json.Unmarshal([]byte(a.body), &it); a.status != http.StatusCreated || ep.ID == "" || it.ID == "" {
		t.Fatalf("forward an issue: %d %s", a.status, a.body)
	}
	s.hook, s.issue = ep.ID, it.ID
}

type bearer struct {
	token string
	base  http.RoundTripper
}

func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// send sends a body of a media type to a path of the service, with headers (name, value...).
func (s *writeService) send(t *testing.T, c *http.Client, method, path, mediaType, body string, header ...string) reply {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if mediaType != "" {
		req.Header.Set("Content-Type", mediaType)
	}
	req.Header.Set("X-Real-IP", "192.0.2.44")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{resp.StatusCode, resp.Header, string(raw)}
}

// writeRoute is a route that takes a body, with a body that puts a text in one field.
type writeRoute struct {
	name         string
	method, path string
	client       *http.Client
	mediaType    string
	header       []string
	field        string                   // the field the text goes in, as a refusal names it
	body         func(text string) string // the body, text in field
	good         string                   // a text the field takes (free text holds a tab and a line break)
	ok           int                      // the status of the body with good; 0: not sent
	fhir         bool                     // errors are OperationOutcomes
	form         bool                     // the body is a form
}

// jsonBody is a JSON object of members (name, value...), text given as value "$" replaced by text.
func jsonBody(members ...any) func(text string) string {
	return func(text string) string {
		var b strings.Builder
		b.WriteByte('{')
		for i := 0; i+1 < len(members); i += 2 {
			if i > 0 {
				b.WriteByte(',')
			}
			name, _ := json.Marshal(members[i])
			v, err := json.Marshal(replaceText(members[i+1], text))
			if err != nil {
				panic(err)
			}
			b.Write(name)
			b.WriteByte(':')
			b.Write(v)
		}
		b.WriteByte('}')
		return b.String()
	}
}

// replaceText returns v with every string "$" in it replaced by text.
func replaceText(v any, text string) any {
	switch v := v.(type) {
	case string:
		if v == "$" {
			return text
		}
	case []any:
		out := make([]any, len(v))
		for i := range v {
			out[i] = replaceText(v[i], text)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = replaceText(x, text)
		}
		return out
	}
	return v
}

// recordBody is the service svc_gp of the small directory in the import format, name replaced by
// text and with a description, as the admin API's PUT takes it.
func recordBody(field string) func(text string) string {
	return func(text string) string {
		file, err := os.ReadFile(filepath.Join("..", "testdata", "small.ndjson"))
		if err != nil {
			panic(err)
		}
		for _, line := range strings.Split(string(file), "\n") {
			if strings.Contains(line, `"publicId":"svc_gp"`) {
				var rec map[string]any
				if err := json.Unmarshal([]byte(line), &rec); err != nil {
					panic(err)
				}
				rec[field] = text
				b, _ := json.Marshal(rec)
				return string(b)
			}
		}
		panic("svc_gp is not in the small directory")
	}
}

func (s *writeService) routes() []writeRoute {
	freeText := "Walk-in\tclinic.\nBook by phone."
	return []writeRoute{
		{name: "the admin API's PUT of a record", method: "PUT", path: "/admin/v1/d/small/records/svc_gp", client: s.admin,
			field: "description", body: recordBody("description"), good: freeText, ok: http.StatusOK},
		{name: "the admin API's PUT of a record, in a name", method: "PUT", path: "/admin/v1/d/small/records/svc_gp", client: s.admin,
			field: "name", body: recordBody("name"), good: "Harbour GP clinic", ok: http.StatusOK},
		{name: "the admin API's transition", method: "POST", path: "/admin/v1/d/small/records/svc_old/transition", client: s.admin,
			field: "survivor", body: jsonBody("to", "merged", "survivor", "$")},
		{name: "a moderator's action", method: "POST", path: "/admin/v1/d/small/moderation/" + s.issue + "/resolve", client: s.admin,
			field: "note", body: jsonBody("operator", "Cora", "note", "$"), good: freeText, ok: http.StatusOK},
		{name: "a forwarded proposal", method: "POST", path: "/v1/d/small/federation/forwarded/proposals", client: s.partner,
			field: "changes.description", body: jsonBody("publicId", "svc_gp", "changes", map[string]any{"description": "$"}),
			good: freeText, ok: http.StatusCreated},
		{name: "a forwarded issue", method: "POST", path: "/v1/d/small/federation/forwarded/issues", client: s.partner,
			field: "reporter.name", body: jsonBody("publicId", "svc_gp", "category", "other", "message", "Wrong hours.",
				"reporter", map[string]any{"name": "$", "consentToContact": true}), good: "Ada Lovelace", ok: http.StatusCreated},
		{name: "a webhook registration", method: "POST", path: "/v1/d/small/webhooks", client: s.partner,
			field: "description", body: jsonBody("url", s.hookURL, "description", "$"), good: freeText, ok: http.StatusCreated},
		{name: "a webhook change", method: "PATCH", path: "/v1/d/small/webhooks/" + s.hook, client: s.partner,
			field: "description", body: jsonBody("description", "$"), good: "Sync to the clinic app", ok: http.StatusOK},
		{name: "an export request", method: "POST", path: "/v1/d/small/exports", client: s.partner,
			field: "formats[0]", body: jsonBody("formats", []any{"$"}), good: "csv", ok: http.StatusAccepted},
		{name: "a FHIR bulk export kick-off", method: "POST", path: "/v1/d/small/fhir/$export", client: s.partner,
			mediaType: "application/fhir+json", header: []string{"Prefer", "respond-async"}, fhir: true,
			field: "parameter[0].valueString", body: jsonBody("resourceType", "Parameters", "parameter",
				[]any{map[string]any{"name": "_type", "valueString": "$"}}), good: "Organization", ok: http.StatusAccepted},
		{name: "an access request", method: "POST", path: edge.AccessRequestsPath, client: s.caller, header: []string{"Authorization", s.org},
			field: "practitionerListReason", body: jsonBody("directory", "small", "scopes", []any{"graph:read", "practitioners:read"},
				"practitionerListReason", "$"), good: "Our app lists\nthe GPs of each clinic.", ok: http.StatusCreated},
		{name: "a sandbox sign-up", method: "POST", path: edge.SandboxSignupPath("small"), client: s.browser, form: true,
			mediaType: "application/x-www-form-urlencoded", field: "purpose",
			body: func(text string) string { return signupBody(s.csrf, "Ada Lovelace", "ada@example.org", text) },
			good: "A clinic finder.\r\nFor our members.", ok: http.StatusCreated},
	}
}

// route returns the route of a name.
func (s *writeService) route(t *testing.T, name string) writeRoute {
	t.Helper()
	for _, rt := range s.routes() {
		if rt.name == name {
			return rt
		}
	}
	t.Fatalf("no route %q", name)
	return writeRoute{}
}

// sendRoute sends a route's body with text in its field, as the media type given (the route's own
// when "").
func (s *writeService) sendRoute(t *testing.T, rt writeRoute, mediaType, body string) reply {
	t.Helper()
	if mediaType == "" {
		mediaType = rt.mediaType
	}
	if mediaType == "" {
		mediaType = "application/json"
	}
	return s.send(t, rt.client, rt.method, rt.path, mediaType, body, rt.header...)
}

// refusal returns the status, code and named field of a refusal (a problem, or for a FHIR route an
// OperationOutcome, whose expression names the field).
func refusal(t *testing.T, rt writeRoute, a reply) (status int, code, field string) {
	t.Helper()
	status, code, field, _ = refusalDetail(t, rt, a)
	return status, code, field
}

// refusalDetail is refusal with the refusal's message.
func refusalDetail(t *testing.T, rt writeRoute, a reply) (status int, code, field, detail string) {
	t.Helper()
	if rt.fhir {
		var o fhir.OperationOutcome
		if ct := a.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/fhir+json") || json.Unmarshal([]byte(a.body), &o) != nil || len(o.Issue) != 1 {
			t.Fatalf("want an OperationOutcome, got %d %s: %.300s", a.status, ct, a.body)
		}
		if len(o.Issue[0].Expression) == 1 {
			field = o.Issue[0].Expression[0]
		}
		return a.status, o.Issue[0].Code, field, o.Issue[0].Diagnostics
	}
	p := problemOf(t, a)
	return a.status, p.Code, p.Param, p.Detail
}

// controlCharacters are characters no text may hold.
var controlCharacters = []struct{ name, char string }{
	{"NUL", "\x00"}, {"BEL", "\a"}, {"ESC", "\x1b"}, {"U+202E (right-to-left override)", "\u202e"},
	{"U+2066 (left-to-right isolate)", "\u2066"}, {"DEL", "\x7f"}, {"U+0085 (next line)", "\u0085"},
	{"a carriage return alone", "\r"},
}

func TestEveryWriteRouteRefusesControlCharactersNamingTheField(t *testing.T) {
	s := newWriteService(t)
	for _, rt := range s.routes() {
		for _, c := range controlCharacters {
			t.Run(rt.name+" refuses "+c.name, func(t *testing.T) {
				a := s.sendRoute(t, rt, "", rt.body("Harbour"+c.char+"Health"))
				status, code, field, detail := refusalDetail(t, rt, a)
				wantCode := dirsvc.EInvalid
				if rt.fhir {
					wantCode = "invalid"
				}
				if status != http.StatusBadRequest || code != wantCode || field != rt.field {
					t.Fatalf("%d %s naming %q, want 400 %s naming %q: %.300s", status, code, field, rt.field, wantCode, a.body)
				}
				// The refusal is the text rule's, which says which character (the sign-up's form
				// says it for a person: characters that are not text).
				if !strings.Contains(detail, "U+") && !(rt.form && strings.Contains(detail, "not text")) {
					t.Fatalf("the refusal does not say which character: %q", detail)
				}
				if strings.Contains(a.body, c.char) || strings.Contains(a.body, "Harbour") {
					t.Fatalf("the refusal repeats the text: %.300s", a.body)
				}
			})
		}
	}
	// Nothing refused was kept: the issue made at the start is the queue's only item.
	if items, err := s.store.ForwardedItems(context.Background(), "small"); err != nil || len(items) != 1 {
		t.Errorf("forwarded items after the refusals: %d, %v", len(items), err)
	}
}

func TestWriteRoutesTakeAValidBodyWithTabsAndLineBreaksInFreeText(t *testing.T) {
	s := newWriteService(t)
	for _, rt := range s.routes() {
		if rt.ok == 0 {
			continue
		}
		t.Run(rt.name, func(t *testing.T) {
			if a := s.sendRoute(t, rt, "", rt.body(rt.good)); a.status != rt.ok {
				t.Fatalf("%d, want %d: %.300s", a.status, rt.ok, a.body)
			}
		})
	}
	ctx := context.Background()
	t.Run("a CRLF line break is kept as a line feed", func(t *testing.T) {
		rt := s.route(t, "a forwarded proposal")
		a := s.sendRoute(t, rt, "application/json; charset=utf-8", rt.body("Walk-in clinic.\r\nNo appointment needed."))
		var receipt struct{ ID string }
		if json.Unmarshal([]byte(a.body), &receipt); a.status != http.StatusCreated {
			t.Fatalf("%d: %.300s", a.status, a.body)
		}
		it, err := s.store.Forwarded(ctx, "small", receipt.ID)
		if err != nil || len(it.Changes) != 1 || it.Changes[0].Text != "Walk-in clinic.\nNo appointment needed." {
			t.Fatalf("stored %+v, %v", it, err)
		}
	})
	t.Run("a name holds no line break", func(t *testing.T) {
		rt := s.route(t, "the admin API's PUT of a record, in a name")
		status, code, field := refusal(t, rt, s.sendRoute(t, rt, "", rt.body("Harbour\nGP")))
		if status != http.StatusBadRequest || code != dirsvc.EInvalid || field != "name" {
			t.Fatalf("%d %s naming %q, want 400 naming name", status, code, field)
		}
	})
	w, err := s.store.Writer(ctx, "small")
	if err != nil {
		t.Fatal(err)
	}
	if rec, err := w.Source(ctx, "svc_gp"); err != nil || rec.(*dirsvc.Service).Name != "Harbour GP clinic" {
		t.Errorf("the record after the PUTs: %+v %v", rec, err)
	}
}

// repeatFirstMember returns a JSON object with its first member given twice.
func repeatFirstMember(t *testing.T, body string) (string, string) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %s", body)
	}
	tok, err := dec.Token()
	if err != nil {
		t.Fatal(err)
	}
	name := tok.(string)
	var v json.RawMessage
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	n, _ := json.Marshal(name)
	return "{" + string(n) + ":" + string(v) + "," + body[1:], name
}

func TestWriteRoutesRefuseAMemberGivenTwice(t *testing.T) {
	s := newWriteService(t)
	for _, rt := range s.routes() {
		if rt.form {
			continue // a form's fields: the sign-up's own test
		}
		t.Run(rt.name, func(t *testing.T) {
			body, name := repeatFirstMember(t, rt.body("x"))
			status, code, field := refusal(t, rt, s.sendRoute(t, rt, "", body))
			wantCode := dirsvc.EInvalid
			if rt.fhir {
				wantCode = "invalid"
			}
			if status != http.StatusBadRequest || code != wantCode || field != name {
				t.Fatalf("%d %s naming %q, want 400 naming %q", status, code, field, name)
			}
		})
	}
	t.Run("a member given twice deeper in", func(t *testing.T) {
		rt := s.route(t, "a forwarded issue")
		body := `{"publicId":"svc_gp","category":"other","reporter":{"name":"A","consentToContact":true,"name":"B"}}`
		if _, _, field := refusal(t, rt, s.sendRoute(t, rt, "", body)); field != "reporter.name" {
			t.Fatalf("naming %q, want reporter.name", field)
		}
	})
}

func TestWriteRoutesRefuseABodyOfAnotherMediaType(t *testing.T) {
	s := newWriteService(t)
	for _, rt := range s.routes() {
		for _, mt := range []string{"text/plain", "application/json; charset=iso-8859-1"} {
			if rt.form && mt != "text/plain" {
				continue
			}
			t.Run(rt.name+" as "+mt, func(t *testing.T) {
				status, code, field := refusal(t, rt, s.sendRoute(t, rt, mt, rt.body(rt.good+"x")))
				wantCode := dirsvc.EUnsupportedMedia
				if rt.fhir {
					wantCode, field = "not-supported", "Content-Type" // an outcome names no header
				}
				if status != http.StatusUnsupportedMediaType || code != wantCode || field != "Content-Type" {
					t.Fatalf("%d %s naming %q, want 415 naming Content-Type", status, code, field)
				}
			})
		}
	}
}
