//go:build unix

package slowlink_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The slow link: reads paced at 300 KiB/s, through a receive buffer of 64 KiB (an ordinary link's,
// rather than the megabytes loopback grows to), so the server's writes keep the reader's pace.
const (
	slowRate    = 300 << 10
	receiveBuf  = 64 << 10
	streamIdle  = 30 * time.Second // the server's idle bound (edge.DefaultStreamIdle)
	stallFor    = streamIdle + 15*time.Second
	replication = "a-replication-token-for-tests"
	baseURL     = "https://directory.test"
)

// services is the size of the generated directory: the smallest round size whose HealthcareService
// NDJSON file (about 1.9 KB a service) takes more than two minutes at slowRate, and whose JSON export
// of services, organisations and locations is past 50 MB.
const services = 20000

// TestDownloadsOverASlowLink reads, at the same time and each at about 300 KB/s: a 50 MB export
// file from the primary and a Bulk Data NDJSON file through an edge, for more than two minutes each,
// and both arrive whole; and, from each node, a reader that stops reading for longer than the idle
// bound, which is cut and then resumes with a range request to the same bytes.
func TestDownloadsOverASlowLink(t *testing.T) {
	if os.Getenv("DIRSVC_SLOW_TESTS") != "1" {
		t.Skip("a slow scenario: runs with DIRSVC_SLOW_TESTS=1 (as .ci/run does)")
	}
	if testing.Short() {
		t.Skip("runs the binary for three minutes")
	}
	began := time.Now()
	bin := buildBinary(t)
	t.Logf("%v: built", time.Since(began).Round(time.Millisecond))
	dir := t.TempDir()
	data, gen := filepath.Join(dir, "data"), filepath.Join(dir, "gen.ndjson")
	run(t, bin, "gen", "--services", strconv.Itoa(services), "--seed", "1", "--out", gen)
	run(t, bin, "import", "--data", data, gen)
	t.Logf("%v: generated and imported %d services", time.Since(began).Round(time.Millisecond), services)
	limits := []string{"--anonymous-per-minute", "1000000", "--anonymous-per-day", "100000000"}
	primary := start(t, bin, append([]string{"primary", "--data", data, "--replica-dir", filepath.Join(dir, "replica"),
		"--replication-token", replication, "--base-url", baseURL}, limits...)...)
	edge := start(t, bin, append([]string{"edge", "--data", filepath.Join(dir, "edge"), "--primary", "http://" + primary,
		"--replication-token", replication, "--base-url", baseURL}, limits...)...)
	out := run(t, bin, "clients", "--data", data, "create", "--name", "Bulk Loader", "--partner", "--directory", "demo",
		"--tier", "partner", "--scopes", "graph:read export:run", "--per-minute", "100000", "--per-day", "1000000")
	token := accessToken(t, primary, out)
	exportFile := exportLink(t, primary, token)
	bulkFile := bulkLink(t, primary, token)
	t.Logf("%v: the export and the Bulk Data export are ready: the slow reads begin", time.Since(began).Round(time.Millisecond))

	// What a fast client reads of each link is what every slow one must get.
	exportSum, exportSize := fastRead(t, "http://"+primary+exportFile)
	bulkSum, bulkSize := fastRead(t, "http://"+primary+bulkFile)
	if exportSize < 50_000_000 {
		t.Fatalf("the export file is %d bytes: the test needs 50 MB or more", exportSize)
	}
	if slowest := time.Duration(bulkSize) * time.Second / slowRate; slowest <= 2*time.Minute {
		t.Fatalf("the Bulk Data file is %d bytes: read at %d B/s it takes %v, not more than two minutes", bulkSize, slowRate, slowest)
	}
	t.Logf("export file %d bytes, Bulk Data file %d bytes", exportSize, bulkSize)

	var wg sync.WaitGroup
	for _, c := range []struct{ name, url, sum string }{
		{"the export file from the primary", "http://" + primary + exportFile, exportSum},
		{"the Bulk Data file through the edge", "http://" + edge + bulkFile, bulkSum},
	} {
		wg.Go(func() {
			r := slowRead(t, c.url, 0, 0)
			if r.err != nil || r.sum() != c.sum {
				t.Errorf("%s, read slowly: %d bytes in %v, ended by %v; SHA-256 matches the fast read: %v",
					c.name, r.n, r.took, r.err, r.sum() == c.sum)
				return
			}
			if r.took <= 2*time.Minute {
				t.Errorf("%s was read in %v: not a slow read of more than two minutes", c.name, r.took)
			}
			t.Logf("%s: %d bytes in %v (%.0f B/s), whole", c.name, r.n, r.took.Round(time.Millisecond), float64(r.n)/r.took.Seconds())
		})
		wg.Go(func() {
			// A reader that stops: it reads 2 MiB, takes nothing for longer than the bound, then
			// reads on at once and finds its answer cut short.
			r := slowRead(t, c.url, 2<<20, stallFor)
			if r.err == nil || r.n >= r.size {
				t.Errorf("%s: a reader that stalled %v read on: %d bytes of %d, ended by %v", c.name, stallFor, r.n, r.size, r.err)
				return
			}
			// A range request resumes it where it was cut; the joined bytes are the file's.
			rest := resume(t, c.url, r)
			if r.sum() != c.sum {
				t.Errorf("%s: cut at %d bytes and resumed with %d more: the joined bytes' SHA-256 differs from the fast read's",
					c.name, r.n-rest, rest)
				return
			}
			t.Logf("%s: a reader stalled %v was cut at %d bytes of %d (%v), and resumed whole", c.name, stallFor, r.n-rest, r.size, r.err)
		})
	}
	wg.Wait()
	t.Logf("%v in all", time.Since(began).Round(time.Millisecond))
}

// download is what a reader read of a link.
type download struct {
	h    hash.Hash // of the bytes read
	n    int64     // bytes read
	size int64     // the file's size (Content-Length of the whole answer)
	took time.Duration
	err  error // what ended the read of the body, when it did not end whole
}

func (d *download) sum() string { return fmt.Sprintf("%x", d.h.Sum(nil)) }

// client reads through a small receive buffer, with no timeout of its own and no compression (the
// files' bytes as they are).
var client = &http.Client{Transport: &http.Transport{
	DisableCompression: true,
	DialContext: (&net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var err error
		c.Control(func(fd uintptr) {
			err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, receiveBuf)
		})
		return err
	}}).DialContext,
}}

