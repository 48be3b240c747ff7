package dirsvc

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Scopes of partner clients (section 5.3). PractitionersRead and LeadershipRead are granted only
// when a directory chooses to, are never implied by another scope, and never reach the sandbox.
const (
	ScopeSearchRead        = "search:read"
	ScopeGraphRead         = "graph:read"
	ScopeFeedRead          = "feed:read"
	ScopeExportRun         = "export:run"
	ScopeWebhooksManage    = "webhooks:manage"
	ScopePractitionersRead = "practitioners:read"
	ScopeLeadershipRead    = "leadership:read"
	ScopeGraphPropose      = "graph:propose"
	ScopeFederationHarvest = "federation:harvest"
)

// AllScopes lists every scope, in the order of section 5.3.
var AllScopes = []string{ScopeSearchRead, ScopeGraphRead, ScopeFeedRead, ScopeExportRun, ScopeWebhooksManage,
	ScopePractitionersRead, ScopeLeadershipRead, ScopeGraphPropose, ScopeFederationHarvest}

// ExplicitScopes are granted only by explicit choice and are never in a sandbox grant.
var ExplicitScopes = []string{ScopePractitionersRead, ScopeLeadershipRead}

// ValidScope reports whether s names a scope.
func ValidScope(s string) bool { return slices.Contains(AllScopes, s) }

// ParseScopes splits a space-separated scope string (RFC 6749 section 3.3) into its scopes, each
// once, in the order of AllScopes; an unknown scope is an error naming it.
func ParseScopes(s string) ([]string, error) {
	var out []string
	for _, f := range strings.Fields(s) {
		if !ValidScope(f) {
			return nil, fmt.Errorf("unknown scope %q", f)
		}
		out = append(out, f)
	}
	return NormalScopes(out), nil
}

// NormalScopes returns scopes each once, in the order of AllScopes, with the scopes each implies
// (federation:harvest implies graph:propose).
func NormalScopes(scopes []string) []string {
	var out []string
	for _, s := range AllScopes {
		if slices.Contains(scopes, s) || s == ScopeGraphPropose && slices.Contains(scopes, ScopeFederationHarvest) {
			out = append(out, s)
		}
	}
	return out
}

// Narrowing limits a client to some areas, service categories or record kinds. An empty list does
// not narrow; records outside the narrowing answer exactly as missing ones and are left out of lists.
type Narrowing struct {
	// Areas are area IDs (type:code); a service is inside when it is located in one or its
	// catchment reaches one, as the caller sees it.
	Areas []string `json:"areas,omitempty"`
	// Categories are platform category codes (the parent of a service's type).
	Categories []string `json:"categories,omitempty"`
	// Kinds are the record kinds the client may read.
	Kinds []Kind `json:"types,omitempty"`
}

// Narrowed reports whether the narrowing limits anything.
func (n Narrowing) Narrowed() bool { return len(n.Areas)+len(n.Categories)+len(n.Kinds) > 0 }

// AllowsKind reports whether records of kind k may be inside the narrowing at all.
func (n Narrowing) AllowsKind(k Kind) bool { return len(n.Kinds) == 0 || slices.Contains(n.Kinds, k) }

// The most areas and categories a narrowing holds: a read of a client narrowed by both checks each
// pair of them (at most 1,000), whatever the record.
const (
	MaxNarrowingAreas      = 50
	MaxNarrowingCategories = 20
)

// Validate checks every entry of the narrowing, and that it holds at most MaxNarrowingAreas areas
// and MaxNarrowingCategories categories.
func (n Narrowing) Validate() error {
	if len(n.Areas) > MaxNarrowingAreas {
		return InvalidParam("areas", "a narrowing holds at most %d areas, not %d", MaxNarrowingAreas, len(n.Areas))
	}
	if len(n.Categories) > MaxNarrowingCategories {
		return InvalidParam("categories", "a narrowing holds at most %d categories, not %d", MaxNarrowingCategories, len(n.Categories))
	}
	for _, a := range n.Areas {
		if !ValidArea(a) {
			return InvalidParam("areas", "%q is not an area ID (type:code)", a)
		}
	}
	for _, c := range n.Categories {
		if !ValidCode(c) {
			return InvalidParam("categories", "%q is not a category code", c)
		}
	}
	for _, k := range n.Kinds {
		if !slices.Contains(Kinds, k) {
			return InvalidParam("types", "%q is not a record type (organisation, location, service, practitioner, role)", k)
		}
	}
	return nil
}

