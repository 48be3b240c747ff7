package dirdb

import (
	"context"
	"crypto/ed25519"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/dirsvc/dirsvc"
)

// The store keeps partner clients in platform.db (see dirsvc.ClientStore).
var _ dirsvc.ClientStore = (*Store)(nil)

func nowText() string { return time.Now().UTC().Format(time.RFC3339Nano) }

// CreateClient stores a new client, its keys and its grants in one transaction, marked with the check
// value of the server key recorded last (see RecordServerKeyCheck). A client with NoSecret keeps an
// empty MAC, which no secret's equals.
func (s *Store) CreateClient(ctx context.Context, c *dirsvc.Client, secretMAC []byte) error {
	if c.NoSecret || secretMAC == nil {
		secretMAC = []byte{}
	}
	keys, err := keysJSON(c.Keys)
	if err != nil {
		return err
	}
	tx, err := s.platform.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `
INSERT INTO clients (client_id, name, sandbox, secret_mac, created_at, key_check, directory, contact, purpose, jwks)
VALUES (?, ?, ?, ?, ?, (SELECT check_value FROM server_key WHERE id = 1), NULLIF(?, ''), NULLIF(?, ''), NULLIF(?, ''), ?)
ON CONFLICT (client_id) DO NOTHING`, c.ID, c.Name, c.Sandbox, secretMAC, nowText(), c.Directory, c.Contact, c.Purpose, keys)
	if err != nil {
		return fmt.Errorf("create client: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return dirsvc.Errorf(dirsvc.EConflict, "client %s exists", c.ID)
	}
	for _, g := range c.Grants {
		if err := putGrant(ctx, tx, c.ID, g); err != nil {
			return err
		}
	}
	return tx.Commit()
}

func putGrant(ctx context.Context, tx *sql.Tx, id string, g dirsvc.Grant) error {
	doc, err := json.Marshal(g)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `
INSERT INTO grants (client_id, directory, doc) VALUES (?, ?, ?)
ON CONFLICT (client_id, directory) DO UPDATE SET doc = excluded.doc`, id, g.Directory, doc)
	if err != nil {
		return fmt.Errorf("grant %s to %s: %w", g.Directory, id, err)
	}
	return nil
}

// keysJSON returns the JSON of a client's keys as the platform file keeps them: NULL for none.
func keysJSON(keys *dirsvc.JWKS) (any, error) {
	if keys == nil {
		return nil, nil
	}
	b, err := json.Marshal(keys)
	if err != nil {
		return nil, fmt.Errorf("encode client keys: %w", err)
	}
	return string(b), nil
}

// parseKeys reads keys as keysJSON wrote them.
func parseKeys(raw sql.NullString) (*dirsvc.JWKS, error) {
	if !raw.Valid {
		return nil, nil
	}
	keys := &dirsvc.JWKS{}
	if err := json.Unmarshal([]byte(raw.String), keys); err != nil {
		return nil, fmt.Errorf("decode client keys: %w", err)
	}
	return keys, nil
}

// Client returns a client with its grants and keys, and the MAC of its secret (empty when it has
// none).
func (s *Store) Client(ctx context.Context, id string) (*dirsvc.Client, []byte, error) {
	c := &dirsvc.Client{ID: id}
	var (
		mac     []byte
		revoked sql.NullString
		keys    sql.NullString
	)
	err := s.platform.QueryRowContext(ctx,
		"SELECT name, COALESCE(directory, ''), sandbox, COALESCE(contact, ''), COALESCE(purpose, ''), secret_mac, revoked_at, jwks FROM clients WHERE client_id = ?", id).
		Scan(&c.Name, &c.Directory, &c.Sandbox, &c.Contact, &c.Purpose, &mac, &revoked, &keys)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, dirsvc.ErrNotFound
	} else if err != nil {
		return nil, nil, fmt.Errorf("read client: %w", err)
	}
	c.Revoked, c.NoSecret = revoked.Valid, len(mac) == 0
	if c.Keys, err = parseKeys(keys); err != nil {
		return nil, nil, fmt.Errorf("client %s: %w", id, err)
	}
	if c.Grants, err = s.grants(ctx, "WHERE client_id = ?", id); err != nil {
		return nil, nil, err
	}
	return c, mac, nil
}

