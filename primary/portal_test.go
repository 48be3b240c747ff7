package primary_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/edge"
	"github.com/dirsvc/dirsvc/edge/edgetest"
	"github.com/dirsvc/dirsvc/primary"
)

// portalService is a primary with the portal's routes over one real store, on 127.0.0.1, with a
// clock the test moves. Callers name their address in X-Real-IP (the trusted proxy header).
type portalService struct {
	*httptest.Server
	store  *dirdb.Store
	access *primary.Access
	check  *edgetest.Checker
	mu     sync.Mutex
	now    time.Time
}

func (p *portalService) clock() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.now
}

func (p *portalService) advance(d time.Duration) {
	p.mu.Lock()
	p.now = p.now.Add(d)
	p.mu.Unlock()
}

func newPortalService(tb testing.TB, sandbox string, limits edge.SignupLimits) *portalService {
	tb.Helper()
	ctx := context.Background()
	dir := tb.TempDir()
	store, err := dirdb.Open(ctx, dir)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { store.Close() })
	f, err := os.Open(filepath.Join("..", "testdata", "small.ndjson"))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if _, _, err := primary.Import(ctx, store, f); err != nil {
		tb.Fatal(err)
	}
	key, err := primary.LoadServerKey(ctx, store, primary.ServerKeyConfig{Path: filepath.Join(dir, "server.key")})
	if err != nil {
		tb.Fatal(err)
	}
	p := &portalService{store: store, now: time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC), check: edgetest.NewChecker(tb)}
	access, err := primary.NewAccess(ctx, store, key, nil)
	if err != nil {
		tb.Fatal(err)
	}
	access.SandboxDirectory = sandbox
	srv := edge.New(edge.Config{Catalog: store, Keys: store, ClientIPHeader: "X-Real-IP", SandboxDirectory: sandbox,
		AnonymousLimits: edge.Limits{PerMinute: 1 << 20, PerDay: 1 << 20}, SignupLimits: limits})
	ps := &primary.Server{Edge: srv, Access: access, Portal: primary.NewPortal(access, srv, key, limits, p.clock)}
	if err := ps.Mount(); err != nil {
		tb.Fatal(err)
	}
	p.Server = httptest.NewServer(srv)
	tb.Cleanup(p.Close)
	p.access = access
	return p
}

// browser is a caller with its own cookies and address.
type browser struct {
	*http.Client
	addr string
}

func (p *portalService) browser(tb testing.TB, addr string) *browser {
	jar, err := cookiejar.New(nil)
	if err != nil {
		tb.Fatal(err)
	}
	return &browser{Client: &http.Client{Jar: jar, Transport: p.check.Transport(tb, http.DefaultTransport),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}, addr: addr}
}

type reply struct {
	status int
	header http.Header
	body   string
}

