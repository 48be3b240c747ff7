package dirsvc

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strings"
)

// ClientAssertionType is the client_assertion_type of a client that authenticates at the token
// endpoint with a JWT signed by one of its keys (private_key_jwt: RFC 7523 section 2.2, SMART
// Backend Services).
const ClientAssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// ClientAssertionAlgorithms are the JWS algorithms a client assertion may be signed with: those
// SMART Backend Services requires (RS384, ES384) and their common siblings. Never none, and never an
// HMAC: a shared secret signs nothing here.
var ClientAssertionAlgorithms = []string{"RS384", "ES384", "RS256", "ES256", "PS256", "PS384"}

// Bounds of a client's key set: few keys, RSA moduli of 2048 to 8192 bits, the curves P-256 and
// P-384 (those of ES256 and ES384), and the set's JSON at most MaxJWKSSize bytes.
const (
	MaxClientKeys = 10
	MaxJWKSSize   = 32 << 10
	MinRSABits    = 2048
	MaxRSABits    = 8192
	maxKeyID      = 200
)

// JWKS is a client's public keys as a JSON Web Key Set (RFC 7517), which the client signs its
// assertions with. Only public members are kept.
type JWKS struct {
	Keys []JWK `json:"keys"`
}

// JWK is one public key of a client: RSA (n, e) or EC (crv, x, y), named by its kid. Alg, Use and
// KeyOps, when given, restrict what the key signs.
type JWK struct {
	Kty    string   `json:"kty"`
	Kid    string   `json:"kid"`
	Alg    string   `json:"alg,omitempty"`
	Use    string   `json:"use,omitempty"`
	KeyOps []string `json:"key_ops,omitempty"`
	N      string   `json:"n,omitempty"`
	E      string   `json:"e,omitempty"`
	Crv    string   `json:"crv,omitempty"`
	X      string   `json:"x,omitempty"`
	Y      string   `json:"y,omitempty"`
}

// privateMembers are the JWK members of private and symmetric keys (RFC 7518 section 6): a key set
// holding one is refused, so a private key sent by mistake is not kept.
var privateMembers = []string{"d", "p", "q", "dp", "dq", "qi", "oth", "k"}

// jwkMembers are the members a JWK keeps; others (x5c, x5t, ext, ...) are dropped.
var jwkMembers = []string{"kty", "kid", "alg", "use", "key_ops", "n", "e", "crv", "x", "y"}

// ParseJWKS reads a client's key set: a JSON object whose keys member holds 1 to MaxClientKeys
// public RSA or EC keys, each with a kid unique in the set, every key valid (an RSA modulus of
// MinRSABits to MaxRSABits bits and an exponent of at least 65537; a point of P-256 or P-384), an alg
// (when given) of ClientAssertionAlgorithms that fits the key, and use (when given) sig. Members
// other than a key's public ones are dropped. Every fault is an invalid-parameter error naming jwks.
func ParseJWKS(raw []byte) (*JWKS, error) {
	if len(raw) > MaxJWKSSize {
		return nil, InvalidParam("jwks", "a key set is at most %d bytes", MaxJWKSSize)
	}
	var set struct {
		Keys []map[string]json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(raw, &set); err != nil || !bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
		return nil, InvalidParam("jwks", "the key set must be a JSON Web Key Set: an object with a keys array")
	}
	if len(set.Keys) == 0 || len(set.Keys) > MaxClientKeys {
		return nil, InvalidParam("jwks", "a key set holds 1 to %d keys", MaxClientKeys)
	}
	out := &JWKS{Keys: make([]JWK, 0, len(set.Keys))}
	for i, members := range set.Keys {
		k, err := parseJWK(members)
		if err != nil {
			return nil, InvalidParam("jwks", "key %d: %s", i+1, err)
		}
		if slices.ContainsFunc(out.Keys, func(o JWK) bool { return o.Kid == k.Kid }) {
			return nil, InvalidParam("jwks", "key %d: two keys have the same kid", i+1)
		}
		out.Keys = append(out.Keys, k)
	}
	return out, nil
}

