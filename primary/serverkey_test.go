package primary_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/edge"
	"github.com/dirsvc/dirsvc/primary"
)

// keyFolder is a data folder with its store and key file.
type keyFolder struct {
	dir   string
	store *dirdb.Store
	log   bytes.Buffer
}

func newKeyFolder(tb testing.TB, dir string) *keyFolder {
	tb.Helper()
	store, err := dirdb.Open(context.Background(), dir)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { store.Close() })
	return &keyFolder{dir: dir, store: store}
}

func (f *keyFolder) path() string { return filepath.Join(f.dir, "server.key") }

// load runs LoadServerKey on the folder with the key env in the environment.
func (f *keyFolder) load(env string, acceptNew bool) ([]byte, error) {
	return primary.LoadServerKey(context.Background(), f.store, primary.ServerKeyConfig{Path: f.path(), Env: env,
		AcceptNew: acceptNew, Log: slog.New(slog.NewTextHandler(&f.log, nil))})
}

// client creates a partner client under key and returns its ID and secret.
func (f *keyFolder) client(tb testing.TB, key []byte) (id, secret string) {
	tb.Helper()
	a, err := primary.NewAccess(context.Background(), f.store, key, nil)
	if err != nil {
		tb.Fatal(err)
	}
	c, secret, err := a.CreateClient(context.Background(), primary.NewClient{Name: "Partner"})
	if err != nil {
		tb.Fatal(err)
	}
	return c.ID, secret
}

func readFile(tb testing.TB, path string) string {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

func TestServerKeyHasOneEncoding(t *testing.T) {
	key := bytes.Repeat([]byte{0x5c}, primary.ServerKeySize)
	b64 := base64.StdEncoding.EncodeToString(key)

	t.Run("a new key file is base64, mode 0600, and a fresh folder says nothing", func(t *testing.T) {
		f := newKeyFolder(t, t.TempDir())
		k, err := f.load("", false)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := readFile(t, f.path()), primary.EncodeServerKey(k)+"\n"; got != want || len(k) != primary.ServerKeySize {
			t.Fatalf("key file %q, want the %d-byte key in base64", got, primary.ServerKeySize)
		}
		if fi, _ := os.Stat(f.path()); fi.Mode().Perm() != 0o600 {
			t.Errorf("key file mode %v, want 0600", fi.Mode().Perm())
		}
		again, err := f.load("", false)
		if err != nil || !bytes.Equal(again, k) || f.log.Len() > 0 {
			t.Fatalf("second load: %v, same key %v, log:\n%s", err, bytes.Equal(again, k), &f.log)
		}
	})
	t.Run("the key file of an earlier build (hex) loads and is rewritten in base64", func(t *testing.T) {
		f := newKeyFolder(t, t.TempDir())
		os.WriteFile(f.path(), []byte(hex.EncodeToString(key)+"\n"), 0o600)
		k, err := f.load("", false)
		if err != nil || !bytes.Equal(k, key) {
			t.Fatalf("load = %x, %v; want the hex file's key", k, err)
		}
		if got := readFile(t, f.path()); got != b64+"\n" {
			t.Fatalf("key file after loading %q, want the same key in base64", got)
		}
		if fi, _ := os.Stat(f.path()); fi.Mode().Perm() != 0o600 {
			t.Errorf("key file mode %v, want 0600", fi.Mode().Perm())
		}
		if !strings.Contains(f.log.String(), "rewrote the key file from hex to base64") || strings.Contains(f.log.String(), b64) ||
			strings.Contains(f.log.String(), hex.EncodeToString(key)) {
			t.Errorf("log:\n%s", &f.log)
		}
	})
	t.Run("the environment takes what the file holds", func(t *testing.T) {
		f := newKeyFolder(t, t.TempDir())
		file, err := f.load("", false)
		if err != nil {
			t.Fatal(err)
		}
		k, err := f.load(readFile(t, f.path()), false)
		if err != nil || !bytes.Equal(k, file) || f.log.Len() > 0 {
			t.Fatalf("load with the file's text in the environment: %v, same key %v, log:\n%s", err, bytes.Equal(k, file), &f.log)
		}
	})
	t.Run("the environment and the file differing is logged", func(t *testing.T) {
		f := newKeyFolder(t, t.TempDir())
		if _, err := f.load("", false); err != nil {
			t.Fatal(err)
		}
		k, err := f.load(b64, false)
		if err != nil || !bytes.Equal(k, key) {
			t.Fatalf("load = %v; want the environment's key", err)
		}
		if log := f.log.String(); !strings.Contains(log, "level=WARN") || !strings.Contains(log, "different server keys") || strings.Contains(log, b64) {
			t.Fatalf("log:\n%s", log)
		}
	})
	for _, tc := range []struct {
		name    string
		hex     string
		clients bool // the folder has a partner client made under the key
	}{
		{"the hex of the folder's own key", hex.EncodeToString(key), true},
		{"hex on a new folder", hex.EncodeToString(key), false},
		{"hex of a short key", hex.EncodeToString(key[:16]), false},
	} {
		t.Run("a key in hex in the environment is refused, saying it looks like hex and which form is wanted: "+tc.name, func(t *testing.T) {
			f := newKeyFolder(t, t.TempDir())
			if tc.clients {
				os.WriteFile(f.path(), []byte(b64+"\n"), 0o600)
				if _, err := f.load("", false); err != nil {
					t.Fatal(err)
				}
				f.client(t, key)
				os.Remove(f.path()) // restored without its key file
			}
			_, err := f.load(tc.hex, false)
			if err == nil || errors.Is(err, primary.ErrServerKeyMismatch) {
				t.Fatalf("load with the key in hex = %v; want the key's form refused", err)
			}
			for _, want := range []string{"looks like hex", "standard base64", "dirsvc platform server-key", "xxd -r -p | base64"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the error does not say %q: %v", want, err)
				}
			}
			if strings.Contains(err.Error(), tc.hex) || strings.Contains(f.log.String(), tc.hex) || strings.Contains(f.log.String(), "partner clients cannot authenticate") {
				t.Errorf("error %v, log:\n%s", err, &f.log)
			}
			if _, err := os.Stat(f.path()); err == nil {
				t.Error("a refused key made a key file")
			}
		})
	}
	t.Run("a key printed as 64 hex digits (48 bytes in base64) is taken on the folder that uses it", func(t *testing.T) {
		// Earlier builds read such a key as base64, and dirsvc platform server-key prints it back
		// as the same text: what it prints is accepted.
		f := newKeyFolder(t, t.TempDir())
		h := hex.EncodeToString(key)
		k48, _ := base64.StdEncoding.DecodeString(h)
		if err := f.store.RecordServerKeyCheck(context.Background(), primary.KeyCheck(k48), false); err != nil {
			t.Fatal(err)
		}
		f.client(t, k48)
		k, err := f.load(h, false)
		if err != nil || !bytes.Equal(k, k48) || primary.EncodeServerKey(k) != h {
			t.Fatalf("load = %v, or not the key the folder uses", err)
		}
	})
	for name, env := range map[string]string{"too short": base64.StdEncoding.EncodeToString(key[:16]), "not base64": "not a key!"} {
		t.Run("a bad key in the environment is an error: "+name, func(t *testing.T) {
			f := newKeyFolder(t, t.TempDir())
			if _, err := f.load(env, false); err == nil || strings.Contains(err.Error(), env) {
				t.Fatalf("load = %v", err)
			}
		})
	}
}

