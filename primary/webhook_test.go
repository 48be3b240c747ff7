package primary_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/edge"
	"github.com/dirsvc/dirsvc/edge/edgetest"
	"github.com/dirsvc/dirsvc/primary"
	"github.com/dirsvc/dirsvc/primary/demo"
	"github.com/dirsvc/dirsvc/primary/webhook"
)

// hookService is the primary as `dirsvc serve` wires it, with webhooks, over the small directory on
// 127.0.0.1, and a receiver (TLS, on 127.0.0.1) whose messages it keeps.
type hookService struct {
	*httptest.Server
	store  *dirdb.Store
	access *primary.Access
	recv   *hookReceiver
}

// hookReceiver keeps what it is sent, and answers each request with its status (204 by default).
type hookReceiver struct {
	*httptest.Server
	mu       sync.Mutex
	messages []hookMessage
	status   int
	arrived  chan struct{} // a message arrived
}

type hookMessage struct {
	path          string
	id, timestamp string
	signatures    []string
	body          []byte
}

func (h *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	h.messages = append(h.messages, hookMessage{r.URL.Path, r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp"),
		strings.Fields(r.Header.Get("webhook-signature")), body})
	status := h.status
	h.mu.Unlock()
	select {
	case h.arrived <- struct{}{}:
	default:
	}
	w.WriteHeader(status)
}

// next waits for a message of kind after the first n the receiver holds, and returns it with its
// number.
func (h *hookReceiver) next(t *testing.T, n int, kind string) (hookMessage, int) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		h.mu.Lock()
		for i := n; i < len(h.messages); i++ {
			var m struct{ Type string }
			json.Unmarshal(h.messages[i].body, &m)
			if m.Type == kind {
				h.mu.Unlock()
				return h.messages[i], i + 1
			}
		}
		h.mu.Unlock()
		select {
		case <-h.arrived:
		case <-deadline:
			t.Fatalf("no %s message after 20 s", kind)
		}
	}
}

func (h *hookReceiver) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.messages)
}

