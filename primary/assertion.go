package primary

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/edge"
)

// Client assertions (private_key_jwt: RFC 7523, SMART Backend Services): a client authenticates
// with a JWT it signed with one of its registered keys, whose iss and sub are its client ID, whose
// aud is the token endpoint's address, which expires within five minutes, and whose jti it never
// uses twice.
const (
	// maxAssertion bounds an assertion (the token request's body is bounded by as much).
	maxAssertion = 8 << 10
	// maxAssertionLife is how far ahead an assertion's exp may be (SMART: no more than five
	// minutes), with dirsvc.ClockSkew for clocks that differ.
	maxAssertionLife = 5 * time.Minute
	maxJTI           = 256
)

// b64 reads an assertion's parts strictly: unpadded base64url, no stray bits.
var b64 = base64.RawURLEncoding.Strict()

// badAssertion refuses a client assertion: 401 invalid_client, whatever is wrong with it (RFC 7521
// section 4.2.1). A description never repeats what the assertion holds, and never says whether a
// client ID is known: every fault found after the client was looked up is described as a failed
// authentication alone.
func badAssertion(desc string) *tokenError {
	return &tokenError{http.StatusUnauthorized, OAuthError{"invalid_client", desc}}
}

var errAssertionFailed = badAssertion("client authentication failed")

// TokenEndpoint returns the token endpoint's address on the service's base URL: the one audience a
// client assertion may name.
func (a *Access) TokenEndpoint() string { return a.issuer() + edge.TokenPath }

// issuer returns the service's base address, which issued tokens name.
func (a *Access) issuer() string {
	if a.Issuer == "" {
		return edge.DefaultBaseURL
	}
	return a.Issuer
}

// assertionHeader is what a client assertion's JOSE header says.
type assertionHeader struct {
	alg, kid string
}

// assertionClaims are the claims of a client assertion this service checks.
type assertionClaims struct {
	iss, sub, jti string
	aud           []string
	exp           float64
	nbf, iat      *float64
}

// authenticateAssertion returns the client a client assertion authenticates (see the constants
// above); clientID, the request's client_id, is optional but must name the same client. Every fault
// of the assertion is a *tokenError of 401 invalid_client; any other error is the store's. A
// replayed jti is refused once the assertion is known to be the client's own.
func (a *Access) authenticateAssertion(ctx context.Context, raw, clientID string) (*dirsvc.Client, error) {
	if len(raw) > maxAssertion {
		return nil, badAssertion("client_assertion is longer than 8 KiB")
	}
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		return nil, badAssertion("client_assertion is not a signed JWT: three base64url parts separated by dots")
	}
	h, err := readAssertionHeader(parts[0])
	if err != nil {
		return nil, err
	}
	cl, err := readAssertionClaims(parts[1])
	if err != nil {
		return nil, err
	}
	now := a.now()
	if err := cl.check(a.TokenEndpoint(), now); err != nil {
		return nil, err
	}
	if clientID != "" && clientID != cl.iss {
		return nil, badAssertion("client_id differs from the iss of client_assertion")
	}
	sig, err := b64.DecodeString(parts[2])
	if err != nil {
		return nil, badAssertion("the signature of client_assertion is not base64url")
	}
	c, _, err := a.store.Client(ctx, cl.iss)
	if errors.Is(err, dirsvc.ErrNotFound) {
		return nil, errAssertionFailed
	} else if err != nil {
		return nil, err
	}
	if c.Revoked || c.Keys == nil || !verifyAssertion(c.Keys, h, []byte(parts[0]+"."+parts[1]), sig) {
		return nil, errAssertionFailed
	}
	// Kept as long as the assertion could be accepted: until exp, and the skew allowed past it.
	until := int64(math.Ceil(cl.exp)) + int64(dirsvc.ClockSkew/time.Second)
	fresh, err := a.store.UseAssertionID(ctx, c.ID, cl.jti, until, now.Unix())
	if err != nil {
		return nil, err
	}
	if !fresh {
		return nil, badAssertion("the jti of client_assertion was used before: sign a new assertion, with a new jti, for every token request")
	}
	return c, nil
}

