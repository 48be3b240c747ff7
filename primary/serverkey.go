package primary

import (
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dirsvc/dirsvc"
)

// ServerKeySize is the size of a new server key in bytes; a key given must be at least this long.
const ServerKeySize = 32

// ErrServerKeyMismatch is returned by LoadServerKey when active partner clients' secrets were MACed
// under another server key: with this one, every token request of theirs fails.
var ErrServerKeyMismatch = errors.New("the server key is not the one the partner clients' secrets were made under")

// keyCheckLabel is what a server key's check value is the HMAC of. It is no purpose that derive is
// given elsewhere, so the check value is no subkey in use.
const keyCheckLabel = "server-key-check-value"

// KeyCheck returns the check value of a server key: HMAC-SHA256 of a fixed label under it. It tells
// keys apart and reveals nothing of a random 256-bit key, so platform.db can record which key the
// client secrets' MACs were made under.
func KeyCheck(key []byte) []byte { return derive(key, keyCheckLabel) }

// EncodeServerKey returns a server key in its one text form, standard base64 with padding: the form
// of the key file and of the key given in the environment.
func EncodeServerKey(key []byte) string { return base64.StdEncoding.EncodeToString(key) }

// ParseServerKey reads a server key in its text form (EncodeServerKey), ignoring surrounding space.
// Its error never holds the text.
func ParseServerKey(s string) ([]byte, error) {
	k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil || len(k) < ServerKeySize {
		return nil, fmt.Errorf("want standard base64 of at least %d bytes, as dirsvc platform server-key prints it (openssl rand -base64 %d makes a new one)",
			ServerKeySize, ServerKeySize)
	}
	return k, nil
}

// errKeyInHex refuses a key in the environment that is written in hex. Its text is also valid
// base64 (of another, longer key), so reading it so would silently change the key: the partner
// clients' secrets would then fail as if the key were wrong, when only its form is.
var errKeyInHex = fmt.Errorf("the server key in the environment looks like hex: give it in standard base64, as dirsvc platform server-key prints it "+
	"(%d characters ending in \"=\" for a %d-byte key); to convert a key kept in hex: printf %%s HEX | xxd -r -p | base64",
	base64.StdEncoding.EncodedLen(ServerKeySize), ServerKeySize)

// looksHex reports whether s is the hex form that key files had before base64 was the one form. A
// base64 key of 32 bytes always ends in "=", and a longer one is all hex digits with a chance of
// 4^-64, so the two are not confused.
func looksHex(s string) bool { return len(s) >= 2*ServerKeySize && allHex(s) }

