package dirsvc

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"
)

// AccessToken is the claim set of an access token (a JWT of RFC 9068, typ at+jwt, signed with
// EdDSA): everything a node needs to serve the client without a database call.
type AccessToken struct {
	Issuer    string `json:"iss"`
	Subject   string `json:"sub"`
	Directory string `json:"aud"` // the one directory the token is for
	ClientID  string `json:"client_id"`
	IssuedAt  int64  `json:"iat"`
	NotBefore int64  `json:"nbf,omitempty"`
	Expires   int64  `json:"exp"`
	ID        string `json:"jti"`
	// Scope is the space-separated granted scopes.
	Scope     string    `json:"scope"`
	Tier      Audience  `json:"tier"`
	Agreement string    `json:"agreement,omitempty"`
	Narrowing Narrowing `json:"narrowing,omitzero"`
	Limit     RateLimit `json:"limit"`
	Sandbox   bool      `json:"sandbox,omitempty"`
	// KeyID is the ID of the key that signed the token (the header's kid), set by VerifyToken.
	KeyID string `json:"-"`
}

// HasScope reports whether the token carries scope s.
func (t *AccessToken) HasScope(s string) bool { return slices.Contains(strings.Fields(t.Scope), s) }

// Viewer returns who the token's holder is as a reader.
func (t *AccessToken) Viewer() Viewer { return Viewer{Audience: t.Tier, Narrowing: t.Narrowing} }

// TokenKeys finds the public key of a signing key by its key ID (a retired key is not found), and
// when a client's tokens were last cut off.
type TokenKeys interface {
	TokenKey(kid string) (ed25519.PublicKey, bool)
	// TokensValidFrom returns the earliest issue time (Unix seconds) of the client's tokens still
	// honoured; 0 when its tokens were never cut off.
	TokensValidFrom(clientID string) int64
}

// ErrInvalidToken is the answer to an access token that is malformed, badly signed, signed with an
// unknown key or expired. The client learns no more than that.
var ErrInvalidToken = errors.New("invalid access token")

type jwtHeader struct {
	Alg string `json:"alg"`
	Typ string `json:"typ"`
	Kid string `json:"kid"`
}

// b64 reads a token's parts strictly: one text a value, no padding, no stray bits.
var b64 = base64.RawURLEncoding.Strict()

// TokenLifetime is how long an access token is valid. Tokens are checked without a database call,
// so revoking a client takes effect when its last token expires: it is kept short, and a token
// claiming a longer life is refused.
const TokenLifetime = 15 * time.Minute

// SignToken encodes and signs t with the private key named kid.
func SignToken(t *AccessToken, kid string, key ed25519.PrivateKey) (string, error) {
	h, err := json.Marshal(jwtHeader{Alg: "EdDSA", Typ: "at+jwt", Kid: kid})
	if err != nil {
		return "", err
	}
	c, err := json.Marshal(t)
	if err != nil {
		return "", err
	}
	signed := b64.EncodeToString(h) + "." + b64.EncodeToString(c)
	return signed + "." + b64.EncodeToString(ed25519.Sign(key, []byte(signed))), nil
}

// maxTokenLength bounds what is decoded of a presented token.
const maxTokenLength = 4096

// ClockSkew is how far in the future a token's issue time may be, for nodes whose clocks differ.
const ClockSkew = time.Minute

// VerifyToken checks a presented token's header (EdDSA, typ at+jwt exactly), signature (by a key keys
// holds), issuer (exactly issuer, the service's base address), lifetime at now (issued, not before,
// not expired, at most TokenLifetime long) and its client's cut-off (issued no earlier than
// keys.TokensValidFrom), and returns its claims; every failure is ErrInvalidToken.
func VerifyToken(raw string, keys TokenKeys, issuer string, now time.Time) (*AccessToken, error) {
	if len(raw) > maxTokenLength {
		return nil, ErrInvalidToken
	}
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		return nil, ErrInvalidToken
	}
	hb, err := b64.DecodeString(parts[0])
	if err != nil {
		return nil, ErrInvalidToken
	}
	var h jwtHeader
	if err := json.Unmarshal(hb, &h); err != nil || h.Alg != "EdDSA" || h.Typ != "at+jwt" {
		return nil, ErrInvalidToken
	}
	key, ok := keys.TokenKey(h.Kid)
	if !ok {
		return nil, ErrInvalidToken
	}
	sig, err := b64.DecodeString(parts[2])
	if err != nil || len(sig) != ed25519.SignatureSize {
		return nil, ErrInvalidToken
	}
	if !ed25519.Verify(key, []byte(parts[0]+"."+parts[1]), sig) {
		return nil, ErrInvalidToken
	}
	cb, err := b64.DecodeString(parts[1])
	if err != nil {
		return nil, ErrInvalidToken
	}
	// Claims are read tolerantly: a newer issuer may add some during a rolling upgrade.
	var t AccessToken
	if err := json.Unmarshal(cb, &t); err != nil {
		return nil, ErrInvalidToken
	}
	// Only what a grant can hold is honoured: a served tier, a limit and a valid narrowing; never the
	// staff tier; and only the life the issuer gives (a token claiming more was not made by it), from
	// its issue or not-before time on.
	skew := int64(ClockSkew / time.Second)
	if unix := now.Unix(); t.Expires <= unix || t.IssuedAt <= 0 || t.IssuedAt > unix+skew || t.NotBefore > unix+skew ||
		t.Expires-t.IssuedAt > int64(TokenLifetime/time.Second) || t.Issuer != issuer || issuer == "" ||
		!ValidSlug(t.Directory) || t.ClientID == "" || !slices.Contains(ServedAudiences, t.Tier) ||
		t.Limit.PerMinute < 1 || t.Limit.PerDay < 1 || t.Narrowing.Validate() != nil {
		return nil, ErrInvalidToken
	}
	t.KeyID = h.Kid
	if !Honoured(&t, keys) {
		return nil, ErrInvalidToken
	}
	return &t, nil
}

// Honoured reports whether keys still honour a token whose signature was checked: the key that
// signed it is not retired, and its client's tokens were not cut off after it was issued. A node that
// keeps verified tokens asks again on every use.
func Honoured(t *AccessToken, keys TokenKeys) bool {
	_, ok := keys.TokenKey(t.KeyID)
	return ok && t.IssuedAt >= keys.TokensValidFrom(t.ClientID)
}

// KeySet is a fixed set of public token keys by key ID.
type KeySet map[string]ed25519.PublicKey

// TokenKey returns the key named kid.
func (s KeySet) TokenKey(kid string) (ed25519.PublicKey, bool) {
	k, ok := s[kid]
	return k, ok
}

// TokensValidFrom returns 0: a fixed key set cuts off no client's tokens.
func (s KeySet) TokensValidFrom(string) int64 { return 0 }
