package primary_test

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/primary"
)

// readWith reads a service with an access token and returns the status.
func (a *authService) readWith(t *testing.T, tok *oauth2.Token) int {
	t.Helper()
	req, _ := http.NewRequest("GET", a.URL+"/v1/d/small/services/svc_gp?view=brief", nil)
	tok.SetAuthHeader(req)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// jwksKeys returns the key IDs the JWKS publishes.
func (a *authService) jwksKeys(t *testing.T) map[string]bool {
	t.Helper()
	resp, err := http.Get(a.URL + "/oauth/jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var set struct{ Keys []struct{ Kid string } }
	if err := json.NewDecoder(resp.Body).Decode(&set); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, k := range set.Keys {
		out[k.Kid] = true
	}
	return out
}

// TestAccessChangesRefuseEarlierTokensAtOnce changes a client's access each way an operator can: the
// token it held is refused at once, not when it expires; a token it gets after the change (where it
// can get one) is honoured at once, though issued in the same second.
func TestAccessChangesRefuseEarlierTokensAtOnce(t *testing.T) {
	a := newAuthService(t, nil)
	ctx := context.Background()
	for name, change := range map[string]func(id, secret string) (newSecret string, err error){
		"revoked": func(id, _ string) (string, error) { return "", a.access.Revoke(ctx, id) },
		"secret rotated": func(id, _ string) (string, error) {
			return a.access.RotateSecret(ctx, id)
		},
		"grant narrowed": func(id, secret string) (string, error) {
			return secret, a.access.Grant(ctx, id, dirsvc.Grant{Directory: "small", Tier: dirsvc.Partner,
				Scopes: []string{dirsvc.ScopeGraphRead}, Narrowing: dirsvc.Narrowing{Areas: []string{"state:nsw"}},
				Limit: dirsvc.DefaultPartnerLimit})
		},
		"grant removed": func(id, _ string) (string, error) { return "", a.store.RemoveGrant(ctx, id, "small") },
	} {
		t.Run(name, func(t *testing.T) {
			id, secret := a.client(t, dirsvc.ScopeGraphRead)
			tctx := httpContext(t)
			tok, err := a.config(id, secret, "small", oauth2.AuthStyleInHeader).Token(tctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := a.readWith(t, tok); got != 200 {
				t.Fatalf("a read before the change: %d", got)
			}
			newSecret, err := change(id, secret)
			if err != nil {
				t.Fatal(err)
			}
			if got := a.readWith(t, tok); got != 401 {
				t.Errorf("the token held before the change: %d, want 401", got)
			}
			if newSecret == "" {
				return
			}
			fresh, err := a.config(id, newSecret, "small", oauth2.AuthStyleInHeader).Token(tctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := a.readWith(t, fresh); got != 200 {
				t.Errorf("a token issued after the change: %d, want 200", got)
			}
		})
	}
}

// TestReplacedSigningKeysAreRetired rotates the signing key: the replaced key stays published, and its
// tokens honoured, until every token it signed has expired; then it is retired, withdrawn from the
// JWKS, and a token it signed is refused whatever it claims.
func TestReplacedSigningKeysAreRetired(t *testing.T) {
	var offset atomic.Int64
	a := newAuthService(t, func() time.Time { return time.Now().Add(time.Duration(offset.Load())) })
	ctx := context.Background()
	id, secret := a.client(t, dirsvc.ScopeGraphRead)
	cfg := a.config(id, secret, "small", oauth2.AuthStyleInHeader)
	old, err := cfg.Token(httpContext(t))
	if err != nil {
		t.Fatal(err)
	}
	keys, err := a.access.Keys(ctx)
	if err != nil || len(keys) != 1 || !keys[0].Signing {
		t.Fatalf("keys before the rotation: %+v %v", keys, err)
	}
	oldKID := keys[0].ID
	newKID, err := a.access.RotateSigningKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if retired, err := a.access.RetireKeys(ctx); err != nil || len(retired) > 0 {
		t.Fatalf("retired at the rotation: %v %v", retired, err)
	}
	if got := a.readWith(t, old); got != 200 {
		t.Errorf("a token of the replaced key, before its retirement: %d", got)
	}
	if published := a.jwksKeys(t); !published[oldKID] || !published[newKID] {
		t.Errorf("published after the rotation: %v", published)
	}
	fresh, err := cfg.Token(httpContext(t))
	if err != nil {
		t.Fatal(err)
	}

	offset.Store(int64(primary.TokenLifetime + 2*time.Minute))
	retired, err := a.access.RetireKeys(ctx)
	if err != nil || len(retired) != 1 || retired[0] != oldKID {
		t.Fatalf("retired once its tokens expired: %v %v, want %s", retired, err, oldKID)
	}
	if got := a.readWith(t, old); got != 401 {
		t.Errorf("a token of the retired key: %d, want 401", got)
	}
	if got := a.readWith(t, fresh); got != 200 {
		t.Errorf("a token of the new key: %d", got)
	}
	if published := a.jwksKeys(t); published[oldKID] || !published[newKID] {
		t.Errorf("published after the retirement: %v", published)
	}
}

// TestRetiringTheSigningKeyReplacesIt retires the key that signs, as after its compromise: its
// tokens are refused at once, and new tokens are signed with a new key.
func TestRetiringTheSigningKeyReplacesIt(t *testing.T) {
	a := newAuthService(t, nil)
	ctx := context.Background()
	id, secret := a.client(t, dirsvc.ScopeGraphRead)
	cfg := a.config(id, secret, "small", oauth2.AuthStyleInHeader)
	old, err := cfg.Token(httpContext(t))
	if err != nil {
		t.Fatal(err)
	}
	keys, err := a.access.Keys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.access.RetireKey(ctx, keys[0].ID); err != nil {
		t.Fatal(err)
	}
	if got := a.readWith(t, old); got != 401 {
		t.Errorf("a token of the retired signing key: %d, want 401", got)
	}
	fresh, err := cfg.Token(httpContext(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := a.readWith(t, fresh); got != 200 {
		t.Errorf("a token issued after the retirement: %d", got)
	}
	after, err := a.access.Keys(ctx)
	if err != nil || len(after) != 1 || after[0].ID == keys[0].ID || !after[0].Signing {
		t.Errorf("keys after the retirement: %+v %v", after, err)
	}
}

// TestKeysOfAnEarlierServerKeyAreRetiredAtOnce starts with another server key (as after the old one
// leaked): a token signed with a key the old server key derives, still within its life, is refused
// from the start on.
func TestKeysOfAnEarlierServerKeyAreRetiredAtOnce(t *testing.T) {
	a := newAuthService(t, nil)
	ctx := context.Background()
	id, secret := a.client(t, dirsvc.ScopeGraphRead)
	old, err := a.config(id, secret, "small", oauth2.AuthStyleInHeader).Token(httpContext(t))
	if err != nil {
		t.Fatal(err)
	}
	other, err := primary.LoadServerKey(ctx, a.store, primary.ServerKeyConfig{Path: filepath.Join(t.TempDir(), "server.key"),
		AcceptNew: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := primary.NewAccess(ctx, a.store, other, nil); err != nil {
		t.Fatal(err)
	}
	keys, err := a.store.SigningKeys(ctx)
	if err != nil || len(keys) != 1 {
		t.Fatalf("keys after the new server key: %+v %v", keys, err)
	}
	if published := a.jwksKeys(t); len(published) != 1 || !published[keys[0].ID] {
		t.Errorf("published after the new server key: %v", published)
	}
	if got := a.readWith(t, old); got != 401 {
		t.Errorf("a token of the old server key's signing key: %d", got)
	}
}