// allHex reports whether s is a non-empty, even number of hex digits.
func allHex(s string) bool {
	if s == "" || len(s)%2 != 0 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// envLooksHex reports whether a key given in the environment is hex: at least 16 bytes' worth of
// hex digits (a shorter key is refused anyway). A random base64 key of 32 bytes ends in "=", so it
// is never taken for hex.
func envLooksHex(s string) bool { return len(s) >= ServerKeySize && allHex(s) }

// ServerKeyConfig says where LoadServerKey finds the server key and what it may do about a key that
// the stored clients contradict.
type ServerKeyConfig struct {
	// Path is the key file (data/server.key): the key in its one text form, created on first use.
	Path string
	// Env is the key given in the environment, in the same form; it wins over the file.
	Env string
	// AcceptNew uses a key although active clients' secrets were made under another one: they cannot
	// authenticate until their secrets are rotated. Without it LoadServerKey fails instead.
	AcceptNew bool
	// Log gets what LoadServerKey finds (never a key); slog.Default() when nil.
	Log *slog.Logger
}

// LoadServerKey returns the server key: the one given in the environment, else the key file's, else a
// new random key written to the file (0600, atomically). A key file in the hex form of earlier
// builds is rewritten in base64 in place, with the same key.
//
// It then checks the key against platform.db. Every client's secret MAC is marked with the check
// value of the key it was made under (KeyCheck). When active clients were made under another key (a
// data folder restored without its server key, or the environment and the file disagreeing), it logs
// an error naming how many and what to do, and fails with ErrServerKeyMismatch unless cfg.AcceptNew;
// no key file is created then. Once the key stands, it is recorded as the data folder's: clients
// created or rotated later are marked with it.
func LoadServerKey(ctx context.Context, store dirsvc.ClientStore, cfg ServerKeyConfig) ([]byte, error) {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	env, file, envHex, err := cfg.read()
	if err != nil {
		return nil, err
	}
	key, source := env, "environment"
	if key == nil {
		key, source = file, cfg.Path
	}
	created := key == nil
	if created {
		key, source = make([]byte, ServerKeySize), "none: not in the environment, no "+cfg.Path
		rand.Read(key)
	}
	recorded, legacyID, err := store.ServerKeyCheck(ctx)
	if err != nil {
		return nil, err
	}
	// Hex in the environment is refused, unless read as base64 it is the key this folder already
	// uses: earlier builds took it so, and dirsvc platform server-key prints that key back as the
	// same text.
	if envHex && (env == nil || !hmac.Equal(recorded, KeyCheck(env))) {
		return nil, errKeyInHex
	}
	lost, adoptLegacy, err := unverifiedClients(ctx, store, key, legacyID)
	if err != nil {
		return nil, err
	}
	if len(lost) > 0 {
		cfg.reportLost(ctx, store, lost, source, env, file, legacyID)
		if !cfg.AcceptNew {
			return nil, fmt.Errorf("%w: %d active partner clients cannot authenticate with it", ErrServerKeyMismatch, len(lost))
		}
		cfg.Log.Warn("going on with this server key as asked: those clients get 401 invalid_client until their secrets are rotated", "clients", len(lost))
	}
	if created {
		if err := writeKeyFile(cfg.Path, key, false); errors.Is(err, os.ErrExist) {
			return LoadServerKey(ctx, store, cfg) // another process created it first: use that key
		} else if err != nil {
			return nil, fmt.Errorf("create server key: %w", err)
		}
	}
	check := KeyCheck(key)
	if hmac.Equal(recorded, check) && !adoptLegacy {
		return key, nil
	}
	if recorded != nil && !hmac.Equal(recorded, check) && len(lost) == 0 {
		cfg.Log.Warn("this data folder was used with another server key; no active partner client depends on it, so this key takes its place",
			"key", source)
	}
	if err := store.RecordServerKeyCheck(ctx, check, adoptLegacy); err != nil {
		return nil, err
	}
	return key, nil
}

// reportLost logs the clients that cannot authenticate with the key from source, and what to do. When
// the environment's key won over a key file that the clients were made under, it says so.
func (cfg *ServerKeyConfig) reportLost(ctx context.Context, store dirsvc.ClientStore, lost []string, source string, env, file []byte, legacyID string) {
	attrs := []any{"clients", len(lost), "ids", idList(lost), "key", source,
		"fix", "give the server key this data folder was used with, from where it was stored (docs/operations.md: Disaster recovery); " +
			"if it is lost for good, accept a new one and give each of these clients a new secret (dirsvc clients rotate) or revoke it"}
	if env != nil && file != nil && !hmac.Equal(env, file) {
		if l, _, err := unverifiedClients(ctx, store, file, legacyID); err == nil && len(l) == 0 {
			attrs = append(attrs, "hint", "the key file "+cfg.Path+" holds the key they were made under: give that one in the environment, or none")
		}
	}
	cfg.Log.Error("partner clients cannot authenticate with this server key: their secrets were made under another one", attrs...)
}

// read returns the keys the environment and the key file give (nil for none), and says so when they
// differ. envHex is true when the environment's key is written in hex; env is then its reading as
// base64, or nil when it is no key read so (LoadServerKey decides).
func (cfg *ServerKeyConfig) read() (env, file []byte, envHex bool, err error) {
	if s := strings.TrimSpace(cfg.Env); s != "" {
		envHex = envLooksHex(s)
		if env, err = ParseServerKey(s); err != nil && !envHex {
			return nil, nil, false, fmt.Errorf("server key in the environment: %w", err)
		}
	}
	file, err = readKeyFile(cfg.Path, cfg.Log)
	switch {
	case err != nil && env != nil:
		cfg.Log.Warn("the key file cannot be read; the environment's server key is used", "file", cfg.Path, "err", err)
		return env, nil, envHex, nil
	case err != nil:
		return nil, nil, false, err
	case env != nil && file != nil && !hmac.Equal(env, file) && !envHex:
		cfg.Log.Warn("the environment and the key file give different server keys: the environment's is used; keep one of them",
			"file", cfg.Path)
	}
	return env, file, envHex, nil
}

// readKeyFile returns the key in the file at path, or nil when there is none. A file in the hex form
// of earlier builds is rewritten in base64 with the same key; when that fails, the hex is still read.
func readKeyFile(path string, log *slog.Logger) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("read server key: %w", err)
	}
	s := strings.TrimSpace(string(b))
	if looksHex(s) {
		k, _ := hex.DecodeString(s)
		if err := writeKeyFile(path, k, true); err != nil {
			log.Warn("the key file stays in hex (still read): rewriting it in base64 failed", "file", path, "err", err)
		} else {
			log.Info("rewrote the key file from hex to base64, its one form; the key is the same", "file", path)
		}
		return k, nil
	}
	k, err := ParseServerKey(s)
	if err != nil {
		return nil, fmt.Errorf("server key %s: %w", path, err)
	}
	return k, nil
}

