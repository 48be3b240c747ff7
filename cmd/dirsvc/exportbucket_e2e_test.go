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
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/replicate/s3test"
)

// TestAnExportDownloadsFromAPrimaryRestoredFromTheBucket runs an export on a primary that
// replicates to object storage, stops it, and starts a new primary on an empty data folder, which
// restores from the bucket: the export's status and its download links, given by the first primary,
// work on the second, which holds no export folder (the files come from the bucket, ranges too), and
// its export list holds the export.
// Once the export is cancelled, the bucket holds none of its files.
func TestAnExportDownloadsFromAPrimaryRestoredFromTheBucket(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bucket := s3test.New(t)
	bin := buildBinary(t)
	data := importedFolder(t, bin)
	id, secret := createClient(t, bin, data, "--name", "Bulk Loader", "--partner", "--directory", "small",
		"--tier", "partner", "--scopes", "graph:read export:run")
	key, err := exec.Command(bin, "platform", "--data", data, "server-key").Output()
	if err != nil {
		t.Fatalf("platform server-key: %v", err)
	}
	args := func(data string) []string {
		return append([]string{"primary", "--base-url", testBaseURL, "--data", data}, bucket.Flags("exports", 10*time.Second)...)
	}
	client := func(addr string) *http.Client {
		cc := clientcredentials.Config{ClientID: id, ClientSecret: secret, TokenURL: "http://" + addr + "/oauth/token",
			EndpointParams: url.Values{"directory": {"small"}}, AuthStyle: oauth2.AuthStyleInHeader}
		c := cc.Client(context.WithValue(context.Background(), oauth2.HTTPClient, &http.Client{Timeout: 30 * time.Second}))
		c.Timeout = 30 * time.Second
		return c
	}
	// download fetches a link given by the service (its base URL is not this process's address).
	download := func(addr, link, rng string) (int, []byte) {
		t.Helper()
		u, err := url.Parse(link)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("GET", "http://"+addr+u.RequestURI(), nil)
		if rng != "" {
			req.Header.Set("Range", rng)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, b
	}

	addr, cmd, log := startMode(t, bin, args(data)...)
	c := client(addr)
	resp, err := c.Post("http://"+addr+"/v1/d/small/exports", "application/json", strings.NewReader(`{"formats":["csv","json"]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST exports: %d %s", resp.StatusCode, b)
	}
	exp := exportID(t, b)
	e := pollExportIn(t, c, addr, "small", exp, func(e exportAnswer) bool { return dirsvc.ExportDone(e.Status) })
	if e.Status != dirsvc.ExportSucceeded || len(e.Files) < 3 {
		t.Fatalf("the export: %s %q, %d files\n%s", e.Status, e.Error, len(e.Files), log)
	}
	files := map[string][]byte{}
	for _, f := range e.Files {
		st, body := download(addr, f.URL, "")
		if st != http.StatusOK || len(body) == 0 {
			t.Fatalf("download %s from the primary that ran the export: %d %s", f.Name, st, body)
		}
		files[f.Name] = body
	}
	keys := bucket.Keys(t)
	for name := range files {
		if !slices.Contains(keys, "exports/exports/"+exp+"/"+name) {
			t.Errorf("the bucket lacks %s of the export (keys: %v)", name, keys)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	log.ended()

	// The first primary's disk is lost: a new one restores from the bucket.
	t.Setenv("DIRSVC_SERVER_KEY", strings.TrimSpace(string(key)))
	fresh := filepath.Join(t.TempDir(), "data")
	addr, _, log = startMode(t, bin, args(fresh)...)
	if !strings.Contains(log.String(), "restored the data folder") {
		t.Fatalf("the new primary did not restore from the bucket:\n%s", log)
	}
	if _, err := os.Stat(filepath.Join(dirsvc.ExportsPath(fresh), exp)); !os.IsNotExist(err) {
		t.Fatalf("the new primary holds the export's folder: %v", err)
	}
	c = client(addr)
	if again := pollExportIn(t, c, addr, "small", exp, func(exportAnswer) bool { return true }); again.Status != dirsvc.ExportSucceeded {
		t.Errorf("the export on the new primary: %s %q", again.Status, again.Error)
	}
	// Its export list holds the export too, from the bucket.
	resp, err = c.Get("http://" + addr + "/v1/d/small/exports")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	var list struct {
		Items []exportAnswer `json:"items"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &list) != nil || len(list.Items) != 1 || list.Items[0].ID != exp ||
		list.Items[0].Status != dirsvc.ExportSucceeded || len(list.Items[0].Files) != len(e.Files) {
		t.Errorf("the export list on the new primary: %d %s", resp.StatusCode, b)
	}
	for _, f := range e.Files {
		st, body := download(addr, f.URL, "")
		if st != http.StatusOK || !bytes.Equal(body, files[f.Name]) {
			t.Errorf("download %s from the new primary: %d, %d bytes (want %d)", f.Name, st, len(body), len(files[f.Name]))
		}
	}
	csv := files["services.csv"]
	if st, body := download(addr, linkOf(t, e, "services.csv"), "bytes=10-19"); st != http.StatusPartialContent || !bytes.Equal(body, csv[10:20]) {
		t.Errorf("a range of services.csv from the bucket: %d %q (want %q)", st, body, csv[10:20])
	}
	// A tampered link is refused there too.
	if st, _ := download(addr, strings.Replace(linkOf(t, e, "services.csv"), "sig=", "sig=A", 1), ""); st != http.StatusForbidden {
		t.Errorf("a tampered link on the new primary: %d", st)
	}
}

// exportID reads the id of an export answer.
func exportID(t *testing.T, b []byte) string {
	t.Helper()
	var e exportAnswer
	if err := json.Unmarshal(b, &e); err != nil || e.ID == "" {
		t.Fatalf("no export id in %s", b)
	}
	return e.ID
}

// linkOf returns the download link of the export's file name.
func linkOf(t *testing.T, e exportAnswer, name string) string {
	t.Helper()
	for _, f := range e.Files {
		if f.Name == name {
			return f.URL
		}
	}
	t.Fatalf("the export has no %s", name)
	return ""
}
