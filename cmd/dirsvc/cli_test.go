package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/edge"
	"github.com/dirsvc/dirsvc/primary"
)

// runCLI runs the command in process and returns its standard output and error.
func runCLI(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(context.Background(), args, &out, &errb)
	return out.String(), errb.String(), err
}

// TestImportLogsItsStepsAtDebug: at the debug level an import logs how long each of its steps took,
// in the order they ran (a first import's files are built aside, then synced and moved into place);
// at the default level it does not.
func TestImportLogsItsStepsAtDebug(t *testing.T) {
	fixture := filepath.Join("..", "..", "testdata", "small.ndjson")
	if _, log, err := runCLI(t, "import", "--data", t.TempDir(), fixture); err != nil || strings.Contains(log, "steps") {
		t.Fatalf("import at the default level: %v\n%s", err, log)
	}
	t.Setenv("DIRSVC_LOG_LEVEL", "debug")
	_, log, err := runCLI(t, "import", "--data", t.TempDir(), fixture)
	steps := regexp.MustCompile(`msg="import steps" directory=small parse=\S+s records=\S+s narrowing=\S+s feed=\S+s search=\S+s commit=\S+s ops-commit=\S+s sync=\S+s\n`)
	if err != nil || !steps.MatchString(log) {
		t.Fatalf("import at the debug level: %v\n%s", err, log)
	}
}

func TestImportAndLifecycleCommands(t *testing.T) {
	data := t.TempDir()
	fixture := filepath.Join("..", "..", "testdata", "small.ndjson")
	if _, log, err := runCLI(t, "import", "--data", data, fixture); err != nil || !strings.Contains(log, "created=") {
		t.Fatalf("import: %v\n%s", err, log)
	}
	// Several files in one call: the known one again (a no-op) and a new directory.
	gen := filepath.Join(t.TempDir(), "more.ndjson")
	if _, log, err := runCLI(t, "gen", "--services", "5", "--slug", "more", "--out", gen); err != nil {
		t.Fatalf("gen: %v\n%s", err, log)
	}
	_, log, err := runCLI(t, "import", "--data", data, fixture, gen)
	if err != nil || !strings.Contains(log, "directory=small") || !strings.Contains(log, "events=0") ||
		!strings.Contains(log, "directory=more") {
		t.Fatalf("re-import is not a no-op, or the second file was not imported: %v\n%s", err, log)
	}
	// Republishing directories whose views are those the projection makes changes nothing.
	if _, log, err := runCLI(t, "republish", "--data", data); err != nil || strings.Count(log, "events=0") != 2 ||
		!strings.Contains(log, "directory=small") || !strings.Contains(log, "directory=more") {
		t.Fatalf("republish: %v\n%s", err, log)
	}
	if _, _, err := runCLI(t, "republish", "--data", data, "nowhere"); err == nil {
		t.Fatal("republish of an unknown directory did not fail")
	}
	for _, c := range []struct {
		args []string
		ok   bool
	}{
		{[]string{"close", "svc_counsel"}, true},
		{[]string{"restore", "svc_counsel"}, true},
		{[]string{"merge", "svc_refuge", "svc_gp"}, true},
		{[]string{"reduce", "svc_unlisted", "professional,partner"}, true},
		{[]string{"takedown", "svc_unlisted"}, true},
		{[]string{"delete", "svc_counsel"}, true},
		{[]string{"reduce", "svc_gp", "nobody"}, false},
		{[]string{"close", "svc_nothere"}, false},
		{[]string{"explode", "svc_gp"}, false},
	} {
		args := append([]string{"record", "--data", data, "--dir", "small"}, c.args...)
		if _, log, err := runCLI(t, args...); (err == nil) != c.ok {
			t.Errorf("record %v: err=%v\n%s", c.args, err, log)
		}
	}
	out, _, err := runCLI(t, "record", "--data", data, "--dir", "small", "show", "svc_refuge")
	if err != nil || !strings.Contains(out, `"state": "merged"`) || !strings.Contains(out, `"survivorPublicId": "svc_gp"`) {
		t.Fatalf("show after merge: %v\n%s", err, out)
	}

	// update: a record from a JSON object in the import format.
	upd := filepath.Join(t.TempDir(), "loc.json")
	os.WriteFile(upd, []byte(`{"kind":"location","publicId":"loc_coast","organisation":"org_coast","name":"Coast Counselling Erina","address":{"lines":["1 Terrigal Dr"],"locality":"Erina","state":"NSW","postcode":"2250"},"contacts":[{"kind":"phone","value":"(02) 4365 0000"}]}`), 0o644)
	if _, log, err := runCLI(t, "record", "--data", data, "--dir", "small", "update", upd); err != nil {
		t.Fatalf("update: %v\n%s", err, log)
	}
	out, _, _ = runCLI(t, "record", "--data", data, "--dir", "small", "show", "loc_coast")
	if !strings.Contains(out, "+61243650000") || !strings.Contains(out, `"localRevision": 2`) {
		t.Fatalf("show after update:\n%s", out)
	}
	os.WriteFile(upd, []byte(`{"kind":"location","publicId":"loc_coast","organisation":"org_coast","name":"X","address":{"locality":"Erina"},"contacts":[{"kind":"phone","value":"12"}]}`), 0o644)
	if _, _, err := runCLI(t, "record", "--data", data, "--dir", "small", "update", upd); err == nil || !strings.Contains(err.Error(), "contacts[0].value") {
		t.Fatalf("update with a bad phone: %v", err)
	}
}