// readAssertionHeader reads and checks the JOSE header: a JSON object, each member once, whose alg
// is one of dirsvc.ClientAssertionAlgorithms, typ (when given) JWT, kid (when given) a string, with
// no crit (no extension is understood here) and no jku (keys are registered with the service, never
// fetched from where an assertion points).
func readAssertionHeader(part string) (assertionHeader, error) {
	b, err := b64.DecodeString(part)
	if err != nil {
		return assertionHeader{}, badAssertion("the header of client_assertion is not base64url")
	}
	m, dup, err := jsonObject(b)
	switch {
	case err != nil:
		return assertionHeader{}, badAssertion("the header of client_assertion is not a JSON object")
	case dup != "":
		return assertionHeader{}, badAssertion("the header of client_assertion gives a member more than once")
	}
	var h assertionHeader
	var typ string
	if !optionalString(m, "alg", &h.alg) || !optionalString(m, "kid", &h.kid) || !optionalString(m, "typ", &typ) {
		return assertionHeader{}, badAssertion("alg, kid and typ of client_assertion's header must be strings")
	}
	switch _, crit := m["crit"]; {
	case !slices.Contains(dirsvc.ClientAssertionAlgorithms, h.alg):
		return assertionHeader{}, badAssertion("the alg of client_assertion must be one of " + strings.Join(dirsvc.ClientAssertionAlgorithms, ", "))
	case typ != "" && !strings.EqualFold(typ, "JWT"):
		return assertionHeader{}, badAssertion("the typ of client_assertion, when given, must be JWT")
	case crit:
		return assertionHeader{}, badAssertion("client_assertion may not name critical header extensions (crit)")
	}
	if _, ok := m["jku"]; ok {
		return assertionHeader{}, badAssertion("client_assertion may not name a jku: keys are registered with the service and never fetched")
	}
	return h, nil
}

// readAssertionClaims reads the claims: a JSON object, each member once, with iss, sub and jti
// strings, aud a string or an array of strings, exp a number, and nbf and iat numbers when given.
func readAssertionClaims(part string) (assertionClaims, error) {
	b, err := b64.DecodeString(part)
	if err != nil {
		return assertionClaims{}, badAssertion("the claims of client_assertion are not base64url")
	}
	m, dup, err := jsonObject(b)
	switch {
	case err != nil:
		return assertionClaims{}, badAssertion("the claims of client_assertion are not a JSON object")
	case dup != "":
		return assertionClaims{}, badAssertion("the claims of client_assertion give a member more than once")
	}
	var c assertionClaims
	if !optionalString(m, "iss", &c.iss) || !optionalString(m, "sub", &c.sub) || !optionalString(m, "jti", &c.jti) {
		return assertionClaims{}, badAssertion("iss, sub and jti of client_assertion must be strings")
	}
	if raw, ok := m["aud"]; ok {
		var one string
		if json.Unmarshal(raw, &one) == nil {
			c.aud = []string{one}
		} else if json.Unmarshal(raw, &c.aud) != nil {
			return assertionClaims{}, badAssertion("the aud of client_assertion must be a string")
		}
	}
	raw, ok := m["exp"]
	if !ok || !numericDate(raw, &c.exp) {
		return assertionClaims{}, badAssertion("client_assertion needs an exp: a time (seconds since 1970) at most 5 minutes ahead")
	}
	for name, p := range map[string]**float64{"nbf": &c.nbf, "iat": &c.iat} {
		if raw, ok := m[name]; ok {
			var v float64
			if !numericDate(raw, &v) {
				return assertionClaims{}, badAssertion("nbf and iat of client_assertion, when given, must be times (seconds since 1970)")
			}
			*p = &v
		}
	}
	return c, nil
}

