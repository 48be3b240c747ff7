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
		"a ten-year life": func(t *dirsvc.AccessToken) { t.Expires = now.AddDate(10, 0, 0).Unix() },
		"a life one second longer than issued": func(t *dirsvc.AccessToken) {
			t.IssuedAt, t.Expires = now.Unix()-1, now.Add(dirsvc.TokenLifetime).Unix()
		},
		"no issue time":         func(t *dirsvc.AccessToken) { t.IssuedAt = 0 },
		"not valid before soon": func(t *dirsvc.AccessToken) { t.NotBefore = now.Add(2 * time.Minute).Unix() },
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
		// {"alg":"EdDSA","typ":"AT+JWT","kid":"k1"}: the type is at+jwt exactly.
		"another typ": "eyJhbGciOiJFZERTQSIsInR5cCI6IkFUK0pXVCIsImtpZCI6ImsxIn0" + raw[strings.IndexByte(raw, '.'):],
		// The last character of the signature with stray low bits: the same bytes, another text.
		"a signature not in canonical form": raw[:len(raw)-1] + strayBits(raw[len(raw)-1:]),
	} {
		if _, err := dirsvc.VerifyToken(bad, keys, now); err != dirsvc.ErrInvalidToken {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// strayBits returns the base64url character that decodes as c does in the last position of an
// unpadded 64-byte value (4 bits used) with a low bit set.
func strayBits(c string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	return string(alphabet[strings.IndexByte(alphabet, c[0])|1])
}