// restore copies the platform file of a closed folder into a new folder, as a restore from backups
// does: the key file is not among the files restored.
func restore(t *testing.T, from *keyFolder) *keyFolder {
	t.Helper()
	from.store.Close()
	to := t.TempDir()
	b := readFile(t, filepath.Join(from.dir, "platform.db"))
	if err := os.WriteFile(filepath.Join(to, "platform.db"), []byte(b), 0o600); err != nil {
		t.Fatal(err)
	}
	return newKeyFolder(t, to)
}

func TestRestoredFolderWithoutItsKeyIsRefused(t *testing.T) {
	orig := newKeyFolder(t, t.TempDir())
	key, err := orig.load("", false)
	if err != nil {
		t.Fatal(err)
	}
	id, secret := orig.client(t, key)
	f := restore(t, orig)

	_, err = f.load("", false)
	if !errors.Is(err, primary.ErrServerKeyMismatch) {
		t.Fatalf("load without the key: %v; want ErrServerKeyMismatch", err)
	}
	if log := f.log.String(); !strings.Contains(log, "level=ERROR") || !strings.Contains(log, "clients=1") ||
		!strings.Contains(log, id) || !strings.Contains(log, "Disaster recovery") {
		t.Fatalf("log:\n%s", log)
	}
	if _, err := os.Stat(f.path()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused start left a key file: %v", err)
	}
	// A wrong key in the environment is refused the same way.
	if _, err := f.load(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, 32)), false); !errors.Is(err, primary.ErrServerKeyMismatch) {
		t.Fatalf("load with a wrong key: %v", err)
	}

	// The right key, in the environment, verifies the client: it authenticates again.
	f.log.Reset()
	k, err := f.load(primary.EncodeServerKey(key), false)
	if err != nil || !bytes.Equal(k, key) || f.log.Len() > 0 {
		t.Fatalf("load with the right key: %v, log:\n%s", err, &f.log)
	}
	if !tokenOK(t, f.store, k, id, secret) {
		t.Fatal("the client does not authenticate under its key")
	}
}

