package main_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/edge/edgetest"
	"github.com/dirsvc/dirsvc/primary/demo"
	"github.com/dirsvc/dirsvc/replicate"
)

// buildBinary builds cmd/dirsvc once per test binary run, without cgo, as shipped.
func buildBinary(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "dirsvc")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// The design rules out cgo SQLite: the binary's build information must say so.
	info, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(info), "CGO_ENABLED=0") || strings.Contains(string(info), "mattn/go-sqlite3") ||
		!strings.Contains(string(info), "modernc.org/sqlite") {
		t.Fatalf("the binary is not pure Go with modernc SQLite:\n%s", info)
	}
	return bin
}

// processLog is what a process of the binary logged, written by the goroutine reading its output
// and read by the test.
type processLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
	eof chan struct{} // closed once the process's standard error has been read to its end
}

// ended waits until the whole log of a process that exited has been read: what it wrote last, as
// it stopped, is in the log only then.
func (l *processLog) ended() { <-l.eof }

func (l *processLog) WriteString(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.WriteString(s)
}

func (l *processLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

var (
	listeningRE = regexp.MustCompile(`msg=listening addr=(\S+)`)
	metricsRE   = regexp.MustCompile(`msg=metrics addr=(\S+)`)
)

// startServe starts `dirsvc serve` on a temporary data folder and 127.0.0.1:0 and returns its
// address once it listens, with the process and its log.
func startServe(t testing.TB, bin, data string) (string, *exec.Cmd, *processLog) {
	t.Helper()
	return startMode(t, bin, "serve", "--data", data)
}

// startMode starts a serving mode of the binary on 127.0.0.1:0, unless the arguments name another
// address (see startServe).
func startMode(t testing.TB, bin string, args ...string) (string, *exec.Cmd, *processLog) {
	t.Helper()
	addr, cmd, log, err := tryStart(t, bin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return addr, cmd, log
}

// testBaseURL is the base URL the tests give the primary and edges they start (the public address
// of a service behind a load balancer: the same for every node).
const testBaseURL = "https://directory.test"

// metricsAddrs holds, by the address of each process tryStart started, the private address of its
// metrics and full health report.
var metricsAddrs sync.Map

// metricsAddr returns the private metrics address of the process listening at addr.
func metricsAddr(t testing.TB, addr string) string {
	t.Helper()
	m, ok := metricsAddrs.Load(addr)
	if !ok {
		t.Fatalf("no metrics address is known for %s", addr)
	}
	return m.(string)
}

// tryStart starts a serving mode of the binary and returns its address once it listens; an error if
// it exits first. A primary or an edge is given testBaseURL unless args give a base URL, and every
// mode a metrics address of its own (see metricsAddr) unless args give one.
func tryStart(t testing.TB, bin string, args ...string) (string, *exec.Cmd, *processLog, error) {
	t.Helper()
	first := []string{args[0], "--addr", "127.0.0.1:0"}
	given := func(flag string) bool {
		return slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, flag) })
	}
	if (args[0] == "primary" || args[0] == "edge") && !given("--base-url") {
		first = append(first, "--base-url", testBaseURL)
	}
	if !given("--metrics-addr") {
		first = append(first, "--metrics-addr", "127.0.0.1:0")
	}
	cmd := exec.Command(bin, append(first, args[1:]...)...)
	// A pipe of the test's own, not StderrPipe: Wait closes that one as soon as the process exits,
	// and the last lines the process wrote (what it says as it stops) would be lost unread.
	stderr, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close() // the process holds its own copy
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	log := &processLog{eof: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		defer close(log.eof)
		defer stderr.Close()
		sc := bufio.NewScanner(stderr)
		var metrics string
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			if m := metricsRE.FindStringSubmatch(sc.Text()); m != nil {
				metrics = m[1]
			}
			if m := listeningRE.FindStringSubmatch(sc.Text()); m != nil {
				metricsAddrs.Store(m[1], metrics) // the metrics address is logged first
				addr <- m[1]
			}
		}
		close(addr)
	}()
	select {
	case a, ok := <-addr:
		if !ok {
			cmd.Wait()
			return "", nil, nil, fmt.Errorf("dirsvc %s exited before listening:\n%s", args[0], log)
		}
		return a, cmd, log, nil
	case <-time.After(60 * time.Second):
		return "", nil, nil, fmt.Errorf("dirsvc %s did not listen within a minute:\n%s", args[0], log)
	}
}

// firstLiveService returns the public ID of the first live, public service of the demo directory.
func firstLiveService(t *testing.T) string {
	t.Helper()
	var buf bytes.Buffer
	if err := demo.Demo(&buf); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(&buf)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec struct {
			Kind, PublicID, State string
			Audiences             []string
		}
		json.Unmarshal(sc.Bytes(), &rec)
		if rec.Kind == "service" && rec.State == "" && rec.Audiences == nil {
			return rec.PublicID
		}
	}
	t.Fatal("the demo has no live public service")
	return ""
}

func TestServeEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	data := filepath.Join(t.TempDir(), "data") // does not exist yet: serve creates it
	addr, cmd, log := startServe(t, bin, data)

	checker := edgetest.NewChecker(t)
	client := &http.Client{Transport: checker.Transport(t, nil), Timeout: 30 * time.Second}
	id := firstLiveService(t)
	resp, err := client.Get("http://" + addr + "/v1/d/demo/services/" + id)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("X-DIR-Audience") != "public" {
		t.Fatalf("GET demo service %s: %d\n%s", id, resp.StatusCode, body)
	}
	var svc struct{ PublicID, Name string }
	if err := json.Unmarshal(body, &svc); err != nil || svc.PublicID != id || svc.Name == "" {
		t.Fatalf("service body: %v %s", err, body)
	}
	if leaks := demo.Leaks(body, 0); len(leaks) > 0 {
		t.Fatalf("public read leaks %v", leaks)
	}
	for _, p := range []string{"/v1/d/demo/developers", "/v1/d/demo-nz/developers"} {
		resp, err := client.Get("http://" + addr + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d", p, resp.StatusCode)
		}
	}
	// A partner client made with the clients command while the server runs gets a token from it
	// and reads as a partner.
	partnerID, partnerSecret := createClient(t, bin, data, "--name", "Partner Org", "--partner",
		"--directory", "demo", "--tier", "partner", "--scopes", "graph:read search:read")
	if !strings.HasPrefix(partnerID, "dirp_") {
		t.Fatalf("a partner organisation's client %s", partnerID)
	}
	cc := clientcredentials.Config{ClientID: partnerID, ClientSecret: partnerSecret, TokenURL: "http://" + addr + "/oauth/token",
		EndpointParams: url.Values{"directory": {"demo"}}, AuthStyle: oauth2.AuthStyleInHeader}
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, client)
	resp, err = cc.Client(ctx).Get("http://" + addr + "/v1/d/demo/services/" + id + "?view=brief")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("X-DIR-Audience") != "partner" {
		t.Fatalf("partner read: %d audience %q\n%s", resp.StatusCode, resp.Header.Get("X-DIR-Audience"), log)
	}
	if out, err := exec.Command(bin, "clients", "--data", data, "list").Output(); err != nil || strings.Contains(string(out), partnerSecret) {
		t.Fatalf("clients list: %v, or it shows the secret:\n%s", err, out)
	}
	if checker.Count() == 0 {
		t.Fatal("no response was checked against the OpenAPI document")
	}

	// SIGTERM shuts down cleanly.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve exited with %v after SIGTERM:\n%s", err, log)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("serve did not stop after SIGTERM:\n%s", log)
	}
	if _, err := os.Stat(filepath.Join(data, "dirs", "demo", "directory.db")); err != nil {
		t.Fatalf("the data folder holds no demo directory: %v", err)
	}

	// A second start on the same folder serves what is there without loading the demo again.
	addr, _, log2 := startServe(t, bin, data)
	resp, err = client.Get("http://" + addr + "/v1/d/demo/services/" + id + "?view=brief")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || strings.Contains(log2.String(), "loaded demo directory") {
		t.Fatalf("second start: %d\n%s", resp.StatusCode, log2)
	}
}

// TestPrimaryReplicatesAndRestores runs `dirsvc primary` with a replica folder: a directory
// imported while it runs joins replication, and a primary started on an empty data folder restores
// it before serving.
func TestPrimaryReplicatesAndRestores(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	data, replica := t.TempDir(), t.TempDir()
	const token = "a-replication-token-for-tests"
	addr, cmd, log := startMode(t, bin, "primary", "--data", data, "--replica-dir", replica, "--replication-token", token,
		"--metrics-addr", "127.0.0.1:0")
	fixture := filepath.Join("..", "..", "testdata", "small.ndjson")
	if out, err := exec.Command(bin, "import", "--data", data, fixture).CombinedOutput(); err != nil {
		t.Fatalf("import while the primary runs: %v\n%s", err, out)
	}
	// The new directory joins replication within a few seconds.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if files, _ := filepath.Glob(filepath.Join(replica, "dirs", "small", "directory", "ltx", "*", "*.ltx")); len(files) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the imported directory was not replicated:\n%s", log)
		}
		time.Sleep(100 * time.Millisecond) // polling a folder another process writes, with a deadline
	}
	// The health route names the role and every replicated file's position; metrics are served on
	// their own address.
	resp, err := http.Get("http://" + metricsAddr(t, addr) + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	var health dirsvc.NodeStatus
	json.NewDecoder(resp.Body).Decode(&health)
	resp.Body.Close()
	if resp.StatusCode != 200 || health.Role != "primary" || !health.Healthy || len(health.Files) < 3 {
		t.Errorf("health: %d %+v", resp.StatusCode, health)
	}
	metricsAddr := regexp.MustCompile(`msg=metrics addr=(\S+)`).FindStringSubmatch(log.String())
	if metricsAddr == nil {
		t.Fatalf("no metrics address logged:\n%s", log)
	}
	resp, err = http.Get("http://" + metricsAddr[1] + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(metrics), "litestream_txid") {
		t.Errorf("metrics hold no replication position:\n%.500s", metrics)
	}
	// An edge can take the directory from the primary's replication stream.
	edgeData := t.TempDir()
	stream := replicate.NewStreamClient("http://"+addr, token, "dirs/small/directory", nil)
	if _, err := replicate.RestoreFrom(context.Background(), edgeData, stream, "dirs/small/directory", replicate.At{}); err != nil {
		t.Fatalf("restore from the primary's stream: %v\n%s", err, log)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("primary exited with %v:\n%s", err, log)
	}

	empty := filepath.Join(t.TempDir(), "data")
	addr, _, log2 := startMode(t, bin, "primary", "--data", empty, "--replica-dir", replica)
	resp, err = http.Get("http://" + addr + "/v1/d/small/services/svc_gp?view=brief")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(log2.String(), "restored the data folder") {
		t.Fatalf("a primary on an empty folder: %d\n%s", resp.StatusCode, log2)
	}
}

