package main_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc/edge"
)

// TestPrimaryLimitsWrongTokens runs `dirsvc primary` with an admin API and a replication stream:
// wrong tokens on either are answered 401, then 429 with Retry-After for that address only, and
// each one is logged at warn without the token.
func TestPrimaryLimitsWrongTokens(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	const wrong = "a-wrong-token-of-an-attacker"
	addr, _, log := startMode(t, bin, "primary", "--data", t.TempDir(), "--replica-dir", t.TempDir(),
		"--replication-token", testReplicationToken, "--admin-token", testAdminToken, "--client-ip-header", "X-Test-Client")
	from := func(client, token string) http.Header {
		return http.Header{"X-Test-Client": {client}, "Authorization": {"Bearer " + token}}
	}
	for _, c := range []struct {
		name, method, path, token string
		body                      []byte
		ok                        int // the answer to the right token: past the check
	}{
		{"the admin API", "PUT", "/admin/v1/d/small/records/svc_a", testAdminToken, []byte(`{"publicId":"svc_b"}`), 400},
		{"the replication stream", "GET", "/replication/v1/files", testReplicationToken, nil, 200},
	} {
		t.Run(c.name+" limits wrong tokens per address", func(t *testing.T) {
			attacker := "192.0.2." + map[string]string{"PUT": "1", "GET": "2"}[c.method]
			for i := range edge.MaxTokenFailures {
				if a := do(t, c.method, "http://"+addr+c.path, from(attacker, wrong), c.body); a.status != 401 {
					t.Fatalf("wrong token %d: %d %s, want 401", i+1, a.status, a.body)
				}
			}
			a := do(t, c.method, "http://"+addr+c.path, from(attacker, wrong), c.body)
			if a.status != 429 || a.header.Get("Retry-After") == "" {
				t.Fatalf("a wrong token past the limit: %d, Retry-After %q; want 429 with Retry-After", a.status, a.header.Get("Retry-After"))
			}
			if a := do(t, c.method, "http://"+addr+c.path, from("198.51.100.9", c.token), c.body); a.status != c.ok {
				t.Errorf("the right token from another address: %d %s, want %d", a.status, a.body, c.ok)
			}
		})
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(log.String(), "route=replication client=192.0.2.2") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // polling the log another process writes, with a deadline
	}
	out := log.String()
	for _, want := range []string{"level=WARN msg=\"bearer token missing or wrong\" route=admin client=192.0.2.1",
		"level=WARN msg=\"bearer token missing or wrong\" route=replication client=192.0.2.2"} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, wrong) {
		t.Errorf("the log holds a presented token:\n%s", out)
	}
}