// optionalString reads member name of m into s when it is there; false when it is not a string.
func optionalString(m map[string]json.RawMessage, name string, s *string) bool {
	raw, ok := m[name]
	return !ok || json.Unmarshal(raw, s) == nil
}

// numericDate reads a JWT NumericDate: a non-negative number of seconds.
func numericDate(raw json.RawMessage, v *float64) bool {
	return json.Unmarshal(raw, v) == nil && *v >= 0 && !math.IsInf(*v, 0)
}

// check holds the claims to what an assertion for this token endpoint must say at now.
func (c *assertionClaims) check(endpoint string, now time.Time) error {
	t := float64(now.UnixNano()) / 1e9
	skew := dirsvc.ClockSkew.Seconds()
	switch {
	case c.iss == "" || c.iss != c.sub:
		return badAssertion("the iss and sub of client_assertion must both be the client ID")
	case len(c.iss) > maxClientID:
		return badAssertion("the iss of client_assertion is not a client ID")
	case len(c.aud) != 1 || c.aud[0] != endpoint:
		// One audience: an assertion made for several servers could be replayed here by another.
		return badAssertion("the aud of client_assertion must be this token endpoint, " + endpoint + ", alone")
	case c.exp+skew <= t:
		return badAssertion("client_assertion has expired")
	case c.exp > t+(maxAssertionLife+dirsvc.ClockSkew).Seconds():
		return badAssertion("the exp of client_assertion is more than 5 minutes ahead")
	case c.nbf != nil && *c.nbf > t+skew:
		return badAssertion("client_assertion is not valid yet (nbf)")
	case c.iat != nil && *c.iat > t+skew:
		return badAssertion("client_assertion is issued in the future (iat)")
	case c.jti == "" || len(c.jti) > maxJTI:
		return badAssertion("client_assertion needs a jti of 1 to 256 characters, new for every assertion")
	}
	return nil
}

// verifyAssertion reports whether sig signs signed under one of the keys: the key named by the
// header's kid, or, with no kid, any key that fits the algorithm.
func verifyAssertion(keys *dirsvc.JWKS, h assertionHeader, signed, sig []byte) bool {
	for i := range keys.Keys {
		k := &keys.Keys[i]
		if h.kid != "" && k.Kid != h.kid || !k.Fits(h.alg) {
			continue
		}
		pub, err := k.PublicKey()
		if err == nil && verifySignature(h.alg, pub, signed, sig) {
			return true
		}
	}
	return false
}

// verifySignature checks a JWS signature of alg (one of dirsvc.ClientAssertionAlgorithms) with the
// standard library alone: RSASSA-PKCS1-v1_5, RSASSA-PSS with a salt as long as the hash, or ECDSA
// whose signature is r and s of the curve's size each, concatenated (RFC 7518 section 3.4).
func verifySignature(alg string, key crypto.PublicKey, signed, sig []byte) bool {
	var (
		hash   crypto.Hash
		digest []byte
	)
	switch alg[2:] {
	case "256":
		d := sha256.Sum256(signed)
		hash, digest = crypto.SHA256, d[:]
	case "384":
		d := sha512.Sum384(signed)
		hash, digest = crypto.SHA384, d[:]
	default:
		return false
	}
	switch alg[:2] {
	case "RS", "PS":
		pub, ok := key.(*rsa.PublicKey)
		if !ok || len(sig) != pub.Size() {
			return false
		}
		if alg[0] == 'R' {
			return rsa.VerifyPKCS1v15(pub, hash, digest, sig) == nil
		}
		return rsa.VerifyPSS(pub, hash, digest, sig, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash, Hash: hash}) == nil
	case "ES":
		pub, ok := key.(*ecdsa.PublicKey)
		if !ok {
			return false
		}
		size := (pub.Curve.Params().BitSize + 7) / 8
		if len(sig) != 2*size {
			return false
		}
		r, s := new(big.Int).SetBytes(sig[:size]), new(big.Int).SetBytes(sig[size:])
		return ecdsa.Verify(pub, digest, r, s)
	}
	return false
}