// slowRead reads a link at slowRate. With stall positive, it stops reading for that long once it has
// read stallAt bytes, then reads the rest at once: a connection the server has not cut gives it all
// (the stall ends well within the server's old whole-response bound of 60 s).
func slowRead(t *testing.T, u string, stallAt int64, stall time.Duration) *download {
	t.Helper()
	resp, err := client.Get(u)
	if err != nil {
		t.Error(err)
		return &download{h: sha256.New(), err: err}
	}
	defer resp.Body.Close()
	d := &download{h: sha256.New(), size: resp.ContentLength}
	if resp.StatusCode != http.StatusOK {
		d.err = fmt.Errorf("status %d", resp.StatusCode)
		return d
	}
	start := time.Now()
	paced := true
	buf := make([]byte, 16<<10)
	for {
		if stall > 0 && d.n >= stallAt {
			time.Sleep(stall) // the client takes nothing: this is what is tested, not a wait for work
			stall, paced = 0, false
		}
		m, err := resp.Body.Read(buf)
		d.h.Write(buf[:m])
		d.n += int64(m)
		if err == io.EOF {
			break
		} else if err != nil {
			d.err = err
			break
		}
		if paced { // the link delivers slowRate bytes a second: the next read waits for its bytes
			time.Sleep(time.Until(start.Add(time.Duration(d.n) * time.Second / slowRate)))
		}
	}
	d.took = time.Since(start)
	if d.err == nil && d.n != d.size {
		d.err = fmt.Errorf("%d bytes of %d", d.n, d.size)
	}
	return d
}

// resume reads the rest of a cut download with a range request, adds it to d and returns how many
// bytes it added.
func resume(t *testing.T, u string, d *download) int64 {
	t.Helper()
	req, _ := http.NewRequest("GET", u, nil)
	req.Header.Set("Range", "bytes="+strconv.FormatInt(d.n, 10)+"-")
	resp, err := client.Do(req)
	if err != nil {
		t.Error(err)
		return 0
	}
	defer resp.Body.Close()
	want := fmt.Sprintf("bytes %d-%d/%d", d.n, d.size-1, d.size)
	if resp.StatusCode != http.StatusPartialContent || resp.Header.Get("Content-Range") != want {
		t.Errorf("range request: %d, Content-Range %q, want 206 and %q", resp.StatusCode, resp.Header.Get("Content-Range"), want)
		return 0
	}
	n, err := io.Copy(d.h, resp.Body)
	if err != nil {
		t.Error(err)
	}
	d.n += n
	return n
}

