package replicate_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/benbjohnson/litestream"
	"github.com/superfly/ltx"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/replicate"
)

const streamToken = "replication-token-for-tests"

// streamOfSmall replicates the small directory, with a partner client whose secret MAC is in the
// platform file, to a folder, makes two changes so that there is more than one LTX file, and
// serves the folder's stream. It returns the server, the folder and the client's stored MAC.
func streamOfSmall(t *testing.T) (*httptest.Server, replicate.Target, []byte) {
	t.Helper()
	ctx := context.Background()
	data, store := smallFolder(t)
	mac := make([]byte, 32)
	rand.Read(mac)
	if err := store.CreateClient(ctx, &dirsvc.Client{ID: "dirp_partner", Name: "A partner"}, mac); err != nil {
		t.Fatal(err)
	}
	_, stored, err := store.Client(ctx, "dirp_partner")
	if err != nil || !bytes.Equal(stored, mac) {
		t.Fatalf("the client's stored MAC: %x %v", stored, err)
	}
	target := replicate.Target{Dir: t.TempDir()}
	r, err := replicate.Open(ctx, data, target, smallFiles, replicate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close(); r.Close(ctx) })
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	rename(t, store, "Coast Counselling Renamed")
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	h, err := replicate.Stream(r, streamToken, store.Platform)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, target, stored
}