func (b *browser) do(tb testing.TB, method, u, contentType, body string, header ...string) reply {
	tb.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("X-Real-IP", b.addr)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := b.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return reply{resp.StatusCode, resp.Header, string(raw)}
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// form opens the sign-up form and returns its token.
func (b *browser) form(tb testing.TB, base, dir string) string {
	tb.Helper()
	a := b.do(tb, "GET", base+edge.SandboxSignupPath(dir), "", "")
	m := csrfRE.FindStringSubmatch(a.body)
	if a.status != 200 || m == nil || a.header.Get("Cache-Control") != "no-store" {
		tb.Fatalf("sign-up form: %d, Cache-Control %q, token found %v", a.status, a.header.Get("Cache-Control"), m != nil)
	}
	return html.UnescapeString(m[1])
}

func signupBody(csrf, name, email, purpose string) string {
	return url.Values{"csrf": {csrf}, "name": {name}, "email": {email}, "purpose": {purpose}}.Encode()
}

const formType = "application/x-www-form-urlencoded"

func (b *browser) signUp(tb testing.TB, base, csrf, body string, header ...string) reply {
	tb.Helper()
	return b.do(tb, "POST", base+edge.SandboxSignupPath("small"), formType, body, header...)
}

func problemOf(tb testing.TB, a reply) edge.Problem {
	tb.Helper()
	var p edge.Problem
	if ct := a.header.Get("Content-Type"); ct != "application/problem+json" || json.Unmarshal([]byte(a.body), &p) != nil {
		tb.Fatalf("want a problem, got %d %s: %.300s", a.status, ct, a.body)
	}
	return p
}

var credsRE = regexp.MustCompile(`id="client-id">([^<]+)<.*id="client-secret">([^<]+)<`)

func TestSandboxSignupIssuesCredentialsThatGetATokenAtOnce(t *testing.T) {
	p := newPortalService(t, "small", edge.DefaultSignupLimits)
	b := p.browser(t, "192.0.2.1")
	csrf := b.form(t, p.URL, "small")
	a := b.signUp(t, p.URL, csrf, signupBody(csrf, "Referral Apps Ltd", "dev@referral.example.org", "A referral app for GPs.\nIt reads services."), "Accept", "text/html")
	m := credsRE.FindStringSubmatch(strings.ReplaceAll(a.body, "\n", " "))
	if a.status != http.StatusCreated || m == nil {
		t.Fatalf("sign-up: %d %.500s", a.status, a.body)
	}
	id, secret := html.UnescapeString(m[1]), html.UnescapeString(m[2])
	if a.header.Get("Cache-Control") != "no-store" || a.header.Get("Referrer-Policy") != "no-referrer" || !strings.Contains(a.header.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Errorf("credentials page headers: %v", a.header)
	}
	tok := b.do(t, "POST", p.URL+edge.TokenPath, formType, url.Values{"grant_type": {"client_credentials"}, "directory": {"small"},
		"client_id": {id}, "client_secret": {secret}}.Encode())
	var tr primary.TokenResponse
	if tok.status != 200 || json.Unmarshal([]byte(tok.body), &tr) != nil || !tr.Sandbox || tr.Directory != "small" {
		t.Fatalf("token with the new credentials: %d %s", tok.status, tok.body)
	}
	for _, sc := range []string{dirsvc.ScopePractitionersRead, dirsvc.ScopeLeadershipRead} {
		if strings.Contains(tr.Scope, sc) {
			t.Errorf("a sandbox token has %s: %q", sc, tr.Scope)
		}
	}
	read := b.do(t, "GET", p.URL+"/v1/d/small/changes", "", "", "Authorization", "Bearer "+tr.AccessToken)
	if read.status != 200 {
		t.Errorf("the change feed with the sandbox token: %d %s", read.status, read.body)
	}
	c, _, err := p.store.Client(context.Background(), id)
	if err != nil || !c.Sandbox || c.Name != "Referral Apps Ltd" || c.Contact != "dev@referral.example.org" || !strings.HasPrefix(c.Purpose, "A referral app") {
		t.Errorf("stored client: %+v, %v", c, err)
	}
	if strings.Contains(a.body, "dev@referral.example.org") {
		t.Error("the credentials page repeats the email address")
	}
}

func TestSandboxSignupRefusesAFormWithoutItsToken(t *testing.T) {
	p := newPortalService(t, "small", edge.DefaultSignupLimits)
	b := p.browser(t, "192.0.2.2")
	csrf := b.form(t, p.URL, "small")
	other := p.browser(t, "192.0.2.3")
	otherCSRF := other.form(t, p.URL, "small")
	tampered := []byte(csrf)
	tampered[len(tampered)-3] ^= 1
	noCookie := p.browser(t, "192.0.2.4")
	for name, c := range map[string]struct {
		b    *browser
		body string
	}{
		"no token":                   {b, signupBody("", "A", "a@example.org", "x")},
		"another browser's token":    {b, signupBody(otherCSRF, "A", "a@example.org", "x")},
		"a token changed":            {b, signupBody(string(tampered), "A", "a@example.org", "x")},
		"a token without its cookie": {noCookie, signupBody(csrf, "A", "a@example.org", "x")},
		"a token given twice":        {b, signupBody(csrf, "A", "a@example.org", "x") + "&csrf=" + url.QueryEscape(csrf)},
	} {
		t.Run(name, func(t *testing.T) {
			a := c.b.signUp(t, p.URL, csrf, c.body)
			want := http.StatusForbidden
			if name == "a token given twice" {
				want = http.StatusBadRequest
			}
			if pr := problemOf(t, a); a.status != want || want == http.StatusForbidden && pr.Code != dirsvc.EForbidden {
				t.Errorf("%d %+v, want %d", a.status, pr, want)
			}
		})
	}
	t.Run("an expired token", func(t *testing.T) {
		p.advance(2*time.Hour + time.Second)
		defer p.advance(-2*time.Hour - time.Second)
		if a := b.signUp(t, p.URL, csrf, signupBody(csrf, "A", "a@example.org", "x")); a.status != http.StatusForbidden {
			t.Errorf("%d %s", a.status, a.body)
		}
	})
	t.Run("a browser gets the form again", func(t *testing.T) {
		a := b.signUp(t, p.URL, csrf, signupBody(otherCSRF, "Ann", "a@example.org", "x"), "Accept", "text/html")
		if a.status != http.StatusForbidden || !strings.Contains(a.body, `role="alert"`) || !strings.Contains(a.body, `value="Ann"`) || !csrfRE.MatchString(a.body) {
			t.Errorf("%d %.400s", a.status, a.body)
		}
	})
	if cs, _ := p.store.Clients(context.Background()); len(cs) != 0 {
		t.Errorf("refused sign-ups made %d clients", len(cs))
	}
}

func TestSandboxSignupNamesTheFieldThatIsWrong(t *testing.T) {
	p := newPortalService(t, "small", edge.DefaultSignupLimits)
	b := p.browser(t, "192.0.2.5")
	csrf := b.form(t, p.URL, "small")
	for _, c := range []struct{ name, body, param string }{
		{"no name", signupBody(csrf, " ", "a@example.org", "x"), "name"},
		{"a name too long", signupBody(csrf, strings.Repeat("n", edge.MaxSignupName+1), "a@example.org", "x"), "name"},
		{"a name the client store refuses (past 200 bytes)", signupBody(csrf, strings.Repeat("é", edge.MaxSignupName), "a@example.org", "x"), "name"},
		{"a name with a control character", signupBody(csrf, "A\x07B", "a@example.org", "x"), "name"},
		{"no email", signupBody(csrf, "A", "", "x"), "email"},
		{"an email without @", signupBody(csrf, "A", "a.example.org", "x"), "email"},
		{"an email with a display name", signupBody(csrf, "A", "Ann <a@example.org>", "x"), "email"},
		{"an email without a domain's dot", signupBody(csrf, "A", "a@localhost", "x"), "email"},
		{"two email addresses", signupBody(csrf, "A", "a@example.org, b@example.org", "x"), "email"},
		{"no purpose", signupBody(csrf, "A", "a@example.org", ""), "purpose"},
		{"a purpose too long", signupBody(csrf, "A", "a@example.org", strings.Repeat("p", edge.MaxSignupPurpose+1)), "purpose"},
		{"a field given twice", signupBody(csrf, "A", "a@example.org", "x") + "&name=B", "name"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := b.signUp(t, p.URL, csrf, c.body)
			if pr := problemOf(t, a); a.status != http.StatusBadRequest || pr.Param != c.param {
				t.Errorf("%d %+v, want 400 naming %s", a.status, pr, c.param)
			}
		})
	}
	t.Run("a body that is not a form", func(t *testing.T) {
		a := b.do(t, "POST", p.URL+edge.SandboxSignupPath("small"), "application/json", `{"name":"A"}`)
		if pr := problemOf(t, a); a.status != http.StatusUnsupportedMediaType || pr.Param != "Content-Type" {
			t.Errorf("%d %+v", a.status, pr)
		}
	})
	t.Run("a body past the cap", func(t *testing.T) {
		a := b.signUp(t, p.URL, csrf, signupBody(csrf, "A", "a@example.org", strings.Repeat("p", 9<<10)))
		if pr := problemOf(t, a); a.status != http.StatusRequestEntityTooLarge {
			t.Errorf("%d %+v", a.status, pr)
		}
	})
	t.Run("a browser sees the message beside the field", func(t *testing.T) {
		a := b.signUp(t, p.URL, csrf, signupBody(csrf, "Ann", "nope", "x"), "Accept", "text/html")
		if a.status != http.StatusBadRequest || !strings.Contains(a.body, `id="email-err"`) || !strings.Contains(a.body, `aria-invalid="true"`) || !strings.Contains(a.body, `value="nope"`) {
			t.Errorf("%d %.600s", a.status, a.body)
		}
	})
	if cs, _ := p.store.Clients(context.Background()); len(cs) != 0 {
		t.Errorf("refused sign-ups made %d clients", len(cs))
	}
}