func TestBadCommandLines(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"bogus"},
		{"import", "--data", t.TempDir()},
		{"import", "--data", t.TempDir(), filepath.Join(t.TempDir(), "missing.ndjson")},
		{"gen", "--services", "0"},
		{"record", "--data", t.TempDir(), "--dir", "nowhere", "close", "svc_x"},
		{"serve", "--data", t.TempDir(), "--addr", "not an address"},
		{"serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0", "--anonymous-per-minute", "0"},
		{"serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0", "--admin-token", "short"},
		{"edge", "--data", t.TempDir(), "--addr", "127.0.0.1:0", "--replication-token", "a-replication-token-for-tests"},
		{"edge", "--data", t.TempDir(), "--addr", "127.0.0.1:0", "--primary", "primary:8080", "--replication-token", "a-replication-token-for-tests"},
		{"edge", "--data", t.TempDir(), "--addr", "127.0.0.1:0", "--primary", "http://127.0.0.1:1", "--replication-token", "short"},
		{"edge", "--data", t.TempDir(), "--addr", "127.0.0.1:0", "--primary", "http://127.0.0.1:1", "--replication-token", "a-replication-token-for-tests", "--max-lag", "0s"},
		{"primary", "--data", t.TempDir(), "--addr", "127.0.0.1:0"}, // no replica target
		{"backup", "edge-policy"}, // no bucket
		{"backup", "edge-policy", "--s3-bucket", "b", "--s3-path", "dirs*"},
	} {
		if _, _, err := runCLI(t, args...); err == nil {
			t.Errorf("dirsvc %v succeeded", args)
		}
	}
}

func TestGenIsDeterministic(t *testing.T) {
	a, _, err := runCLI(t, "gen", "--services", "40", "--seed", "7")
	if err != nil {
		t.Fatal(err)
	}
	b, _, _ := runCLI(t, "gen", "--services", "40", "--seed", "7")
	if a != b || !strings.HasPrefix(a, `{`) {
		t.Fatal("gen with the same seed wrote different files")
	}
}

