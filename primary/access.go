package primary

import (
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/edge"
)

// TokenLifetime is how long an access token is valid (dirsvc.TokenLifetime: nodes refuse longer).
const TokenLifetime = dirsvc.TokenLifetime

// Access manages partner clients and issues their access tokens.
type Access struct {
	store  dirsvc.ClientStore
	macKey []byte
	key    []byte // the server key, from which signing keys are derived
	// Issuer is the iss of issued tokens: the service's base address, which every node checks
	// (edge.Config.BaseURL); empty means edge.DefaultBaseURL.
	Issuer string
	// SandboxDirectory is the demonstration directory sandbox clients are given.
	SandboxDirectory string
	now              func() time.Time
}

// NewAccess returns an Access over store with the server key, and makes sure a signing key derived
// from this server key is published, adding one when there is none (a first start, or a new server
// key). Keys due for retirement are retired (see RetireKeys).
func NewAccess(ctx context.Context, store dirsvc.ClientStore, serverKey []byte, now func() time.Time) (*Access, error) {
	if len(serverKey) < ServerKeySize {
		return nil, fmt.Errorf("server key: want at least %d bytes", ServerKeySize)
	}
	if now == nil {
		now = time.Now
	}
	a := &Access{store: store, key: serverKey, macKey: derive(serverKey, "client-secret-mac"),
		SandboxDirectory: "demo", now: now}
	if _, _, err := a.signer(ctx); err != nil {
		return nil, err
	}
	if _, err := a.RetireKeys(ctx); err != nil {
		return nil, err
	}
	return a, nil
}

// derive returns a subkey of the server key for one purpose.
func derive(key []byte, purpose string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(purpose))
	return m.Sum(nil)
}

func (a *Access) signingKey(kid string) ed25519.PrivateKey { return signingKey(a.key, kid) }

// signingKey returns the token signing key kid that a server key derives.
func signingKey(serverKey []byte, kid string) ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(derive(serverKey, "token-signing-key\x00"+kid))
}

// derives reports whether the server key derives the published key k.
func (a *Access) derives(k dirsvc.SigningKey) bool {
	return a.signingKey(k.ID).Public().(ed25519.PublicKey).Equal(k.Public)
}

// signer returns the key tokens are signed with: the newest published key this server key derives,
// as the platform file holds it now (a key rotated by another process signs from its commit on).
// When there is none, it publishes one.
func (a *Access) signer(ctx context.Context) (string, ed25519.PrivateKey, error) {
	keys, err := a.store.SigningKeys(ctx)
	if err != nil {
		return "", nil, err
	}
	for _, k := range slices.Backward(keys) {
		if a.derives(k) {
			return k.ID, a.signingKey(k.ID), nil
		}
	}
	kid, err := a.RotateSigningKey(ctx)
	if err != nil {
		return "", nil, err
	}
	return kid, a.signingKey(kid), nil
}

// RotateSigningKey publishes a new signing key, which signs from now on, and returns its ID. The
// key it replaces stays published until the tokens it signed have expired (see RetireKeys).
func (a *Access) RotateSigningKey(ctx context.Context) (string, error) {
	kid := randomToken(8)
	err := a.store.AddSigningKey(ctx, dirsvc.SigningKey{ID: kid, Public: a.signingKey(kid).Public().(ed25519.PublicKey), CreatedAt: a.now()})
	if err != nil {
		return "", err
	}
	return kid, nil
}

// keyRetention is how long a replaced signing key stays published after the key that replaced it
// was added: until every token it signed has expired, on nodes whose clocks differ too.
const keyRetention = TokenLifetime + dirsvc.ClockSkew

// KeyState is a published signing key and what becomes of it.
type KeyState struct {
	dirsvc.SigningKey
	// Signing is true for the key tokens are signed with.
	Signing bool
	// RetiresAt is when RetireKeys retires a replaced key; zero for the signing key.
	RetiresAt time.Time
}

// Keys returns the published signing keys, oldest first, with the one that signs and when each
// replaced one is retired. A key this server key does not derive (one of an earlier server key)
// signs no token and is retired at once.
func (a *Access) Keys(ctx context.Context) ([]KeyState, error) {
	kid, _, err := a.signer(ctx)
	if err != nil {
		return nil, err
	}
	keys, err := a.store.SigningKeys(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]KeyState, len(keys))
	for i, k := range keys {
		out[i].SigningKey = k
		switch {
		case k.ID == kid:
			out[i].Signing = true
		case !a.derives(k):
			out[i].RetiresAt = k.CreatedAt // already due
		default:
			// Replaced when the next key was added (keys are oldest first; the signing key is the
			// newest this server key derives, so a replaced one has a next).
			out[i].RetiresAt = keys[i+1].CreatedAt.Add(keyRetention)
		}
	}
	return out, nil
}

