package main_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
)

// metricValue reads one sample of the Prometheus metrics at a node's private metrics address: the
// value of the series name{labels}, and whether there is one.
func metricValue(t testing.TB, addr, series string) (float64, bool) {
	t.Helper()
	a := get(t, metricsAddr(t, addr), "/metrics", nil)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindSubmatch(a.body)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatalf("%s: %v", series, err)
	}
	return v, true
}

// TestADamagedReplicaFileIsReportedAndEdgesHealPastIt runs a primary and an edge as processes. With
// the edge stopped, a write's LTX file in the primary's replica folder loses a bit, as on a rotting
// disk: the primary's check of its folder reports the damaged file on its health report and in its
// metrics, and writes a snapshot past it. The edge, started again, fails to verify the file, heals
// with no one's help from that snapshot, counts the heal in its metrics, and serves the write.
func TestADamagedReplicaFileIsReportedAndEdgesHealPastIt(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	data, replica := t.TempDir(), t.TempDir()
	if out, err := exec.Command(bin, "import", "--data", data, smallFixture).CombinedOutput(); err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	limits := []string{"--anonymous-per-minute", "10000000", "--anonymous-per-day", "100000000"}
	primary, _, primaryLog := startMode(t, bin, append([]string{"primary", "--data", data, "--replica-dir", replica,
		"--replication-token", testReplicationToken, "--admin-token", testAdminToken, "--verify-interval", "200ms"}, limits...)...)
	edgeArgs := append([]string{"edge", "--data", t.TempDir(), "--primary", "http://" + primary, "--replication-token", testReplicationToken}, limits...)
	edge, edgeCmd, _ := startMode(t, bin, edgeArgs...)
	c := &cluster{primaryLog: primaryLog, edgeLog: &processLog{}}
	c.waitFor(t, "the edge serves the directory", func() bool { return get(t, edge, "/v1/d/small/services/svc_gp", nil).status == 200 })
	edgeCmd.Process.Kill()
	edgeCmd.Wait()

	write := func(id, name string) answer {
		t.Helper()
		a := do(t, "PUT", "http://"+primary+"/admin/v1/d/small/records/"+id, http.Header{
			"Authorization": {"Bearer " + testAdminToken}, "Content-Type": {"application/json"}}, fixtureRecord(t, id, name))
		if a.status != http.StatusOK {
			t.Fatalf("write %s: %d %s", id, a.status, a.body)
		}
		return a
	}
	a := write("svc_gp", "Written To A Rotting Disk")
	txid, _, _ := strings.Cut(a.header.Get("Directory-Position"), ".")
	level0 := filepath.Join(replica, "dirs", "small", "directory", "ltx", "0")
	entries, err := os.ReadDir(level0)
	if err != nil {
		t.Fatal(err)
	}
	pos, _ := strconv.ParseUint(txid, 10, 64)
	var damaged string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), fmt.Sprintf("-%016x.ltx", pos)) {
			damaged = e.Name()
		}
	}
	if damaged == "" {
		t.Fatalf("no level-0 file ends at the write's position %s in %s", txid, level0)
	}
	b, err := os.ReadFile(filepath.Join(level0, damaged))
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x5a
	if err := os.WriteFile(filepath.Join(level0, damaged), b, 0o600); err != nil {
		t.Fatal(err)
	}

	// The primary finds it, says so, and writes a snapshot past it.
	var found dirsvc.DamagedReplicaFile
	c.waitFor(t, "the primary reports the damaged file", func() bool {
		for _, d := range health(t, primary).Replication.DamagedFiles {
			if d.File == "dirs/small/directory" && d.LTX == "0/"+damaged && d.SnapshotPast >= pos {
				found = d
				return true
			}
		}
		return false
	})
	if v, ok := metricValue(t, primary, `dirsvc_replica_damaged_files{file="dirs/small/directory"}`); !ok || v != 1 {
		t.Errorf("the primary's metrics count %v damaged files (%v), want 1", v, ok)
	}
	if !strings.Contains(primaryLog.String(), "level=ERROR") || !strings.Contains(primaryLog.String(), "fails verification") {
		t.Errorf("the damaged file is not logged as an error:\n%s", primaryLog)
	}
	if st := health(t, primary); !st.Replication.Healthy {
		t.Errorf("replication with a snapshot past the damaged file (%+v): %+v", found, st.Replication)
	}

	// The edge heals past it: each write of the primary's makes it look again.
	edge, _, edgeLog := startMode(t, bin, edgeArgs...)
	c.edgeLog = edgeLog
	heals := `dirsvc_edge_heals_total{file="dirs/small/directory"}`
	for n, deadline := 0, time.Now().Add(60*time.Second); ; n++ {
		if v, _ := metricValue(t, edge, heals); v >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the edge did not heal within 60s\nedge:\n%s", edgeLog)
		}
		write("svc_counsel", fmt.Sprintf("Written Meanwhile %d", n))
		time.Sleep(200 * time.Millisecond) // the edge's rounds, driven by writes, polled with a deadline
	}
	if v, _ := metricValue(t, edge, `dirsvc_edge_failed_verifications_total{file="dirs/small/directory"}`); v < 3 {
		t.Errorf("the edge counts %v failed verifications, want at least 3", v)
	}
	if got := name(t, get(t, edge, "/v1/d/small/services/svc_gp", nil)); got != "Written To A Rotting Disk" {
		t.Errorf("the healed edge serves %q", got)
	}
	var st dirsvc.NodeStatus
	if err := json.Unmarshal(get(t, metricsAddr(t, edge), "/healthz", nil).body, &st); err != nil || len(st.Files) != 1 || st.Files[0].Heals != 1 {
		t.Errorf("the edge's health report: %+v, %v", st, err)
	}
	if !strings.Contains(edgeLog.String(), "level=ERROR") || !strings.Contains(edgeLog.String(), "healed a directory") {
		t.Errorf("the edge's log:\n%s", edgeLog)
	}
}
