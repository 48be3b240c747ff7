package federation_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/primary"
	"github.com/dirsvc/dirsvc/primary/federation"
	"github.com/dirsvc/dirsvc/primary/webhook"
)

// TestAHarvestAsksForTheNextPageBeforeItReadsThisOne: a harvest asks for the page a Link header
// names while the body of the page that named it is still on its way. The upstream here holds each
// such body back until the next page is asked for: a harvest that waited for the body first would
// never ask (and fails when the upstream gives up). The upstream's records are mirrored, and no more
// than two pages are asked for ahead of the one the harvest takes.
func TestAHarvestAsksForTheNextPageBeforeItReadsThisOne(t *testing.T) {
	ctx := context.Background()
	up := newFedService(t)
	c, secret, err := up.access.CreateClient(ctx, primary.NewClient{Name: "aggregate", Directory: "small",
		Grants: []dirsvc.Grant{{Directory: "small", Tier: dirsvc.Partner, Limit: dirsvc.DefaultPartnerLimit,
			Scopes: dirsvc.NormalScopes([]string{dirsvc.ScopeFeedRead, dirsvc.ScopeGraphRead})}}})
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu      sync.Mutex
		asked   = map[string]chan struct{}{} // by since: closed once that page is asked for
		open    int                          // feed requests under way
		most    int
		stalled bool
	)
	askedFor := func(since string) chan struct{} {
		if asked[since] == nil {
			asked[since] = make(chan struct{})
		}
		return asked[since]
	}
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/d/small/changes" {
			up.Config.Handler.ServeHTTP(w, r)
			return
		}
		mu.Lock()
		close(askedFor(r.URL.Query().Get("since")))
		open++
		most = max(most, open)
		mu.Unlock()
		defer func() { mu.Lock(); open--; mu.Unlock() }()
		up.Config.Handler.ServeHTTP(&holdBack{ResponseWriter: w, wait: func(h http.Header) {
			link := h.Get("Link")
			if link == "" {
				return
			}
			u, err := url.Parse(link[1:bytes.IndexByte([]byte(link), '>')])
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			next, given := askedFor(u.Query().Get("since")), stalled
			mu.Unlock()
			if given {
				return // one stall says it: the rest go through
			}
			select {
			case <-next:
			case <-time.After(10 * time.Second):
				mu.Lock()
				stalled = true
				mu.Unlock()
			}
		}}, r)
	}))
	defer proxy.Close()

	agg := bytes.ReplaceAll(smallFile(t), []byte(`"slug":"small"`), []byte(`"slug":"agg"`))
	store := storeOf(t, t.TempDir(), bytes.SplitN(agg, []byte("\n"), 2)[0]) // the directory, no records
	if err := store.AddMirror(ctx, "agg", dirsvc.Mirror{Name: "small", Upstream: proxy.URL, UpstreamDir: "small",
		ClientID: c.ID, Secret: secret, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	h := federation.NewHarvester(federation.MirrorConfig{Store: store, Guard: webhook.NewGuard(true), PageSize: 2})
	st, err := h.RunOnce(ctx, "agg", "small")
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if stalled {
		t.Error("the harvest read a page's body before it asked for the page its Link header names")
	}
	if st.Pages < 4 {
		t.Fatalf("the harvest read %d pages; the test needs several", st.Pages)
	}
	if most > 3 {
		t.Errorf("%d pages were asked for at once, want at most the one taken and two ahead", most)
	}
	d, err := store.Directory(ctx, "agg")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"org_harbour", "org_coast", "loc_ultimo", "loc_coast", "svc_gp", "svc_counsel"} {
		if _, err := d.Record(ctx, id, dirsvc.Viewer{Audience: dirsvc.Partner}); err != nil {
			t.Errorf("%s after the harvest: %v", id, err)
		}
	}
	if st.Written < 10 {
		t.Errorf("harvest: %+v, want the upstream's records written", st)
	}
}

// holdBack is a response writer that sends the headers at once, then calls wait with them before it
// lets the body through.
type holdBack struct {
	http.ResponseWriter
	wait   func(http.Header)
	waited bool
}

func (w *holdBack) WriteHeader(status int) {
	w.ResponseWriter.WriteHeader(status)
	w.ResponseWriter.(http.Flusher).Flush()
}

func (w *holdBack) Write(b []byte) (int, error) {
	if !w.waited {
		w.waited = true
		w.wait(w.Header())
	}
	return w.ResponseWriter.Write(b)
}

// smallFile is the small test directory's import file.
func smallFile(t testing.TB) []byte {
	t.Helper()
	file, err := os.ReadFile(filepath.Join("..", "..", "testdata", "small.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	return file
}

// storeOf opens a store on the data folder dir, closed when the test ends, with file imported.
func storeOf(t testing.TB, dir string, file []byte) *dirdb.Store {
	t.Helper()
	ctx := context.Background()
	store, err := dirdb.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	if _, _, err := primary.Import(ctx, store, bytes.NewReader(file)); err != nil {
		t.Fatal(err)
	}
	return store
}
