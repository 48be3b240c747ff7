package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/dirsvc/dirsvc"
)

// exportAnswer is what the tests read of an export.
type exportAnswer struct {
	ID, Status, Error string
	Records           int64
	Files             []struct{ Name, URL string }
}

// pollExport reads an export of the demo directory until done says it may stop.
func pollExport(t *testing.T, c *http.Client, addr, id string, done func(e exportAnswer) bool) exportAnswer {
	t.Helper()
	return pollExportIn(t, c, addr, "demo", id, done)
}

// pollExportIn reads an export of directory dir until done says it may stop (bounded: two minutes).
func pollExportIn(t *testing.T, c *http.Client, addr, dir, id string, done func(e exportAnswer) bool) exportAnswer {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := c.Get("http://" + addr + "/v1/d/" + dir + "/exports/" + id)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests { // the client's limit: wait as told
			wait, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
			time.Sleep(time.Duration(max(wait, 1)) * time.Second)
			continue
		}
		var e exportAnswer
		if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &e) != nil {
			t.Fatalf("GET export: %d %s", resp.StatusCode, b)
		}
		if done(e) {
			return e
		}
		if time.Now().After(deadline) {
			t.Fatalf("export %s still %s after two minutes", id, e.Status)
		}
		time.Sleep(20 * time.Millisecond) // a poll
	}
}

// TestAPrimaryKilledDuringAnExportEndsItFailed kills the serving process (SIGKILL) while an export
// of a 20,000-service directory runs: started again on the same data folder, the export answers
// failed, with no files and no part file left in its folder; an export asked for then succeeds and
// its files download whole.
func TestAPrimaryKilledDuringAnExportEndsItFailed(t *testing.T) {
	slowScenario(t)
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	file := filepath.Join(dir, "d.ndjson")
	if out, err := exec.Command(bin, "gen", "--services", "20000", "--seed", "3", "--out", file).CombinedOutput(); err != nil {
		t.Fatalf("gen: %v\n%s", err, out)
	}
	if out, err := exec.Command(bin, "import", "--data", data, file).CombinedOutput(); err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	id, secret := createClient(t, bin, data, "--name", "Bulk Loader", "--partner", "--directory", "demo",
		"--tier", "partner", "--scopes", "graph:read export:run practitioners:read")
	client := func(addr string) *http.Client {
		cc := clientcredentials.Config{ClientID: id, ClientSecret: secret, TokenURL: "http://" + addr + "/oauth/token",
			EndpointParams: url.Values{"directory": {"demo"}}, AuthStyle: oauth2.AuthStyleInHeader}
		ctx := context.WithValue(context.Background(), oauth2.HTTPClient, &http.Client{Timeout: 30 * time.Second})
		c := cc.Client(ctx)
		c.Timeout = 30 * time.Second
		return c
	}
	start := func(c *http.Client, addr string) string {
		t.Helper()
		resp, err := c.Post("http://"+addr+"/v1/d/demo/exports", "application/json",
			strings.NewReader(`{"formats":["csv","json","fhir-ndjson"]}`))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e exportAnswer
		if resp.StatusCode != http.StatusAccepted || json.Unmarshal(b, &e) != nil {
			t.Fatalf("POST exports: %d %s", resp.StatusCode, b)
		}
		return e.ID
	}

	t.Logf("%s: imported", time.Now().Format(time.StampMilli))
	addr, cmd, log := startServe(t, bin, data)
	c := client(addr)
	exp := start(c, addr)
	e := pollExport(t, c, addr, exp, func(e exportAnswer) bool { return e.Status != dirsvc.ExportQueued })
	if e.Status != dirsvc.ExportRunning {
		t.Fatalf("the export was %s before it could be seen running: a larger directory is needed", e.Status)
	}
	t.Logf("%s: the export runs (%d records written): kill", time.Now().Format(time.StampMilli), e.Records)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	log.ended()

	addr, _, log = startServe(t, bin, data)
	c = client(addr)
	e = pollExport(t, c, addr, exp, func(exportAnswer) bool { return true })
	if e.Status != dirsvc.ExportFailed || len(e.Files) != 0 || e.Error == "" {
		t.Errorf("after the kill the export is %s with %d files (%q)\n%s", e.Status, len(e.Files), e.Error, log)
	}
	left, err := os.ReadDir(filepath.Join(dirsvc.ExportsPath(data), exp))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range left {
		if f.Name() != "export.json" {
			t.Errorf("the failed export's folder keeps %s", f.Name())
		}
	}
	// A new export finishes, and its files download whole through their links.
	t.Logf("%s: restarted", time.Now().Format(time.StampMilli))
	exp = start(c, addr)
	e = pollExport(t, c, addr, exp, func(e exportAnswer) bool { return dirsvc.ExportDone(e.Status) })
	if e.Status != dirsvc.ExportSucceeded {
		t.Fatalf("the next export: %s %s", e.Status, e.Error)
	}
	t.Logf("%s: exported %d records", time.Now().Format(time.StampMilli), e.Records)
	download := func(link string) (int, []byte) { // through the link alone, no token
		t.Helper()
		u, err := url.Parse(link)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Get("http://" + addr + u.RequestURI())
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	for _, f := range e.Files {
		status, b := download(f.URL)
		onDisk, _ := os.ReadFile(filepath.Join(dirsvc.ExportsPath(data), exp, f.Name))
		if status != http.StatusOK || !bytes.Equal(b, onDisk) || len(b) == 0 {
			t.Errorf("download %s: %d, %d bytes of %d", f.Name, status, len(b), len(onDisk))
		}
	}
	// Once its client is revoked, the export's links no longer serve it, however fresh they are.
	if out, err := exec.Command(bin, "clients", "revoke", id, "--data", data).CombinedOutput(); err != nil {
		t.Fatalf("revoke: %v\n%s", err, out)
	}
	if status, b := download(e.Files[0].URL); status != http.StatusForbidden {
		t.Errorf("a link of a revoked client's export: %d %s", status, b)
	}
}
