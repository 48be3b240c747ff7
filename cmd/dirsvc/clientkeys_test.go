package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dirsvc/dirsvc/dirdb"
)

// writeJWKS writes a key set of a new P-384 key named kid to a file, and returns its path and the
// private key's D (which must never be kept).
func writeJWKS(t *testing.T, kid string, private bool) string {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := k.PublicKey.Bytes()
	enc := base64.RawURLEncoding.EncodeToString
	key := map[string]any{"kty": "EC", "kid": kid, "crv": "P-384", "x": enc(raw[1:49]), "y": enc(raw[49:])}
	if private {
		key["d"] = enc(k.D.Bytes())
	}
	b, _ := json.Marshal(map[string]any{"keys": []any{key}})
	path := filepath.Join(t.TempDir(), kid+".json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestClientKeysFromTheCommandLine: clients create --jwks registers a client's public keys (and with
// --no-secret no secret at all), keys replaces them, and approve installs the keys an access request
// carries; a private key or --no-secret without keys is refused.
func TestClientKeysFromTheCommandLine(t *testing.T) {
	data := importSmall(t)
	out, log, err := runCLI(t, "clients", "--data", data, "create", "--name", "Bulk client", "--directory", "small",
		"--scopes", "graph:read export:run", "--jwks", writeJWKS(t, "bulk-1", false), "--no-secret")
	if err != nil || !strings.Contains(out, `"noSecret":true`) || !strings.Contains(out, `"kid":"bulk-1"`) || strings.Contains(out, "clientSecret") {
		t.Fatalf("create --jwks --no-secret: %v\n%s%s", err, out, log)
	}
	id := regexp.MustCompile(`dirc_[0-9a-f]+`).FindString(out)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"create", "--name", "x", "--directory", "small", "--no-secret"}, "--jwks"},
		{[]string{"create", "--name", "x", "--directory", "small", "--jwks", writeJWKS(t, "p", true)}, "private"},
		{[]string{"keys", id, "--remove"}, "no secret"},
		{[]string{"keys", id}, "--jwks FILE or --remove"},
	} {
		if _, _, err := runCLI(t, append([]string{"clients", "--data", data}, c.args...)...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("clients %v: %v, want an error saying %q", c.args, err, c.want)
		}
	}
	if out, _, err := runCLI(t, "clients", "--data", data, "keys", id, "--jwks", writeJWKS(t, "bulk-2", false)); err != nil ||
		!strings.Contains(out, id+" authenticates with the keys bulk-2") {
		t.Errorf("keys --jwks: %v\n%s", err, out)
	}

	// A partner with a secret asks for access with keys; they are its keys once approved.
	partner := createPartner(t, data)
	if out, _, err := runCLI(t, "clients", "--data", data, "request", partner, "--directory", "small", "--scopes", "graph:read",
		"--jwks", writeJWKS(t, "partner-1", false)); err != nil || !strings.Contains(out, `"kid":"partner-1"`) {
		t.Fatalf("request --jwks: %v\n%s", err, out)
	}
	keysOf := func(id string) []string {
		store, err := dirdb.Open(context.Background(), data)
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		c, _, err := store.Client(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		return c.Keys.KeyIDs()
	}
	if got := keysOf(partner); got != nil {
		t.Errorf("the partner has keys %v before its request is approved", got)
	}
	if out, _, err := runCLI(t, "clients", "--data", data, "approve", "1"); err != nil || !strings.Contains(out, "it authenticates with the keys partner-1") {
		t.Errorf("approve: %v\n%s", err, out)
	}
	if got := keysOf(partner); len(got) != 1 || got[0] != "partner-1" {
		t.Errorf("the partner's keys after approval: %v", got)
	}
	if got := keysOf(id); len(got) != 1 || got[0] != "bulk-2" {
		t.Errorf("the bulk client's keys: %v", got)
	}
	// The platform file keeps no private key material: only public keys are ever stored.
	raw, _ := os.ReadFile(filepath.Join(data, "platform.db"))
	if strings.Contains(string(raw), `"d":`) {
		t.Error("platform.db holds a private key member")
	}
}
