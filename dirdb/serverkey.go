package dirdb

import (
	"context"
	"database/sql"
	"fmt"
)

// ServerKeyCheck returns the check value of the server key recorded last (nil before the first) and
// the ID of the signing key whose server key made the MACs of clients stored before check values were
// kept ("" when the platform had no signing key then).
func (s *Store) ServerKeyCheck(ctx context.Context) ([]byte, string, error) {
	var (
		check  []byte
		legacy sql.NullString
	)
	err := s.platform.QueryRowContext(ctx, "SELECT check_value, legacy_kid FROM server_key WHERE id = 1").
		Scan(&check, &legacy)
	if err != nil {
		return nil, "", fmt.Errorf("read server key check: %w", err)
	}
	return check, legacy.String, nil
}

// RecordServerKeyCheck records the check value of the server key: clients created or given a new
// secret from now on are marked with it, and, with adoptLegacy, so are clients stored before check
// values were kept. One transaction.
func (s *Store) RecordServerKeyCheck(ctx context.Context, check []byte, adoptLegacy bool) error {
	tx, err := s.platform.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "UPDATE server_key SET check_value = ?, recorded_at = ? WHERE id = 1",
		check, nowText()); err != nil {
		return fmt.Errorf("record server key check: %w", err)
	}
	if adoptLegacy {
		if _, err := tx.ExecContext(ctx, "UPDATE clients SET key_check = ? WHERE key_check IS NULL", check); err != nil {
			return fmt.Errorf("mark clients with the server key check: %w", err)
		}
	}
	return tx.Commit()
}

// ClientKeyChecks returns, for every client not revoked that has a secret, the check value of the
// server key its secret's MAC was made under; nil for a client stored before check values were kept.
// A client with keys alone does not depend on the server key.
func (s *Store) ClientKeyChecks(ctx context.Context) (map[string][]byte, error) {
	rows, err := s.platform.QueryContext(ctx, "SELECT client_id, key_check FROM clients WHERE revoked_at IS NULL AND length(secret_mac) > 0")
	if err != nil {
		return nil, fmt.Errorf("read client key checks: %w", err)
	}
	defer rows.Close()
	out := map[string][]byte{}
	for rows.Next() {
		var (
			id    string
			check []byte
		)
		if err := rows.Scan(&id, &check); err != nil {
			return nil, err
		}
		out[id] = check
	}
	return out, rows.Err()
}