func (s *Store) grants(ctx context.Context, where string, args ...any) ([]dirsvc.Grant, error) {
	rows, err := s.platform.QueryContext(ctx, "SELECT doc FROM grants "+where+" ORDER BY client_id, directory", args...)
	if err != nil {
		return nil, fmt.Errorf("read grants: %w", err)
	}
	defer rows.Close()
	out := []dirsvc.Grant{}
	for rows.Next() {
		var doc []byte
		if err := rows.Scan(&doc); err != nil {
			return nil, err
		}
		var g dirsvc.Grant
		if err := json.Unmarshal(doc, &g); err != nil {
			return nil, fmt.Errorf("decode grant: %w", err)
		}
		out = append(out, g)
	}
	return out, rows.Err()
}

// Clients returns every client in ID order.
func (s *Store) Clients(ctx context.Context) ([]dirsvc.Client, error) {
	rows, err := s.platform.QueryContext(ctx,
		"SELECT client_id, name, COALESCE(directory, ''), sandbox, COALESCE(contact, ''), COALESCE(purpose, ''), revoked_at IS NOT NULL, length(secret_mac) = 0, jwks FROM clients ORDER BY client_id")
	if err != nil {
		return nil, fmt.Errorf("list clients: %w", err)
	}
	var out []dirsvc.Client
	for rows.Next() {
		var (
			c    dirsvc.Client
			keys sql.NullString
		)
		if err := rows.Scan(&c.ID, &c.Name, &c.Directory, &c.Sandbox, &c.Contact, &c.Purpose, &c.Revoked, &c.NoSecret, &keys); err != nil {
			rows.Close()
			return nil, err
		}
		if c.Keys, err = parseKeys(keys); err != nil {
			rows.Close()
			return nil, fmt.Errorf("client %s: %w", c.ID, err)
		}
		out = append(out, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for i := range out {
		if out[i].Grants, err = s.grants(ctx, "WHERE client_id = ?", out[i].ID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// updateClient runs an UPDATE of one live client; ErrNotFound when there is none.
func (s *Store) updateClient(ctx context.Context, query string, args ...any) error {
	res, err := s.platform.ExecContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("update client: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return dirsvc.ErrNotFound
	}
	return nil
}

// SetClientSecret replaces the MAC of a live client's secret, marked with the check value of the
// server key recorded last; the client's tokens issued before are refused from now on.
func (s *Store) SetClientSecret(ctx context.Context, id string, secretMAC []byte) error {
	return s.changeAccess(ctx, id, `
UPDATE clients SET secret_mac = ?, rotated_at = ?, key_check = (SELECT check_value FROM server_key WHERE id = 1)
WHERE client_id = ? AND revoked_at IS NULL`, secretMAC, nowText(), id)
}

// SetClientKeys replaces a live client's public keys (nil removes them); the client's tokens issued
// before are refused from now on, as after a new secret.
func (s *Store) SetClientKeys(ctx context.Context, id string, keys *dirsvc.JWKS) error {
	doc, err := keysJSON(keys)
	if err != nil {
		return err
	}
	return s.changeAccess(ctx, id, "UPDATE clients SET jwks = ? WHERE client_id = ? AND revoked_at IS NULL", doc, id)
}

// UseAssertionID records the jti of a client's assertion, kept until expires (Unix seconds), and
// drops the recorded ones that expired before now, in one transaction. It returns false when the
// client's jti is recorded already: the assertion was used before.
func (s *Store) UseAssertionID(ctx context.Context, clientID, jti string, expires, now int64) (bool, error) {
	tx, err := s.platform.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "DELETE FROM assertion_ids WHERE expires_at < ?", now); err != nil {
		return false, fmt.Errorf("drop expired assertion IDs: %w", err)
	}
	res, err := tx.ExecContext(ctx, `
INSERT INTO assertion_ids (client_id, jti, expires_at) VALUES (?, ?, ?)
ON CONFLICT (client_id, jti) DO NOTHING`, clientID, jti, expires)
	if err != nil {
		return false, fmt.Errorf("record assertion ID: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, err
	}
	return n == 1, tx.Commit()
}

// RevokeClient revokes a live client; its tokens are refused from now on.
func (s *Store) RevokeClient(ctx context.Context, id string) error {
	return s.changeAccess(ctx, id, "UPDATE clients SET revoked_at = ? WHERE client_id = ? AND revoked_at IS NULL", nowText(), id)
}

// PutGrant adds or replaces a live client's grant in a directory; the client's tokens issued before
// are refused from now on (they carry the grant they were issued under).
func (s *Store) PutGrant(ctx context.Context, id string, g dirsvc.Grant) error {
	return s.inAccessChange(ctx, id, func(tx *sql.Tx) error {
		var one int
		err := tx.QueryRowContext(ctx, "SELECT 1 FROM clients WHERE client_id = ? AND revoked_at IS NULL", id).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return dirsvc.ErrNotFound
		} else if err != nil {
			return err
		}
		return putGrant(ctx, tx, id, g)
	})
}

// RemoveGrant removes a client's grant in a directory; the client's tokens issued before are refused
// from now on.
func (s *Store) RemoveGrant(ctx context.Context, id, dir string) error {
	return s.changeAccess(ctx, id, "DELETE FROM grants WHERE client_id = ? AND directory = ?", id, dir)
}

// changeAccess runs a statement changing one client's access (ErrNotFound when it changes no row)
// and cuts off the client's tokens, in one transaction.
func (s *Store) changeAccess(ctx context.Context, id, query string, args ...any) error {
	return s.inAccessChange(ctx, id, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, query, args...)
		if err != nil {
			return fmt.Errorf("update client: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return dirsvc.ErrNotFound
		}
		return nil
	})
}

// inAccessChange runs change and then cuts off the client's tokens, in one transaction: the
// tokens issued before the change (in this second or earlier) are refused by every node that has the
// platform file from this commit on. Cut-offs whose tokens have all expired are dropped.
func (s *Store) inAccessChange(ctx context.Context, id string, change func(*sql.Tx) error) error {
	tx, err := s.platform.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := change(tx); err != nil {
		return err
	}
	now := time.Now().Unix()
	if _, err := tx.ExecContext(ctx, `
INSERT INTO token_cutoffs (client_id, valid_from) VALUES (?, ?)
ON CONFLICT (client_id) DO UPDATE SET valid_from = max(valid_from, excluded.valid_from)`, id, now+1); err != nil {
		return fmt.Errorf("cut off the client's tokens: %w", err)
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM token_cutoffs WHERE valid_from < ?", now-cutoffKept); err != nil {
		return fmt.Errorf("drop expired token cut-offs: %w", err)
	}
	return tx.Commit()
}

// cutoffKept is how long (in seconds) a cut-off is kept: until every token it refuses has expired,
// on a node whose clock is behind by the allowed skew too.
const cutoffKept = int64((dirsvc.TokenLifetime + 2*dirsvc.ClockSkew) / time.Second)

// CreateAccessRequest records a pending access request of a live client; ErrNotFound for any other,
// and a conflict naming the request that waits when the client has one pending for the directory.
func (s *Store) CreateAccessRequest(ctx context.Context, r *dirsvc.AccessRequest) error {
	var reason any
	if r.PractitionerListReason != "" {
		reason = r.PractitionerListReason
	}
	keys, err := keysJSON(r.Keys)
	if err != nil {
		return err
	}
	err = s.platform.QueryRowContext(ctx, `
INSERT INTO access_requests (client_id, directory, scopes, practitioner_list_reason, created_at, jwks)
SELECT client_id, ?, ?, ?, ?, ? FROM clients WHERE client_id = ? AND revoked_at IS NULL
ON CONFLICT (client_id, directory) WHERE status = 'pending' DO NOTHING
RETURNING id, status`, r.Directory, strings.Join(r.Scopes, " "), reason, nowText(), keys, r.Client).Scan(&r.ID, &r.Status)
	if !errors.Is(err, sql.ErrNoRows) {
		if err != nil {
			return fmt.Errorf("record access request: %w", err)
		}
		return nil
	}
	var pending int64
	err = s.platform.QueryRowContext(ctx, `
SELECT id FROM access_requests INDEXED BY access_requests_pending WHERE client_id = ? AND directory = ? AND status = 'pending'
AND EXISTS (SELECT 1 FROM clients WHERE client_id = ? AND revoked_at IS NULL)`, r.Client, r.Directory, r.Client).Scan(&pending)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return dirsvc.ErrNotFound
	case err != nil:
		return fmt.Errorf("record access request: %w", err)
	}
	return dirsvc.Errorf(dirsvc.EConflict, "Your request %d for access to this directory is pending: the operators answer it before you ask again.", pending)
}

const accessRequestColumns = "id, client_id, directory, scopes, COALESCE(practitioner_list_reason, ''), status, jwks"

func scanAccessRequest(sc scanner) (dirsvc.AccessRequest, error) {
	var (
		r      dirsvc.AccessRequest
		scopes string
		keys   sql.NullString
	)
	if err := sc.Scan(&r.ID, &r.Client, &r.Directory, &scopes, &r.PractitionerListReason, &r.Status, &keys); err != nil {
		return r, err
	}
	r.Scopes = strings.Fields(scopes)
	var err error
	if r.Keys, err = parseKeys(keys); err != nil {
		return r, fmt.Errorf("access request %d: %w", r.ID, err)
	}
	return r, nil
}

// AccessRequest returns one access request.
func (s *Store) AccessRequest(ctx context.Context, id int64) (*dirsvc.AccessRequest, error) {
	r, err := scanAccessRequest(s.platform.QueryRowContext(ctx,
		"SELECT "+accessRequestColumns+" FROM access_requests WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, dirsvc.ErrNotFound
	} else if err != nil {
		return nil, fmt.Errorf("read access request: %w", err)
	}
	return &r, nil
}

// AccessRequests returns every access request, newest first.
func (s *Store) AccessRequests(ctx context.Context) ([]dirsvc.AccessRequest, error) {
	rows, err := s.platform.QueryContext(ctx, "SELECT "+accessRequestColumns+" FROM access_requests ORDER BY id DESC")
	if err != nil {
		return nil, fmt.Errorf("list access requests: %w", err)
	}
	defer rows.Close()
	var out []dirsvc.AccessRequest
	for rows.Next() {
		r, err := scanAccessRequest(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// SetAccessRequestStatus records the decision on a pending request.
func (s *Store) SetAccessRequestStatus(ctx context.Context, id int64, status string) error {
	return s.updateClient(ctx, "UPDATE access_requests SET status = ? WHERE id = ? AND status = 'pending'", status, id)
}

// keyCache keeps the public token keys and the clients' token cut-offs in memory: every
// authenticated request needs them, and no request may wait on the database for them. They are read
// again whenever the platform file changes.
type keyCache struct {
	mu      sync.RWMutex
	keys    dirsvc.KeySet
	cutoffs map[string]int64
}

// SigningKeys returns the public token keys, oldest first.
func (s *Store) SigningKeys(ctx context.Context) ([]dirsvc.SigningKey, error) {
	return signingKeys(ctx, s.platform)
}

func signingKeys(ctx context.Context, db *sql.DB) ([]dirsvc.SigningKey, error) {
	rows, err := db.QueryContext(ctx, "SELECT kid, public_key, created_at FROM signing_keys ORDER BY created_at, kid")
	if err != nil {
		return nil, fmt.Errorf("read signing keys: %w", err)
	}
	defer rows.Close()
	var out []dirsvc.SigningKey
	for rows.Next() {
		var (
			k  dirsvc.SigningKey
			at string
		)
		if err := rows.Scan(&k.ID, &k.Public, &at); err != nil {
			return nil, err
		}
		if k.CreatedAt, err = time.Parse(time.RFC3339Nano, at); err != nil {
			return nil, fmt.Errorf("signing key %s: %w", k.ID, err)
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

// AddSigningKey stores a new public token key.
func (s *Store) AddSigningKey(ctx context.Context, k dirsvc.SigningKey) error {
	if len(k.Public) != ed25519.PublicKeySize {
		return fmt.Errorf("signing key %s: want a %d-byte public key", k.ID, ed25519.PublicKeySize)
	}
	_, err := s.platform.ExecContext(ctx, "INSERT INTO signing_keys (kid, public_key, created_at) VALUES (?, ?, ?)",
		k.ID, []byte(k.Public), k.CreatedAt.UTC().Format(time.RFC3339Nano))
	if err != nil {
		return fmt.Errorf("add signing key: %w", err)
	}
	return s.reloadKeys(ctx)
}

func (s *Store) reloadKeys(ctx context.Context) error {
	ks, err := s.SigningKeys(ctx)
	if err != nil {
		return err
	}
	set := dirsvc.KeySet{}
	for _, k := range ks {
		set[k.ID] = k.Public
	}
	cuts, err := tokenCutoffs(ctx, s.platform)
	if err != nil {
		return err
	}
	cutoffs := make(map[string]int64, len(cuts))
	for _, c := range cuts {
		cutoffs[c.ClientID] = c.ValidFrom
	}
	s.keys.mu.Lock()
	s.keys.keys, s.keys.cutoffs = set, cutoffs
	s.keys.mu.Unlock()
	return nil
}

// tokenCutoffs returns the clients' token cut-offs, by client ID.
func tokenCutoffs(ctx context.Context, db *sql.DB) ([]dirsvc.TokenCutoff, error) {
	rows, err := db.QueryContext(ctx, "SELECT client_id, valid_from FROM token_cutoffs ORDER BY client_id")
	if err != nil {
		return nil, fmt.Errorf("read token cut-offs: %w", err)
	}
	defer rows.Close()
	out := []dirsvc.TokenCutoff{}
	for rows.Next() {
		var c dirsvc.TokenCutoff
		if err := rows.Scan(&c.ClientID, &c.ValidFrom); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// RetireSigningKey withdraws a public token key: tokens it signed are refused from the commit on,
// here and on every edge the platform reaches. ErrNotFound when there is no such key.
func (s *Store) RetireSigningKey(ctx context.Context, kid string) error {
	res, err := s.platform.ExecContext(ctx, "DELETE FROM signing_keys WHERE kid = ?", kid)
	if err != nil {
		return fmt.Errorf("retire signing key: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return dirsvc.ErrNotFound
	}
	return s.reloadKeys(ctx)
}

// TokensValidFrom returns the earliest issue time (Unix seconds) of a client's access tokens that
// are still honoured, as the platform file holds it; 0 when the client's tokens were never cut off.
// It satisfies dirsvc.TokenKeys.
func (s *Store) TokensValidFrom(clientID string) int64 {
	s.freshKeys()
	s.keys.mu.RLock()
	defer s.keys.mu.RUnlock()
	return s.keys.cutoffs[clientID]
}

// TokenKey returns the public key named kid, as the platform file holds it (a key added by another
// process is found from its commit on); it satisfies dirsvc.TokenKeys.
func (s *Store) TokenKey(kid string) (ed25519.PublicKey, bool) {
	s.freshKeys()
	s.keys.mu.RLock()
	defer s.keys.mu.RUnlock()
	k, ok := s.keys.keys[kid]
	return k, ok
}

// PublicKeys returns every public token key, for the JWKS.
func (s *Store) PublicKeys() dirsvc.KeySet {
	s.freshKeys()
	s.keys.mu.RLock()
	defer s.keys.mu.RUnlock()
	out := make(dirsvc.KeySet, len(s.keys.keys))
	for id, k := range s.keys.keys {
		out[id] = k
	}
	return out
}

// freshKeys looks at the platform file before the keys are used. The keys' callers take no error:
// one is logged, and the keys kept are used.
func (s *Store) freshKeys() {
	if err := s.fresh(context.Background()); err != nil {
		slog.Error("look for changed token keys", "err", err)
	}
}
