package webhook

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/dirdb"
)

// listFeed is a change log held in memory, for the delivery tests: change n is item {"publicId":
// "svc_n"}; a change the caller may not see (hidden) is passed over, its position counted.
type listFeed struct {
	mu     sync.Mutex
	head   int64
	hidden func(seq int64) bool
}

func (f *listFeed) add(n int) {
	f.mu.Lock()
	f.head += int64(n)
	f.mu.Unlock()
}

func (f *listFeed) Head(context.Context, string) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.head, nil
}

func (f *listFeed) Page(_ context.Context, _ string, _ dirsvc.FeedReader, after int64, limit int) (FeedPage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := FeedPage{Position: after}
	for seq := after + 1; seq <= f.head && len(p.Items) < limit; seq++ {
		p.Position = seq
		if f.hidden != nil && f.hidden(seq) {
			continue
		}
		p.Items = append(p.Items, json.RawMessage(fmt.Sprintf(`{"publicId":"svc_%d"}`, seq)))
	}
	p.NextCursor = strconv.FormatInt(p.Position, 10)
	return p, nil
}

// receiver is a webhook receiver on 127.0.0.1: it answers each request as behave says (by its
// number, from 1), verifies signatures, and keeps each message once by webhook-id, in the order
// first received.
type receiver struct {
	*httptest.Server
	t      *testing.T
	behave func(n int, w http.ResponseWriter) bool // true: it answered (else 204)
	secret atomic.Value                            // string: the endpoint's signing secret

	mu       sync.Mutex
	n        int
	seen     map[string]bool
	items    []string // publicIds, in order, each message once
	requests int
	sigs     []int // number of signatures on each request
	got      chan struct{}
	want     int
}

