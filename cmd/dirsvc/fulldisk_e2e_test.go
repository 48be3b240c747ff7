//go:build linux

package main_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/edge"
)

// fill writes a file of zeros into dir until its file system has no room left, and returns the
// file's path.
func fill(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); errors.Is(err, syscall.ENOSPC) {
			return path
		} else if err != nil {
			t.Fatal(err)
		}
	}
}

// TestAFullDiskAnswers507UntilThereIsSpace runs a primary whose data folder and replica folder are
// on a small tmpfs, and fills it: a write through the admin API answers 507 as application/problem+json
// with the code insufficient-storage and Retry-After (never 202, never a bare 500), and /healthz
// says 503; once the filler is removed, /healthz says 200 again and the next write is stored.
// Mounting a tmpfs needs root; where mount is not permitted the test is skipped, and
// primary.TestAFullStorageAnswers507UntilItTakesWritesAgain checks the same answers without one.
func TestAFullDiskAnswers507UntilThereIsSpace(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	mnt := t.TempDir()
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=64m,mode=0700"); err != nil {
		t.Skipf("skipped: mounting a 64 MiB tmpfs is not permitted here (%v); it needs root and mount", err)
	}
	t.Cleanup(func() { syscall.Unmount(mnt, syscall.MNT_DETACH) }) // after the primary is stopped
	bin := buildBinary(t)
	data, replica := filepath.Join(mnt, "data"), filepath.Join(mnt, "replica")
	if out, err := exec.Command(bin, "import", "--data", data, smallFixture).CombinedOutput(); err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	addr, _, log := startMode(t, bin, "primary", "--data", data, "--replica-dir", replica, "--admin-token", testAdminToken)
	publicHealth := func() int {
		t.Helper()
		return get(t, addr, "/healthz", nil).status
	}
	waitHealthy := func(what string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for publicHealth() != http.StatusOK {
			if time.Now().After(deadline) {
				t.Fatalf("the primary is not healthy 30s %s\n%s", what, log)
			}
			time.Sleep(50 * time.Millisecond) // another process's state, polled with a deadline
		}
	}
	waitHealthy("after it started")

	write := func(name string) answer {
		t.Helper()
		return do(t, "PUT", "http://"+addr+"/admin/v1/d/small/records/svc_gp", http.Header{
			"Authorization": {"Bearer " + testAdminToken}, "Content-Type": {"application/json"}}, fixtureRecord(t, "svc_gp", name))
	}
	filler := fill(t, mnt)
	a := write("Written To A Full Disk")
	var p edge.Problem
	if a.status != http.StatusInsufficientStorage || a.header.Get("Content-Type") != "application/problem+json" ||
		json.Unmarshal(a.body, &p) != nil || p.Code != dirsvc.EInsufficientStorage {
		t.Fatalf("a write to a full disk: %d %s %s\n%s", a.status, a.header.Get("Content-Type"), a.body, log)
	}
	if a.header.Get("Retry-After") == "" || a.header.Get("Replication-Pending") != "" {
		t.Errorf("a write to a full disk: headers %v", a.header)
	}
	if got := publicHealth(); got != http.StatusServiceUnavailable {
		t.Errorf("health while the disk is full: %d, want 503", got)
	}
	if st := health(t, addr); !st.StorageFull || st.Healthy {
		t.Errorf("the full report while the disk is full: %+v", st)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitHealthy("after there is space again") // it probes its storage at most once a second
	if a := write("Written Once There Is Space"); a.status != http.StatusOK {
		t.Fatalf("a write once there is space: %d %s\n%s", a.status, a.body, log)
	}
	if got := name(t, get(t, addr, "/v1/d/small/services/svc_gp", nil)); got != "Written Once There Is Space" {
		t.Errorf("the service is named %q", got)
	}
}
