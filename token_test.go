package dirsvc_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
)

func TestVerifyTokenHonoursOnlyWhatAGrantCanHold(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	keys := dirsvc.KeySet{"k1": pub}
	now := time.Unix(1_800_000_000, 0)
	good := func() *dirsvc.AccessToken {
		return &dirsvc.AccessToken{Directory: "demo", ClientID: "dirp_x", IssuedAt: now.Unix(), Expires: now.Add(time.Minute).Unix(),
			Scope: "graph:read", Tier: dirsvc.Partner, Limit: dirsvc.RateLimit{PerMinute: 1, PerDay: 1}}
	}
	sign := func(tok *dirsvc.AccessToken, kid string) string {
		raw, err := dirsvc.SignToken(tok, kid, priv)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	if tok, err := dirsvc.VerifyToken(sign(good(), "k1"), keys, now); err != nil || tok.ClientID != "dirp_x" || !tok.HasScope("graph:read") || tok.HasScope("graph") {
		t.Fatalf("a good token: %+v, %v", tok, err)
	}
	for name, change := range map[string]func(*dirsvc.AccessToken){
		"expired":         func(t *dirsvc.AccessToken) { t.Expires = now.Unix() },
		"issued later":    func(t *dirsvc.AccessToken) { t.IssuedAt = now.Add(2 * time.Minute).Unix() },
		"the staff tier":  func(t *dirsvc.AccessToken) { t.Tier = dirsvc.Staff },
		"no limit":        func(t *dirsvc.AccessToken) { t.Limit = dirsvc.RateLimit{} },
		"no directory":    func(t *dirsvc.AccessToken) { t.Directory = "" },
		"no client":       func(t *dirsvc.AccessToken) { t.ClientID = "" },
		"a bad directory": func(t *dirsvc.AccessToken) { t.Directory = "../demo" },
	} {
		tok := good()
		change(tok)
		if _, err := dirsvc.VerifyToken(sign(tok, "k1"), keys, now); err != dirsvc.ErrInvalidToken {
			t.Errorf("%s: %v", name, err)
		}
	}
	raw := sign(good(), "k1")
	for name, bad := range map[string]string{
		"an unknown key":  sign(good(), "k2"),
		"no signature":    raw[:strings.LastIndexByte(raw, '.')+1],
		"too long":        raw + strings.Repeat("A", 5000),
		"two parts":       raw[:strings.LastIndexByte(raw, '.')],
		"alg none header": "eyJhbGciOiJub25lIiwidHlwIjoiYXQrand0Iiwia2lkIjoiazEifQ" + raw[strings.IndexByte(raw, '.'):],
	} {
		if _, err := dirsvc.VerifyToken(bad, keys, now); err != dirsvc.ErrInvalidToken {
			t.Errorf("%s: %v", name, err)
		}
	}
}