func TestClientsCommands(t *testing.T) {
	data := t.TempDir()
	if _, log, err := runCLI(t, "import", "--data", data, filepath.Join("..", "..", "testdata", "small.ndjson")); err != nil {
		t.Fatalf("import: %v\n%s", err, log)
	}
	out, _, err := runCLI(t, "clients", "--data", data, "create", "--name", "Clinic Finder", "--directory", "small",
		"--tier", "professional", "--scopes", "graph:read,practitioners:read", "--areas", "state:nsw", "--per-minute", "100")
	if err != nil || !strings.Contains(out, `"clientId":"dirc_`) || !strings.Contains(out, `"clientSecret":"dirsec_`) ||
		!strings.Contains(out, `"tier":"professional"`) || !strings.Contains(out, `"areas":["state:nsw"]`) {
		t.Fatalf("create: %v\n%s", err, out)
	}
	id := regexp.MustCompile(`dirc_[0-9a-f]+`).FindString(out)
	secret := regexp.MustCompile(`dirsec_[A-Za-z0-9_-]+`).FindString(out)
	for _, c := range []struct {
		args []string
		ok   bool
	}{
		{[]string{"create", "--name", "No home"}, false},
		{[]string{"create", "--name", "Bad scope", "--directory", "small", "--scopes", "everything"}, false},
		{[]string{"create", "--name", "Public leaders", "--directory", "small", "--tier", "public", "--scopes", "leadership:read"}, false},
		{[]string{"create", "--name", "Sandbox", "--sandbox"}, false}, // this folder has no demo directory
		{[]string{"create", "--name", "Typo", "--directory", "smal"}, false},
		{[]string{"grant", id, "--directory", "other"}, false},                                                  // a directory client stays in its directory
		{[]string{"grant", id, "--directory", "small", "--scopes", "graph:read", "--areas", "state:nsw"}, true}, // replaces the grant
		{[]string{"request", id, "--directory", "small", "--scopes", "practitioners:read"}, false},
		{[]string{"request", id, "--directory", "small", "--scopes", "practitioners:read", "--practitioner-list-reason", "referrals"}, true},
		{[]string{"approve", "1", "--tier", "partner"}, true}, // adds practitioners:read, keeps the areas
		{[]string{"refuse", "1"}, false},                      // decided already
		{[]string{"rotate", "dirc_nobody"}, false},
	} {
		if _, log, err := runCLI(t, append([]string{"clients", "--data", data}, c.args...)...); (err == nil) != c.ok {
			t.Errorf("clients %v: err=%v\n%s", c.args, err, log)
		}
	}
	t.Setenv("DIRSVC_SANDBOX_DIRECTORY", "small")
	if out, _, err := runCLI(t, "clients", "--data", data, "create", "--name", "Sandbox", "--sandbox"); err != nil || !strings.Contains(out, `"sandbox":true`) {
		t.Fatalf("sandbox client in small: %v\n%s", err, out)
	}
	out, _, err = runCLI(t, "clients", "--data", data, "list")
	if err != nil || strings.Count(out, "\n") != 2 || strings.Contains(out, secret) ||
		!strings.Contains(out, `"tier":"partner","scopes":["graph:read","practitioners:read"],"narrowing":{"areas":["state:nsw"]}`) {
		t.Fatalf("list: %v\n%s", err, out)
	}
	out, _, err = runCLI(t, "clients", "--data", data, "requests")
	if err != nil || !strings.Contains(out, `"practitionerListReason":"referrals"`) || !strings.Contains(out, `"status":"granted"`) {
		t.Fatalf("requests: %v\n%s", err, out)
	}
	out, _, err = runCLI(t, "clients", "--data", data, "rotate", id)
	if err != nil || strings.Contains(out, secret) || !strings.Contains(out, "dirsec_") {
		t.Fatalf("rotate: %v\n%s", err, out)
	}
	if _, _, err := runCLI(t, "clients", "--data", data, "revoke", id); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runCLI(t, "clients", "--data", data, "revoke", id); err == nil {
		t.Error("revoking a revoked client succeeded")
	}
	if _, _, err := runCLI(t, "platform", "--data", data, "senior-management", "small", "on"); err != nil {
		t.Error(err)
	}
}

