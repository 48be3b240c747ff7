package dirsvc_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"testing"

	"github.com/dirsvc/dirsvc"
)

func b64u(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// TestClientKeySetsAreReadStrictly: a client's key set holds a few public RSA or EC keys of
// bounded sizes and the curves offered, each named by its own kid; private material, symmetric keys,
// small moduli, other curves, points off the curve and algorithms that do not fit are refused,
// naming jwks.
func TestClientKeySetsAreReadStrictly(t *testing.T) {
	rsa1024, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	rsa2048, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	p521, _ := ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	rsaJWK := func(k *rsa.PrivateKey, kid string) map[string]any {
		return map[string]any{"kty": "RSA", "kid": kid, "n": b64u(k.N.Bytes()), "e": b64u(big.NewInt(int64(k.E)).Bytes())}
	}
	ecJWK := func(k *ecdsa.PrivateKey, kid string) map[string]any {
		raw, _ := k.PublicKey.Bytes()
		size := (len(raw) - 1) / 2
		return map[string]any{"kty": "EC", "kid": kid, "crv": k.Curve.Params().Name, "x": b64u(raw[1 : 1+size]), "y": b64u(raw[1+size:])}
	}
	set := func(keys ...map[string]any) []byte {
		b, _ := json.Marshal(map[string]any{"keys": keys})
		return b
	}
	with := func(m map[string]any, k string, v any) map[string]any {
		out := map[string]any{}
		for name, val := range m {
			out[name] = val
		}
		out[k] = v
		return out
	}
	offCurve := ecJWK(p256, "off")
	y, _ := base64.RawURLEncoding.DecodeString(offCurve["y"].(string))
	y[5] ^= 1
	offCurve["y"] = b64u(y)
	var eleven []map[string]any
	for i := range 11 {
		eleven = append(eleven, ecJWK(p256, "k"+string(rune('a'+i))))
	}
	good := set(with(rsaJWK(rsa2048, "r1"), "x5c", []string{"MIIB"}), with(ecJWK(p256, "e1"), "alg", "ES256"), with(ecJWK(p384, "e2"), "use", "sig"))
	keys, err := dirsvc.ParseJWKS(good)
	if err != nil {
		t.Fatalf("a good key set: %v", err)
	}
	if got := strings.Join(keys.KeyIDs(), " "); got != "r1 e1 e2" {
		t.Errorf("kids %q", got)
	}
	stored, _ := json.Marshal(keys)
	if strings.Contains(string(stored), "x5c") {
		t.Errorf("a member other than the public key's is kept: %s", stored)
	}
	for _, c := range []struct {
		name string
		raw  []byte
	}{
		{"not an object", []byte(`[1]`)},
		{"null", []byte(`null`)},
		{"no keys", set()},
		{"eleven keys", set(eleven...)},
		{"a private RSA key", set(with(rsaJWK(rsa2048, "r1"), "d", b64u(rsa2048.D.Bytes())))},
		{"a private EC key", set(with(ecJWK(p256, "e1"), "d", b64u(p256.D.Bytes())))},
		{"a symmetric key", set(map[string]any{"kty": "oct", "kid": "s", "k": "c2VjcmV0"})},
		{"an OKP key", set(map[string]any{"kty": "OKP", "kid": "o", "crv": "Ed25519", "x": b64u(make([]byte, 32))})},
		{"a 1024-bit RSA key", set(rsaJWK(rsa1024, "small"))},
		{"an RSA exponent of 3", set(with(rsaJWK(rsa2048, "r"), "e", "Aw"))},
		{"a P-521 key", set(ecJWK(p521, "big"))},
		{"a point off the curve", set(offCurve)},
		{"a padded coordinate", set(with(ecJWK(p256, "e"), "x", ecJWK(p256, "e")["x"].(string)+"="))},
		{"no kid", set(with(ecJWK(p256, "e"), "kid", ""))},
		{"two keys of one kid", set(ecJWK(p256, "same"), ecJWK(p384, "same"))},
		{"an alg that does not fit the key", set(with(ecJWK(p256, "e"), "alg", "ES384"))},
		{"an HMAC alg", set(with(rsaJWK(rsa2048, "r"), "alg", "HS256"))},
		{"use enc", set(with(ecJWK(p256, "e"), "use", "enc"))},
		{"key_ops without verify", set(with(ecJWK(p256, "e"), "key_ops", []string{"encrypt"}))},
		{"a kid that is not a string", set(with(ecJWK(p256, "e"), "kid", 5))},
		{"past the size bound", append(good[:len(good)-2], []byte(`,"pad":"`+strings.Repeat("x", dirsvc.MaxJWKSSize)+`"}]}`)...)},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := dirsvc.ParseJWKS(c.raw)
			var e *dirsvc.Error
			if !errors.As(err, &e) || e.Code != dirsvc.EInvalid || e.Param != "jwks" {
				t.Errorf("got %v, want an invalid-parameter error naming jwks", err)
			}
		})
	}
}

// TestSystemScopesParse: SMART system scopes of a served type or *, with read permissions in SMART
// v1 or v2 syntax, are read; write permissions, other contexts, other types and query restrictions
// are SMART scopes this service does not give; anything else is not a SMART scope.
func TestSystemScopesParse(t *testing.T) {
	types := []string{"HealthcareService", "Practitioner"}
	for s, want := range map[string]dirsvc.SystemScope{
		"system/*.rs":                 {Type: "*", Read: true, Search: true},
		"system/*.read":               {Type: "*", Read: true, Search: true},
		"system/Practitioner.s":       {Type: "Practitioner", Search: true},
		"system/HealthcareService.r":  {Type: "HealthcareService", Read: true},
		"system/HealthcareService.rs": {Type: "HealthcareService", Read: true, Search: true},
	} {
		if got, err := dirsvc.ParseSystemScope(s, types); err != nil || got != want {
			t.Errorf("%s: %+v, %v; want %+v", s, got, err, want)
		}
	}
	for s, want := range map[string]error{
		"system/*.cruds": dirsvc.ErrUnsupportedSystemScope, "system/*.c": dirsvc.ErrUnsupportedSystemScope,
		"system/*.write": dirsvc.ErrUnsupportedSystemScope, "system/*.*": dirsvc.ErrUnsupportedSystemScope,
		"system/Patient.rs": dirsvc.ErrUnsupportedSystemScope, "patient/*.rs": dirsvc.ErrUnsupportedSystemScope,
		"user/Practitioner.read": dirsvc.ErrUnsupportedSystemScope, "system/HealthcareService.rs?category=x": dirsvc.ErrUnsupportedSystemScope,
		"system/*.sr": dirsvc.ErrNotSystemScope, "system/*.rr": dirsvc.ErrNotSystemScope, "system/*": dirsvc.ErrNotSystemScope,
		"system/.rs": dirsvc.ErrNotSystemScope, "graph:read": dirsvc.ErrNotSystemScope, "launch": dirsvc.ErrNotSystemScope,
	} {
		if _, err := dirsvc.ParseSystemScope(s, types); !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", s, err, want)
		}
	}
}