func TestSandboxSignupIsLimitedPerAddressAndInAll(t *testing.T) {
	p := newPortalService(t, "small", edge.SignupLimits{PerAddressHour: 2, PerAddressDay: 3, TotalHour: 4, TotalDay: 100})
	signUp := func(b *browser) reply {
		csrf := b.form(t, p.URL, "small")
		return b.signUp(t, p.URL, csrf, signupBody(csrf, "A", "a@example.org", "x"))
	}
	one := p.browser(t, "198.51.100.1")
	for i := range 2 {
		if a := signUp(one); a.status != http.StatusCreated {
			t.Fatalf("sign-up %d: %d %s", i+1, a.status, a.body)
		}
	}
	a := signUp(one)
	if pr := problemOf(t, a); a.status != http.StatusTooManyRequests || pr.Code != dirsvc.ERateLimited || a.header.Get("Retry-After") == "" {
		t.Fatalf("third sign-up from one address in an hour: %d %+v Retry-After %q", a.status, pr, a.header.Get("Retry-After"))
	}
	two := p.browser(t, "198.51.100.2")
	for i := range 2 {
		if a := signUp(two); a.status != http.StatusCreated {
			t.Fatalf("another address, sign-up %d: %d %s", i+1, a.status, a.body)
		}
	}
	three := p.browser(t, "198.51.100.3")
	if a := signUp(three); a.status != http.StatusTooManyRequests {
		t.Fatalf("the fifth sign-up in all in an hour: %d %s", a.status, a.body)
	}
	p.advance(time.Hour)
	if a := signUp(one); a.status != http.StatusCreated {
		t.Fatalf("the next hour: %d %s", a.status, a.body)
	}
	if a := signUp(one); a.status != http.StatusTooManyRequests {
		t.Fatalf("the fourth sign-up from one address in a day: %d %s", a.status, a.body)
	}
	if cs, _ := p.store.Clients(context.Background()); len(cs) != 5 {
		t.Errorf("%d clients, want 5", len(cs))
	}
}