func TestBackupAndRestoreCommands(t *testing.T) {
	data, replica := t.TempDir(), t.TempDir()
	if _, log, err := runCLI(t, "import", "--data", data, filepath.Join("..", "..", "testdata", "small.ndjson")); err != nil {
		t.Fatalf("import: %v\n%s", err, log)
	}
	out, log, err := runCLI(t, "backup", "--data", data, "--replica-dir", replica)
	if err != nil || !strings.Contains(out, "platform\t") || !strings.Contains(out, "dirs/small/directory\t") || !strings.Contains(out, "dirs/small/ops\t") {
		t.Fatalf("backup: %v\n%s\n%s", err, out, log)
	}
	// Every file into an empty folder; then one directory into another.
	all, one := filepath.Join(t.TempDir(), "data"), t.TempDir()
	restored, log, err := runCLI(t, "restore", "--data", all, "--replica-dir", replica)
	if err != nil {
		t.Fatalf("restore: %v\n%s", err, log)
	}
	// It says which point each file was restored to: the position backup printed, and a time.
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		name, pos, _ := strings.Cut(line, "\t")
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\tposition ` + pos + `\tas of 20\d\d-`).MatchString(restored) {
			t.Errorf("restore does not report %s at position %s:\n%s", name, pos, restored)
		}
	}
	if _, log, err := runCLI(t, "restore", "--data", one, "--replica-dir", replica, "--directory", "small"); err != nil {
		t.Fatalf("restore one directory: %v\n%s", err, log)
	}
	for _, d := range []string{all, one} {
		out, _, err := runCLI(t, "record", "--data", d, "--dir", "small", "show", "svc_gp")
		if err != nil || !strings.Contains(out, `"name": "Harbour GP"`) {
			t.Errorf("the restored folder %s: %v\n%s", d, err, out)
		}
	}
	for name, args := range map[string][]string{
		"over existing files":      {"restore", "--data", all, "--replica-dir", replica},
		"before the first backup":  {"restore", "--data", t.TempDir(), "--replica-dir", replica, "--time", "2001-01-01T00:00:00Z"},
		"a position without file":  {"restore", "--data", t.TempDir(), "--replica-dir", replica, "--txid", "1"},
		"no target":                {"restore", "--data", t.TempDir()},
		"a directory never backed": {"restore", "--data", t.TempDir(), "--replica-dir", replica, "--directory", "other"},
	} {
		if _, _, err := runCLI(t, args...); err == nil {
			t.Errorf("restore %s succeeded", name)
		}
	}
}

// copyPlatform copies the platform file of data into a new folder, as a restore from backups does:
// the server key is not among the files backed up.
func copyPlatform(t *testing.T, data string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(data, "platform.db"))
	if err != nil {
		t.Fatal(err)
	}
	to := t.TempDir()
	if err := os.WriteFile(filepath.Join(to, "platform.db"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return to
}

func TestServerKeyCommand(t *testing.T) {
	data := t.TempDir()
	if _, log, err := runCLI(t, "import", "--data", data, filepath.Join("..", "..", "testdata", "small.ndjson")); err != nil {
		t.Fatalf("import: %v\n%s", err, log)
	}
	out, _, err := runCLI(t, "clients", "--data", data, "create", "--name", "Clinic Finder", "--directory", "small")
	if err != nil {
		t.Fatal(err)
	}
	id := regexp.MustCompile(`dirc_[0-9a-f]+`).FindString(out)
	key, log, err := runCLI(t, "platform", "--data", data, "server-key")
	file, _ := os.ReadFile(filepath.Join(data, "server.key"))
	if err != nil || key != string(file) || !regexp.MustCompile(`^[A-Za-z0-9+/]{43}=\n$`).MatchString(key) || strings.Contains(log, strings.TrimSpace(key)) {
		t.Fatalf("server-key printed %q (%v), the file holds %q; log:\n%s", key, err, file, log)
	}
	t.Run("the key given in the environment is the one printed", func(t *testing.T) {
		t.Setenv("DIRSVC_SERVER_KEY", strings.TrimSpace(key))
		if out, log, err := runCLI(t, "platform", "--data", copyPlatform(t, data), "server-key"); err != nil || out != key {
			t.Fatalf("server-key with the environment's key: %q, %v\n%s", out, err, log)
		}
	})
	t.Run("a folder restored without its key prints none and manages no client until told", func(t *testing.T) {
		restored := copyPlatform(t, data)
		if out, log, err := runCLI(t, "platform", "--data", restored, "server-key"); err == nil || out != "" ||
			!strings.Contains(log, "level=ERROR") || !strings.Contains(log, id) {
			t.Fatalf("server-key on a folder restored without its key: %q, %v\n%s", out, err, log)
		}
		if _, _, err := runCLI(t, "clients", "--data", restored, "list"); err == nil || !strings.Contains(err.Error(), "--accept-new-server-key") {
			t.Fatalf("clients list without the key: %v", err)
		}
		if _, err := os.Stat(filepath.Join(restored, "server.key")); err == nil {
			t.Fatal("a refused command created a key file")
		}
		// The key is lost for good: a new one is accepted and the client given a new secret.
		if _, log, err := runCLI(t, "clients", "--data", restored, "--accept-new-server-key", "rotate", id); err != nil {
			t.Fatalf("rotate accepting a new key: %v\n%s", err, log)
		}
		out, log, err := runCLI(t, "platform", "--data", restored, "server-key")
		if err != nil || out == key || strings.Contains(log, "ERROR") {
			t.Fatalf("server-key once every client is rotated: %q, %v\n%s", out, err, log)
		}
	})
}

// TestWeakTokensAreRefused starts each mode with a weak token: it must not start, and must say
// which flag is wrong and how to make a good token. The address is bad too, so that a mode that
// accepted the token fails (on the address) rather than serves.
func TestWeakTokensAreRefused(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		flag string
	}{
		{"serve with one repeated letter as admin token", []string{"serve", "--data", t.TempDir(), "--addr", "not an address", "--admin-token", "aaaaaaaaaaaaaaaa"}, "--admin-token"},
		{"primary with a run as replication token", []string{"primary", "--data", t.TempDir(), "--addr", "not an address", "--replica-dir", t.TempDir(), "--replication-token", "0123456789abcdefgh"}, "--replication-token"},
		{"an edge with a repetition as replication token", []string{"edge", "--data", t.TempDir(), "--addr", "not an address", "--primary", "http://127.0.0.1:1", "--replication-token", "qwertyuiopqwertyuiop"}, "--replication-token"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := runCLI(t, c.args...)
			if err == nil || !strings.Contains(err.Error(), c.flag) || !strings.Contains(err.Error(), "openssl rand -base64 32") {
				t.Fatalf("dirsvc %v: %v, want an error naming %s and how to generate a token", c.args, err, c.flag)
			}
		})
	}
}

// importSmall returns a data folder holding the small test directory.
func importSmall(t *testing.T) string {
	t.Helper()
	data := t.TempDir()
	if _, log, err := runCLI(t, "import", "--data", data, filepath.Join("..", "..", "testdata", "small.ndjson")); err != nil {
		t.Fatalf("import: %v\n%s", err, log)
	}
	return data
}

// createPartner creates a partner-organisation client in data and returns its ID.
func createPartner(t *testing.T, data string) string {
	t.Helper()
	out, log, err := runCLI(t, "clients", "--data", data, "create", "--name", "Health Pages", "--partner")
	if err != nil {
		t.Fatalf("create: %v\n%s", err, log)
	}
	return regexp.MustCompile(`dirp_[0-9a-f]+`).FindString(out)
}

// TestStrayArgumentsAreRefused gives every command a word it does not take: the command line is
// refused (exit status 2, with the usage) and nothing is changed, rather than the flags after the
// word being dropped.
func TestStrayArgumentsAreRefused(t *testing.T) {
	data := importSmall(t)
	id := createPartner(t, data)
	if _, log, err := runCLI(t, "clients", "--data", data, "grant", id, "--directory", "small", "--scopes", "graph:read", "--areas", "state:nsw"); err != nil {
		t.Fatalf("grant: %v\n%s", err, log)
	}
	before, _, _ := runCLI(t, "clients", "--data", data, "list")
	for _, args := range [][]string{
		{"serve", "--data", data, "--addr", "127.0.0.1:0", "stray"},
		{"primary", "--data", data, "--addr", "127.0.0.1:0", "--replica-dir", t.TempDir(), "stray"},
		{"edge", "--data", t.TempDir(), "--addr", "127.0.0.1:0", "--primary", "http://127.0.0.1:1", "stray"},
		{"gen", "--services", "5", "stray"},
		{"record", "--data", data, "--dir", "small", "close", "svc_gp", "stray"},
		{"record", "--data", data, "--dir", "small", "merge", "svc_refuge", "svc_gp", "stray"},
		{"clients", "--data", data, "create", "--name", "X", "--directory", "small", "--tier", "professional",
			"--scopes", "graph:read", "practitioners:read", "--areas", "state:nsw"},
		{"clients", "--data", data, "grant", id, "--directory", "small", "--scopes", "graph:read", "practitioners:read", "--areas", "state:nsw"},
		{"clients", "--data", data, "list", "stray"},
		{"clients", "--data", data, "ungrant", id, "stray", "--directory", "small"},
		{"clients", "--data", data, "rotate", id, "stray"},
		{"clients", "--data", data, "revoke", id, "stray"},
		{"clients", "--data", data, "request", id, "stray", "--directory", "small", "--scopes", "graph:read"},
		{"clients", "--data", data, "requests", "stray"},
		{"clients", "--data", data, "approve", "1", "stray"},
		{"clients", "--data", data, "refuse", "1", "stray"},
		{"clients", "--data", data, "grant"},
		{"platform", "--data", data, "server-key", "stray"},
		{"platform", "--data", data, "signing-keys", "stray"},
		{"platform", "--data", data, "rotate-signing-key", "stray"},
		{"platform", "--data", data, "retire-signing-key", "kid", "stray"},
		{"platform", "--data", data, "senior-management", "small", "on", "stray"},
		{"backup", "--data", data, "--replica-dir", t.TempDir(), "stray"},
		{"backup", "edge-policy", "--s3-bucket", "b", "stray"},
		{"restore", "--data", t.TempDir(), "--replica-dir", t.TempDir(), "stray"},
		{"import", "--data", data, "--bogus", "x"},
	} {
		out, log, err := runCLI(t, args...)
		if got := exitCode(err); got != 2 || !strings.Contains(log, "usage: dirsvc") {
			t.Errorf("dirsvc %v: exit status %d (%v), want 2 with the usage\n%s%s", args, got, err, out, log)
		}
	}
	if after, _, _ := runCLI(t, "clients", "--data", data, "list"); after != before {
		t.Fatalf("a refused command line changed the clients:\nbefore %s\nafter  %s", before, after)
	}
	if !strings.Contains(before, `"narrowing":{"areas":["state:nsw"]}`) {
		t.Fatalf("the grant lost its narrowing: %s", before)
	}
}

// TestFlagsAfterArguments gives flags after the operation and its arguments, as the usage shows them.
func TestFlagsAfterArguments(t *testing.T) {
	data := importSmall(t)
	id := createPartner(t, data)
	for _, args := range [][]string{
		{"clients", "grant", id, "--data", data, "--directory", "small", "--scopes", "graph:read practitioners:read", "--areas", "state:nsw"},
		{"record", "show", "svc_gp", "--dir", "small", "--data", data},
		{"platform", "server-key", "--data", data},
		{"republish", "small", "--data", data},
	} {
		if out, log, err := runCLI(t, args...); err != nil {
			t.Errorf("dirsvc %v: %v\n%s%s", args, err, out, log)
		}
	}
	out, _, _ := runCLI(t, "clients", "--data", data, "list")
	if !strings.Contains(out, `"scopes":["graph:read","practitioners:read"],"narrowing":{"areas":["state:nsw"]}`) {
		t.Fatalf("the grant given with flags after the client is not what they said:\n%s", out)
	}
}

// TestHelpShowsTheCommandsOwnFlags asks every command for its help: it shows the command's
// arguments and only the flags the command takes, and exits 0.
func TestHelpShowsTheCommandsOwnFlags(t *testing.T) {
	for _, c := range []struct {
		args          []string
		want, notWant []string
	}{
		{[]string{"serve"}, []string{"-addr", "-data", "-admin-token"}, []string{"-replica-dir"}},
		{[]string{"primary"}, []string{"-addr", "-data", "-replica-dir", "-replication-token"}, nil},
		{[]string{"edge"}, []string{"-addr", "-data", "-primary"}, []string{"-replica-dir"}},
		{[]string{"import"}, []string{"FILE...", "-data"}, []string{"-addr"}},
		{[]string{"republish"}, []string{"[SLUG...]", "-data"}, []string{"-addr"}},
		{[]string{"gen"}, []string{"-services", "-seed"}, []string{"-addr", "-data"}},
		{[]string{"record"}, []string{"update FILE", "show ID", "-dir", "-data"}, []string{"-addr"}},
		{[]string{"clients"}, []string{"grant   CLIENT", "-accept-new-server-key", "-data"}, []string{"-addr", "-name"}},
		{[]string{"clients", "grant"}, []string{"CLIENT --directory SLUG", "-areas", "-tier"}, []string{"-addr", "-name", "-practitioner-list-reason"}},
		{[]string{"clients", "revoke"}, []string{"CLIENT"}, []string{"-addr", "-directory", "-scopes"}},
		{[]string{"moderation"}, []string{"approve ID --as NAME", "moderator add NAME", "-dir", "-as", "-data"}, []string{"-addr"}},
		{[]string{"platform"}, []string{"senior-management SLUG on|off", "server-key", "signing-keys", "rotate-signing-key", "retire-signing-key KID", "-data"}, []string{"-addr"}},
		{[]string{"backup"}, []string{"-replica-dir", "-s3-bucket", "edge-policy", "-data"}, []string{"-addr"}},
		{[]string{"backup", "edge-policy"}, []string{"-s3-bucket", "-s3-path"}, []string{"-addr", "-data", "-replica-dir"}},
		{[]string{"restore"}, []string{"-file", "-txid", "-time", "-directory", "-data"}, []string{"-addr"}},
	} {
		_, help, err := runCLI(t, append(c.args, "--help")...)
		if got := exitCode(err); got != 0 {
			t.Errorf("dirsvc %v --help: exit status %d (%v)", c.args, got, err)
		}
		for _, w := range c.want {
			if !strings.Contains(help, w) {
				t.Errorf("dirsvc %v --help does not show %s:\n%s", c.args, w, help)
			}
		}
		for _, w := range c.notWant {
			if strings.Contains(help, "\n  "+w+" ") || strings.Contains(help, "\n  "+w+"\n") { // in the list of flags
				t.Errorf("dirsvc %v --help shows %s, which it does not take:\n%s", c.args, w, help)
			}
		}
	}
}

// TestOperatorErrors checks that what a command could not find is said in an operator's words:
// what, and where it was looked for; never the API's answer to a client.
func TestOperatorErrors(t *testing.T) {
	data := importSmall(t)
	id := createPartner(t, data)
	runCLI(t, "clients", "--data", data, "request", id, "--directory", "small", "--scopes", "graph:read")
	runCLI(t, "clients", "--data", data, "approve", "1")
	platform := filepath.Join(data, "platform.db")
	empty := filepath.Join(t.TempDir(), "empty.ndjson")
	os.WriteFile(empty, nil, 0o644)
	bad := filepath.Join(t.TempDir(), "bad.ndjson")
	os.WriteFile(bad, []byte(`{"kind":"directory","slug":"bad","name":"Bad","country":"AU","timeZone":"Australia/Sydney"}
{"kind":"platformType","code":"gp","label":"GP"}
{"kind":"service","publicId":"svc_a","organisation":"org_none","location":"loc_none","name":"A","type":"gp"}
`), 0o644)
	fixture, err := os.ReadFile(filepath.Join("..", "..", "testdata", "small.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	bidi := filepath.Join(t.TempDir(), "bidi.ndjson")
	os.WriteFile(bidi, bytes.Replace(fixture, []byte(`"Harbour GP"`), []byte(`"Harbour \u202eGP"`), 1), 0o644)
	bell := filepath.Join(t.TempDir(), "svc_gp.json")
	os.WriteFile(bell, []byte(`{"kind":"service","publicId":"svc_gp","organisation":"org_harbour","location":"loc_ultimo","name":"Harbour\u0007GP","type":"gp"}`), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"record", "--data", data, "--dir", "nowhere", "show", "svc_gp"}, "no directory nowhere in " + data},
		{[]string{"import", "--data", data, bidi}, "(svc_gp) name: The text holds the bidirectional control U+202E"},
		{[]string{"record", "--data", data, "--dir", "small", "update", bell}, "(svc_gp) name: The text holds the control character U+0007"},
		{[]string{"record", "--data", data, "--dir", "small", "close", "svc_nothere"}, "no record svc_nothere in directory small"},
		{[]string{"clients", "--data", data, "grant", "dirp_nobody", "--directory", "small"}, "no client dirp_nobody in " + platform},
		{[]string{"clients", "--data", data, "grant", id, "--directory", "nowhere"}, "no directory nowhere in " + data},
		{[]string{"clients", "--data", data, "approve", "1"}, "access request 1 is granted already"},
		{[]string{"clients", "--data", data, "refuse", "7"}, "no access request 7 in " + platform},
		{[]string{"platform", "--data", data, "senior-management", "nowhere", "on"}, "no directory nowhere in " + data},
		{[]string{"import", "--data", data, empty}, "import " + empty + ": the file holds no directory line"},
		{[]string{"import", "--data", data, bad}, `is not an organisation in the file`},
	} {
		_, _, err := runCLI(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "not visible to you") {
			t.Errorf("dirsvc %v: %v, want an error saying %q", c.args, err, c.want)
		}
	}
	runCLI(t, "clients", "--data", data, "revoke", id)
	if _, _, err := runCLI(t, "clients", "--data", data, "revoke", id); err == nil || err.Error() != "client "+id+" in "+platform+" is revoked" {
		t.Errorf("revoking a revoked client: %v", err)
	}
}

// TestClientOperationsSayWhatWasDone checks the line each change prints on success.
func TestClientOperationsSayWhatWasDone(t *testing.T) {
	data := importSmall(t)
	out, _, err := runCLI(t, "clients", "--data", data, "create", "--name", "Health Pages", "--partner")
	if err != nil || !strings.Contains(out, `"grants":[]`) {
		t.Fatalf("create --partner: %v\n%s", err, out)
	}
	id := regexp.MustCompile(`dirp_[0-9a-f]+`).FindString(out)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"grant", id, "--directory", "small", "--tier", "partner", "--scopes", "graph:read", "--areas", "state:nsw"},
			"granted " + id + " access to small: partner tier, scopes graph:read, areas state:nsw, 600 requests a minute and 200000 a day\n"},
		{[]string{"request", id, "--directory", "small", "--scopes", "search:read"}, `"status":"pending"`},
		{[]string{"approve", "1"}, "approved access request 1: granted " + id + " access to small: partner tier, scopes search:read graph:read, areas state:nsw"},
		{[]string{"request", id, "--directory", "small", "--scopes", "search:read"}, `"id":2`},
		{[]string{"refuse", "2"}, "refused access request 2 of " + id + " to small\n"},
		{[]string{"ungrant", id, "--directory", "small"}, "removed " + id + "'s grant in small"},
		{[]string{"revoke", id}, "revoked " + id + ": "},
	} {
		out, log, err := runCLI(t, append([]string{"clients", "--data", data}, c.args...)...)
		if err != nil || !strings.Contains(out, c.want) || strings.Count(out, "\n") != 1 {
			t.Errorf("clients %v: %v, printed %q, want one line with %q\n%s", c.args, err, out, c.want, log)
		}
	}
}

// TestRecordShowIsWhatUpdateReads shows every record of the small directory and gives what was
// shown back, to dirsvc record update and to the admin API's PUT: each is accepted and changes
// nothing.
func TestRecordShowIsWhatUpdateReads(t *testing.T) {
	data := importSmall(t)
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "small.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range regexp.MustCompile(`"kind":"(?:organisation|location|service|practitioner|role)","publicId":"([a-z_]+)"`).FindAllSubmatch(b, -1) {
		ids = append(ids, string(m[1]))
	}
	if len(ids) < 5 {
		t.Fatalf("found %d records in the fixture", len(ids))
	}
	shown := map[string]string{}
	for _, id := range ids {
		out, _, err := runCLI(t, "record", "--data", data, "--dir", "small", "show", id)
		if err != nil {
			t.Fatalf("show %s: %v", id, err)
		}
		shown[id] = out
		f := filepath.Join(t.TempDir(), id+".json")
		os.WriteFile(f, []byte(out), 0o644)
		if _, log, err := runCLI(t, "record", "--data", data, "--dir", "small", "update", f); err != nil || !strings.Contains(log, "updated=0") {
			t.Errorf("update %s with what show printed: %v\n%s\n%s", id, err, out, log)
		}
	}
	store, err := dirdb.Open(context.Background(), data)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	srv := edge.New(edge.Config{Catalog: store, Keys: store, AnonymousLimits: edge.Limits{PerMinute: 1 << 20, PerDay: 1 << 20}})
	const token = "an-admin-token-for-cli-tests"
	if err := (&primary.Server{Edge: srv, Access: mustAccess(t, store), Admin: &primary.AdminAPI{Store: store, Token: token}}).Mount(); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	for _, id := range ids {
		req, _ := http.NewRequest("PUT", ts.URL+"/admin/v1/d/small/records/"+id, strings.NewReader(shown[id]))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), `"updated":0`) {
			t.Errorf("PUT %s with what show printed: %d %s", id, resp.StatusCode, body)
		}
	}
}

// TestExitStatuses checks that a wrong command line exits 2 and a command that fails exits 1.
func TestExitStatuses(t *testing.T) {
	for _, c := range []struct {
		args []string
		want int
	}{
		{[]string{"bogus"}, 2},
		{[]string{"gen", "--services", "0"}, 2},
		{[]string{"edge", "--data", t.TempDir(), "--addr", "127.0.0.1:0", "--replication-token", "a-replication-token-for-tests"}, 2},
		{[]string{"restore", "--data", t.TempDir(), "--replica-dir", t.TempDir(), "--txid", "1"}, 2},
		{[]string{"serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0", "--admin-token", "short"}, 2},
		{[]string{"import", "--data", t.TempDir(), filepath.Join(t.TempDir(), "missing.ndjson")}, 1},
		{[]string{"record", "--data", t.TempDir(), "--dir", "nowhere", "close", "svc_x"}, 1},
		{[]string{"gen", "--help"}, 0},
	} {
		if _, _, err := runCLI(t, c.args...); exitCode(err) != c.want {
			t.Errorf("dirsvc %v: exit status %d (%v), want %d", c.args, exitCode(err), err, c.want)
		}
	}
}

// mustAccess returns the token service of a store, under a fixed server key.
func mustAccess(t *testing.T, store *dirdb.Store) *primary.Access {
	t.Helper()
	a, err := primary.NewAccess(context.Background(), store, bytes.Repeat([]byte{7}, primary.ServerKeySize), nil)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestExportCommand exports the small directory with dirsvc export: the files are in the folder as
// it lists them, the progress goes to standard error as plain lines (not a terminal), and a folder
// that is not empty, an unknown format or tier, and an unknown directory are refused.
func TestExportCommand(t *testing.T) {
	data := importSmall(t)
	out := filepath.Join(t.TempDir(), "export")
	stdout, stderr, err := runCLI(t, "export", "--data", data, "--out", out, "--formats", "csv,json,fhir-ndjson,hsds",
		"--practitioners", "small")
	if err != nil {
		t.Fatalf("export: %v\n%s", err, stderr)
	}
	if !regexp.MustCompile(`(?m)^exporting [0-9]+ records$`).MatchString(stderr) ||
		!regexp.MustCompile(`(?m)^exported [0-9]+ records in `).MatchString(stderr) || strings.Contains(stderr, "\r") {
		t.Errorf("progress on standard error:\n%s", stderr)
	}
	for _, name := range []string{"services.csv", "directory.json", "HealthcareService.ndjson", "hsds_services.json", "ATTRIBUTION.txt"} {
		if !strings.Contains(stdout, name+"\t") {
			t.Errorf("the listing lacks %s:\n%s", name, stdout)
		}
		if st, err := os.Stat(filepath.Join(out, name)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
	if parts, _ := filepath.Glob(filepath.Join(out, "*.part")); len(parts) > 0 {
		t.Errorf("part files left: %v", parts)
	}
	for _, c := range []struct {
		args []string
		want int
	}{
		{[]string{"export", "--data", data, "--out", out, "small"}, 1}, // not empty
		{[]string{"export", "--data", data, "--out", t.TempDir(), "--formats", "xlsx", "small"}, 2},
		{[]string{"export", "--data", data, "--out", t.TempDir(), "--tier", "staff", "small"}, 2},
		{[]string{"export", "--data", data, "--out", t.TempDir(), "nowhere"}, 1},
		{[]string{"export", "--data", data, "small"}, 2}, // no --out
	} {
		if _, _, err := runCLI(t, c.args...); exitCode(err) != c.want {
			t.Errorf("dirsvc %v: exit status %d (%v), want %d", c.args, exitCode(err), err, c.want)
		}
	}
}
