package dirsvc_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
)

func TestVerifyTokenHonoursOnlyWhatAGrantCanHold(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	keys := dirsvc.KeySet{"k1": pub}
	now := time.Unix(1_800_000_000, 0)
	const issuer = "https://directory.example.org"
	good := func() *dirsvc.AccessToken {
		return &dirsvc.AccessToken{Issuer: issuer, Directory: "demo", ClientID: "dirp_x", IssuedAt: now.Unix(), Expires: now.Add(time.Minute).Unix(),
			Scope: "graph:read", Tier: dirsvc.Partner, Limit: dirsvc.RateLimit{PerMinute: 1, PerDay: 1}}
	}
	sign := func(tok *dirsvc.AccessToken, kid string) string {
		raw, err := dirsvc.SignToken(tok, kid, priv)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	if tok, err := dirsvc.VerifyToken(sign(good(), "k1"), keys, issuer, now); err != nil || tok.ClientID != "dirp_x" || !tok.HasScope("graph:read") || tok.HasScope("graph") {
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
		"no issue time":           func(t *dirsvc.AccessToken) { t.IssuedAt = 0 },
		"not valid before soon":   func(t *dirsvc.AccessToken) { t.NotBefore = now.Add(2 * time.Minute).Unix() },
		"another issuer":          func(t *dirsvc.AccessToken) { t.Issuer = "https://evil.example" },
		"no issuer":               func(t *dirsvc.AccessToken) { t.Issuer = "" },
		"the issuer with a slash": func(t *dirsvc.AccessToken) { t.Issuer = issuer + "/" },
		"a narrowing of 51 areas": func(t *dirsvc.AccessToken) {
			for i := range dirsvc.MaxNarrowingAreas + 1 {
				t.Narrowing.Areas = append(t.Narrowing.Areas, fmt.Sprintf("postcode:%d", 2000+i))
			}
		},
		"a narrowing of 21 categories": func(t *dirsvc.AccessToken) {
			for i := range dirsvc.MaxNarrowingCategories + 1 {
				t.Narrowing.Categories = append(t.Narrowing.Categories, fmt.Sprintf("category_%d", i))
			}
		},
	} {
		tok := good()
		change(tok)
		if _, err := dirsvc.VerifyToken(sign(tok, "k1"), keys, issuer, now); err != dirsvc.ErrInvalidToken {
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
		if _, err := dirsvc.VerifyToken(bad, keys, issuer, now); err != dirsvc.ErrInvalidToken {
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

// cutKeys are keys whose client dirp_cut has its tokens cut off at a time.
type cutKeys struct {
	dirsvc.KeySet
	cut int64
}

func (k cutKeys) TokensValidFrom(id string) int64 {
	if id == "dirp_cut" {
		return k.cut
	}
	return 0
}

// TestACutOffRefusesEarlierTokens: a client's tokens issued before its cut-off are refused, those
// issued at or after it honoured; other clients are not affected. A retired key's tokens are
// refused too, whatever they claim.
func TestACutOffRefusesEarlierTokens(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	now := time.Unix(1_800_000_000, 0)
	const issuer = "https://directory.example.org"
	keys := cutKeys{KeySet: dirsvc.KeySet{"k1": pub}, cut: now.Unix() - 10}
	tok := func(client string, issued int64) string {
		raw, err := dirsvc.SignToken(&dirsvc.AccessToken{Issuer: issuer, Directory: "demo", ClientID: client,
			IssuedAt: issued, Expires: issued + 600, Tier: dirsvc.Partner, Limit: dirsvc.RateLimit{PerMinute: 1, PerDay: 1}}, "k1", priv)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	for _, c := range []struct {
		client string
		issued int64
		ok     bool
	}{
		{"dirp_cut", now.Unix() - 11, false},
		{"dirp_cut", now.Unix() - 10, true},
		{"dirp_cut", now.Unix(), true},
		{"dirp_other", now.Unix() - 11, true},
	} {
		_, err := dirsvc.VerifyToken(tok(c.client, c.issued), keys, issuer, now)
		if (err == nil) != c.ok {
			t.Errorf("%s issued %d s before now: %v, want honoured %v", c.client, now.Unix()-c.issued, err, c.ok)
		}
	}
	delete(keys.KeySet, "k1")
	if _, err := dirsvc.VerifyToken(tok("dirp_other", now.Unix()), keys, issuer, now); err != dirsvc.ErrInvalidToken {
		t.Errorf("a token of a retired key: %v", err)
	}
}
