package main_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The tests here run the real binary and change its data folder with the binary's own commands, as
// separate processes, while it serves: what a command commits must be served from the next read on
// (on an edge, as soon as the edge follows).

// command runs a command of the binary to its end and fails the test if it fails.
func command(t testing.TB, bin string, args ...string) []byte {
	t.Helper()
	out, err := exec.Command(bin, args...).Output()
	if err != nil {
		var stderr []byte
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			stderr = ee.Stderr
		}
		t.Fatalf("dirsvc %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return out
}

// leadershipClient creates, with the clients command, a partner client of the small directory that
// may read leadership, and returns an access token the server at addr issues to it with its ID.
func leadershipClient(t testing.TB, bin, data, addr string) (token, id, secret string) {
	t.Helper()
	id, secret = createClient(t, bin, data, "--name", "Leaders Org", "--partner",
		"--directory", "small", "--tier", "partner", "--scopes", "graph:read leadership:read")
	status, token := requestToken(t, addr, id, secret)
	if status != 200 {
		t.Fatalf("token for the new client: %d", status)
	}
	return token, id, secret
}

// requestToken asks the token endpoint at addr for a token of the client: the status, and the token
// when there is one.
func requestToken(t testing.TB, addr, id, secret string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", "http://"+addr+"/oauth/token",
		strings.NewReader(url.Values{"grant_type": {"client_credentials"}, "directory": {"small"}}.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tr struct {
		AccessToken string `json:"access_token"`
	}
	json.NewDecoder(resp.Body).Decode(&tr)
	return resp.StatusCode, tr.AccessToken
}

func bearer(token string) http.Header { return http.Header{"Authorization": {"Bearer " + token}} }

const leadershipPath = "/v1/d/small/organisations/org_harbour/leadership"

// TestServeSeesCommandWritesAtOnce changes the data folder of a running `dirsvc serve` with the
// record, platform, clients and import commands, each a process of its own, and reads once after
// each: the read answers as the command left the folder (no wait, no second try).
func TestServeSeesCommandWritesAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	data := t.TempDir()
	command(t, bin, "import", "--data", data, smallFixture)
	addr, _, log := startServe(t, bin, data)
	const svc = "/v1/d/small/services/svc_gp"
	record := func(args ...string) {
		t.Helper()
		command(t, bin, append([]string{"record", "--data", data, "--dir", "small"}, args...)...)
	}
	listed := func() bool {
		t.Helper()
		return strings.Contains(string(get(t, addr, "/v1/d/small/services?limit=100", nil).body), `"svc_gp"`)
	}
	// Read twice: the second answer comes from what the server keeps (its read snapshot, its views).
	for range 2 {
		if a := get(t, addr, svc, nil); a.status != 200 || name(t, a) != "Harbour GP" {
			t.Fatalf("before any command: %d %s", a.status, a.body)
		}
	}
	steps := []struct {
		op     string
		status int
		listed bool
	}{
		{"takedown", 404, false}, // spec: taken down from the moment it is taken down
		{"restore", 200, true},
		{"close", 410, false},
		{"restore", 200, true},
	}
	for _, s := range steps {
		record(s.op, "svc_gp")
		if a := get(t, addr, svc, nil); a.status != s.status {
			t.Fatalf("the first read after `record %s`: %d, want %d\n%s\n%s", s.op, a.status, s.status, a.body, log)
		}
		if got := listed(); got != s.listed {
			t.Errorf("after `record %s` the service list lists it: %v, want %v", s.op, got, s.listed)
		}
		get(t, addr, svc, nil) // and keep the answer, for the next command to change
	}

	// The operator's senior-management switch, both ways.
	token, id, secret := leadershipClient(t, bin, data, addr)
	if a := get(t, addr, leadershipPath, bearer(token)); a.status != 404 {
		t.Fatalf("leadership before the switch: %d %s", a.status, a.body)
	}
	for _, sw := range []struct {
		to     string
		status int
	}{{"on", 200}, {"off", 404}, {"on", 200}} {
		command(t, bin, "platform", "--data", data, "senior-management", "small", sw.to)
		if a := get(t, addr, leadershipPath, bearer(token)); a.status != sw.status {
			t.Fatalf("the first leadership read after the switch went %s: %d, want %d\n%s", sw.to, a.status, sw.status, a.body)
		}
		get(t, addr, leadershipPath, bearer(token))
	}

	// A client rotated or revoked by the clients command gets no new token.
	out := command(t, bin, "clients", "--data", data, "rotate", id)
	if status, _ := requestToken(t, addr, id, secret); status != 401 {
		t.Errorf("a token for the old secret after `clients rotate`: %d, want 401", status)
	}
	var rotated struct {
		Secret string `json:"clientSecret"`
	}
	if err := json.Unmarshal(out, &rotated); err != nil || rotated.Secret == "" {
		t.Fatalf("clients rotate printed %s: %v", out, err)
	}
	if status, _ := requestToken(t, addr, id, rotated.Secret); status != 200 {
		t.Errorf("a token for the new secret: %d, want 200", status)
	}
	command(t, bin, "clients", "--data", data, "revoke", id)
	if status, _ := requestToken(t, addr, id, rotated.Secret); status != 401 {
		t.Errorf("a token after `clients revoke`: %d, want 401", status)
	}

	// A directory imported again by another process: its new content, and its new description.
	fixture, err := os.ReadFile(smallFixture)
	if err != nil {
		t.Fatal(err)
	}
	fixture = bytes.Replace(fixture, []byte(`"name":"Harbour GP"`), []byte(`"name":"Harbour GP Reimported"`), 1)
	fixture = bytes.Replace(fixture, []byte(`"name":"Small Test Directory"`), []byte(`"name":"Small Directory Renamed"`), 1)
	file := filepath.Join(t.TempDir(), "small.ndjson")
	if err := os.WriteFile(file, fixture, 0o644); err != nil {
		t.Fatal(err)
	}
	get(t, addr, "/v1/d/small/developers", nil)
	command(t, bin, "import", "--data", data, file)
	if got := name(t, get(t, addr, svc, nil)); got != "Harbour GP Reimported" {
		t.Errorf("the first read after a new import: %q", got)
	}
	if a := get(t, addr, "/v1/d/small/developers", nil); !strings.Contains(string(a.body), "Small Directory Renamed") {
		t.Errorf("the directory's description after a new import: %d %s", a.status, a.body)
	}
}

// TestClusterSeesCommandWritesOnThePrimary changes a running primary's data folder with the record
// and platform commands: the primary answers as the command left it from the next read on, and its
// edge as soon as it follows (the time it took is logged).
func TestClusterSeesCommandWritesOnThePrimary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	c := startCluster(t)
	token, _, _ := leadershipClient(t, c.bin, c.primaryData, c.primary)
	for _, addr := range []string{c.primary, c.edge} {
		if a := get(t, addr, leadershipPath, bearer(token)); a.status != 404 {
			t.Fatalf("leadership at %s before the switch: %d %s", addr, a.status, a.body)
		}
	}
	// step runs a command on the primary's folder, then reads path once at the primary and until it
	// answers want at the edge.
	step := func(what, path string, header http.Header, want int, args ...string) {
		t.Helper()
		get(t, c.edge, path, header) // the edge keeps its answer, for the command to change
		command(t, c.bin, args...)
		done := time.Now()
		if a := get(t, c.primary, path, header); a.status != want {
			t.Fatalf("the primary's first read after %s: %d, want %d\n%s\n%s", what, a.status, want, a.body, c.primaryLog)
		}
		c.waitFor(t, "the edge after "+what, func() bool { return get(t, c.edge, path, header).status == want })
		t.Logf("%s: the primary at once, the edge after %v", what, time.Since(done).Round(time.Millisecond))
	}
	sm := func(to string) []string {
		return []string{"platform", "--data", c.primaryData, "senior-management", "small", to}
	}
	rec := func(op string) []string {
		return []string{"record", "--data", c.primaryData, "--dir", "small", op, "svc_gp"}
	}
	step("senior management on", leadershipPath, bearer(token), 200, sm("on")...)
	step("senior management off", leadershipPath, bearer(token), 404, sm("off")...)
	step("senior management on again", leadershipPath, bearer(token), 200, sm("on")...)
	step("a takedown", "/v1/d/small/services/svc_gp", nil, 404, rec("takedown")...)
	step("a restore", "/v1/d/small/services/svc_gp", nil, 200, rec("restore")...)
	step("a close", "/v1/d/small/services/svc_gp", nil, 410, rec("close")...)

	// A token stops working on every node as soon as the client's access changes or its signing
	// key is retired, not when it expires.
	step("the token's signing key retired", leadershipPath, bearer(token), 401,
		"platform", "--data", c.primaryData, "retire-signing-key", tokenKeyID(t, token))
	token, id, _ := leadershipClient(t, c.bin, c.primaryData, c.primary)
	step("a new token of a new key", leadershipPath, bearer(token), 200, "platform", "--data", c.primaryData, "signing-keys")
	step("the client revoked", leadershipPath, bearer(token), 401, "clients", "--data", c.primaryData, "revoke", id)
}