// fastRead reads a link at once and returns the SHA-256 and size of what it holds.
func fastRead(t *testing.T, u string) (string, int64) {
	t.Helper()
	resp, err := client.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	h := sha256.New()
	n, err := io.Copy(h, resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || n != resp.ContentLength || n == 0 {
		t.Fatalf("GET %s: %d, %d bytes of %d, %v", u, resp.StatusCode, n, resp.ContentLength, err)
	}
	return fmt.Sprintf("%x", h.Sum(nil)), n
}

// accessToken gets a token for the client whose creation printed created.
func accessToken(t *testing.T, addr string, created []byte) string {
	t.Helper()
	var c struct{ ClientID, ClientSecret string }
	if err := json.Unmarshal(created, &c); err != nil || c.ClientID == "" {
		t.Fatalf("clients create printed %s: %v", created, err)
	}
	req, _ := http.NewRequest("POST", "http://"+addr+"/oauth/token",
		strings.NewReader(url.Values{"grant_type": {"client_credentials"}, "directory": {"demo"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(c.ClientID, c.ClientSecret)
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if status := call(t, req, &tok); status != http.StatusOK || tok.AccessToken == "" {
		t.Fatalf("token: %d", status)
	}
	return tok.AccessToken
}

// exportLink runs an export of the directory's services, organisations and locations as JSON (one
// file of 50 MB or more) and returns the path and query of its file's signed link.
func exportLink(t *testing.T, addr, token string) string {
	t.Helper()
	req, _ := http.NewRequest("POST", "http://"+addr+"/v1/d/demo/exports",
		strings.NewReader(`{"formats":["json"],"types":["service","organisation","location"]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	var e struct {
		ID, Status string
		Files      []struct{ Name, URL string }
	}
	if status := call(t, req, &e); status != http.StatusAccepted {
		t.Fatalf("POST exports: %d", status)
	}
	poll(t, "the export", func() bool {
		req, _ := http.NewRequest("GET", "http://"+addr+"/v1/d/demo/exports/"+e.ID, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		if status := call(t, req, &e); status != http.StatusOK || e.Status == "failed" {
			t.Fatalf("GET export: %d %s", status, e.Status)
		}
		return e.Status == "succeeded"
	})
	for _, f := range e.Files {
		if f.Name == "directory.json" {
			return requestURI(t, f.URL)
		}
	}
	t.Fatalf("the export has no directory.json: %+v", e.Files)
	return ""
}

// bulkLink runs a Bulk Data export of the directory's HealthcareService resources and returns the
// path and query of its NDJSON file's link, as the manifest gives it.
func bulkLink(t *testing.T, addr, token string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+addr+"/v1/d/demo/fhir/$export?_type=HealthcareService", nil)
	req.Header.Set("Accept", "application/fhir+json")
	req.Header.Set("Prefer", "respond-async")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	status := resp.Header.Get("Content-Location")
	if resp.StatusCode != http.StatusAccepted || status == "" {
		t.Fatalf("Bulk Data kick-off: %d, Content-Location %q", resp.StatusCode, status)
	}
	var m struct {
		Output []struct{ Type, URL string }
	}
	poll(t, "the Bulk Data export", func() bool {
		req, _ := http.NewRequest("GET", "http://"+addr+requestURI(t, status), nil)
		req.Header.Set("Authorization", "Bearer "+token)
		return call(t, req, &m) == http.StatusOK
	})
	if len(m.Output) != 1 || m.Output[0].Type != "HealthcareService" {
		t.Fatalf("the manifest lists %+v", m.Output)
	}
	return requestURI(t, m.Output[0].URL)
}

// call does a request and decodes a JSON answer of 200 or 202 into v, returning the status.
func call(t *testing.T, req *http.Request, v any) int {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusAccepted && len(b) > 0 {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s %s: %d %s", req.Method, req.URL.Path, resp.StatusCode, b)
		}
	}
	return resp.StatusCode
}

// poll calls done until it reports true, failing after two minutes.
func poll(t *testing.T, what string, done func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !done() {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not finish within two minutes", what)
		}
		time.Sleep(100 * time.Millisecond) // another process's work: polled, with a deadline
	}
}

// requestURI returns the path and query of a link, to be asked of a node by its address (the links
// carry the public base URL).
func requestURI(t *testing.T, link string) string {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	return u.RequestURI()
}

// buildBinary builds cmd/dirsvc as shipped (without cgo).
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "dirsvc")
	cmd := exec.Command("go", "build", "-o", bin, "..")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// run runs a command of the binary to its end and returns its standard output.
func run(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("dirsvc %s: %v\n%s", args[0], err, stderr.String())
	}
	return out
}

var listening = regexp.MustCompile(`msg=listening addr=(\S+)`)

// start starts a serving mode of the binary on 127.0.0.1:0 and returns its address once it listens.
// The process is killed when the test ends; its log is shown if the test fails.
func start(t *testing.T, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{args[0], "--addr", "127.0.0.1:0"}, args[1:]...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var (
		mu  sync.Mutex
		log strings.Builder
	)
	addr := make(chan string, 1)
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			mu.Lock()
			log.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-read
		cmd.Wait()
		if t.Failed() {
			t.Logf("dirsvc %s logged:\n%s", args[0], log.String())
		}
	})
	select {
	case a := <-addr:
		return a
	case <-read:
		t.Fatalf("dirsvc %s exited before listening", args[0])
	case <-time.After(time.Minute):
		t.Fatalf("dirsvc %s did not listen within a minute", args[0])
	}
	return ""
}
