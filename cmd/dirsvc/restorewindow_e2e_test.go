package main_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// killSteps are the moments, after an event, at which the restore-window tests kill a primary: every
// 0.1 s from 0 to 3 s. DIRSVC_KILL_STEP (a duration) makes the steps finer or coarser.
func killSteps(t *testing.T) []time.Duration {
	t.Helper()
	step := 100 * time.Millisecond
	if s := os.Getenv("DIRSVC_KILL_STEP"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			t.Fatalf("DIRSVC_KILL_STEP: want a positive duration, got %q", s)
		}
		step = d
	}
	var out []time.Duration
	for d := time.Duration(0); d <= 3*time.Second; d += step {
		out = append(out, d)
	}
	return out
}

// restoreReplica restores a replica folder into a new, empty data folder with the binary, and
// returns the folder, what the command printed, and its error.
func restoreReplica(t testing.TB, bin, replica string) (string, string, error) {
	t.Helper()
	restored := filepath.Join(t.TempDir(), "restored")
	out, err := exec.Command(bin, "restore", "--data", restored, "--replica-dir", replica).CombinedOutput()
	return restored, string(out), err
}

// restoredDirectory reports whether a restore's output names a directory's published file and its
// canonical records (a restore brings back a directory whole or fails).
func restoredDirectory(out, slug string) bool {
	return strings.Contains(out, "dirs/"+slug+"/directory\t") && strings.Contains(out, "dirs/"+slug+"/ops\t")
}

// TestARestoreAtAnyMomentAfterAnImportHoldsEveryAcknowledgedWrite imports a directory beside a
// running primary, over and over, and SIGKILLs the primary at steps of up to 3 s after each import
// returns: a whole-folder restore from the replica folder succeeds every time, with the
// acknowledged write made to another directory just before, and every directory imported before a
// restart the primary served. The directory just imported is there whole, or not at all.
func TestARestoreAtAnyMomentAfterAnImportHoldsEveryAcknowledgedWrite(t *testing.T) {
	slowScenario(t)
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	t.Parallel()
	bin := buildBinary(t)
	data, replica := importedFolder(t, bin), t.TempDir()
	gen := filepath.Join(t.TempDir(), "extra.ndjson")
	if out, err := exec.Command(bin, "gen", "--services", "20", "--slug", "extra", "--out", gen).CombinedOutput(); err != nil {
		t.Fatalf("gen: %v\n%s", err, out)
	}
	extra, err := os.ReadFile(gen)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"primary", "--data", data, "--replica-dir", replica, "--admin-token", testAdminToken}
	var served []string // directories imported before a start of the primary that listened
	for i, d := range killSteps(t) {
		addr, cmd, log := startMode(t, bin, args...)
		written := fmt.Sprintf("Acknowledged Before Import %d", i)
		if a := putRecord(t, addr, "svc_gp", fixtureRecord(t, "svc_gp", written)); a.status != 200 {
			t.Fatalf("step %d: a write: %d %s\n%s", i, a.status, a.body, log)
		}
		slug := fmt.Sprintf("extra%d", i)
		file := filepath.Join(t.TempDir(), slug+".ndjson")
		renamed := bytes.ReplaceAll(bytes.ReplaceAll(extra, []byte(`"slug":"extra"`), []byte(`"slug":"`+slug+`"`)),
			[]byte(`"extra:`), []byte(`"`+slug+`:`))
		if err := os.WriteFile(file, renamed, 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(bin, "import", "--data", data, file).CombinedOutput(); err != nil {
			t.Fatalf("step %d: import beside the primary: %v\n%s", i, err, out)
		}
		time.Sleep(d) // the schedule of the kill, not a wait for work
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()

		restored, out, err := restoreReplica(t, bin, replica)
		if err != nil {
			t.Fatalf("step %d: a restore after a kill %s after an import: %v\n%s\nprimary:\n%s", i, d, err, out, log)
		}
		if show := recordShow(t, bin, restored, "svc_gp"); !strings.Contains(show, written) {
			t.Errorf("step %d (kill %s after an import): the restore lacks the acknowledged write %q:\n%s", i, d, written, show)
		}
		for _, slug := range served {
			if !restoredDirectory(out, slug) {
				t.Errorf("step %d (kill %s after an import): the restore lacks directory %s, which a start served:\n%s", i, d, slug, out)
			}
		}
		t.Logf("kill %s after importing %s: restored it: %v", d, slug, restoredDirectory(out, slug))
		served = append(served, slug)
	}
}

// TestARestoreAtAnyMomentAfterAStartHoldsEveryDirectory starts a primary on a data folder of two
// directories (one large enough that its first copy takes a while) with an empty replica folder,
// and SIGKILLs it at steps of up to 3 s after the start: a whole-folder restore from the replica
// folder brings back both directories whole once the primary listened; before, it brings back both
// or finds nothing to restore (no platform file), never a platform that names a directory the
// replica lacks.
func TestARestoreAtAnyMomentAfterAStartHoldsEveryDirectory(t *testing.T) {
	slowScenario(t)
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	t.Parallel()
	bin := buildBinary(t)
	template := importedFolder(t, bin)
	gen := filepath.Join(t.TempDir(), "large.ndjson")
	if out, err := exec.Command(bin, "gen", "--services", "1500", "--slug", "large", "--out", gen).CombinedOutput(); err != nil {
		t.Fatalf("gen: %v\n%s", err, out)
	}
	if out, err := exec.Command(bin, "import", "--data", template, gen).CombinedOutput(); err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	for i, d := range killSteps(t) {
		data, replica := filepath.Join(t.TempDir(), "data"), t.TempDir()
		copyTree(t, template, data)
		cmd := exec.Command(bin, "primary", "--data", data, "--replica-dir", replica, "--addr", "127.0.0.1:0",
			"--base-url", testBaseURL)
		var log bytes.Buffer // read once the process has exited
		cmd.Stdout, cmd.Stderr = &log, &log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(d) // the schedule of the kill, not a wait for work
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		listened := strings.Contains(log.String(), "msg=listening")

		restored, out, err := restoreReplica(t, bin, replica)
		switch {
		case err != nil && !listened && strings.Contains(out, "restore platform: replicate: the target holds no copy"):
			t.Logf("kill %s after the start: nothing to restore yet", d)
			continue
		case err != nil:
			t.Fatalf("step %d: a restore after a kill %s after the start (listened: %v): %v\n%s\nprimary:\n%s", i, d, listened, err, out, log.String())
		}
		for _, slug := range []string{"small", "large"} {
			if !restoredDirectory(out, slug) {
				t.Errorf("step %d (kill %s after the start): the restore lacks directory %s:\n%s", i, d, slug, out)
			}
		}
		if show := recordShow(t, bin, restored, "svc_gp"); !strings.Contains(show, "svc_gp") {
			t.Errorf("step %d (kill %s after the start): the restored small directory lacks svc_gp:\n%s", i, d, show)
		}
		t.Logf("kill %s after the start (listened: %v): restored both directories", d, listened)
	}
}
