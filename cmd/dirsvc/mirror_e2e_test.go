package main_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/dirdb"
)

// mirrorSetup is an upstream directory B (demo, 200 services) and an aggregate A (agg) on data
// folders of their own, with a partner client of B for A's harvest and a client of A for its readers.
type mirrorSetup struct {
	bin, dataA, dataB    string
	harvestID, harvestSK string
}

func newMirrorSetup(t *testing.T) *mirrorSetup {
	t.Helper()
	s := &mirrorSetup{bin: buildBinary(t)}
	dir := t.TempDir()
	s.dataA, s.dataB = filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for _, g := range []struct{ data, slug, services, seed string }{{s.dataB, "demo", "200", "1"}, {s.dataA, "agg", "10", "2"}} {
		file := filepath.Join(dir, g.slug+".ndjson")
		if out, err := exec.Command(s.bin, "gen", "--services", g.services, "--seed", g.seed, "--slug", g.slug, "--out", file).CombinedOutput(); err != nil {
			t.Fatalf("gen: %v\n%s", err, out)
		}
		if out, err := exec.Command(s.bin, "import", "--data", g.data, file).CombinedOutput(); err != nil {
			t.Fatalf("import: %v\n%s", err, out)
		}
	}
	s.harvestID, s.harvestSK = createClient(t, s.bin, s.dataB, "--name", "Aggregate", "--directory", "demo", "--tier", "partner",
		"--scopes", "feed:read graph:read graph:propose", "--per-minute", "100000", "--per-day", "10000000")
	return s
}

// mirrorCLI runs dirsvc mirror on A's data folder with the client secret in the environment.
func (s *mirrorSetup) mirrorCLI(args ...string) (string, int) {
	cmd := exec.Command(s.bin, append([]string{"mirror", "--data", s.dataA}, args...)...)
	cmd.Env = append(os.Environ(), "DIRSVC_MIRROR_CLIENT_SECRET="+s.harvestSK)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		return err.Error(), -1
	}
	return string(out), code
}