// ValidCode reports whether s is a well-formed type or category code: 1 to 64 letters, digits and
// _ . : -.
func ValidCode(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("_.:-", c)) {
			return false
		}
	}
	return true
}

// Viewer is who reads: the audience every view is projected for, and the narrowing of the client,
// if any. The zero Viewer is an anonymous caller.
type Viewer struct {
	Audience  Audience
	Narrowing Narrowing
}

// Client ID prefixes: partner-organisation clients work in every directory that gave the
// organisation access; directory clients in their one directory.
const (
	PartnerClientPrefix   = "dirp_"
	DirectoryClientPrefix = "dirc_"
)

// RateLimit is a client's agreed request limit in one directory.
type RateLimit struct {
	PerMinute int `json:"perMinute"`
	PerDay    int `json:"perDay"`
}

// SandboxLimit is the low request limit of sandbox grants.
var SandboxLimit = RateLimit{PerMinute: 30, PerDay: 1000}

// DefaultPartnerLimit is the limit of a grant that states none.
var DefaultPartnerLimit = RateLimit{PerMinute: 600, PerDay: 200_000}

// Grant is what one directory gave one client.
type Grant struct {
	Directory string    `json:"directory"`
	Tier      Audience  `json:"tier"`
	Agreement string    `json:"agreement,omitempty"`
	Scopes    []string  `json:"scopes"`
	Narrowing Narrowing `json:"narrowing"`
	Limit     RateLimit `json:"limit"`
	// Sandbox marks the grant of a sandbox client in the demonstration directory.
	Sandbox bool `json:"sandbox,omitempty"`
}

// Validate checks a grant: a served tier, known scopes, a valid narrowing and a positive limit; a
// sandbox grant holds no explicit scope.
func (g *Grant) Validate() error {
	if !ValidSlug(g.Directory) {
		return InvalidParam("directory", "%q is not a directory slug", g.Directory)
	}
	if !slices.Contains(ServedAudiences, g.Tier) {
		return InvalidParam("tier", "the tier must be public, professional or partner")
	}
	for _, s := range g.Scopes {
		if !ValidScope(s) {
			return InvalidParam("scopes", "unknown scope %q", s)
		}
		if g.Sandbox && slices.Contains(ExplicitScopes, s) {
			return InvalidParam("scopes", "the sandbox never has %s", s)
		}
		if s == ScopeLeadershipRead && g.Tier == Public {
			return InvalidParam("scopes", "leadership is shown only as health professionals see it: grant it to the professional or partner tier")
		}
	}
	if g.Limit.PerMinute < 1 || g.Limit.PerDay < 1 {
		return InvalidParam("limit", "the rate limit must allow at least one request a minute and a day")
	}
	return g.Narrowing.Validate()
}

// Client is a partner client: its ID, what it is, and the grants of the directories it may use. Its
// secret is never kept, only an HMAC of it.
type Client struct {
	ID   string `json:"clientId"`
	Name string `json:"name"`
	// Directory is the directory a directory client (DirectoryClientPrefix) belongs to, for life;
	// empty for a partner organisation's client.
	Directory string `json:"directory,omitempty"`
	Sandbox   bool   `json:"sandbox,omitempty"`
	// Contact is the address the client's people are reached at, and Purpose what they said they
	// will use the API for (both given at sandbox sign-up). Neither is ever logged or leaves the
	// primary.
	Contact string  `json:"contact,omitempty"`
	Purpose string  `json:"purpose,omitempty"`
	Grants  []Grant `json:"grants"`
	Revoked bool    `json:"revoked,omitempty"`
	// Keys are the public keys the client may authenticate with instead of its secret (a JWT
	// assertion, private_key_jwt); nil when it has none.
	Keys *JWKS `json:"jwks,omitempty"`
	// NoSecret marks a client that has no secret: it authenticates with its keys alone.
	NoSecret bool `json:"noSecret,omitempty"`
}

// Grant returns the client's grant in the directory, or nil.
func (c *Client) Grant(dir string) *Grant {
	for i := range c.Grants {
		if c.Grants[i].Directory == dir {
			return &c.Grants[i]
		}
	}
	return nil
}

// AccessRequest is a partner's request for access to a directory. PractitionerListReason says why
// the partner needs practitioners in bulk; it is required when practitioners:read is asked for.
type AccessRequest struct {
	ID                     int64    `json:"id"`
	Client                 string   `json:"clientId"`
	Directory              string   `json:"directory"`
	Scopes                 []string `json:"scopes"`
	PractitionerListReason string   `json:"practitionerListReason,omitempty"`
	Status                 string   `json:"status"` // pending, granted or refused
	// Keys are public keys the client asks to authenticate with; they replace its keys when the
	// request is approved, never before (a stolen secret cannot plant a lasting key unseen).
	Keys *JWKS `json:"jwks,omitempty"`
}

