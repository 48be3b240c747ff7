package main_test

import (
	"database/sql"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/replicate/s3test"
	_ "modernc.org/sqlite" // the pure-Go driver, to age a stored view
)

// health reads a node's full health report, on its private metrics address.
func health(t testing.TB, addr string) dirsvc.NodeStatus {
	t.Helper()
	var st dirsvc.NodeStatus
	a := get(t, metricsAddr(t, addr), "/healthz", nil)
	if err := json.Unmarshal(a.body, &st); err != nil {
		t.Fatalf("healthz %d %s: %v", a.status, a.body, err)
	}
	return st
}

// TestAHungBucketHoldsBackNoWriteNoEdgeNoShutdown runs a primary replicating to a folder and a
// bucket, with an edge following it, and hangs the bucket: an admin write answers within the
// replica wait, 202 with Replication-Pending, the edge serves it by its position, the primary's
// health says the bucket is behind, and SIGTERM ends the primary within its grace period. Started
// again with the bucket back, the primary brings the bucket up to date with no further write.
func TestAHungBucketHoldsBackNoWriteNoEdgeNoShutdown(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bucket := s3test.New(t)
	c := &cluster{bin: buildBinary(t), replica: t.TempDir()}
	c.primaryData = importedFolder(t, c.bin)
	c.primaryArgs = append([]string{"primary", "--base-url", testBaseURL, "--data", c.primaryData, "--replica-dir", c.replica,
		"--replication-token", testReplicationToken, "--admin-token", testAdminToken,
		"--replica-wait", "1s", "--max-storage-lag", "1s", "--metrics-addr", "127.0.0.1:0"}, bucket.Flags("durability", time.Second)...)
	c.primary, c.primaryCmd, c.primaryLog = startMode(t, c.bin, c.primaryArgs...)
	c.edge, _, c.edgeLog = startMode(t, c.bin, "edge", "--data", t.TempDir(), "--primary", "http://"+c.primary,
		"--replication-token", testReplicationToken)
	c.waitFor(t, "the bucket holds the directory", func() bool {
		r := health(t, c.primary).Replication
		return r != nil && r.ObjectStorage && r.Healthy && r.StorageLagSeconds == 0
	})
	if a := putRecord(t, c.primary, "svc_gp", fixtureRecord(t, "svc_gp", "Before The Hang")); a.status != 200 {
		t.Fatalf("a write with the bucket answering: %d %s", a.status, a.body)
	}

	bucket.Set(s3test.Hung)
	start := time.Now()
	a := putRecord(t, c.primary, "svc_gp", fixtureRecord(t, "svc_gp", "Written While Hung"))
	if took := time.Since(start); a.status != 202 || took > 5*time.Second {
		t.Fatalf("a write with the bucket hung: %d after %s %s", a.status, took, a.body)
	}
	if got := a.header.Get("Replication-Pending"); got != "object-storage" {
		t.Errorf("Replication-Pending: %q", got)
	}
	pos := a.header.Get("Directory-Position")
	if pos == "" {
		t.Fatal("no Directory-Position on a write committed to the folder")
	}
	// The edge follows the folder, not the bucket: it serves the write by its position.
	at := get(t, c.edge, "/v1/d/small/services/svc_gp", http.Header{"Directory-Position": {pos}})
	if at.status != 200 || name(t, at) != "Written While Hung" {
		t.Errorf("the edge, asked for position %s: %d %s", pos, at.status, at.body)
	}
	c.waitFor(t, "the primary's health to say the bucket is behind", func() bool {
		st := health(t, c.primary)
		return st.Healthy && st.Replication != nil && !st.Replication.Healthy && st.Replication.StorageLagSeconds > 1
	})
	metricsAddr := regexp.MustCompile(`msg=metrics addr=(\S+)`).FindStringSubmatch(c.primaryLog.String())
	if metricsAddr == nil {
		t.Fatalf("no metrics address logged:\n%s", c.primaryLog)
	}
	metrics := string(get(t, metricsAddr[1], "/metrics", nil).body)
	lag := regexp.MustCompile(`dirsvc_replica_lag_seconds\{file="dirs/small/directory",replica="object-storage"\} ([0-9.e+]+)`).FindStringSubmatch(metrics)
	if !strings.Contains(metrics, "dirsvc_replication_healthy 0") || lag == nil || lag[1] == "0" {
		t.Errorf("the metrics do not say the bucket is behind:\n%s", metrics)
	}

	start = time.Now()
	if err := c.primaryCmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	c.primaryCmd.Wait()
	c.primaryLog.ended()
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("the primary took %s to stop with the bucket hung (grace 20 s)\n%s", took, c.primaryLog)
	}
	if !strings.Contains(c.primaryLog.String(), "a replica lacks changes") {
		t.Errorf("the primary stopped without saying the bucket lacks changes:\n%s", c.primaryLog)
	}

	bucket.Set(s3test.Up)
	addr, _, log := restartAt(t, c.bin, c.primary, c.primaryArgs...)
	c.primaryLog = log
	c.waitFor(t, "the bucket catches up after the restart", func() bool {
		r := health(t, addr).Replication
		return r != nil && r.Healthy && r.StorageLagSeconds == 0 && !r.StorageFailing
	})
	restored := filepath.Join(t.TempDir(), "restored")
	out, err := exec.Command(c.bin, append([]string{"restore", "--data", restored}, bucket.Flags("durability", time.Second)...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("restore from the bucket: %v\n%s", err, out)
	}
	if show := recordShow(t, c.bin, restored, "svc_gp"); !strings.Contains(show, "Written While Hung") {
		t.Errorf("the bucket lacks the write made while it hung:\n%s", show)
	}
}

