package federation_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/primary/federation"
	"github.com/dirsvc/dirsvc/primary/seal"
	"github.com/dirsvc/dirsvc/primary/webhook"
)

// TestAMirrorSecretInTheClearIsSealedWhenRead stores a mirror's client secret as a build before
// sealing did, in the clear, and runs a harvest: the stored secret is then sealed (ops.db no longer
// holds it), the upstream still receives the secret itself, and a primary with another server key
// cannot open it and asks the upstream nothing.
func TestAMirrorSecretInTheClearIsSealedWhenRead(t *testing.T) {
	ctx := context.Background()
	store := storeOf(t, t.TempDir(), smallFile(t))
	var (
		mu        sync.Mutex
		presented []string
	)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, pass, _ := r.BasicAuth()
		pass, _ = url.QueryUnescape(pass)
		mu.Lock()
		presented = append(presented, pass)
		mu.Unlock()
		w.WriteHeader(http.StatusUnauthorized) // the harvest ends here: what it presented is the test
	}))
	defer upstream.Close()

	const secret = "an upstream secret kept in the clear"
	if err := store.AddMirror(ctx, "small", dirsvc.Mirror{Name: "north", Upstream: upstream.URL,
		UpstreamDir: "north", ClientID: "dirc_x", Secret: secret, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	harvest := func(key byte) error {
		sealer, err := seal.New(bytes.Repeat([]byte{key}, seal.KeySize))
		if err != nil {
			t.Fatal(err)
		}
		h := federation.NewHarvester(federation.MirrorConfig{Store: store, Guard: webhook.NewGuard(true), Sealer: sealer})
		_, err = h.RunOnce(ctx, "small", "north")
		return err
	}
	if err := harvest(1); err == nil {
		t.Fatal("the harvest succeeded against an upstream that refuses every token")
	}
	ms, err := store.Mirrors(ctx, "small")
	if err != nil || len(ms) != 1 {
		t.Fatalf("mirrors: %v %v", ms, err)
	}
	if stored := ms[0].Secret; !strings.HasPrefix(stored, "sealed:") || strings.Contains(stored, secret) {
		t.Errorf("after a harvest ops.db holds the secret as %q", stored)
	}
	if err := harvest(1); err == nil {
		t.Fatal("the second harvest succeeded")
	}
	mu.Lock()
	got := append([]string(nil), presented...)
	mu.Unlock()
	if len(got) != 2 || got[0] != secret || got[1] != secret {
		t.Fatalf("the upstream was presented %q, want the secret twice (in the clear, then sealed and opened)", got)
	}
	if err := harvest(2); err == nil || !strings.Contains(err.Error(), "does not open") {
		t.Errorf("a harvest under another server key: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(presented) != 2 {
		t.Errorf("a primary that could not open the secret asked the upstream for a token with %q", presented[2:])
	}
}