// newHookService serves the directory of an import file (the small test directory when nil).
func newHookService(t *testing.T, file []byte) *hookService {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	store, err := dirdb.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	if file == nil {
		if file, err = os.ReadFile(filepath.Join("..", "testdata", "small.ndjson")); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := primary.Import(ctx, store, bytes.NewReader(file)); err != nil {
		t.Fatal(err)
	}
	key, err := primary.LoadServerKey(ctx, store, primary.ServerKeyConfig{Path: filepath.Join(dir, "server.key")})
	if err != nil {
		t.Fatal(err)
	}
	access, err := primary.NewAccess(ctx, store, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	recv := &hookReceiver{status: http.StatusNoContent, arrived: make(chan struct{}, 1)}
	recv.Server = httptest.NewTLSServer(recv)
	t.Cleanup(recv.Close)
	roots := x509.NewCertPool()
	roots.AddCert(recv.Certificate())
	srv := edge.New(edge.Config{Catalog: store, Keys: store, AnonymousLimits: edge.Limits{PerMinute: 1 << 20, PerDay: 1 << 20},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	hooks, err := webhook.New(webhook.Config{Store: store, Clients: store, Feed: primary.WebhookFeed(srv, store.ChangeHead),
		Directories: store.Slugs, SealKey: primary.WebhookSealKey(key), Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Poll: 10 * time.Millisecond, QuickWaits: []time.Duration{time.Millisecond}, RoundWaits: []time.Duration{10 * time.Millisecond},
		AllowNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, RootCAs: roots})
	if err != nil {
		t.Fatal(err)
	}
	if err := (&primary.Server{Edge: srv, Access: access, Webhooks: hooks}).Mount(); err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { hooks.Run(runCtx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return &hookService{Server: ts, store: store, access: access, recv: recv}
}

// hookClient is a partner client's HTTP client (every answer checked against the OpenAPI document).
func (s *hookService) hookClient(t *testing.T, tier dirsvc.Audience, scopes ...string) (*http.Client, string) {
	t.Helper()
	return s.hookClientOf(t, dirsvc.Grant{Directory: "small", Tier: tier, Scopes: scopes})
}

// hookClientOf is hookClient with a grant of any directory and narrowing.
func (s *hookService) hookClientOf(t testing.TB, g dirsvc.Grant) (*http.Client, string) {
	t.Helper()
	g.Limit = dirsvc.DefaultPartnerLimit
	c, secret, err := s.access.CreateClient(context.Background(), primary.NewClient{Name: "hooks", Directory: g.Directory,
		Grants: []dirsvc.Grant{g}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &clientcredentials.Config{ClientID: c.ID, ClientSecret: secret, TokenURL: s.URL + edge.TokenPath, AuthStyle: oauth2.AuthStyleInHeader}
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient,
		&http.Client{Transport: edgetest.NewChecker(t).Transport(t, http.DefaultTransport)})
	return cfg.Client(ctx), c.ID
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

func call(t testing.TB, c *http.Client, method, url string, body any) answer {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, rd)
	if body != nil {
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

// verifies reports whether one of a message's signatures is the Standard Webhooks signature of it
// with secret.
func verifies(m hookMessage, secret string) bool {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(m.id + "." + m.timestamp + "." + string(m.body)))
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	for _, s := range m.signatures {
		if s == want {
			return true
		}
	}
	return false
}

// TestWebhookAPI goes through the management API as a partner would: register (and the refusals),
// list, test ping, a change delivered as the client's feed, the delivery log, replay, rotation,
// pause and resume, delete; another client's endpoint answers as a missing one.
func TestWebhookAPI(t *testing.T) {
	s := newHookService(t, nil)
	c, _ := s.hookClient(t, dirsvc.Partner, dirsvc.ScopeFeedRead, dirsvc.ScopeWebhooksManage, dirsvc.ScopeGraphRead)
	noFeed, _ := s.hookClient(t, dirsvc.Partner, dirsvc.ScopeWebhooksManage)
	other, _ := s.hookClient(t, dirsvc.Partner, dirsvc.ScopeFeedRead, dirsvc.ScopeWebhooksManage)
	base := s.URL + "/v1/d/small/webhooks"
	hookURL := s.recv.URL + "/hooks/dirsvc"

	if a := call(t, http.DefaultClient, "GET", base, nil); a.status != 403 || !strings.Contains(string(a.body), `"code":"forbidden-scope"`) {
		t.Errorf("anonymous list: %d %s, want 403 forbidden-scope", a.status, a.body)
	}
	if a := call(t, noFeed, "POST", base, map[string]string{"url": hookURL}); a.status != 403 || !strings.Contains(string(a.body), "feed:read") {
		t.Errorf("register without feed:read: %d %s", a.status, a.body)
	}
	for body, param := range map[string]string{
		`{"url":"http://127.0.0.1/x"}`: "url", `{}`: "url", `{"url":"` + hookURL + `","secret":"x"}`: "secret",
		`{"url":"` + hookURL + `","state":"paused"}`: "state", `{"url":"` + hookURL + `","description":"` + strings.Repeat("d", 501) + `"}`: "description",
	} {
		req, _ := http.NewRequest("POST", base, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || !strings.Contains(string(b), `"param":"`+param+`"`) {
			t.Errorf("register %.60s: %d %s, want 400 naming %s", body, resp.StatusCode, b, param)
		}
	}

	a := call(t, c, "POST", base, map[string]string{"url": hookURL, "description": "our copy"})
	var ep webhook.EndpointView
	json.Unmarshal(a.body, &ep)
	if a.status != 201 || !strings.HasPrefix(ep.Secret, "whsec_") || ep.State != "active" || a.header.Get("Location") != "/v1/d/small/webhooks/"+ep.ID {
		t.Fatalf("register: %d %s", a.status, a.body)
	}
	secret := ep.Secret
	one := base + "/" + ep.ID
	if a := call(t, c, "GET", base, nil); a.status != 200 || strings.Contains(string(a.body), "whsec_") || !strings.Contains(string(a.body), ep.ID) {
		t.Errorf("list: %d %s", a.status, a.body)
	}
	missing := call(t, other, "GET", base+"/00000000-0000-4000-8000-000000000000", nil)
	for _, path := range []string{one, one + "/deliveries", one + "/rotate"} {
		method := "GET"
		if strings.HasSuffix(path, "rotate") {
			method = "POST"
		}
		if a := call(t, other, method, path, nil); a.status != 404 || !bytes.Equal(a.body, missing.body) {
			t.Errorf("another client's %s %s: %d %s, want the missing endpoint's 404 %s", method, path, a.status, a.body, missing.body)
		}
	}
	if a := call(t, other, "GET", base, nil); a.status != 200 || strings.Contains(string(a.body), ep.ID) {
		t.Errorf("another client's list holds the endpoint: %s", a.body)
	}

	a = call(t, c, "POST", one+"/test", nil)
	var sent webhook.Sent
	json.Unmarshal(a.body, &sent)
	ping, seen := s.recv.next(t, 0, dirsvc.DeliveryPing)
	if a.status != 200 || !sent.OK || ping.id != sent.Delivery || !verifies(ping, secret) {
		t.Errorf("test ping: %d %s; the receiver got id %s", a.status, a.body, ping.id)
	}

	// A change: svc_gp closes. The message holds the client's feed items after the registration.
	w, err := s.store.Writer(context.Background(), "small")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Transition(context.Background(), "svc_gp", dirsvc.Transition{To: dirsvc.StateClosed}); err != nil {
		t.Fatal(err)
	}
	msg, seen := s.recv.next(t, seen, dirsvc.DeliveryChanges)
	if !verifies(msg, secret) {
		t.Error("the feed message's signature does not verify with the secret")
	}
	var body struct {
		Type string
		Data struct {
			Directory string
			Items     []edge.FeedItem
		}
	}
	if err := json.Unmarshal(msg.body, &body); err != nil || body.Data.Directory != "small" || len(body.Data.Items) == 0 {
		t.Fatalf("feed message: %v %s", err, msg.body)
	}
	var closed bool
	for _, it := range body.Data.Items {
		closed = closed || it.PublicID == "svc_gp" && it.EventType == dirsvc.EventClosed
	}
	if !closed {
		t.Errorf("the message lacks svc_gp's closed event: %s", msg.body)
	}
	// The same items as the client's feed from the registration on: the feed after the message's
	// first item's predecessor holds them, in order.
	feed := call(t, c, "GET", s.URL+"/v1/d/small/changes?limit=500", nil)
	var page edge.FeedPage
	json.Unmarshal(feed.body, &page)
	tail := page.Items[len(page.Items)-len(body.Data.Items):]
	for i, it := range body.Data.Items {
		if it.PublicID != tail[i].PublicID || it.EventType != tail[i].EventType || it.Version != tail[i].Version || it.Cursor != tail[i].Cursor {
			t.Errorf("message item %d %+v, the feed's %+v", i, it, tail[i])
		}
	}

	// The delivery log, one delivery, and a replay under the same webhook-id. The service records
	// a delivery once the receiver has answered, which may be after the receiver saw the message:
	// the log is read until it lists it (or for at most ten seconds).
	var log webhook.DeliveryList
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		a = call(t, c, "GET", one+"/deliveries?status=delivered", nil)
		log = webhook.DeliveryList{}
		json.Unmarshal(a.body, &log)
		if a.status != 200 || len(log.Items) >= 2 || time.Now().After(deadline) {
			break
		}
	}
	if a.status != 200 || len(log.Items) != 2 || log.Items[0].ID != msg.id || log.Items[1].ID != ping.id {
		t.Fatalf("delivered log: %d %s", a.status, a.body)
	}
	if a := call(t, c, "GET", one+"/deliveries?status=dead", nil); a.status != 200 || strings.Contains(string(a.body), msg.id) {
		t.Errorf("dead log: %d %s", a.status, a.body)
	}
	for q, param := range map[string]string{"status=lost": "status", "limit=0": "limit", "limit=101": "limit", "before=yesterday": "before", "x=1": "x"} {
		if a := call(t, c, "GET", one+"/deliveries?"+q, nil); a.status != 400 || !strings.Contains(string(a.body), `"param":"`+param+`"`) {
			t.Errorf("deliveries?%s: %d %s", q, a.status, a.body)
		}
	}
	a = call(t, c, "GET", one+"/deliveries/"+msg.id, nil)
	var detail webhook.DeliveryDetail
	json.Unmarshal(a.body, &detail)
	if a.status != 200 || len(detail.Attempts) == 0 || detail.Attempts[0].Status != 204 || detail.Payload.ItemCount != len(body.Data.Items) ||
		strings.Contains(string(a.body), `"cursor"`) {
		t.Errorf("delivery: %d %s", a.status, a.body)
	}
	a = call(t, c, "POST", one+"/deliveries/"+msg.id+"/replay", nil)
	replayed, seen := s.recv.next(t, seen, dirsvc.DeliveryChanges)
	if a.status != 200 || replayed.id != msg.id || !bytes.Equal(replayed.body, msg.body) {
		t.Errorf("replay: %d %s; the receiver got %s", a.status, a.body, replayed.id)
	}

	// Rotation: the next message carries both signatures.
	a = call(t, c, "POST", one+"/rotate", nil)
	var rotated webhook.EndpointView
	json.Unmarshal(a.body, &rotated)
	if a.status != 200 || rotated.Secret == secret || !strings.HasPrefix(rotated.Secret, "whsec_") || rotated.PreviousSecretExpiresAt == nil {
		t.Fatalf("rotate: %d %s", a.status, a.body)
	}
	if _, err := w.Transition(context.Background(), "svc_gp", dirsvc.Transition{To: dirsvc.StateLive}); err != nil {
		t.Fatal(err)
	}
	msg, seen = s.recv.next(t, seen, dirsvc.DeliveryChanges)
	if len(msg.signatures) != 2 || !verifies(msg, rotated.Secret) || !verifies(msg, secret) {
		t.Errorf("after a rotation: %d signatures, verifying with the new secret %t, the old one %t", len(msg.signatures),
			verifies(msg, rotated.Secret), verifies(msg, secret))
	}

	// Pause: nothing is sent; resume: what waited arrives.
	if a := call(t, c, "PATCH", one, map[string]string{"state": "paused"}); a.status != 200 || !strings.Contains(string(a.body), `"paused"`) {
		t.Fatalf("pause: %d %s", a.status, a.body)
	}
	if _, err := w.Transition(context.Background(), "svc_gp", dirsvc.Transition{To: dirsvc.StateClosed}); err != nil {
		t.Fatal(err)
	}
	before := s.recv.count()
	if a := call(t, c, "PATCH", one, map[string]string{"state": "active", "description": "resumed"}); a.status != 200 || !strings.Contains(string(a.body), `"resumed"`) {
		t.Fatalf("resume: %d %s", a.status, a.body)
	}
	msg, _ = s.recv.next(t, before, dirsvc.DeliveryChanges)
	if !strings.Contains(string(msg.body), `"closed"`) {
		t.Errorf("after resuming: %s", msg.body)
	}
	if a := call(t, c, "PATCH", one, map[string]string{"url": "http://127.0.0.1/plain"}); a.status != 400 || !strings.Contains(string(a.body), `"param":"url"`) {
		t.Errorf("PATCH to a URL that is not https: %d %s", a.status, a.body)
	}
	if a := call(t, c, "PATCH", one, map[string]string{"state": "disabled"}); a.status != 400 {
		t.Errorf("PATCH state disabled: %d %s", a.status, a.body)
	}

	if a := call(t, c, "DELETE", one, nil); a.status != 204 {
		t.Errorf("delete: %d %s", a.status, a.body)
	}
	if a := call(t, c, "GET", one, nil); a.status != 404 {
		t.Errorf("after delete: %d %s", a.status, a.body)
	}
}

// itemsTo returns the feed items the receiver got at path, each message once (by webhook-id), in
// the order received.
func (h *hookReceiver) itemsTo(t *testing.T, path string) []edge.FeedItem {
	h.mu.Lock()
	defer h.mu.Unlock()
	seen := map[string]bool{}
	var out []edge.FeedItem
	for _, m := range h.messages {
		if m.path != path || seen[m.id] {
			continue
		}
		seen[m.id] = true
		var b struct {
			Type string
			Data struct{ Items []edge.FeedItem }
		}
		if err := json.Unmarshal(m.body, &b); err != nil {
			t.Fatal(err)
		}
		if b.Type == dirsvc.DeliveryChanges {
			out = append(out, b.Data.Items...)
		}
	}
	return out
}

// harvestFeed reads a client's whole change feed.
func harvestFeed(t testing.TB, c *http.Client, base string) []edge.FeedItem {
	t.Helper()
	var items []edge.FeedItem
	since := ""
	for range 10000 {
		path := base + "/v1/d/demo/changes?limit=500"
		if since != "" {
			path += "&since=" + since
		}
		a := call(t, c, "GET", path, nil)
		if a.status != 200 {
			t.Fatalf("GET %s: %d %s", path, a.status, a.body)
		}
		var p edge.FeedPage
		if err := json.Unmarshal(a.body, &p); err != nil {
			t.Fatal(err)
		}
		items = append(items, p.Items...)
		if !p.HasMore {
			return items
		}
		since = p.NextCursor
	}
	t.Fatal("the feed did not end")
	return nil
}

// TestWebhooksSendEachClientItsOwnFeed registers an endpoint for clients of every tier, a narrowed
// one and one without practitioners:read, in the demo directory (whose generator gives every kind of
// restrictable detail every set of tiers), and makes lifecycle changes of records each tier sees
// differently: every endpoint receives exactly the items its client's own GET changes gained, in
// order, and no body carries a canary its tier may not see.
func TestWebhooksSendEachClientItsOwnFeed(t *testing.T) {
	var file bytes.Buffer
	if err := demo.Demo(&file); err != nil {
		t.Fatal(err)
	}
	snap, err := primary.ParseImport(bytes.NewReader(file.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	s := newHookService(t, file.Bytes())
	area := ""
	for _, r := range snap.Records {
		if l, ok := r.(*dirsvc.Location); ok && l.VisibleTo.Has(dirsvc.Public) && len(l.Areas) > 1 {
			area = l.Areas[len(l.Areas)-1]
			break
		}
	}
	all := []string{dirsvc.ScopeFeedRead, dirsvc.ScopeWebhooksManage, dirsvc.ScopeGraphRead, dirsvc.ScopePractitionersRead}
	grants := map[string]dirsvc.Grant{
		"public":                        {Tier: dirsvc.Public, Scopes: all},
		"professional":                  {Tier: dirsvc.Professional, Scopes: all},
		"partner":                       {Tier: dirsvc.Partner, Scopes: all},
		"narrowed-professional":         {Tier: dirsvc.Professional, Scopes: all, Narrowing: dirsvc.Narrowing{Areas: []string{area}}},
		"partner-without-practitioners": {Tier: dirsvc.Partner, Scopes: all[:3]},
	}
	type reg struct {
		client *http.Client
		aud    dirsvc.Audience
		before int
	}
	regs := map[string]reg{}
	for name, g := range grants {
		g.Directory = "demo"
		c, _ := s.hookClientOf(t, g)
		if a := call(t, c, "POST", s.URL+"/v1/d/demo/webhooks", map[string]string{"url": s.recv.URL + "/" + name}); a.status != 201 {
			t.Fatalf("%s: register: %d %s", name, a.status, a.body)
		}
		regs[name] = reg{c, g.Tier, len(harvestFeed(t, c, s.URL))}
	}

	// Lifecycle changes: of live services some tiers see and others do not, and of a location.
	w, err := s.store.Writer(context.Background(), "demo")
	if err != nil {
		t.Fatal(err)
	}
	var changed int
	for _, r := range snap.Records {
		sv, ok := r.(*dirsvc.Service)
		if !ok || sv.State != "" && sv.State != dirsvc.StateLive || changed >= 12 {
			continue
		}
		tr := []dirsvc.Transition{{To: dirsvc.StateClosed}, {To: dirsvc.StateVisibilityReduced, VisibleTo: dirsvc.AudiencesOf(dirsvc.Partner)},
			{To: dirsvc.StateTakedown}, {To: dirsvc.StateRemoved}}[changed%4]
		if _, err := w.Transition(context.Background(), sv.PublicID, tr); err != nil {
			t.Fatalf("%s to %s: %v", sv.PublicID, tr.To, err)
		}
		changed++
	}
	for name, r := range regs {
		want := harvestFeed(t, r.client, s.URL)[r.before:]
		if len(want) == 0 {
			t.Fatalf("%s: the changes gave the client's feed no item", name)
		}
		deadline := time.Now().Add(20 * time.Second)
		got := s.recv.itemsTo(t, "/"+name)
		for len(got) < len(want) && time.Now().Before(deadline) {
			select {
			case <-s.recv.arrived:
			case <-time.After(100 * time.Millisecond):
			}
			got = s.recv.itemsTo(t, "/"+name)
		}
		if len(got) != len(want) {
			t.Errorf("%s: %d items received, its feed gained %d", name, len(got), len(want))
			continue
		}
		for i := range want {
			if got[i].PublicID != want[i].PublicID || got[i].EventType != want[i].EventType || got[i].Version != want[i].Version ||
				got[i].Cursor != want[i].Cursor {
				t.Errorf("%s: item %d %s %s, the feed's %s %s", name, i, got[i].PublicID, got[i].EventType, want[i].PublicID, want[i].EventType)
			}
		}
		s.recv.mu.Lock()
		for _, m := range s.recv.messages {
			if m.path == "/"+name {
				if leaks := demo.Leaks(m.body, r.aud); len(leaks) > 0 {
					t.Errorf("%s: a webhook body leaks %v", name, leaks)
				}
			}
		}
		s.recv.mu.Unlock()
	}
}