// recordShow prints a record of the small directory as the data folder's canonical records hold it.
func recordShow(t testing.TB, bin, data, id string) string {
	t.Helper()
	out, err := exec.Command(bin, "record", "--data", data, "--dir", "small", "show", id).CombinedOutput()
	if err != nil {
		t.Fatalf("record show %s: %v\n%s", id, err, out)
	}
	return string(out)
}

// TestAnAcknowledgedWriteIsInEveryFileItTouched kills the primary right after an admin write and a
// forwarded proposal are answered, with the watcher set to look only once an hour: the replica
// holds the write in the directory's published file and in its canonical records alike, so the
// restored primary's next write on the record does not revert it, and it holds the proposal the
// aggregate got a receipt for and the access request it was answered 201 for.
func TestAnAcknowledgedWriteIsInEveryFileItTouched(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	data, replica := importedFolder(t, bin), t.TempDir()
	aggID, aggSK := createClient(t, bin, data, "--name", "State Aggregate", "--directory", "small", "--tier", "partner",
		"--scopes", "graph:read graph:propose")
	key, err := exec.Command(bin, "platform", "--data", data, "server-key").Output()
	if err != nil {
		t.Fatalf("platform server-key: %v", err)
	}
	args := []string{"primary", "--data", data, "--replica-dir", replica, "--admin-token", testAdminToken, "--sync-interval", "1h"}
	addr, cmd, log := startMode(t, bin, args...)
	if a := putRecord(t, addr, "svc_gp", fixtureRecord(t, "svc_gp", "Acknowledged")); a.status != 200 {
		t.Fatalf("write: %d %s\n%s", a.status, a.body, log)
	}
	h := bearer(tokenFor(t, addr, "small", aggID, aggSK))
	h.Set("Content-Type", "application/json")
	proposal := do(t, "POST", "http://"+addr+"/v1/d/small/federation/forwarded/proposals", h,
		[]byte(`{"publicId":"svc_gp","changes":{"description":"Open on Saturdays."}}`))
	var receipt struct{ ID string }
	if proposal.status != 201 || json.Unmarshal(proposal.body, &receipt) != nil || receipt.ID == "" {
		t.Fatalf("a forwarded proposal: %d %s\n%s", proposal.status, proposal.body, log)
	}
	req, _ := http.NewRequest("POST", "http://"+addr+"/v1/access-requests",
		strings.NewReader(`{"directory":"small","scopes":["feed:read"]}`))
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth(aggID, aggSK)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 201 {
		t.Fatalf("an access request: %v %v\n%s", err, resp, log)
	} else {
		resp.Body.Close()
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	restored := filepath.Join(t.TempDir(), "restored")
	if out, err := exec.Command(bin, "restore", "--data", restored, "--replica-dir", replica).CombinedOutput(); err != nil {
		t.Fatalf("restore: %v\n%s", err, out)
	}
	t.Setenv("DIRSVC_SERVER_KEY", strings.TrimSpace(string(key))) // kept by the operator, not in the replica
	if show := recordShow(t, bin, restored, "svc_gp"); !strings.Contains(show, `"Acknowledged"`) {
		t.Errorf("the restored canonical record lacks the acknowledged write:\n%s", show)
	}
	if out, err := exec.Command(bin, "clients", "--data", restored, "requests").CombinedOutput(); err != nil ||
		!strings.Contains(string(out), "feed:read") {
		t.Errorf("the restored platform lacks the acknowledged access request: %v\n%s", err, out)
	}
	if out, err := exec.Command(bin, "moderation", "--data", restored, "--dir", "small", "list").CombinedOutput(); err != nil ||
		!strings.Contains(string(out), receipt.ID) {
		t.Errorf("the restored queue lacks the acknowledged proposal %s: %v\n%s", receipt.ID, err, out)
	}
	addr, _, _ = startMode(t, bin, "serve", "--data", restored)
	if got := name(t, get(t, addr, "/v1/d/small/services/svc_gp", nil)); got != "Acknowledged" {
		t.Errorf("the restored published record: %q", got)
	}
}

// TestAFailedRestoreStopsTheStart starts a primary on an empty data folder from a target that
// cannot restore a directory (its folder missing, or its files cut short): the start fails loudly
// and leaves nothing behind, so the next start restores again rather than serving, and replicating,
// an empty directory. A restore cut off while moving into place is cleared and done again, and a
// directory whose file is missing is never created empty.
func TestAFailedRestoreStopsTheStart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	data, replica := importedFolder(t, bin), t.TempDir()
	if out, err := exec.Command(bin, "backup", "--data", data, "--replica-dir", replica).CombinedOutput(); err != nil {
		t.Fatalf("backup: %v\n%s", err, out)
	}
	dirFiles := filepath.Join(replica, "dirs", "small", "directory")
	saved := filepath.Join(t.TempDir(), "saved")
	if err := os.Rename(dirFiles, saved); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(t.TempDir(), "data")
	for name, spoil := range map[string]func(){
		"a directory's files missing": func() {},
		"a directory's files cut short": func() {
			copyTree(t, saved, dirFiles)
			ltxs, _ := filepath.Glob(filepath.Join(dirFiles, "ltx", "*", "*.ltx"))
			for _, f := range ltxs {
				st, _ := os.Stat(f)
				os.Truncate(f, st.Size()/2)
			}
		},
	} {
		os.RemoveAll(dirFiles)
		spoil()
		_, _, log, err := tryStart(t, bin, "primary", "--data", empty, "--replica-dir", replica)
		if err == nil {
			t.Fatalf("%s: the primary started:\n%s", name, log)
		}
		if !strings.Contains(err.Error(), "restore the empty data folder") {
			t.Errorf("%s: the start did not say why it failed:\n%v", name, err)
		}
		if ents, _ := os.ReadDir(empty); len(ents) > 0 {
			t.Errorf("%s: a failed restore left %v in the data folder", name, ents)
		}
	}

	// A restore cut off while moving into place: directory files and the marker, no platform file.
	os.RemoveAll(dirFiles)
	copyTree(t, saved, dirFiles)
	if err := os.MkdirAll(filepath.Join(empty, "dirs", "small"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(empty, "dirs", "small", "directory.db"), []byte("half a file"), 0o644)
	os.WriteFile(filepath.Join(empty, "restore-incomplete"), nil, 0o644)
	addr, cmd, log := startMode(t, bin, "primary", "--data", empty, "--replica-dir", replica)
	if a := get(t, addr, "/v1/d/small/services/svc_gp", nil); a.status != 200 {
		t.Fatalf("after an interrupted restore: %d %s\n%s", a.status, a.body, log)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()

	// Directory files without a platform file, and no marker: not a restore's; refused.
	stray := filepath.Join(t.TempDir(), "data")
	os.MkdirAll(filepath.Join(stray, "dirs", "small"), 0o755)
	os.WriteFile(filepath.Join(stray, "dirs", "small", "directory.db"), []byte("someone's file"), 0o644)
	if _, _, log, err := tryStart(t, bin, "primary", "--data", stray, "--replica-dir", replica); err == nil {
		t.Fatalf("a primary restored over stray directory files:\n%s", log)
	}
	if b, _ := os.ReadFile(filepath.Join(stray, "dirs", "small", "directory.db")); string(b) != "someone's file" {
		t.Error("stray directory files were changed")
	}

	// A directory listed by the platform whose file is gone: an error, never an empty directory.
	os.Remove(filepath.Join(data, "dirs", "small", "directory.db"))
	addr, _, log = startMode(t, bin, "serve", "--data", data)
	if a := get(t, addr, "/v1/d/small/services/svc_gp", nil); a.status != 500 {
		t.Errorf("a read of a directory whose file is missing: %d %s", a.status, a.body)
	}
	if _, err := os.Stat(filepath.Join(data, "dirs", "small", "directory.db")); err == nil {
		t.Errorf("a read created the missing directory file:\n%s", log)
	}
}

// importedFolder returns a new data folder holding the small fixture.
func importedFolder(t testing.TB, bin string) string {
	t.Helper()
	data := t.TempDir()
	if out, err := exec.Command(bin, "import", "--data", data, smallFixture).CombinedOutput(); err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	return data
}

// copyTree copies a folder of files.
func copyTree(t testing.TB, from, to string) {
	t.Helper()
	err := filepath.Walk(from, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if info.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestAStartRepublishesViewsOfOlderRules stores a view as an older build of the projection rules
// made it (a withheld address shown to the public, the rules' version 1) and starts a primary on
// the folder: before it serves, the directory is published again, so the first public read of the
// site shows no address, and the change is replicated like any other.
func TestAStartRepublishesViewsOfOlderRules(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	data := importedFolder(t, bin)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(data, "dirs", "small", "directory.db")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	stale := `"address":{"lines":["9 Quiet Lane canary-staff-x"]`
	for _, q := range []string{
		`UPDATE projections SET body = CAST(replace(CAST(body AS TEXT), '"address":null', '` + stale + `') AS BLOB) WHERE public_id = 'loc_refuge' AND audiences & 1 != 0`,
		`UPDATE records SET view_hash = x'00' WHERE public_id = 'loc_refuge'`,
		`UPDATE projection SET version = 1`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	addr, _, log := startMode(t, bin, "primary", "--data", data, "--replica-dir", t.TempDir())
	a := get(t, addr, "/v1/d/small/locations/loc_refuge?view=brief", nil)
	if a.status != 200 || strings.Contains(string(a.body), "canary-staff-x") {
		t.Errorf("the first public read after the start: %d %s", a.status, a.body)
	}
	if !strings.Contains(log.String(), "republished under the current projection rules") {
		t.Errorf("the start did not say it republished:\n%s", log)
	}
	// The republish is logged step by step: every canonical record loaded, then written again.
	counts := map[string]string{}
	for _, step := range []string{"load", "records"} {
		m := regexp.MustCompile(`msg="republishing under the current projection rules step done" directory=small step=` + step +
			` records=([1-9][0-9]*) `).FindStringSubmatch(log.String())
		if m == nil {
			t.Errorf("the start did not log its %s step:\n%s", step, log)
			continue
		}
		counts[step] = m[1]
	}
	if counts["load"] != counts["records"] {
		t.Errorf("the republish loaded %s records and wrote %s", counts["load"], counts["records"])
	}
}