// RetireKeys retires every published key that is due: one of an earlier server key at once, a
// replaced one once every token it signed has expired. The platform file drops it, and with it every
// node, so a token signed with it is refused everywhere. It returns the IDs retired.
func (a *Access) RetireKeys(ctx context.Context) ([]string, error) {
	keys, err := a.Keys(ctx)
	if err != nil {
		return nil, err
	}
	var retired []string
	for _, k := range keys {
		if k.Signing || a.now().Before(k.RetiresAt) {
			continue
		}
		if err := a.store.RetireSigningKey(ctx, k.ID); err != nil && !errors.Is(err, dirsvc.ErrNotFound) {
			return retired, err
		}
		retired = append(retired, k.ID)
	}
	return retired, nil
}

// RetireKey retires the published key kid now: tokens it signed are refused from the commit on.
// When it is the key that signs, a new key is published first and signs from then on.
func (a *Access) RetireKey(ctx context.Context, kid string) error {
	current, _, err := a.signer(ctx)
	if err != nil {
		return err
	}
	if kid == current {
		if _, err := a.RotateSigningKey(ctx); err != nil {
			return err
		}
	}
	return a.store.RetireSigningKey(ctx, kid)
}

// randomToken returns n random bytes as lower-case hex.
func randomToken(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// secretPrefix starts every client secret, so secret scanners can recognise a leaked one.
const secretPrefix = "dirsec_"

func newSecret() string {
	b := make([]byte, 32)
	rand.Read(b)
	return secretPrefix + base64.RawURLEncoding.EncodeToString(b)
}

func (a *Access) mac(secret string) []byte {
	m := hmac.New(sha256.New, a.macKey)
	m.Write([]byte(secret))
	return m.Sum(nil)
}

// NewClient is what creating a client needs.
type NewClient struct {
	Name string
	// Directory is the one directory of a directory client; empty for a partner-organisation client.
	Directory string
	// Sandbox creates a partner-organisation client whose only grant is the sandbox grant.
	Sandbox bool
	Grants  []dirsvc.Grant
	// Contact and Purpose say who the client's people are and what they build (sandbox sign-up).
	Contact, Purpose string
	// Keys are public keys the client may authenticate with (private_key_jwt); NoSecret makes a
	// client that authenticates with them alone.
	Keys     *dirsvc.JWKS
	NoSecret bool
}

// CreateClient creates a client and returns it with its secret, which is shown this once and never
// stored; "" for a client made with NoSecret.
func (a *Access) CreateClient(ctx context.Context, nc NewClient) (*dirsvc.Client, string, error) {
	if strings.TrimSpace(nc.Name) == "" || len(nc.Name) > 200 {
		return nil, "", dirsvc.InvalidParam("name", "a client needs a name of at most 200 characters")
	}
	if nc.NoSecret && nc.Keys == nil {
		return nil, "", dirsvc.InvalidParam("jwks", "a client without a secret needs public keys to authenticate with")
	}
	c := &dirsvc.Client{Name: nc.Name, Sandbox: nc.Sandbox, Grants: nc.Grants, Contact: nc.Contact, Purpose: nc.Purpose,
		Keys: nc.Keys, NoSecret: nc.NoSecret}
	switch {
	case nc.Sandbox:
		if nc.Directory != "" || len(nc.Grants) > 0 {
			return nil, "", dirsvc.InvalidParam("sandbox", "a sandbox client has only the sandbox grant")
		}
		c.ID = dirsvc.PartnerClientPrefix + randomToken(12)
		c.Grants = []dirsvc.Grant{a.SandboxGrant()}
	case nc.Directory != "":
		c.ID, c.Directory = dirsvc.DirectoryClientPrefix+randomToken(12), nc.Directory
		for _, g := range c.Grants {
			if g.Directory != nc.Directory {
				return nil, "", dirsvc.InvalidParam("directory", "a directory client has grants in its own directory only")
			}
		}
	default:
		c.ID = dirsvc.PartnerClientPrefix + randomToken(12)
	}
	for i := range c.Grants {
		if err := c.Grants[i].Validate(); err != nil {
			return nil, "", err
		}
	}
	secret, mac := "", []byte(nil)
	if !nc.NoSecret {
		secret = newSecret()
		mac = a.mac(secret)
	}
	if err := a.store.CreateClient(ctx, c, mac); err != nil {
		return nil, "", err
	}
	return c, secret, nil
}

// SandboxGrant is the grant of a sandbox client: the demonstration directory at the partner tier,
// every scope but the explicit ones, and the low sandbox limit.
func (a *Access) SandboxGrant() dirsvc.Grant {
	return dirsvc.Grant{Directory: a.SandboxDirectory, Tier: dirsvc.Partner, Agreement: "sandbox",
		Scopes: slices.Clone(edge.SandboxScopes), Limit: dirsvc.SandboxLimit, Sandbox: true}
}

// Grant adds or replaces a client's grant in one directory. A directory client may hold a grant in
// its own directory only, for life (after its grant there was removed too); a sandbox client none
// but its sandbox grant.
func (a *Access) Grant(ctx context.Context, clientID string, g dirsvc.Grant) error {
	c, _, err := a.store.Client(ctx, clientID)
	if err != nil {
		return err
	}
	if c.Sandbox {
		return dirsvc.InvalidParam("client", "a sandbox client has only its sandbox grant")
	}
	if strings.HasPrefix(c.ID, dirsvc.DirectoryClientPrefix) && c.Directory != g.Directory {
		if c.Directory == "" { // its grant was removed before clients kept their directory
			return dirsvc.InvalidParam("directory", "the directory this directory client belongs to is no longer known: create a new client")
		}
		return dirsvc.InvalidParam("directory", "a directory client belongs to %s and has grants there only", c.Directory)
	}
	if err := g.Validate(); err != nil {
		return err
	}
	return a.store.PutGrant(ctx, clientID, g)
}

// RotateSecret gives a client a new secret, returned this once; the old one stops working at once.
func (a *Access) RotateSecret(ctx context.Context, clientID string) (string, error) {
	secret := newSecret()
	if err := a.store.SetClientSecret(ctx, clientID, a.mac(secret)); err != nil {
		return "", err
	}
	return secret, nil
}

// SetKeys replaces a client's public keys (nil removes them); tokens it holds are refused from then
// on, as after a new secret. A client without a secret keeps keys: it would have no way to
// authenticate.
func (a *Access) SetKeys(ctx context.Context, clientID string, keys *dirsvc.JWKS) error {
	c, _, err := a.store.Client(ctx, clientID)
	if err != nil {
		return err
	}
	if keys == nil && c.NoSecret {
		return dirsvc.InvalidParam("jwks", "the client has no secret: give it one (rotate) before removing its keys")
	}
	return a.store.SetClientKeys(ctx, clientID, keys)
}

// Revoke revokes a client: it gets no new token; tokens it holds expire within TokenLifetime.
func (a *Access) Revoke(ctx context.Context, clientID string) error {
	return a.store.RevokeClient(ctx, clientID)
}

// errBadClient is every failure of client authentication: unknown client, wrong secret, no secret
// at all (a client of keys alone), or revoked.
var errBadClient = errors.New("client authentication failed")

// authenticate returns the client whose ID and secret these are, comparing MACs in constant time.
func (a *Access) authenticate(ctx context.Context, id, secret string) (*dirsvc.Client, error) {
	got := a.mac(secret)
	c, want, err := a.store.Client(ctx, id)
	if errors.Is(err, dirsvc.ErrNotFound) {
		return nil, errBadClient
	} else if err != nil {
		return nil, err
	}
	if len(want) == 0 || !hmac.Equal(got, want) || c.Revoked {
		return nil, errBadClient
	}
	return c, nil
}

// issue signs a token for the client's grant with the scopes asked for. It is issued no earlier than
// the client's cut-off (at most a second ahead), so a token issued just after a change to the
// client's access is honoured.
func (a *Access) issue(ctx context.Context, c *dirsvc.Client, g *dirsvc.Grant, scopes []string) (string, *dirsvc.AccessToken, error) {
	kid, key, err := a.signer(ctx)
	if err != nil {
		return "", nil, err
	}
	iat := max(a.now().Unix(), a.store.TokensValidFrom(c.ID))
	t := &dirsvc.AccessToken{Issuer: a.issuer(), Subject: c.ID, Directory: g.Directory, ClientID: c.ID,
		IssuedAt: iat, Expires: iat + int64(TokenLifetime/time.Second), ID: randomToken(16),
		Scope: strings.Join(scopes, " "), Tier: g.Tier, Agreement: g.Agreement, Narrowing: g.Narrowing,
		Limit: g.Limit, Sandbox: g.Sandbox}
	raw, err := dirsvc.SignToken(t, kid, key)
	return raw, t, err
}

// RequestAccess records a client's request for access to a directory. A sandbox client may not
// ask: it has only its sandbox grant, for life.
func (a *Access) RequestAccess(ctx context.Context, r *dirsvc.AccessRequest) error {
	if c, _, err := a.store.Client(ctx, r.Client); err == nil && c.Sandbox {
		return dirsvc.Errorf(dirsvc.EForbidden, "A sandbox client has only its sandbox grant: ask the service for partner credentials, then ask the directory with those.")
	}
	if err := r.Validate(); err != nil { // before NormalScopes, which leaves out what is not a scope
		return err
	}
	r.Scopes = dirsvc.NormalScopes(r.Scopes)
	return a.store.CreateAccessRequest(ctx, r)
}