// Validate checks an access request.
func (r *AccessRequest) Validate() error {
	if !ValidSlug(r.Directory) {
		return InvalidParam("directory", "%q is not a directory slug", r.Directory)
	}
	for _, s := range r.Scopes {
		if !ValidScope(s) {
			return InvalidParam("scopes", "unknown scope %q", s)
		}
	}
	if slices.Contains(r.Scopes, ScopePractitionersRead) && strings.TrimSpace(r.PractitionerListReason) == "" {
		return InvalidParam("practitionerListReason", "say why practitioners are needed in bulk")
	}
	if len(r.PractitionerListReason) > 2000 {
		return InvalidParam("practitionerListReason", "at most 2000 characters")
	}
	return CheckText("practitionerListReason", r.PractitionerListReason)
}

// SigningKey is the public half of a token signing key.
type SigningKey struct {
	ID        string
	Public    ed25519.PublicKey
	CreatedAt time.Time
}

// ClientStore keeps partner clients, their grants and access requests, and the public token keys.
type ClientStore interface {
	// CreateClient stores a new client with the MAC of its secret (none when c.NoSecret) and its
	// keys; a conflict when the ID is taken.
	CreateClient(ctx context.Context, c *Client, secretMAC []byte) error
	// Client returns a client and the MAC of its secret; ErrNotFound for an unknown ID.
	Client(ctx context.Context, id string) (*Client, []byte, error)
	// Clients returns every client, revoked ones included, in ID order.
	Clients(ctx context.Context) ([]Client, error)
	// SetClientSecret replaces the MAC of a client's secret.
	SetClientSecret(ctx context.Context, id string, secretMAC []byte) error
	// SetClientKeys replaces a live client's public keys (nil removes them); its tokens issued
	// before are refused from then on.
	SetClientKeys(ctx context.Context, id string, keys *JWKS) error
	// UseAssertionID records the jti of a client's assertion until expires (Unix seconds), dropping
	// those expired at now; false when it was recorded already (a replay).
	UseAssertionID(ctx context.Context, clientID, jti string, expires, now int64) (bool, error)
	// RevokeClient revokes a client for good.
	RevokeClient(ctx context.Context, id string) error
	// PutGrant adds or replaces the client's grant in g.Directory.
	PutGrant(ctx context.Context, id string, g Grant) error
	// RemoveGrant removes the client's grant in a directory.
	RemoveGrant(ctx context.Context, id, dir string) error
	// CreateAccessRequest records a request for access and sets its ID.
	CreateAccessRequest(ctx context.Context, r *AccessRequest) error
	// AccessRequest returns one access request.
	AccessRequest(ctx context.Context, id int64) (*AccessRequest, error)
	// AccessRequests returns every access request, newest first.
	AccessRequests(ctx context.Context) ([]AccessRequest, error)
	// SetAccessRequestStatus records the decision on a request.
	SetAccessRequestStatus(ctx context.Context, id int64, status string) error
	// SigningKeys returns the public token keys, oldest first.
	SigningKeys(ctx context.Context) ([]SigningKey, error)
	// AddSigningKey stores a new public token key.
	AddSigningKey(ctx context.Context, k SigningKey) error
	// RetireSigningKey withdraws a public token key: tokens it signed are refused from then on.
	RetireSigningKey(ctx context.Context, kid string) error
	// TokensValidFrom returns the earliest issue time (Unix seconds) of a client's tokens still
	// honoured; 0 when its tokens were never cut off.
	TokensValidFrom(clientID string) int64
	// ServerKeyCheck returns the check value of the server key recorded last (nil before the first),
	// and the ID of the signing key whose server key made the MACs of clients stored before check
	// values were kept ("" when there was none). A check value tells server keys apart without
	// revealing them.
	ServerKeyCheck(ctx context.Context) (check []byte, legacyKeyID string, err error)
	// RecordServerKeyCheck records the check value of the server key: clients created or given a new
	// secret from then on are marked with it, and, with adoptLegacy, so are clients stored before
	// check values were kept.
	RecordServerKeyCheck(ctx context.Context, check []byte, adoptLegacy bool) error
	// ClientKeyChecks returns, for every client not revoked that has a secret, the check value of
	// the server key its secret's MAC was made under; nil for a client stored before check values
	// were kept.
	ClientKeyChecks(ctx context.Context) (map[string][]byte, error)
}
