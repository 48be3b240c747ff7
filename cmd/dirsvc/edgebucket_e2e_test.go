package main_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc/replicate/s3test"
)

// TestAnEdgeWithEdgeCredentialsBootstrapsFromTheBucket backs a data folder up to a bucket, gives an
// access key the policy `dirsvc backup edge-policy` prints for the bucket, and starts an edge with
// that key only, its primary away: the edge takes the directory from the bucket and serves it,
// without asking for anything the policy denies.
func TestAnEdgeWithEdgeCredentialsBootstrapsFromTheBucket(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	bucket := s3test.New(t) // the processes of the binary inherit its environment
	flags := bucket.Flags("dirsvc", 10*time.Second)
	data := importedFolder(t, bin)
	createClient(t, bin, data, "--name", "Clinic Finder", "--directory", "small", "--scopes", "graph:read")
	command(t, bin, append([]string{"backup", "--data", data}, flags...)...)

	policy := command(t, bin, append([]string{"backup", "edge-policy"}, flags...)...)
	bucket.Restrict(t, "edge-key", policy)
	t.Setenv("AWS_ACCESS_KEY_ID", "edge-key")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "edge-secret")
	addr, _, log := startMode(t, bin, append([]string{"edge", "--data", t.TempDir(), "--primary", "http://127.0.0.1:1",
		"--replication-token", "a-replication-token-for-tests"}, flags...)...)
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/v1/d/small/services/svc_gp?view=brief")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the edge does not serve the directory from the bucket: %v\n%s", err, log)
		}
		time.Sleep(100 * time.Millisecond) // another process bootstraps; polled with a deadline
	}
	if !strings.Contains(log.String(), "bootstrapping from object storage") || strings.Contains(log.String(), "AccessDenied") {
		t.Errorf("the edge's log:\n%s", log)
	}
}