// tokenOK reports whether the client obtains a token from the token endpoint over store and key.
func tokenOK(t *testing.T, store *dirdb.Store, key []byte, id, secret string) bool {
	t.Helper()
	a, err := primary.NewAccess(context.Background(), store, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Grant(context.Background(), id, dirsvc.Grant{Directory: "small", Tier: dirsvc.Partner,
		Scopes: []string{dirsvc.ScopeGraphRead}, Limit: dirsvc.DefaultPartnerLimit}); err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("POST", edge.TokenPath, strings.NewReader("grant_type=client_credentials"))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.SetBasicAuth(id, secret)
	w := httptest.NewRecorder()
	a.HandleToken(slog.New(slog.NewTextHandler(io.Discard, nil))).ServeHTTP(w, r)
	status, body := w.Code, w.Body.String()
	if status != 200 && (status != 401 || !strings.Contains(body, `"error":"invalid_client"`) || strings.Contains(body, "key")) {
		t.Fatalf("token: %d %s", status, body)
	}
	return status == 200
}

func TestNewKeyAcceptedUntilEveryClientIsRotated(t *testing.T) {
	orig := newKeyFolder(t, t.TempDir())
	key, err := orig.load("", false)
	if err != nil {
		t.Fatal(err)
	}
	id, secret := orig.client(t, key)
	revoked, _ := orig.client(t, key)
	a, _ := primary.NewAccess(context.Background(), orig.store, key, nil)
	if err := a.Revoke(context.Background(), revoked); err != nil {
		t.Fatal(err)
	}
	f := restore(t, orig)

	// The key is lost for good: the operator accepts a new one. The loss stays loud on every start
	// until the client has a new secret; the revoked client never counts.
	k, err := f.load("", true)
	if err != nil || bytes.Equal(k, key) {
		t.Fatalf("load accepting a new key: %v", err)
	}
	if log := f.log.String(); !strings.Contains(log, "level=ERROR") || !strings.Contains(log, "clients=1") || strings.Contains(log, revoked) {
		t.Fatalf("log:\n%s", log)
	}
	if tokenOK(t, f.store, k, id, secret) {
		t.Fatal("a client made under the lost key authenticates")
	}
	if _, err := f.load("", false); !errors.Is(err, primary.ErrServerKeyMismatch) {
		t.Fatalf("the next start without accepting: %v", err)
	}
	a, err = primary.NewAccess(context.Background(), f.store, k, nil)
	if err != nil {
		t.Fatal(err)
	}
	secret, err = a.RotateSecret(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	f.log.Reset()
	if _, err := f.load("", false); err != nil || f.log.Len() > 0 {
		t.Fatalf("a start once every client is rotated: %v, log:\n%s", err, &f.log)
	}
	if !tokenOK(t, f.store, k, id, secret) {
		t.Fatal("the rotated client does not authenticate")
	}
}

// TestClientsOfEarlierBuildsAreCheckedByTheirSigningKey: clients stored before check values were kept
// are adopted by a start with the key they were made under (which derives the newest signing key of
// that time) and refused with any other.
func TestClientsOfEarlierBuildsAreCheckedByTheirSigningKey(t *testing.T) {
	ctx := context.Background()
	orig := newKeyFolder(t, t.TempDir())
	key := bytes.Repeat([]byte{0x33}, primary.ServerKeySize)
	os.WriteFile(orig.path(), []byte(hex.EncodeToString(key)+"\n"), 0o600)
	id, secret := orig.client(t, key)
	// What the migration makes of a platform file of an earlier build: no check recorded, the
	// client unmarked, the newest signing key named.
	orig.store.Close()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(orig.dir, "platform.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE clients SET key_check = NULL;
UPDATE server_key SET check_value = NULL, legacy_kid = (SELECT kid FROM signing_keys ORDER BY created_at DESC LIMIT 1)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	restored := restore(t, newKeyFolder(t, orig.dir))
	if _, err := restored.load("", false); !errors.Is(err, primary.ErrServerKeyMismatch) || !strings.Contains(restored.log.String(), id) {
		t.Fatalf("an earlier build's folder restored without its key: %v\n%s", err, &restored.log)
	}

	up := newKeyFolder(t, orig.dir) // upgraded in place, with its hex key file
	k, err := up.load("", false)
	if err != nil || !bytes.Equal(k, key) || strings.Contains(up.log.String(), "ERROR") {
		t.Fatalf("upgrade in place: %v\n%s", err, &up.log)
	}
	checks, err := up.store.ClientKeyChecks(ctx)
	if err != nil || !bytes.Equal(checks[id], primary.KeyCheck(key)) {
		t.Fatalf("the earlier client is not marked with its key: %x %v", checks, err)
	}
	if !tokenOK(t, up.store, k, id, secret) {
		t.Fatal("the earlier client does not authenticate after the upgrade")
	}
}

// TestAnotherKeyInTheEnvironmentIsRefused: a key set in the environment that is not the file's, on a
// folder whose clients were made under the file's, is refused, and the error says the file holds
// theirs.
func TestAnotherKeyInTheEnvironmentIsRefused(t *testing.T) {
	f := newKeyFolder(t, t.TempDir())
	key, err := f.load("", false)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := f.client(t, key)
	other := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, primary.ServerKeySize))
	if _, err := f.load(other, false); !errors.Is(err, primary.ErrServerKeyMismatch) {
		t.Fatalf("load with another key in the environment: %v", err)
	}
	log := f.log.String()
	if !strings.Contains(log, "different server keys") || !strings.Contains(log, "clients=1 ids="+id) ||
		!strings.Contains(log, "holds the key they were made under") || strings.Contains(log, other) {
		t.Fatalf("log:\n%s", log)
	}
}