// tokenKeyID returns the ID of the key that signed an access token (its header's kid).
func tokenKeyID(t testing.TB, token string) string {
	t.Helper()
	head, _, _ := strings.Cut(token, ".")
	b, err := base64.RawURLEncoding.DecodeString(head)
	var h struct{ Kid string }
	if err != nil || json.Unmarshal(b, &h) != nil || h.Kid == "" {
		t.Fatalf("the token's header %q: %v", b, err)
	}
	return h.Kid
}

// BenchmarkCommandToVisible measures how long a command's commit on a running primary's folder
// (`dirsvc record takedown` and `restore` in turn, each a process) takes to be seen: at the primary,
// the first read after the command ends must show it, and its time is reported; at the edge, reads
// every millisecond until one shows it, from the command's end. It reports medians and 99th
// percentiles.
func BenchmarkCommandToVisible(b *testing.B) {
	c := startCluster(b)
	const path = "/v1/d/small/services/svc_gp"
	var primaryRead, edgeLag []time.Duration
	for i := 0; b.Loop(); i++ {
		op, want := "takedown", 404
		if i%2 == 1 {
			op, want = "restore", 200
		}
		get(b, c.primary, path, nil)
		command(b, c.bin, "record", "--data", c.primaryData, "--dir", "small", op, "svc_gp")
		done := time.Now()
		if a := get(b, c.primary, path, nil); a.status != want {
			b.Fatalf("the primary's first read after %s: %d, want %d", op, a.status, want)
		}
		primaryRead = append(primaryRead, time.Since(done))
		for get(b, c.edge, path, nil).status != want {
			time.Sleep(time.Millisecond) // a client polling the edge
		}
		edgeLag = append(edgeLag, time.Since(done))
	}
	report := func(ds []time.Duration, unit string, scale float64) {
		slices.Sort(ds)
		b.ReportMetric(float64(ds[len(ds)/2].Nanoseconds())/scale, unit+"-p50")
		b.ReportMetric(float64(ds[len(ds)*99/100].Nanoseconds())/scale, unit+"-p99")
	}
	report(primaryRead, "primary-first-read-ms", 1e6)
	report(edgeLag, "edge-ms", 1e6)
}

// TestAnEdgeOfAnotherBaseURLSaysSo starts an edge whose base URL is not the primary's: the tokens the
// primary issues name the primary's, the edge refuses them, and it logs why.
func TestAnEdgeOfAnotherBaseURLSaysSo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	c := startCluster(t, "--base-url", "https://elsewhere.test")
	token, _, _ := leadershipClient(t, c.bin, c.primaryData, c.primary)
	if a := get(t, c.primary, "/v1/d/small/services/svc_gp", bearer(token)); a.status != 200 {
		t.Fatalf("the token at the primary: %d %s", a.status, a.body)
	}
	if a := get(t, c.edge, "/v1/d/small/services/svc_gp", bearer(token)); a.status != 401 {
		t.Errorf("the primary's token at an edge of another base URL: %d, want 401", a.status)
	}
	c.waitFor(t, "the edge's error naming both base URLs", func() bool {
		l := c.edgeLog.String()
		return strings.Contains(l, "level=ERROR") && strings.Contains(l, "https://elsewhere.test") && strings.Contains(l, testBaseURL)
	})
}