func parseJWK(members map[string]json.RawMessage) (JWK, error) {
	for _, m := range privateMembers {
		if _, ok := members[m]; ok {
			return JWK{}, fmt.Errorf("it holds private or symmetric key material (%s): register public keys only", m)
		}
	}
	var k JWK
	fields := map[string]*string{"kty": &k.Kty, "kid": &k.Kid, "alg": &k.Alg, "use": &k.Use, "n": &k.N, "e": &k.E,
		"crv": &k.Crv, "x": &k.X, "y": &k.Y}
	for _, name := range jwkMembers {
		v, ok := members[name]
		if !ok {
			continue
		}
		if name == "key_ops" {
			if json.Unmarshal(v, &k.KeyOps) != nil {
				return JWK{}, fmt.Errorf("key_ops must be an array of strings")
			}
			continue
		}
		if json.Unmarshal(v, fields[name]) != nil {
			return JWK{}, fmt.Errorf("%s must be a string", name)
		}
	}
	switch {
	case k.Kid == "" || len(k.Kid) > maxKeyID || strings.ContainsFunc(k.Kid, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return JWK{}, fmt.Errorf("a key needs a kid of 1 to %d printable characters, as its assertions name it", maxKeyID)
	case k.Use != "" && k.Use != "sig":
		return JWK{}, fmt.Errorf("use must be sig")
	case k.KeyOps != nil && !slices.Contains(k.KeyOps, "verify"):
		return JWK{}, fmt.Errorf("key_ops must include verify")
	case k.Alg != "" && !slices.Contains(ClientAssertionAlgorithms, k.Alg):
		return JWK{}, fmt.Errorf("alg must be one of %s", strings.Join(ClientAssertionAlgorithms, ", "))
	}
	switch k.Kty {
	case "RSA":
		k.Crv, k.X, k.Y = "", "", ""
	case "EC":
		k.N, k.E = "", ""
	default:
		return JWK{}, fmt.Errorf("kty must be RSA or EC")
	}
	if _, err := k.PublicKey(); err != nil {
		return JWK{}, err
	}
	if k.Alg != "" && !k.Fits(k.Alg) {
		return JWK{}, fmt.Errorf("alg %s does not fit a key of this type or curve", k.Alg)
	}
	return k, nil
}

// PublicKey returns the key as an *rsa.PublicKey or an *ecdsa.PublicKey, after checking it as
// ParseJWKS does.
func (k *JWK) PublicKey() (crypto.PublicKey, error) {
	switch k.Kty {
	case "RSA":
		n, err1 := b64.DecodeString(k.N)
		e, err2 := b64.DecodeString(k.E)
		if err1 != nil || err2 != nil || len(n) == 0 || len(e) == 0 || len(e) > 4 {
			return nil, fmt.Errorf("n and e must be base64url numbers (no padding)")
		}
		pub := &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
		if bits := pub.N.BitLen(); bits < MinRSABits || bits > MaxRSABits {
			return nil, fmt.Errorf("an RSA modulus has %d to %d bits, not %d", MinRSABits, MaxRSABits, bits)
		}
		if pub.E < 65537 || pub.E%2 == 0 || pub.E > 1<<31-1 || pub.N.Bit(0) == 0 {
			return nil, fmt.Errorf("an RSA key needs an odd modulus and an odd exponent of at least 65537")
		}
		return pub, nil
	case "EC":
		curve, size := ecCurve(k.Crv)
		if curve == nil {
			return nil, fmt.Errorf("crv must be P-256 or P-384")
		}
		x, err1 := b64.DecodeString(k.X)
		y, err2 := b64.DecodeString(k.Y)
		if err1 != nil || err2 != nil || len(x) != size || len(y) != size {
			return nil, fmt.Errorf("x and y must be base64url coordinates of %d bytes each (no padding)", size)
		}
		pub, err := ecdsa.ParseUncompressedPublicKey(curve, slices.Concat([]byte{4}, x, y))
		if err != nil {
			return nil, fmt.Errorf("the point is not on the curve %s", k.Crv)
		}
		return pub, nil
	}
	return nil, fmt.Errorf("kty must be RSA or EC")
}

func ecCurve(crv string) (elliptic.Curve, int) {
	switch crv {
	case "P-256":
		return elliptic.P256(), 32
	case "P-384":
		return elliptic.P384(), 48
	}
	return nil, 0
}

// Fits reports whether the key may verify a signature of JWS algorithm alg: RS and PS algorithms
// need an RSA key, ES256 a P-256 key and ES384 a P-384 key; a key's own alg, use and key_ops, when
// given, must allow it.
func (k *JWK) Fits(alg string) bool {
	if k.Alg != "" && k.Alg != alg || k.Use != "" && k.Use != "sig" || k.KeyOps != nil && !slices.Contains(k.KeyOps, "verify") {
		return false
	}
	switch alg {
	case "RS256", "RS384", "PS256", "PS384":
		return k.Kty == "RSA"
	case "ES256":
		return k.Kty == "EC" && k.Crv == "P-256"
	case "ES384":
		return k.Kty == "EC" && k.Crv == "P-384"
	}
	return false
}

// KeyIDs returns the kid of every key, in the set's order.
func (s *JWKS) KeyIDs() []string {
	if s == nil {
		return nil
	}
	ids := make([]string, len(s.Keys))
	for i, k := range s.Keys {
		ids[i] = k.Kid
	}
	return ids
}