func TestSandboxSignupWhereItIsNotOffered(t *testing.T) {
	for name, sandbox := range map[string]string{"another directory's form": "small", "a service with no sandbox": ""} {
		t.Run(name, func(t *testing.T) {
			p := newPortalService(t, sandbox, edge.DefaultSignupLimits)
			b := p.browser(t, "192.0.2.9")
			a := b.do(t, "GET", p.URL+edge.SandboxSignupPath("small-other"), "", "")
			if sandbox == "" {
				a = b.do(t, "GET", p.URL+edge.SandboxSignupPath("small"), "", "")
			}
			if a.status != http.StatusNotFound || !strings.Contains(a.body, "Sign-up is not offered") || csrfRE.MatchString(a.body) ||
				strings.Contains(a.body, "small-other") {
				t.Errorf("form: %d %.300s", a.status, a.body)
			}
			post := b.do(t, "POST", p.URL+edge.SandboxSignupPath("small"), formType, signupBody("x", "A", "a@example.org", "x"))
			if sandbox == "" && post.status != http.StatusNotFound {
				t.Errorf("sign-up: %d %s", post.status, post.body)
			}
			portal := b.do(t, "GET", p.URL+edge.PortalPath("small"), "", "")
			offers := strings.Contains(portal.body, edge.SandboxSignupPath("small"))
			if portal.status != 200 || offers != (sandbox != "") {
				t.Errorf("portal: %d, links the sign-up %v", portal.status, offers)
			}
		})
	}
}