func newReceiver(t *testing.T, want int, behave func(n int, w http.ResponseWriter) bool) *receiver {
	r := &receiver{t: t, behave: behave, seen: map[string]bool{}, got: make(chan struct{}), want: want}
	r.Server = httptest.NewTLSServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.n++
	n := r.n
	r.requests++
	r.mu.Unlock()
	if r.behave != nil && r.behave(n, w) {
		return
	}
	id, ts := req.Header.Get("webhook-id"), req.Header.Get("webhook-timestamp")
	stamp, _ := strconv.ParseInt(ts, 10, 64)
	secret, _ := r.secret.Load().(string)
	want, _ := signature(secret, id, stamp, body)
	sigs := strings.Fields(req.Header.Get("webhook-signature"))
	ok := false
	for _, s := range sigs {
		ok = ok || s == want
	}
	if !ok {
		r.t.Errorf("a message whose signatures %v do not verify with the endpoint's secret", sigs)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var m struct {
		Type string `json:"type"`
		Data struct {
			Items []struct {
				PublicID string `json:"publicId"`
			} `json:"items"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		r.t.Errorf("a message that does not decode: %v", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sigs = append(r.sigs, len(sigs))
	if m.Type == dirsvc.DeliveryChanges && !r.seen[id] {
		r.seen[id] = true
		for _, it := range m.Data.Items {
			r.items = append(r.items, it.PublicID)
		}
		if len(r.items) == r.want {
			close(r.got)
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// check waits for the receiver to hold every item, and checks they came in feed order, each once:
// the changes from first on that hidden does not hide.
func (r *receiver) check(t *testing.T, what string, first int, hidden func(int64) bool) {
	t.Helper()
	select {
	case <-r.got:
	case <-time.After(30 * time.Second):
		r.mu.Lock()
		t.Fatalf("%s: %d of %d items after 30 s", what, len(r.items), r.want)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	seq := int64(first)
	for i, id := range r.items {
		for hidden != nil && hidden(seq) {
			seq++
		}
		if want := fmt.Sprintf("svc_%d", seq); id != want {
			t.Fatalf("%s: item %d is %s, want %s (order lost, or an item lost or repeated)", what, i, id, want)
		}
		seq++
	}
}

// hookWorld is a store with one directory and a client of it, and a webhook service over a list feed.
type hookWorld struct {
	store  *dirdb.Store
	feed   *listFeed
	svc    *Service
	clock  atomic.Int64 // Unix nanoseconds; zero: the real clock
	client string
}

func newHookWorld(t *testing.T, configure func(*Config)) *hookWorld {
	t.Helper()
	ctx := context.Background()
	store, err := dirdb.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	if _, err := store.CreateDirectory(ctx, "demo"); err != nil {
		t.Fatal(err)
	}
	w := &hookWorld{store: store, feed: &listFeed{}, client: "dirp_hooks"}
	grant := dirsvc.Grant{Directory: "demo", Tier: dirsvc.Partner, Scopes: []string{dirsvc.ScopeFeedRead, dirsvc.ScopeWebhooksManage},
		Limit: dirsvc.DefaultPartnerLimit}
	if err := store.CreateClient(ctx, &dirsvc.Client{ID: w.client, Name: "Hooks", Grants: []dirsvc.Grant{grant}}, []byte("mac")); err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		Store: store, Clients: store, Feed: w.feed, SealKey: bytes.Repeat([]byte{9}, 32),
		Directories: func(context.Context) ([]string, error) { return []string{"demo"}, nil },
		Now: func() time.Time {
			if n := w.clock.Load(); n != 0 {
				return time.Unix(0, n)
			}
			return time.Now()
		},
		Log:        slog.New(slog.NewTextHandler(io.Discard, nil)),
		RoundWaits: []time.Duration{20 * time.Millisecond, 40 * time.Millisecond, 80 * time.Millisecond, 160 * time.Millisecond, 320 * time.Millisecond, 640 * time.Millisecond},
		QuickWaits: []time.Duration{5 * time.Millisecond}, Timeout: 300 * time.Millisecond, Poll: 10 * time.Millisecond,
		AllowNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, RootCAs: x509.NewCertPool(),
	}
	if configure != nil {
		configure(&cfg)
	}
	if w.svc, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	return w
}

// trust makes the service trust the test receivers' certificates.
func (w *hookWorld) trust(rs ...*receiver) {
	for _, r := range rs {
		w.svc.cfg.RootCAs.AddCert(r.Certificate())
	}
}

// register registers an endpoint for the receiver as the API does, from the feed's head now.
func (w *hookWorld) register(t *testing.T, r *receiver) *dirsvc.WebhookEndpoint {
	t.Helper()
	ctx := context.Background()
	head, _ := w.feed.Head(ctx, "demo")
	now := w.svc.cfg.Now()
	e := &dirsvc.WebhookEndpoint{ID: dirsvc.NewUUID(), Directory: "demo", ClientID: w.client, URL: r.URL + "/hook", State: dirsvc.WebhookActive,
		CreatedAt: now, UpdatedAt: now, Position: head}
	secret := newSecret()
	e.SealedSecret = w.svc.seal.seal("demo", e.ID, secret)
	r.secret.Store(secret)
	if err := w.store.CreateWebhook(ctx, e); err != nil {
		t.Fatal(err)
	}
	return e
}

// run runs the service until the test ends.
func (w *hookWorld) run(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.svc.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// TestEveryReceiverGetsEveryChangeInOrder sends 1,000 changes (some hidden from the client) to
// receivers that fail half their requests, time out, redirect, or answer 429 with Retry-After, and to
// one that always succeeds: each gets every item it may see, in feed order, each once (counting a
// message once by webhook-id, as a receiver deduplicates). A receiver answering 410 has its endpoint
// disabled and gets nothing more.
func TestEveryReceiverGetsEveryChangeInOrder(t *testing.T) {
	w := newHookWorld(t, nil)
	w.feed.hidden = func(seq int64) bool { return seq%7 == 0 }
	const changes = 1000
	visible := changes - changes/7
	plain := newReceiver(t, visible, nil)
	halfFailing := newReceiver(t, visible, func(n int, rw http.ResponseWriter) bool {
		if n%2 == 1 {
			rw.WriteHeader(http.StatusInternalServerError)
			return true
		}
		return false
	})
	slow := newReceiver(t, visible, func(n int, rw http.ResponseWriter) bool {
		if n%3 == 1 {
			time.Sleep(400 * time.Millisecond) // past the timeout: the message is sent again
		}
		return false
	})
	redirecting := newReceiver(t, visible, func(n int, rw http.ResponseWriter) bool {
		if n%2 == 1 {
			rw.Header().Set("Location", "https://127.0.0.1:1/elsewhere")
			rw.WriteHeader(http.StatusTemporaryRedirect)
			return true
		}
		return false
	})
	limiting := newReceiver(t, visible, func(n int, rw http.ResponseWriter) bool {
		if n%4 == 1 {
			rw.Header().Set("Retry-After", "0")
			rw.WriteHeader(http.StatusTooManyRequests)
			return true
		}
		return false
	})
	gone := newReceiver(t, visible, func(n int, rw http.ResponseWriter) bool {
		rw.WriteHeader(http.StatusGone)
		return true
	})
	all := []*receiver{plain, halfFailing, slow, redirecting, limiting}
	w.trust(append(all, gone)...)
	eps := map[*receiver]*dirsvc.WebhookEndpoint{}
	for _, r := range append(all, gone) {
		eps[r] = w.register(t, r)
	}
	w.run(t)
	for i := 0; i < changes; i += 50 {
		w.feed.add(50)
	}
	for _, r := range all {
		r.check(t, r.URL, 1, w.feed.hidden)
	}
	e, err := w.store.Webhook(context.Background(), "demo", eps[gone].ID)
	if err != nil {
		t.Fatal(err)
	}
	if e.State != dirsvc.WebhookDisabled || !strings.Contains(e.StateReason, "410") {
		t.Errorf("the endpoint whose receiver answered 410: %s (%s)", e.State, e.StateReason)
	}
	gone.mu.Lock()
	if gone.requests != 1 {
		t.Errorf("the 410 receiver got %d requests, want 1", gone.requests)
	}
	gone.mu.Unlock()
	ds, err := w.store.Deliveries(context.Background(), "demo", eps[halfFailing].ID, dirsvc.DeliveryDelivered, time.Now().Add(time.Hour), 100)
	if err != nil || len(ds) == 0 {
		t.Fatalf("delivered log of the half-failing receiver: %d, %v", len(ds), err)
	}
	d, err := w.store.Delivery(context.Background(), "demo", eps[halfFailing].ID, ds[len(ds)-1].ID)
	if err != nil || len(d.Attempts) < 2 || d.Attempts[0].Status != 500 || d.Attempts[len(d.Attempts)-1].Status != 204 {
		t.Errorf("the first message to the half-failing receiver: attempts %+v, %v", d.Attempts, err)
	}
}

// TestARestartedServiceSendsWhatWasQueued stops a service while its message waits for a receiver
// that fails, and starts another on the same files: the message arrives, under the same webhook-id,
// and nothing after it is lost.
func TestARestartedServiceSendsWhatWasQueued(t *testing.T) {
	failing := atomic.Bool{}
	failing.Store(true)
	r := newReceiver(t, 150, func(n int, rw http.ResponseWriter) bool {
		if failing.Load() {
			rw.WriteHeader(http.StatusServiceUnavailable)
			return true
		}
		return false
	})
	w := newHookWorld(t, nil)
	w.trust(r)
	e := w.register(t, r)
	w.feed.add(100)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.svc.Run(ctx); close(done) }()
	var first *dirsvc.Delivery
	for deadline := time.Now().Add(30 * time.Second); first == nil || first.Rounds == 0; time.Sleep(5 * time.Millisecond) {
		// until the message is queued and a round of it has failed
		var err error
		if first, err = w.store.NextDelivery(context.Background(), "demo", e.ID); err != nil || time.Now().After(deadline) {
			t.Fatalf("no failed round after 30 s: %v", err)
		}
	}
	cancel()
	<-done

	failing.Store(false)
	again, err := New(w.svc.cfg) // the same files and server key
	if err != nil {
		t.Fatal(err)
	}
	w.svc = again
	w.feed.add(50)
	w.run(t)
	r.check(t, "after the restart", 1, nil)
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.seen[first.ID] {
		t.Errorf("the queued message %s did not arrive under its webhook-id (got %v)", first.ID, r.seen)
	}
}

// TestRotationSignsWithBothSecretsForADay rotates an endpoint's secret: for 24 hours (by the
// service's clock) its messages carry two signatures, each verifying with one secret, then one.
func TestRotationSignsWithBothSecretsForADay(t *testing.T) {
	w := newHookWorld(t, nil)
	start := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	w.clock.Store(start.UnixNano())
	e := &dirsvc.WebhookEndpoint{ID: dirsvc.NewUUID(), Directory: "demo", State: dirsvc.WebhookActive}
	oldSecret, newSecretV := newSecret(), newSecret()
	e.SealedPrevious, e.PreviousUntil = w.svc.seal.seal("demo", e.ID, oldSecret), start.Add(RotationOverlap)
	e.SealedSecret = w.svc.seal.seal("demo", e.ID, newSecretV)
	for _, c := range []struct {
		at   time.Time
		want []string
	}{
		{start.Add(time.Minute), []string{newSecretV, oldSecret}},
		{start.Add(RotationOverlap - time.Second), []string{newSecretV, oldSecret}},
		{start.Add(RotationOverlap), []string{newSecretV}},
		{start.Add(48 * time.Hour), []string{newSecretV}},
	} {
		w.clock.Store(c.at.UnixNano())
		got, err := w.svc.secretsOf(e)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("at %s: signing secrets %d, want %d", c.at, len(got), len(c.want))
		}
		req := httptest.NewRequest("POST", "/", nil)
		if err := sign(req, message{id: "msg", secrets: got, body: []byte("{}")}, c.at); err != nil {
			t.Fatal(err)
		}
		if n := len(strings.Fields(req.Header.Get("webhook-signature"))); n != len(c.want) {
			t.Errorf("at %s: %d signatures, want %d", c.at, n, len(c.want))
		}
	}
}