// streamGet asks the stream for path (under its prefix) and returns the status and body.
func streamGet(t *testing.T, srv *httptest.Server, path string, header ...string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest("GET", srv.URL+replicate.StreamPrefix+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+streamToken)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
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

// folderLTXFiles returns the LTX files of a file in the replica folder, by level.
func folderLTXFiles(t *testing.T, target replicate.Target, name string) map[int][]string {
	t.Helper()
	out := map[int][]string{}
	root := filepath.Join(target.Dir, filepath.FromSlash(name), "ltx")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".ltx") {
			return err
		}
		level, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if err != nil {
			return err
		}
		out[level] = append(out[level], filepath.Base(p))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestTheStreamServesOnlyDirectoryFiles checks that the primary's own files (the platform file of
// partner clients' secret MACs, the ops files of canonical records) are not on the replication
// stream: not listed, and every request naming one is answered exactly as for a file the primary
// does not replicate, whole or by range. Error answers name no file and no path.
func TestTheStreamServesOnlyDirectoryFiles(t *testing.T) {
	srv, target, _ := streamOfSmall(t)

	status, body := streamGet(t, srv, "files")
	var files replicate.Files
	if err := json.Unmarshal(body, &files); status != 200 || err != nil {
		t.Fatalf("files: %d %s %v", status, body, err)
	}
	var names []string
	for _, f := range files.Files {
		names = append(names, f.Name)
	}
	if got, want := strings.Join(names, " "), "dirs/small/directory"; got != want {
		t.Errorf("files listed: %q, want %q", got, want)
	}
	if files.Platform == nil {
		t.Error("the files came without the platform")
	}

	own := map[string]map[int][]string{}
	for _, name := range []string{"platform", "dirs/small/ops"} {
		own[name] = folderLTXFiles(t, target, name)
		if len(own[name]) == 0 {
			t.Fatalf("the folder holds no LTX file of %s", name)
		}
	}
	unknown := "dirs/other/directory"
	for level := 0; level <= litestream.SnapshotLevel; level++ {
		list := "ltx/" + strconv.Itoa(level) + "?name="
		wantStatus, wantBody := streamGet(t, srv, list+url.QueryEscape(unknown))
		if wantStatus != http.StatusNotFound {
			t.Fatalf("the LTX files of a file the primary does not replicate: %d %s", wantStatus, wantBody)
		}
		for name, levels := range own {
			for _, q := range []string{url.QueryEscape(name), url.QueryEscape(name) + "&seek=1", url.QueryEscape(name) + "&meta=1"} {
				if status, body := streamGet(t, srv, list+q); status != wantStatus || !bytes.Equal(body, wantBody) {
					t.Errorf("the LTX files of %s at level %d (%s): %d %q, want %d %q", name, level, q, status, body, wantStatus, wantBody)
				}
			}
			for _, file := range levels[level] {
				path := "ltx/" + strconv.Itoa(level) + "/" + file + "?name="
				wantStatus, wantBody := streamGet(t, srv, path+url.QueryEscape(unknown))
				if wantStatus != http.StatusNotFound {
					t.Fatalf("an LTX file of a file the primary does not replicate: %d %s", wantStatus, wantBody)
				}
				for _, rng := range []string{"", "bytes=0-99", "bytes=0-", "bytes=-10"} {
					var status int
					var body []byte
					if rng == "" {
						status, body = streamGet(t, srv, path+url.QueryEscape(name))
					} else {
						status, body = streamGet(t, srv, path+url.QueryEscape(name), "Range", rng)
					}
					if status != wantStatus || !bytes.Equal(body, wantBody) {
						t.Errorf("LTX file %s of %s at level %d, range %q: %d (%d bytes), want %d %q", file, name, level, rng, status, len(body), wantStatus, wantBody)
					}
				}
			}
		}
	}
}

// TestStreamErrorsGiveNothingAway asks the stream for what it cannot serve: the answer is written for
// the edge and names no path of the primary's, no file and no internal error.
func TestStreamErrorsGiveNothingAway(t *testing.T) {
	srv, target, _ := streamOfSmall(t)
	for _, path := range []string{
		"ltx/0/not-an-ltx-file?name=dirs%2Fsmall%2Fdirectory",
		"ltx/0/0000000000000063-0000000000000063.ltx?name=dirs%2Fsmall%2Fdirectory",
		"ltx/0?name=..%2F..%2Fetc",
		"ltx/10?name=dirs%2Fsmall%2Fdirectory",
		"files?wait=forever",
	} {
		status, body := streamGet(t, srv, path)
		if status < 400 {
			t.Errorf("%s: %d", path, status)
		}
		for _, leak := range []string{target.Dir, "not-an-ltx-file", "0000000000000063", "dirs/small", "etc", ".ltx", "no such file or directory"} {
			if bytes.Contains(body, []byte(leak)) {
				t.Errorf("%s: the answer %q gives away %q", path, body, leak)
			}
		}
	}
}

// TestNothingOnTheStreamHoldsSecrets restores everything an edge can fetch from the stream (every
// file /files lists, every LTX file of every level, and the files restored from them) and scans it
// for the secret MAC of a partner client and for the staff-only canaries of the small directory:
// none is there. The same scan finds both in the primary's own files, so it can fail.
func TestNothingOnTheStreamHoldsSecrets(t *testing.T) {
	ctx := context.Background()
	srv, target, mac := streamOfSmall(t)
	scan := secretScan(mac)
	var fetched bytes.Buffer // every byte an edge can fetch

	status, body := streamGet(t, srv, "files")
	if status != 200 {
		t.Fatalf("files: %d %s", status, body)
	}
	fetched.Write(body)
	var files replicate.Files
	if err := json.Unmarshal(body, &files); err != nil {
		t.Fatal(err)
	}
	restored := t.TempDir()
	var ltxFiles int
	for _, f := range files.Files {
		for level := 0; level <= litestream.SnapshotLevel; level++ {
			status, body := streamGet(t, srv, "ltx/"+strconv.Itoa(level)+"?name="+url.QueryEscape(f.Name))
			if status != 200 {
				t.Fatalf("the LTX files of %s at level %d: %d %s", f.Name, level, status, body)
			}
			fetched.Write(body)
			var infos []*ltx.FileInfo
			if err := json.Unmarshal(body, &infos); err != nil {
				t.Fatal(err)
			}
			for _, fi := range infos {
				status, body := streamGet(t, srv, "ltx/"+strconv.Itoa(level)+"/"+ltx.FormatFilename(fi.MinTXID, fi.MaxTXID)+"?name="+url.QueryEscape(f.Name))
				if status != 200 {
					t.Fatalf("an LTX file of %s: %d", f.Name, status)
				}
				fetched.Write(body)
				ltxFiles++
			}
		}
		if _, err := replicate.RestoreFrom(ctx, restored, replicate.NewStreamClient(srv.URL, streamToken, f.Name, nil), f.Name, replicate.At{}); err != nil {
			t.Fatalf("restore %s from the stream: %v", f.Name, err)
		}
	}
	if len(files.Files) == 0 || ltxFiles == 0 {
		t.Fatalf("the stream served %d files, %d LTX files", len(files.Files), ltxFiles)
	}
	if got := copyServiceName(t, restored, files.Platform, "svc_counsel"); got != "Coast Counselling Renamed" {
		t.Errorf("the directory restored from the stream: %q", got)
	}
	fetched.Write(readFolder(t, restored))
	if found := scan(fetched.Bytes()); len(found) > 0 {
		t.Errorf("what an edge can fetch from the stream holds %v", found)
	}

	// The scan finds them in the primary's own files, restored from its folder.
	own := t.TempDir()
	for _, name := range []string{"platform", "dirs/small/ops"} {
		if _, err := replicate.Restore(ctx, own, target, name, replicate.At{}); err != nil {
			t.Fatal(err)
		}
	}
	found := strings.Join(scan(readFolder(t, own)), ", ")
	for _, what := range []string{"the client's MAC", "a staff-only canary"} {
		if !strings.Contains(found, what) {
			t.Errorf("the scan does not find %s in the primary's own files (found %s)", what, found)
		}
	}
}

// secretScan returns a scan for the secrets of the small directory's primary: the partner client's
// MAC (raw, hex, base64) and the staff-only canary. The scan returns what it found.
func secretScan(mac []byte) func([]byte) []string {
	secrets := map[string][]byte{
		"the client's MAC":               mac,
		"the client's MAC in hex":        []byte(hex.EncodeToString(mac)),
		"the client's MAC in upper hex":  []byte(strings.ToUpper(hex.EncodeToString(mac))),
		"the client's MAC in base64":     []byte(base64.RawStdEncoding.EncodeToString(mac)),
		"the client's MAC in base64 url": []byte(base64.RawURLEncoding.EncodeToString(mac)),
		"a staff-only canary":            []byte("canary-staff-x"),
	}
	return func(b []byte) []string {
		var found []string
		for what, s := range secrets {
			if bytes.Contains(b, s) {
				found = append(found, what)
			}
		}
		sort.Strings(found)
		return found
	}
}

// copyServiceName reads the public name of a service from an edge's data folder holding directory
// files restored from the stream, serving the directories of the platform p as an edge does.
func copyServiceName(t *testing.T, data string, p *dirsvc.Platform, id string) string {
	t.Helper()
	ctx := context.Background()
	store, err := dirdb.OpenReplica(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if _, err := store.SyncPlatform(ctx, p, func(string) bool { return true }); err != nil {
		t.Fatal(err)
	}
	return publicName(t, store, id)
}

// readFolder returns the bytes of every file under dir, each opened with SQLite first so that a
// database's write-ahead log is in it.
func readFolder(t *testing.T, dir string) []byte {
	t.Helper()
	if store, err := dirdb.Open(context.Background(), dir); err == nil {
		store.Close()
	}
	var out bytes.Buffer
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		out.Write(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestAPlatformChangeWakesTheEdges changes only the platform file (a directory's switch): an edge
// waiting on the files with the version it has is answered with the change at once, not when its
// wait is over, though the platform file itself is not listed.
func TestAPlatformChangeWakesTheEdges(t *testing.T) {
	ctx := context.Background()
	data, store := smallFolder(t)
	r, err := replicate.Open(ctx, data, replicate.Target{Dir: t.TempDir()}, smallFiles, replicate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { store.Close(); r.Close(ctx) }()
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	h, err := replicate.Stream(r, streamToken, store.Platform)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	_, body := streamGet(t, srv, "files")
	var before replicate.Files
	if err := json.Unmarshal(body, &before); err != nil {
		t.Fatal(err)
	}
	if err := store.SetSeniorManagementAvailable(ctx, "small", true); err != nil {
		t.Fatal(err)
	}
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	// Well short of the wait asked for: an answer only at its end fails.
	ctx, cancel := context.WithTimeout(ctx, replicate.MaxStreamWait/3)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+replicate.StreamPrefix+"files?since="+url.QueryEscape(before.Version)+"&wait="+replicate.MaxStreamWait.String(), nil)
	req.Header.Set("Authorization", "Bearer "+streamToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("the files after a platform change: %v", err)
	}
	defer resp.Body.Close()
	var after replicate.Files
	if err := json.NewDecoder(resp.Body).Decode(&after); err != nil {
		t.Fatal(err)
	}
	if after.Version == before.Version || after.Platform == nil || len(after.Platform.Directories) != 1 ||
		!after.Platform.Directories[0].SeniorManagementAvailable {
		t.Errorf("the files after a platform change: version %q (was %q), platform %+v", after.Version, before.Version, after.Platform)
	}
}