// writeKeyFile writes key to path in its text form, mode 0600, atomically: a reader sees the old
// file or the whole new one. Without replace it fails with an error matching os.ErrExist when the
// file exists.
func writeKeyFile(path string, key []byte, replace bool) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".server.key-*") // mode 0600
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // gone already once renamed
	_, err = f.WriteString(EncodeServerKey(key) + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if replace {
		err = os.Rename(f.Name(), path)
	} else {
		err = os.Link(f.Name(), path) // unlike a rename, never replaces a key another process wrote
	}
	if err != nil {
		return err
	}
	// The new name is durable once the folder is synced; where a folder cannot be synced, the
	// file's own sync is what there is.
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// unverifiedClients returns the active clients whose secret MACs were made under another key than
// key, and whether the clients stored before check values were kept were made under key (they are
// to be marked with it then). Those were made under the server key that derives the signing key
// legacyID.
func unverifiedClients(ctx context.Context, store dirsvc.ClientStore, key []byte, legacyID string) (lost []string, adoptLegacy bool, err error) {
	checks, err := store.ClientKeyChecks(ctx)
	if err != nil {
		return nil, false, err
	}
	check := KeyCheck(key)
	var legacy []string
	for id, c := range checks {
		switch {
		case c == nil:
			legacy = append(legacy, id)
		case !hmac.Equal(c, check):
			lost = append(lost, id)
		}
	}
	if len(legacy) > 0 {
		ok, err := derivesSigningKey(ctx, store, key, legacyID)
		if err != nil {
			return nil, false, err
		}
		if ok {
			adoptLegacy = true
		} else {
			lost = append(lost, legacy...)
		}
	}
	slices.Sort(lost)
	return lost, adoptLegacy, nil
}

// derivesSigningKey reports whether key derives the published signing key kid. With no kid (no
// signing key existed before check values were kept) nothing says otherwise.
func derivesSigningKey(ctx context.Context, store dirsvc.ClientStore, key []byte, kid string) (bool, error) {
	if kid == "" {
		return true, nil
	}
	keys, err := store.SigningKeys(ctx)
	if err != nil {
		return false, err
	}
	for _, k := range keys {
		if k.ID == kid {
			return signingKey(key, kid).Public().(ed25519.PublicKey).Equal(k.Public), nil
		}
	}
	return false, nil
}

// idList names up to ten client IDs for a log line.
func idList(ids []string) string {
	if len(ids) > 10 {
		return strings.Join(ids[:10], " ") + fmt.Sprintf(" and %d more", len(ids)-10)
	}
	return strings.Join(ids, " ")
}
