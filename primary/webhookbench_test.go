package primary_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/edge"
	"github.com/dirsvc/dirsvc/primary"
	"github.com/dirsvc/dirsvc/primary/demo"
	"github.com/dirsvc/dirsvc/primary/webhook"
)

// fanReceiver counts the feed items it receives, each message once by webhook-id (their order is
// checked by TestEveryReceiverGetsEveryChangeInOrder).
type fanReceiver struct {
	*httptest.Server
	failing bool // fails every other request with 500
	mu      sync.Mutex
	n       int
	seen    map[string]bool
	items   int
	done    chan struct{}
	want    *atomic.Int64
}

func (f *fanReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	if f.failing && f.n%2 == 1 {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	if id := r.Header.Get("webhook-id"); !f.seen[id] {
		f.seen[id] = true
		f.items += bytes.Count(body, []byte(`"publicId"`))
		if int64(f.items) == f.want.Load() {
			close(f.done)
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// BenchmarkWebhookFanOut registers 200 endpoints (10 partner clients, 20 each) on receivers of their
// own on 127.0.0.1, imports a generated directory whose import makes at least 10,000 changes, and
// measures the time from the import's commit until every receiver holds every item of its client's
// feed (target: at most 60 s on 2 cores); "half-failing" has half the receivers fail every other
// request. A receiver finishes when it holds exactly its client's items, each message counted once
// by webhook-id: one that lost an item never finishes.
//
//	go test ./primary -run '^$' -bench WebhookFanOut -benchtime 1x
func BenchmarkWebhookFanOut(b *testing.B) {
	for _, failing := range []bool{false, true} {
		name := "all-answer"
		if failing {
			name = "half-failing"
		}
		b.Run(name, func(b *testing.B) {
			for range b.N {
				fanOut(b, failing)
			}
		})
	}
}

func fanOut(b *testing.B, failing bool) {
	b.StopTimer()
	ctx := context.Background()
	dir := b.TempDir()
	store, err := dirdb.Open(ctx, dir)
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	var small, full bytes.Buffer
	if err := demo.Generate(&small, demo.Options{Services: 10, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	if err := demo.Generate(&full, demo.Options{Services: 3500, Seed: 2}); err != nil {
		b.Fatal(err)
	}
	if _, _, err := primary.Import(ctx, store, bytes.NewReader(small.Bytes())); err != nil {
		b.Fatal(err)
	}
	key, err := primary.LoadServerKey(ctx, store, primary.ServerKeyConfig{Path: filepath.Join(dir, "server.key")})
	if err != nil {
		b.Fatal(err)
	}
	access, err := primary.NewAccess(ctx, store, key, nil)
	if err != nil {
		b.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := edge.New(edge.Config{Catalog: store, Keys: store, AnonymousLimits: edge.Limits{PerMinute: 1 << 20, PerDay: 1 << 20}, Logger: quiet})
	roots := x509.NewCertPool()
	want := new(atomic.Int64)
	want.Store(-1)
	var receivers []*fanReceiver
	for i := range 200 {
		r := &fanReceiver{failing: failing && i%2 == 0, seen: map[string]bool{}, done: make(chan struct{}), want: want}
		r.Server = httptest.NewTLSServer(r)
		defer r.Close()
		roots.AddCert(r.Certificate())
		receivers = append(receivers, r)
	}
	hooks, err := webhook.New(webhook.Config{Store: store, Clients: store, Feed: primary.WebhookFeed(srv, store.ChangeHead),
		Directories: store.Slugs, SealKey: primary.WebhookSealKey(key), Log: quiet, Poll: 50 * time.Millisecond,
		QuickWaits: []time.Duration{10 * time.Millisecond}, RoundWaits: []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond},
		AllowNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, RootCAs: roots})
	if err != nil {
		b.Fatal(err)
	}
	if err := (&primary.Server{Edge: srv, Access: access, Webhooks: hooks}).Mount(); err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	s := &hookService{Server: ts, store: store, access: access}
	var reader *http.Client
	for c := range 10 {
		client, _ := s.hookClientOf(b, dirsvc.Grant{Directory: "demo", Tier: dirsvc.Partner,
			Scopes: []string{dirsvc.ScopeFeedRead, dirsvc.ScopeWebhooksManage, dirsvc.ScopeGraphRead, dirsvc.ScopePractitionersRead}})
		reader = client
		for e := range 20 {
			r := receivers[c*20+e]
			if a := call(b, client, "POST", ts.URL+"/v1/d/demo/webhooks", map[string]string{"url": r.URL + "/hook"}); a.status != 201 {
				b.Fatalf("register: %d %s", a.status, a.body)
			}
		}
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	before := len(harvestFeed(b, reader, ts.URL))
	head0, _ := store.ChangeHead(ctx, "demo")
	b.StartTimer()
	if _, _, err := primary.Import(ctx, store, bytes.NewReader(full.Bytes())); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	go hooks.Run(runCtx)
	b.StopTimer()
	gained := len(harvestFeed(b, reader, ts.URL)) - before
	head, _ := store.ChangeHead(ctx, "demo")
	if head-head0 < 10_000 {
		b.Fatalf("the import made %d changes, want at least 10,000", head-head0)
	}
	want.Store(int64(gained))
	for _, r := range receivers {
		r.mu.Lock()
		if int64(r.items) == want.Load() {
			select {
			case <-r.done:
			default:
				close(r.done)
			}
		}
		r.mu.Unlock()
	}
	b.StartTimer()
	deadline := time.After(5 * time.Minute)
	for i, r := range receivers {
		select {
		case <-r.done:
		case <-deadline:
			r.mu.Lock()
			b.Fatalf("receiver %d holds %d of %d items after 5 minutes", i, r.items, gained)
		}
	}
	took := time.Since(start)
	b.StopTimer()
	b.ReportMetric(took.Seconds(), "s-to-deliver")
	b.ReportMetric(float64(head-head0), "changes")
	b.ReportMetric(float64(gained*len(receivers))/took.Seconds(), "items/s")
}
