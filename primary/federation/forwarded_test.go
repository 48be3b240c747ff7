package federation_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/edge"
	"github.com/dirsvc/dirsvc/edge/edgetest"
	"github.com/dirsvc/dirsvc/primary"
	"github.com/dirsvc/dirsvc/primary/federation"
)

// adminToken is the admin token of the test primary.
const adminToken = "q7Rz2kWv9XmP4tLs"

// mirrorService makes the small directory mirror a service (and its organisation and site) from
// another directory, through the mirror's own write path.
func mirrorService(t testing.TB, store *dirdb.Store) {
	t.Helper()
	ctx := context.Background()
	if err := store.AddMirror(ctx, "small", dirsvc.Mirror{Name: "north", Upstream: "https://other.example.org",
		UpstreamDir: "north", ClientID: "dirc_x", Secret: "a secret", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	meta := func(id string) dirsvc.Meta {
		return dirsvc.Meta{PublicID: id, State: dirsvc.StateLive, VisibleTo: dirsvc.Everyone,
			Origin: dirsvc.MirrorOrigin("https://other.example.org", "north")}
	}
	ops := []dirsvc.MirrorOp{
		{Record: &dirsvc.Organisation{Meta: meta("org_north"), Name: "North Health"}},
		{Record: &dirsvc.Location{Meta: meta("loc_north"), Organisation: "org_north", Name: "North Health Clinic",
			Address: dirsvc.Address{Lines: []string{"1 Main Street"}, Locality: "Sydney", State: "NSW", Postcode: "2000",
				Country: "AU", VisibleTo: dirsvc.Everyone}}},
		{Record: &dirsvc.Service{Meta: meta("svc_mirror"), Organisation: "org_north", Location: "loc_north",
			Name: "Mirrored Counselling", Type: "psychology"}},
	}
	if st, err := store.ApplyMirror(ctx, "small", dirsvc.MirrorBatch{Mirror: "north", Ops: ops, Cursor: "c1", Tier: "public"}); err != nil || st.Written != 3 {
		t.Fatalf("mirror a service: %+v %v", st, err)
	}
}

// fedService is the primary as `dirsvc serve` wires it, with forwarding and the admin API, over the
// small directory (and a mirrored service) on 127.0.0.1.
type fedService struct {
	*httptest.Server
	data   string
	store  *dirdb.Store
	access *primary.Access
	svc    *federation.Service
	check  *edgetest.Checker
}

func newFedService(t testing.TB) *fedService {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	store := storeOf(t, dir, smallFile(t))
	mirrorService(t, store)
	key, err := primary.LoadServerKey(ctx, store, primary.ServerKeyConfig{Path: filepath.Join(dir, "server.key")})
	if err != nil {
		t.Fatal(err)
	}
	access, err := primary.NewAccess(ctx, store, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := edge.New(edge.Config{Catalog: store, Keys: store, AnonymousLimits: edge.Limits{PerMinute: 1 << 20, PerDay: 1 << 20},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	svc := federation.New(federation.Config{Directories: store, Store: store, Update: primary.RecordUpdater(store)})
	ps := &primary.Server{Edge: srv, Access: access, Federation: svc,
		Admin: &primary.AdminAPI{Store: store, Token: adminToken, Moderation: svc}}
	if err := ps.Mount(); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return &fedService{Server: ts, data: dir, store: store, access: access, svc: svc, check: edgetest.NewChecker(t)}
}

// client returns a partner client's HTTP client of a grant in the small directory (every answer
// checked against the OpenAPI document), and its ID.
func (s *fedService) client(t testing.TB, g dirsvc.Grant) (*http.Client, string) {
	t.Helper()
	return s.clientOver(t, g, s.check.Transport(t, http.DefaultTransport))
}

// clientOver is client over another transport.
func (s *fedService) clientOver(t testing.TB, g dirsvc.Grant, base http.RoundTripper) (*http.Client, string) {
	t.Helper()
	g.Directory = "small"
	if g.Limit == (dirsvc.RateLimit{}) {
		g.Limit = dirsvc.DefaultPartnerLimit
	}
	c, secret, err := s.access.CreateClient(context.Background(), primary.NewClient{Name: "aggregate", Directory: "small",
		Grants: []dirsvc.Grant{g}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &clientcredentials.Config{ClientID: c.ID, ClientSecret: secret, TokenURL: s.URL + edge.TokenPath, AuthStyle: oauth2.AuthStyleInHeader}
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, &http.Client{Transport: base})
	return cfg.Client(ctx), c.ID
}

// aggregator is a client with federation:harvest (and so graph:propose) and feed:read, at tier.
func (s *fedService) aggregator(t *testing.T, tier dirsvc.Audience) *http.Client {
	c, _ := s.client(t, dirsvc.Grant{Tier: tier, Scopes: dirsvc.NormalScopes([]string{dirsvc.ScopeFederationHarvest,
		dirsvc.ScopeFeedRead, dirsvc.ScopeGraphRead})})
	return c
}

// anonymous is a caller without a client, its answers checked against the document.
func (s *fedService) anonymous(t *testing.T) *http.Client {
	return &http.Client{Transport: s.check.Transport(t, http.DefaultTransport)}
}

// admin is an operator's client of the admin API.
func (s *fedService) admin(t *testing.T) *http.Client {
	return &http.Client{Transport: &bearer{adminToken, s.check.Transport(t, http.DefaultTransport)}}
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

type answer struct {
	status int
	header http.Header
	body   []byte
}

// send sends body (a string as it is, anything else as JSON).
func send(t testing.TB, c *http.Client, method, url string, body any) answer {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, b}
}

func (a answer) problem(t testing.TB) edge.Problem {
	t.Helper()
	var p edge.Problem
	if err := json.Unmarshal(a.body, &p); err != nil || a.header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("not a problem: %d %s %s", a.status, a.header.Get("Content-Type"), a.body)
	}
	return p
}

func (a answer) receipt(t testing.TB) federation.Receipt {
	t.Helper()
	var r federation.Receipt
	if err := json.Unmarshal(a.body, &r); err != nil || r.ID == "" {
		t.Fatalf("not a receipt: %d %s", a.status, a.body)
	}
	return r
}

func (s *fedService) proposals() string { return s.URL + "/v1/d/small/federation/forwarded/proposals" }
func (s *fedService) issues() string    { return s.URL + "/v1/d/small/federation/forwarded/issues" }
func (s *fedService) receiptURL(id string) string {
	return s.URL + "/v1/d/small/federation/forwarded/" + id
}

// propose forwards a proposal and wants its receipt.
func (s *fedService) propose(t *testing.T, c *http.Client, body map[string]any) federation.Receipt {
	t.Helper()
	a := send(t, c, "POST", s.proposals(), body)
	if a.status != http.StatusCreated {
		t.Fatalf("propose %v: %d %s", body, a.status, a.body)
	}
	r := a.receipt(t)
	if r.Status != "pending" || a.header.Get("Location") != "/v1/d/small/federation/forwarded/"+r.ID || !dirsvc.ValidUUID(r.ID) {
		t.Fatalf("propose: receipt %s, Location %q", a.body, a.header.Get("Location"))
	}
	return r
}

// TestReceiptsAreTheirClients: only the forwarding client reads (and withdraws) its item; another
// client's item, an unknown ID and a malformed one answer the very bytes of a missing record.
func TestReceiptsAreTheirClients(t *testing.T) {
	s := newFedService(t)
	mine, other := s.aggregator(t, dirsvc.Partner), s.aggregator(t, dirsvc.Partner)
	r := s.propose(t, mine, map[string]any{"publicId": "svc_counsel", "changes": map[string]string{"description": "Counselling for young people and families."},
		"message": "From our annual survey.", "reference": "AGG-1"})
	is := send(t, mine, "POST", s.issues(), map[string]any{"publicId": "svc_gp", "category": "incorrect", "message": "The phone number rings out."})
	if is.status != http.StatusCreated || is.receipt(t).Kind != "issue" || is.receipt(t).Status != "pending" {
		t.Fatalf("issue: %d %s", is.status, is.body)
	}

	got := send(t, mine, "GET", s.receiptURL(r.ID), nil)
	if rc := got.receipt(t); got.status != 200 || rc.Status != "pending" || rc.Kind != "proposal" || rc.Reference != "AGG-1" || rc.PublicID != "svc_counsel" {
		t.Errorf("own receipt: %d %s", got.status, got.body)
	}
	missing := send(t, s.anonymous(t), "GET", s.URL+"/v1/d/small/services/svc_nothing", nil)
	if missing.status != 404 {
		t.Fatalf("missing record: %d", missing.status)
	}
	for name, a := range map[string]answer{
		"another client's receipt":  send(t, other, "GET", s.receiptURL(r.ID), nil),
		"an unknown ID":             send(t, mine, "GET", s.receiptURL(dirsvc.NewUUID()), nil),
		"a malformed ID":            send(t, mine, "GET", s.receiptURL("not-a-uuid"), nil),
		"another client's withdraw": send(t, other, "POST", s.receiptURL(r.ID)+"/withdraw", nil),
		"withdraw of an unknown ID": send(t, mine, "POST", s.receiptURL(dirsvc.NewUUID())+"/withdraw", nil),
	} {
		if a.status != 404 || !bytes.Equal(a.body, missing.body) {
			t.Errorf("%s: %d %s, want the bytes of a missing record: %s", name, a.status, a.body, missing.body)
		}
	}
	// The other client's attempt changed nothing; the forwarding client withdraws, once.
	w := send(t, mine, "POST", s.receiptURL(r.ID)+"/withdraw", nil)
	if w.status != 200 || w.receipt(t).Status != "withdrawn" {
		t.Fatalf("withdraw: %d %s", w.status, w.body)
	}
	if again := send(t, mine, "POST", s.receiptURL(r.ID)+"/withdraw", nil); again.status != 409 || again.problem(t).Code != "conflict" {
		t.Errorf("withdraw again: %d %s", again.status, again.body)
	}
	if a := send(t, mine, "GET", s.receiptURL(r.ID), nil); a.receipt(t).Status != "withdrawn" {
		t.Errorf("receipt after withdraw: %s", a.body)
	}
	if s.check.Count() == 0 {
		t.Fatal("no answer was checked against the document")
	}
}

// TestForwardedBadInput: each refusal is the spec's status with a problem body (checked against the
// OpenAPI document) naming what is wrong; nothing is queued.
func TestForwardedBadInput(t *testing.T) {
	s := newFedService(t)
	c := s.aggregator(t, dirsvc.Public)
	long := strings.Repeat("x", federation.MaxMessage+1)
	for _, tc := range []struct {
		name, url, body string
		status          int
		code, param     string
	}{
		{"an unknown member", s.proposals(), `{"publicId":"svc_counsel","message":"m","colour":"red"}`, 400, "invalid-parameter", "colour"},
		{"an unknown reporter member", s.issues(), `{"publicId":"svc_counsel","category":"other","reporter":{"consentToContact":true,"age":4}}`, 400, "invalid-parameter", "reporter.age"},
		{"changes that are no object", s.proposals(), `{"publicId":"svc_counsel","changes":"new name"}`, 400, "invalid-parameter", "changes"},
		{"no record named", s.proposals(), `{"message":"m"}`, 400, "invalid-parameter", "publicId"},
		{"not JSON", s.proposals(), `publicId=svc_counsel`, 400, "invalid-parameter", "body"},
		{"an oversized message", s.proposals(), `{"publicId":"svc_counsel","message":"` + long + `"}`, 400, "invalid-parameter", "message"},
		{"an oversized issue message", s.issues(), `{"publicId":"svc_counsel","category":"other","message":"` + long + `"}`, 400, "invalid-parameter", "message"},
		{"an oversized reference", s.proposals(), `{"publicId":"svc_counsel","message":"m","reference":"` + strings.Repeat("r", 201) + `"}`, 400, "invalid-parameter", "reference"},
		{"an oversized body", s.proposals(), `{"publicId":"svc_counsel","message":"m","reference":"` + strings.Repeat(" ", federation.MaxBody) + `"}`, 413, "request-too-large", ""},
		{"an unknown category", s.issues(), `{"publicId":"svc_counsel","category":"rude"}`, 400, "invalid-parameter", "category"},
		{"a field that is not text", s.proposals(), `{"publicId":"svc_counsel","changes":{"type":"gp"}}`, 422, "unprocessable", "changes.type"},
		{"an unknown field", s.proposals(), `{"publicId":"svc_counsel","changes":{"colour":"red"}}`, 422, "unprocessable", "changes.colour"},
		{"a field of another kind", s.proposals(), `{"publicId":"svc_counsel","changes":{"title":"Dr"}}`, 422, "unprocessable", "changes.title"},
		{"a change that is not a string", s.proposals(), `{"publicId":"svc_counsel","changes":{"description":42}}`, 422, "unprocessable", "changes.description"},
		{"a required field emptied", s.proposals(), `{"publicId":"svc_counsel","changes":{"name":"  "}}`, 422, "unprocessable", "changes.name"},
		{"the text already held", s.proposals(), `{"publicId":"svc_counsel","changes":{"name":"Coast Counselling"}}`, 422, "unprocessable", "changes.name"},
		{"nothing to change", s.proposals(), `{"publicId":"svc_counsel","changes":{},"message":"  "}`, 422, "unprocessable", "changes"},
		{"a practitioner's details", s.proposals(), `{"publicId":"prac_jo","changes":{"bio":"x"}}`, 422, "unprocessable", "changes.bio"},
		{"an oversized change", s.proposals(), `{"publicId":"svc_counsel","changes":{"name":"` + strings.Repeat("n", 201) + `"}}`, 400, "invalid-parameter", "changes.name"},
	} {
		a := send(t, c, "POST", tc.url, tc.body)
		if a.status != tc.status {
			t.Errorf("%s: %d %s, want %d", tc.name, a.status, a.body, tc.status)
			continue
		}
		if p := a.problem(t); p.Code != tc.code || p.Param != tc.param {
			t.Errorf("%s: code %q param %q, want %q %q (%s)", tc.name, p.Code, p.Param, tc.code, tc.param, a.body)
		}
	}

	// Without the scope, or without a client: 403 forbidden-scope.
	reader, _ := s.client(t, dirsvc.Grant{Tier: dirsvc.Partner, Scopes: []string{dirsvc.ScopeGraphRead, dirsvc.ScopeFeedRead}})
	body := `{"publicId":"svc_counsel","message":"m"}`
	for name, cl := range map[string]*http.Client{"a client without graph:propose": reader, "an anonymous caller": s.anonymous(t)} {
		for _, u := range []string{s.proposals(), s.issues()} {
			a := send(t, cl, "POST", u, strings.Replace(body, `"message"`, `"category":"other","message"`, strings.Count(u, "issues")))
			if a.status != 403 || a.problem(t).Code != "forbidden-scope" {
				t.Errorf("%s, %s: %d %s", name, u, a.status, a.body)
			}
		}
		if a := send(t, cl, "GET", s.receiptURL(dirsvc.NewUUID()), nil); a.status != 403 {
			t.Errorf("%s reads a receipt: %d %s", name, a.status, a.body)
		}
	}
	// graph:propose alone is enough.
	proposer, _ := s.client(t, dirsvc.Grant{Tier: dirsvc.Public, Scopes: []string{dirsvc.ScopeGraphPropose}})
	s.propose(t, proposer, map[string]any{"publicId": "svc_counsel", "message": "The intake hours changed."})

	items, err := s.store.ForwardedItems(context.Background(), "small")
	if err != nil || len(items) != 1 {
		t.Errorf("queued %d items (%v), want only the good one", len(items), err)
	}
}

// TestHiddenRecordsAnswerAsMissing: a proposal or issue on a record the client may not see (its
// tier, its narrowing, a closed, merged or taken-down record) answers the very bytes of one on a
// missing record, and of the REST read of a missing record.
func TestHiddenRecordsAnswerAsMissing(t *testing.T) {
	s := newFedService(t)
	public := s.aggregator(t, dirsvc.Public)
	narrowed, _ := s.client(t, dirsvc.Grant{Tier: dirsvc.Partner, Scopes: []string{dirsvc.ScopeFederationHarvest, dirsvc.ScopeGraphPropose},
		Narrowing: dirsvc.Narrowing{Areas: []string{"postcode:2250"}}})
	partner := s.aggregator(t, dirsvc.Partner)
	read := send(t, s.anonymous(t), "GET", s.URL+"/v1/d/small/services/svc_nothing", nil)
	for _, tc := range []struct {
		name     string
		c        *http.Client
		publicID string
	}{
		{"a missing record", public, "svc_nothing"},
		{"a malformed public ID", public, "nothing"},
		{"an unlisted site, to the public tier", public, "loc_unlisted"},
		{"a reduced service, to the public tier", public, "svc_reduced"},
		{"a site outside the narrowing", narrowed, "loc_ultimo"},
		{"a service outside the narrowing", narrowed, "svc_gp"},
		{"a closed service", partner, "svc_closed"},
		{"a merged service", partner, "svc_old"},
		{"a service under takedown", partner, "svc_down"},
		{"a hidden practitioner", public, "prac_hidden"},
	} {
		p := send(t, tc.c, "POST", s.proposals(), map[string]any{"publicId": tc.publicID, "changes": map[string]string{"description": "x"}})
		i := send(t, tc.c, "POST", s.issues(), map[string]any{"publicId": tc.publicID, "category": "incorrect"})
		for kind, a := range map[string]answer{"proposal": p, "issue": i} {
			if a.status != 404 || !bytes.Equal(a.body, read.body) {
				t.Errorf("%s on %s: %d %s, want %s", kind, tc.name, a.status, a.body, read.body)
			}
		}
	}
	// The same clients forward on what they see.
	s.propose(t, narrowed, map[string]any{"publicId": "svc_counsel", "changes": map[string]string{"description": "x"}})
	s.propose(t, partner, map[string]any{"publicId": "svc_reduced", "message": "Closes over summer."})
}

// TestMirroredRecordAnswers409: a record this directory mirrors from another answers
// mirrored-record to a proposal and an issue.
func TestMirroredRecordAnswers409(t *testing.T) {
	s := newFedService(t)
	c := s.aggregator(t, dirsvc.Public)
	if a := send(t, c, "GET", s.URL+"/v1/d/small/services/svc_mirror", nil); a.status != 200 || !strings.Contains(string(a.body), `"origin"`) {
		t.Fatalf("the mirrored service: %d %s", a.status, a.body)
	}
	for _, a := range []answer{
		send(t, c, "POST", s.proposals(), map[string]any{"publicId": "svc_mirror", "changes": map[string]string{"description": "x"}}),
		send(t, c, "POST", s.issues(), map[string]any{"publicId": "svc_mirror", "category": "closed"}),
	} {
		if p := a.problem(t); a.status != 409 || p.Code != "mirrored-record" || !strings.Contains(p.Detail, "other.example.org") {
			t.Errorf("mirrored: %d %s", a.status, a.body)
		}
	}
}

// TestReporterDetailsNeedConsent: a reporter's details reach the ops file only when the reporter
// agreed to be contacted; otherwise no byte of them is stored.
func TestReporterDetailsNeedConsent(t *testing.T) {
	s := newFedService(t)
	c := s.aggregator(t, dirsvc.Public)
	without := send(t, c, "POST", s.issues(), map[string]any{"publicId": "svc_counsel", "category": "unsafe", "message": "Unsafe advice given.",
		"reporter": map[string]any{"name": "Quiet Reporter", "email": "quiet.reporter@mail.example", "phone": "+61400111222", "consentToContact": false}})
	with := send(t, c, "POST", s.issues(), map[string]any{"publicId": "svc_counsel", "category": "closed",
		"reporter": map[string]any{"name": "Open Reporter", "email": "open.reporter@mail.example", "consentToContact": true}})
	if without.status != 201 || with.status != 201 {
		t.Fatalf("issues: %d %s; %d %s", without.status, without.body, with.status, with.body)
	}
	if strings.Contains(string(with.body), "open.reporter") {
		t.Errorf("the receipt repeats the reporter: %s", with.body)
	}
	// The operator reads the consenting reporter.
	a := send(t, s.admin(t), "GET", s.URL+"/admin/v1/d/small/moderation/"+with.receipt(t).ID, nil)
	var it dirsvc.ForwardedItem
	json.Unmarshal(a.body, &it)
	if a.status != 200 || it.Reporter == nil || it.Reporter.Email != "open.reporter@mail.example" || it.Category != "closed" {
		t.Errorf("the consenting reporter: %d %s", a.status, a.body)
	}
	a = send(t, s.admin(t), "GET", s.URL+"/admin/v1/d/small/moderation/"+without.receipt(t).ID, nil)
	it = dirsvc.ForwardedItem{}
	json.Unmarshal(a.body, &it)
	if a.status != 200 || it.Reporter != nil || it.Message != "Unsafe advice given." {
		t.Errorf("the reporter without consent: %d %s", a.status, a.body)
	}
	// Not a byte of them in the ops file or its log.
	s.store.Close()
	files, _ := filepath.Glob(filepath.Join(s.data, "dirs", "small", "ops.db*"))
	if len(files) == 0 {
		t.Fatal("no ops file")
	}
	found := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{"Quiet Reporter", "quiet.reporter@mail.example", "+61400111222", "open.reporter@mail.example"} {
			found[s] = found[s] || bytes.Contains(b, []byte(s))
		}
	}
	if found["Quiet Reporter"] || found["quiet.reporter@mail.example"] || found["+61400111222"] {
		t.Errorf("details of a reporter who did not consent are stored: %v", found)
	}
	if !found["open.reporter@mail.example"] {
		t.Errorf("the consenting reporter is not in %v: the scan proves nothing", files)
	}
}
