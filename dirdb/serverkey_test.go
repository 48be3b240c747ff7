package dirdb_test

import (
	"bytes"
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/schema"
)

// TestUpgradeNamesTheSigningKeyOfEarlierClients opens a platform file written before check values
// were kept: its clients are marked with none, and the newest signing key names the server key their
// MACs were made under, until a start that knows the key adopts them.
func TestUpgradeNamesTheSigningKeyOfEarlierClients(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "platform.db"))
	if err != nil {
		t.Fatal(err)
	}
	ms, err := schema.Migrations(schema.Platform)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms[:2] { // the schema before check values
		if _, err := db.Exec(m.SQL); err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
	}
	pub := bytes.Repeat([]byte{1}, 32)
	for _, q := range []string{
		"PRAGMA user_version = 2",
		"INSERT INTO signing_keys VALUES ('old', ?, '2026-01-01T00:00:00Z')",
		"INSERT INTO signing_keys VALUES ('newest', ?, '2026-06-01T00:00:00Z')",
		"INSERT INTO clients (client_id, name, secret_mac, created_at) VALUES ('dirp_before', 'Before', ?, '2026-06-02T00:00:00Z')",
	} {
		if _, err := db.Exec(q, pub); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()

	s, err := dirdb.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	check, legacy, err := s.ServerKeyCheck(ctx)
	if err != nil || check != nil || legacy != "newest" {
		t.Fatalf("ServerKeyCheck = %x, %q, %v; want none recorded and the newest signing key", check, legacy, err)
	}
	checks, err := s.ClientKeyChecks(ctx)
	if c, ok := checks["dirp_before"]; err != nil || !ok || c != nil {
		t.Fatalf("ClientKeyChecks = %v, %v; want the earlier client unmarked", checks, err)
	}

	// A recorded check marks clients created and secrets rotated from then on; the earlier client
	// only when adopted.
	k1, k2 := bytes.Repeat([]byte{0xa1}, 32), bytes.Repeat([]byte{0xb2}, 32)
	if err := s.RecordServerKeyCheck(ctx, k1, false); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateClient(ctx, &dirsvc.Client{ID: "dirp_after", Name: "After"}, pub); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateClient(ctx, &dirsvc.Client{ID: "dirp_revoked", Name: "Revoked"}, pub); err != nil {
		t.Fatal(err)
	}
	if err := s.RevokeClient(ctx, "dirp_revoked"); err != nil {
		t.Fatal(err)
	}
	checks, _ = s.ClientKeyChecks(ctx)
	if len(checks) != 2 || checks["dirp_before"] != nil || !bytes.Equal(checks["dirp_after"], k1) {
		t.Fatalf("after recording a check: %x", checks)
	}
	if err := s.RecordServerKeyCheck(ctx, k2, true); err != nil {
		t.Fatal(err)
	}
	if err := s.SetClientSecret(ctx, "dirp_after", pub); err != nil {
		t.Fatal(err)
	}
	checks, _ = s.ClientKeyChecks(ctx)
	if !bytes.Equal(checks["dirp_before"], k2) || !bytes.Equal(checks["dirp_after"], k2) {
		t.Fatalf("after adopting and rotating under another check: %x", checks)
	}
	if check, legacy, _ := s.ServerKeyCheck(ctx); !bytes.Equal(check, k2) || legacy != "newest" {
		t.Fatalf("ServerKeyCheck = %x, %q", check, legacy)
	}
}