// recordOp runs a lifecycle operation (dirsvc record) on B's data folder while B serves it.
func recordOp(t *testing.T, bin, data, slug string, args ...string) string {
	t.Helper()
	out, err := exec.Command(bin, append([]string{"record", "--data", data, "--dir", slug}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("record %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// setDescription changes a record's description at B through dirsvc record show and update.
func setDescription(t *testing.T, bin, data, id, text string) {
	t.Helper()
	var rec map[string]any
	if err := json.Unmarshal([]byte(recordOp(t, bin, data, "demo", "show", id)), &rec); err != nil {
		t.Fatal(err)
	}
	rec["description"] = text
	b, _ := json.Marshal(rec)
	f := filepath.Join(t.TempDir(), "rec.json")
	if err := os.WriteFile(f, b, 0o600); err != nil {
		t.Fatal(err)
	}
	recordOp(t, bin, data, "demo", "update", f)
}

// tokenFor asks the token endpoint at addr for a token of the client in directory dir.
func tokenFor(t testing.TB, addr, dir, id, secret string) string {
	t.Helper()
	req, _ := http.NewRequest("POST", "http://"+addr+"/oauth/token",
		strings.NewReader(url.Values{"grant_type": {"client_credentials"}, "directory": {dir}}.Encode()))
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
	if err := json.NewDecoder(resp.Body).Decode(&tr); err != nil || tr.AccessToken == "" {
		t.Fatalf("token of %s in %s: status %d", id, dir, resp.StatusCode)
	}
	return tr.AccessToken
}

// waitUntil polls another process's state until cond holds, for at most 30 seconds.
func waitUntil(t *testing.T, what string, cond func() bool, logs ...*processLog) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			var b strings.Builder
			for _, l := range logs {
				b.WriteString(l.String())
			}
			t.Fatalf("%s: not within 30s\n%s", what, b.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// liveServices returns the public IDs of the demo's live services that every audience sees.
func liveServices(t *testing.T, bin string) []string {
	t.Helper()
	out, err := exec.Command(bin, "gen", "--services", "200", "--seed", "1").Output()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec struct {
			Kind, PublicID, State string
			Audiences             []string
		}
		json.Unmarshal(sc.Bytes(), &rec)
		if rec.Kind == "service" && rec.State == "" && rec.Audiences == nil {
			ids = append(ids, rec.PublicID)
		}
	}
	if len(ids) < 12 {
		t.Fatalf("the demo has %d live public services", len(ids))
	}
	return ids
}

// listMirror returns A's mirror b as dirsvc mirror list prints it.
func (s *mirrorSetup) listMirror(t *testing.T) dirsvc.Mirror {
	t.Helper()
	out, code := s.mirrorCLI("list", "--dir", "agg")
	if code != 0 {
		t.Fatalf("mirror list: %d\n%s", code, out)
	}
	if strings.Contains(out, s.harvestSK) {
		t.Fatal("mirror list printed the client secret")
	}
	var ms []dirsvc.Mirror
	if err := json.Unmarshal([]byte(out), &ms); err != nil || len(ms) != 1 {
		t.Fatalf("mirror list printed %s: %v", out, err)
	}
	return ms[0]
}

// readFeed returns the pages of a directory's whole feed at addr (first, the first page's path), as
// the reader reads it, joined.
func readFeed(t *testing.T, addr, first string, reader http.Header) string {
	t.Helper()
	var all strings.Builder
	for since := ""; ; {
		path := first
		if since != "" {
			path += "&since=" + url.QueryEscape(since)
		}
		a := get(t, addr, path, reader)
		var page struct {
			NextCursor string `json:"nextCursor"`
			HasMore    bool   `json:"hasMore"`
		}
		if err := json.Unmarshal(a.body, &page); err != nil || a.status != 200 {
			t.Fatalf("the feed %s: %d %s", path, a.status, a.body)
		}
		all.Write(a.body)
		if !page.HasMore {
			return all.String()
		}
		since = page.NextCursor
	}
}

// TestMirrorEndToEnd runs two processes of the binary on 127.0.0.1: A mirrors B. Creations,
// updates and every kind of tombstone at B reach A's readers and A's feed, with their origin; a
// detail B gives only to partners is read at A by partners only; a local change of a mirrored
// record is refused; a restart of A resumes from its cursor; a cursor B no longer keeps (410) makes
// A harvest again in full and drop what B no longer has; bad configuration is refused.
func TestMirrorEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	s := newMirrorSetup(t)
	addrB, cmdB, logB := startServe(t, s.bin, s.dataB)
	upstream := "http://" + addrB

	t.Run("bad configuration is refused", func(t *testing.T) {
		for _, c := range []struct {
			name string
			args []string
			want string
		}{
			{"plain http without loopback allowed", []string{"--upstream", upstream}, "https"},
			{"a private address", []string{"--upstream", "https://" + addrB}, "not a public"},
			{"a bad name", []string{"--upstream", upstream, "--allow-loopback", "--name", "B!"}, "--name"},
			{"staff audiences", []string{"--upstream", upstream, "--allow-loopback", "--audiences", "staff"}, "--audiences"},
			{"no upstream directory", []string{"--upstream", upstream, "--allow-loopback", "--upstream-dir", ""}, "--upstream-dir"},
		} {
			args := []string{"add", "--dir", "agg", "--name", "b", "--upstream-dir", "demo", "--client-id", s.harvestID}
			out, code := s.mirrorCLI(append(args, c.args...)...)
			if code != 2 || !strings.Contains(out, c.want) || strings.Contains(out, s.harvestSK) {
				t.Errorf("%s: exit %d, output %q; want 2 and %q", c.name, code, out, c.want)
			}
		}
		out, code := s.mirrorCLI("add", "--dir", "nowhere", "--name", "b", "--upstream", upstream, "--upstream-dir", "demo", "--client-id", s.harvestID, "--allow-loopback")
		if code != 1 || !strings.Contains(out, "no directory nowhere") {
			t.Errorf("an unknown directory: exit %d, %q", code, out)
		}
		// Publishing what a partner was given to the public at A is refused when the harvest learns the tier.
		if out, code := s.mirrorCLI("add", "--dir", "agg", "--name", "wide", "--upstream", upstream, "--upstream-dir", "demo",
			"--client-id", s.harvestID, "--allow-loopback", "--audiences", "public,partner"); code != 0 {
			t.Fatalf("add: %d %s", code, out)
		}
		out, code = s.mirrorCLI("run-once", "--dir", "agg", "wide", "--allow-loopback")
		if code != 1 || !strings.Contains(out, "wider than the upstream tier partner") {
			t.Errorf("a mirror publishing to the public what a partner was given: exit %d, %q", code, out)
		}
		if out, code := s.mirrorCLI("remove", "--dir", "agg", "wide"); code != 0 {
			t.Fatalf("remove: %d %s", code, out)
		}
	})

	if out, code := s.mirrorCLI("add", "--dir", "agg", "--name", "b", "--upstream", upstream, "--upstream-dir", "demo",
		"--client-id", s.harvestID, "--allow-loopback"); code != 0 || strings.Contains(out, s.harvestSK) {
		t.Fatalf("mirror add: exit %d\n%s", code, out)
	}
	readerID, readerSK := createClient(t, s.bin, s.dataA, "--name", "Reader", "--directory", "agg", "--tier", "partner", "--scopes", "feed:read graph:read")
	profID, profSK := createClient(t, s.bin, s.dataA, "--name", "Clinic", "--directory", "agg", "--tier", "professional", "--scopes", "feed:read graph:read search:read")
	editorID, editorSK := createClient(t, s.bin, s.dataA, "--name", "Aggregate Editor", "--directory", "agg", "--tier", "partner", "--scopes", "graph:read graph:propose")
	addrA, cmdA, logA := startMode(t, s.bin, "serve", "--data", s.dataA, "--mirror-allow-loopback")
	partner := bearer(tokenFor(t, addrA, "agg", readerID, readerSK))
	professional := bearer(tokenFor(t, addrA, "agg", profID, profSK))
	origin := dirsvc.MirrorOrigin(upstream, "demo")
	ids := liveServices(t, s.bin)
	svc := func(id string) string { return "/v1/d/agg/services/" + id + "?view=brief" }

	waitUntil(t, "a service of B read at A", func() bool { return get(t, addrA, svc(ids[0]), partner).status == 200 }, logA)
	var view dirsvc.ServiceView
	if err := json.Unmarshal(get(t, addrA, svc(ids[0]), partner).body, &view); err != nil || view.Origin != origin {
		t.Fatalf("the mirrored service's origin is %q, want %q (%v)", view.Origin, origin, err)
	}

	t.Run("what B gives partners only is read at A by partners only", func(t *testing.T) {
		page := get(t, addrA, "/v1/d/agg/changes?expand=entity&limit=500", partner)
		var fp struct {
			Items []struct {
				PublicID string          `json:"publicId"`
				Origin   string          `json:"origin"`
				Entity   json.RawMessage `json:"entity"`
			} `json:"items"`
		}
		if err := json.Unmarshal(page.body, &fp); err != nil {
			t.Fatal(err)
		}
		canary := ""
		for _, it := range fp.Items {
			if it.Origin == origin && strings.HasPrefix(it.PublicID, "svc_") && bytes.Contains(it.Entity, []byte("canary-partner-x")) {
				canary = it.PublicID
				break
			}
		}
		if canary == "" {
			t.Fatal("A's partner feed holds no mirrored service with a detail B gives partners only")
		}
		for _, h := range []http.Header{nil, professional} {
			a := get(t, addrA, svc(canary), h)
			if a.status != 404 || bytes.Contains(a.body, []byte("canary-")) {
				t.Errorf("%s read by %v at A: %d %s", canary, h, a.status, a.body)
			}
		}
		for _, q := range []string{"/v1/d/agg/search/services?q=canary&limit=100", "/v1/d/agg/search/services?limit=100"} {
			for _, h := range []http.Header{nil, professional} {
				if a := get(t, addrA, q, h); a.status != 200 || bytes.Contains(a.body, []byte("canary-partner")) || bytes.Contains(a.body, []byte(canary)) {
					t.Errorf("search at A %s: %d, holds the partner's detail or record", q, a.status)
				}
			}
		}
	})

	t.Run("a local change of a mirrored record is refused", func(t *testing.T) {
		out, err := exec.Command(s.bin, "record", "--data", s.dataA, "--dir", "agg", "close", ids[0]).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "mirrored from "+upstream+"/v1/d/demo") {
			t.Errorf("record close of a mirrored record: %v %s", err, out)
		}
	})

	t.Run("a proposal on a mirrored record is forwarded to B, moderated there and comes back", func(t *testing.T) {
		id, text := ids[8], "Corrected by the aggregate's editor"
		body := `{"publicId":"` + id + `","changes":{"description":"` + text + `"}}`
		h := bearer(tokenFor(t, addrA, "agg", editorID, editorSK))
		h.Set("Content-Type", "application/json")
		local := do(t, "POST", "http://"+addrA+"/v1/d/agg/federation/forwarded/proposals", h, []byte(body))
		if local.status != http.StatusConflict || !bytes.Contains(local.body, []byte(`"code":"mirrored-record"`)) {
			t.Fatalf("a proposal at A on a mirrored record: %d %s", local.status, local.body)
		}
		out, code := s.mirrorCLI("forward", "--dir", "agg", "--record", id, "--field", "description="+text,
			"--message", "Their website says so", "--allow-loopback")
		var receipt struct{ ID, Status string }
		if code != 0 || json.Unmarshal([]byte(out), &receipt) != nil || receipt.Status != "pending" {
			t.Fatalf("mirror forward: exit %d\n%s", code, out)
		}
		moderation := func(args ...string) string {
			out, err := exec.Command(s.bin, append([]string{"moderation", "--data", s.dataB, "--dir", "demo"}, args...)...).CombinedOutput()
			if err != nil {
				t.Fatalf("moderation %v at B: %v\n%s", args, err, out)
			}
			return string(out)
		}
		moderation("moderator", "add", "cara", "--curator")
		moderation("accept", receipt.ID, "--as", "cara")
		moderation("approve", receipt.ID, "--as", "cara")
		if !strings.Contains(readFeed(t, addrB, "/v1/d/demo/changes?limit=500&expand=entity", bearer(tokenFor(t, addrB, "demo", s.harvestID, s.harvestSK))), text) {
			t.Error("B's feed lacks the accepted proposal")
		}
		waitUntil(t, "the accepted proposal read at A", func() bool {
			return bytes.Contains(get(t, addrA, svc(id), partner).body, []byte(text))
		}, logA, logB)
		out, code = s.mirrorCLI("receipt", "--dir", "agg", receipt.ID, "--allow-loopback")
		if code != 0 || !strings.Contains(out, `"status":"accepted"`) {
			t.Errorf("mirror receipt after the approval: exit %d\n%s", code, out)
		}
	})

	// Creations, updates and every tombstone at B reach A's readers.
	setDescription(t, s.bin, s.dataB, ids[1], "Changed at the origin")
	recordOp(t, s.bin, s.dataB, "demo", "close", ids[2])
	recordOp(t, s.bin, s.dataB, "demo", "delete", ids[3])
	recordOp(t, s.bin, s.dataB, "demo", "merge", ids[4], ids[5])
	recordOp(t, s.bin, s.dataB, "demo", "reduce", ids[6], "professional")
	waitUntil(t, "the changes at B read at A", func() bool {
		return bytes.Contains(get(t, addrA, svc(ids[1]), partner).body, []byte("Changed at the origin")) &&
			get(t, addrA, svc(ids[2]), partner).status == 410 && get(t, addrA, svc(ids[3]), partner).status == 410 &&
			get(t, addrA, svc(ids[4]), partner).status == 301 && get(t, addrA, svc(ids[6]), partner).status == 404
	}, logA, logB)
	if loc := get(t, addrA, svc(ids[4]), partner).header.Get("Location"); !strings.Contains(loc, ids[5]) {
		t.Errorf("the merged record at A names %q, want the survivor %s", loc, ids[5])
	}
	feed := readFeed(t, addrA, "/v1/d/agg/changes?limit=500", partner)
	for id, event := range map[string]string{ids[1]: "updated", ids[2]: "closed", ids[3]: "deleted", ids[4]: "merged", ids[6]: "visibility_reduced"} {
		want := `"publicId":"` + id + `","entityType":"service"`
		i := strings.LastIndex(feed, want)
		if i < 0 || !strings.Contains(feed[i:min(len(feed), i+400)], `"eventType":"`+event+`"`) || !strings.Contains(feed[i:min(len(feed), i+400)], `"origin":"`+origin+`"`) {
			t.Errorf("A's feed lacks the %s of %s with its origin", event, id)
		}
	}

	// A restart of A resumes from its cursor.
	stop := func(cmd *exec.Cmd) {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}
	stop(cmdA)
	before := s.listMirror(t)
	setDescription(t, s.bin, s.dataB, ids[7], "Changed while the aggregate was away")
	addrA, cmdA, logA = restartAt(t, s.bin, addrA, "serve", "--data", s.dataA, "--mirror-allow-loopback")
	waitUntil(t, "the change made while A was away", func() bool {
		return bytes.Contains(get(t, addrA, svc(ids[7]), partner).body, []byte("away"))
	}, logA)
	stop(cmdA)
	after := s.listMirror(t)
	if after.Generation != before.Generation || after.Harvested-before.Harvested > 20 || after.Harvested == before.Harvested {
		t.Errorf("after a restart A harvested %d more (generation %d to %d): want a few, from its cursor",
			after.Harvested-before.Harvested, before.Generation, after.Generation)
	}

	// B prunes its change log past A's cursor: A's next page is a 410, and A harvests in full.
	recordOp(t, s.bin, s.dataB, "demo", "delete", ids[8])
	setDescription(t, s.bin, s.dataB, ids[9], "Changed before the log was pruned")
	stop(cmdB)
	store, err := dirdb.Open(context.Background(), s.dataB)
	if err != nil {
		t.Fatal(err)
	}
	d, err := store.Directory(context.Background(), "demo")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := d.PruneChanges(context.Background(), time.Now().Add(time.Hour), 1<<20); err != nil || n == 0 {
		t.Fatalf("prune B's change log: %d, %v", n, err)
	}
	store.Close()
	_, cmdB, logB = restartAt(t, s.bin, addrB, "serve", "--data", s.dataB)
	defer stop(cmdB)
	addrA, cmdA, logA = restartAt(t, s.bin, addrA, "serve", "--data", s.dataA, "--mirror-allow-loopback")
	defer stop(cmdA)
	waitUntil(t, "the full harvest after the 410", func() bool {
		m := s.listMirror(t)
		return m.Generation == before.Generation+1 && !m.FullHarvest
	}, logA, logB)
	if a := get(t, addrA, svc(ids[8]), partner); a.status != 410 {
		t.Errorf("a record B deleted and no longer lists answers %d at A", a.status)
	}
	if a := get(t, addrA, svc(ids[9]), partner); !bytes.Contains(a.body, []byte("pruned")) {
		t.Errorf("a record B changed before pruning reads at A: %d %s", a.status, a.body)
	}
	if a := get(t, addrA, svc(ids[10]), partner); a.status != 200 {
		t.Errorf("a record B still has, unchanged, answers %d at A after the full harvest", a.status)
	}
	if !strings.Contains(logA.String(), "a full harvest begins") {
		t.Error("A's log does not say a full harvest began")
	}

	t.Run("removing the mirror removes its records", func(t *testing.T) {
		if out, code := s.mirrorCLI("remove", "--dir", "agg", "b"); code != 0 {
			t.Fatalf("remove: %d %s", code, out)
		}
		waitUntil(t, "the mirror's records gone at A", func() bool { return get(t, addrA, svc(ids[10]), partner).status == 410 }, logA)
	})
}