func TestAccessRequestsReachTheOperatorsQueue(t *testing.T) {
	p := newPortalService(t, "small", edge.DefaultSignupLimits)
	ctx := context.Background()
	partner, secret, err := p.access.CreateClient(ctx, primary.NewClient{Name: "Partner"})
	if err != nil {
		t.Fatal(err)
	}
	sandbox, sandboxSecret, err := p.access.CreateClient(ctx, primary.NewClient{Name: "Sandbox", Sandbox: true})
	if err != nil {
		t.Fatal(err)
	}
	b := p.browser(t, "192.0.2.10")
	ask := func(id, secret, body string) reply {
		return b.do(t, "POST", p.URL+edge.AccessRequestsPath, "application/json", body,
			"Authorization", "Basic "+basic(url.QueryEscape(id)+":"+url.QueryEscape(secret)))
	}
	a := ask(partner.ID, secret, `{"directory":"small","scopes":["graph:read","practitioners:read"],"practitionerListReason":"Our app lists the GPs of each clinic."}`)
	var got dirsvc.AccessRequest
	if a.status != http.StatusCreated || json.Unmarshal([]byte(a.body), &got) != nil || got.Status != "pending" || got.Client != partner.ID {
		t.Fatalf("access request: %d %s", a.status, a.body)
	}
	queue, err := p.store.AccessRequests(ctx)
	if err != nil || len(queue) != 1 || queue[0].ID != got.ID || queue[0].PractitionerListReason != "Our app lists the GPs of each clinic." ||
		strings.Join(queue[0].Scopes, " ") != "graph:read practitioners:read" {
		t.Fatalf("queue: %+v, %v", queue, err)
	}
	for _, c := range []struct {
		name, id, secret, body string
		status                 int
		param                  string
	}{
		{"practitioners without a reason", partner.ID, secret, `{"directory":"small","scopes":["practitioners:read"]}`, 400, "practitionerListReason"},
		{"no scope", partner.ID, secret, `{"directory":"small","scopes":[]}`, 400, "scopes"},
		{"an unknown scope", partner.ID, secret, `{"directory":"small","scopes":["all:read"]}`, 400, "scopes"},
		{"an unknown member", partner.ID, secret, `{"directory":"small","scopes":["graph:read"],"tier":"partner"}`, 400, "tier"},
		{"a scope list of the wrong type", partner.ID, secret, `{"directory":"small","scopes":"graph:read"}`, 400, "scopes"},
		{"a body of null", partner.ID, secret, `null`, 400, "body"},
		{"a scope list of null", partner.ID, secret, `{"directory":"small","scopes":null}`, 400, "scopes"},
		{"a key set of null", partner.ID, secret, `{"directory":"small","scopes":["graph:read"],"jwks":null}`, 400, "jwks"},
		{"a reason of null", partner.ID, secret, `{"directory":"small","scopes":["graph:read"],"practitionerListReason":null}`, 400, "practitionerListReason"},
		{"an unknown directory", partner.ID, secret, `{"directory":"nowhere","scopes":["graph:read"]}`, 404, ""},
		{"a wrong secret", partner.ID, secret + "x", `{"directory":"small","scopes":["graph:read"]}`, 401, ""},
		{"an unknown client", "dirp_nobody", secret, `{"directory":"small","scopes":["graph:read"]}`, 401, ""},
		{"a sandbox client", sandbox.ID, sandboxSecret, `{"directory":"small","scopes":["graph:read"]}`, 403, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := ask(c.id, c.secret, c.body)
			if pr := problemOf(t, a); a.status != c.status || pr.Param != c.param {
				t.Errorf("%d %+v, want %d naming %q", a.status, pr, c.status, c.param)
			}
			if got := a.header.Get("WWW-Authenticate"); (a.status == http.StatusUnauthorized) != strings.HasPrefix(got, "Basic ") {
				t.Errorf("%d with WWW-Authenticate %q: a 401, and only a 401, challenges for HTTP Basic", a.status, got)
			}
		})
	}
	if queue, _ := p.store.AccessRequests(ctx); len(queue) != 1 {
		t.Errorf("refused requests reached the queue: %d", len(queue))
	}

	// One pending request per client and directory: asked again, the client is told of the one that
	// waits, and nothing more reaches the queue until the operators have answered it.
	again := ask(partner.ID, secret, `{"directory":"small","scopes":["graph:read"]}`)
	if pr := problemOf(t, again); again.status != http.StatusConflict || pr.Code != "conflict" ||
		!strings.Contains(pr.Detail, strconv.FormatInt(got.ID, 10)) {
		t.Errorf("a second request while one is pending: %d %+v", again.status, pr)
	}
	if queue, _ := p.store.AccessRequests(ctx); len(queue) != 1 {
		t.Errorf("the queue holds %d requests after a second one while the first waits", len(queue))
	}
	if err := p.store.SetAccessRequestStatus(ctx, got.ID, "refused"); err != nil {
		t.Fatal(err)
	}
	if a := ask(partner.ID, secret, `{"directory":"small","scopes":["graph:read"]}`); a.status != http.StatusCreated {
		t.Errorf("a request after the first was refused: %d %s", a.status, a.body)
	}
}

func basic(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