// TestRestoreWithoutServerKey starts `dirsvc serve` on a copy of a data folder without its server
// key, as a restore from backups leaves it: the start refuses, naming the partner client that could
// not authenticate, until the key the operator printed and kept is given; then the client obtains
// tokens again.
func TestRestoreWithoutServerKey(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	data := t.TempDir()
	if out, err := exec.Command(bin, "import", "--data", data, filepath.Join("..", "..", "testdata", "small.ndjson")).CombinedOutput(); err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	clientID, clientSecret := createClient(t, bin, data, "--name", "Clinic Finder", "--directory", "small", "--scopes", "graph:read")
	key, err := exec.Command(bin, "platform", "--data", data, "server-key").Output()
	if err != nil {
		t.Fatalf("platform server-key: %v", err)
	}

	// The restored folder: every file but the key file.
	restored := t.TempDir()
	err = filepath.WalkDir(data, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == "server.key" {
			return err
		}
		rel, _ := filepath.Rel(data, path)
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		os.MkdirAll(filepath.Dir(filepath.Join(restored, rel)), 0o700)
		return os.WriteFile(filepath.Join(restored, rel), b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}

	if _, _, _, err := tryStart(t, bin, "serve", "--data", restored); err == nil || !strings.Contains(err.Error(), "level=ERROR") ||
		!strings.Contains(err.Error(), "clients=1") || !strings.Contains(err.Error(), clientID) ||
		!strings.Contains(err.Error(), "--accept-new-server-key") || strings.Contains(err.Error(), strings.TrimSpace(string(key))) {
		t.Fatalf("serve on a folder restored without its key: %v", err)
	}
	if _, err := os.Stat(filepath.Join(restored, "server.key")); err == nil {
		t.Fatal("the refused start created a key file")
	}
	// The hex form of the key file of earlier builds is not the key's form in the environment.
	raw, _ := base64.StdEncoding.DecodeString(strings.TrimSpace(string(key)))
	t.Setenv("DIRSVC_SERVER_KEY", hex.EncodeToString(raw))
	if _, _, _, err := tryStart(t, bin, "serve", "--data", restored); err == nil || !strings.Contains(err.Error(), "looks like hex") {
		t.Fatalf("serve with the key in hex: %v", err)
	}

	t.Setenv("DIRSVC_SERVER_KEY", strings.TrimSpace(string(key)))
	addr, _, log := startServe(t, bin, restored)
	cc := clientcredentials.Config{ClientID: clientID, ClientSecret: clientSecret, TokenURL: "http://" + addr + "/oauth/token",
		AuthStyle: oauth2.AuthStyleInHeader}
	if _, err := cc.Token(context.Background()); err != nil || strings.Contains(log.String(), "ERROR") {
		t.Fatalf("token with the server key given: %v\n%s", err, log)
	}
}

// createClient creates a client with the binary's clients command (the arguments after create) and
// returns the ID and secret it printed.
func createClient(t testing.TB, bin, data string, args ...string) (id, secret string) {
	t.Helper()
	out, err := exec.Command(bin, append([]string{"clients", "--data", data, "create"}, args...)...).Output()
	if err != nil {
		t.Fatalf("clients create: %v", err)
	}
	var created struct {
		ID     string `json:"clientId"`
		Secret string `json:"clientSecret"`
	}
	if err := json.Unmarshal(out, &created); err != nil || created.ID == "" || created.Secret == "" {
		t.Fatalf("clients create printed %s: %v", out, err)
	}
	return created.ID, created.Secret
}
