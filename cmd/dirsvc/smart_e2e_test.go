package main_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"io"
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
	"github.com/dirsvc/dirsvc/edge"
	"github.com/dirsvc/dirsvc/edge/edgetest"
)

// TestSMARTBackendServicesEndToEnd runs the binary as an operator and a Bulk Data client would: a
// client made with clients create --jwks --no-secret finds the token endpoint in the directory's
// SMART configuration, gets a token with an ES384 assertion and reads FHIR with it; its assertion
// replayed is refused, after a restart of the server too.
func TestSMARTBackendServicesEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	data := filepath.Join(t.TempDir(), "data")
	if out, err := exec.Command(bin, "import", "--data", data, filepath.Join("..", "..", "testdata", "small.ndjson")).CombinedOutput(); err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	key, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	raw, _ := key.PublicKey.Bytes()
	set, _ := json.Marshal(map[string]any{"keys": []any{map[string]any{"kty": "EC", "kid": "bulk-1", "crv": "P-384", "x": enc(raw[1:49]), "y": enc(raw[49:])}}})
	jwksFile := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(jwksFile, set, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "clients", "--data", data, "create", "--name", "Bulk client", "--directory", "small",
		"--scopes", "graph:read export:run", "--jwks", jwksFile, "--no-secret").Output()
	var created struct {
		ID string `json:"clientId"`
	}
	if err != nil || json.Unmarshal(out, &created) != nil || created.ID == "" {
		t.Fatalf("clients create --jwks: %v\n%s", err, out)
	}
	assertion := func(aud string) string {
		h, _ := json.Marshal(map[string]any{"alg": "ES384", "kid": "bulk-1", "typ": "JWT"})
		jti := make([]byte, 16)
		rand.Read(jti)
		now := time.Now().Unix()
		c, _ := json.Marshal(map[string]any{"iss": created.ID, "sub": created.ID, "aud": aud, "exp": now + 240, "jti": enc(jti)})
		signed := enc(h) + "." + enc(c)
		d := sha512.Sum384([]byte(signed))
		r, s, err := ecdsa.Sign(rand.Reader, key, d[:])
		if err != nil {
			t.Fatal(err)
		}
		sig := make([]byte, 96)
		r.FillBytes(sig[:48])
		s.FillBytes(sig[48:])
		return signed + "." + enc(sig)
	}
	client := &http.Client{Transport: edgetest.NewChecker(t).Transport(t, nil), Timeout: 30 * time.Second}
	token := func(addr, a string) (int, string) {
		t.Helper()
		form := url.Values{"grant_type": {"client_credentials"}, "client_assertion_type": {dirsvc.ClientAssertionType},
			"client_assertion": {a}, "scope": {"system/*.rs"}}
		resp, err := client.PostForm("http://"+addr+edge.TokenPath, form)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var tr struct {
			AccessToken string `json:"access_token"`
			Scope       string `json:"scope"`
			Error       string `json:"error"`
		}
		json.Unmarshal(body, &tr)
		if resp.StatusCode == 200 && tr.Scope != "graph:read export:run system/*.rs" {
			t.Errorf("scope %q", tr.Scope)
		}
		return resp.StatusCode, tr.AccessToken + tr.Error
	}

	addr, cmd, log := startMode(t, bin, "serve", "--data", data, "--base-url", testBaseURL)
	resp, err := client.Get("http://" + addr + edge.SMARTConfigurationPath("small"))
	if err != nil {
		t.Fatal(err)
	}
	var smart struct {
		TokenEndpoint string   `json:"token_endpoint"`
		Capabilities  []string `json:"capabilities"`
	}
	err = json.NewDecoder(resp.Body).Decode(&smart)
	resp.Body.Close()
	if err != nil || smart.TokenEndpoint != testBaseURL+edge.TokenPath {
		t.Fatalf("SMART configuration: %v %+v\n%s", err, smart, log)
	}
	used := assertion(smart.TokenEndpoint)
	status, tok := token(addr, used)
	if status != 200 {
		t.Fatalf("a token with the assertion: %d %s\n%s", status, tok, log)
	}
	req, _ := http.NewRequest("GET", "http://"+addr+"/v1/d/small/fhir/HealthcareService?_count=2", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	read, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	read.Body.Close()
	if read.StatusCode != 200 {
		t.Errorf("a FHIR search with the token: %d", read.StatusCode)
	}
	if status, body := token(addr, used); status != 401 || body != "invalid_client" {
		t.Errorf("the assertion replayed: %d %s", status, body)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve exited with %v after SIGTERM:\n%s", err, log)
	}
	addr, _, log = startMode(t, bin, "serve", "--data", data, "--base-url", testBaseURL)
	if status, body := token(addr, used); status != 401 || body != "invalid_client" {
		t.Errorf("the assertion replayed after a restart: %d %s\n%s", status, body, log)
	}
	if status, body := token(addr, assertion(smart.TokenEndpoint)); status != 200 {
		t.Errorf("a new assertion after a restart: %d %s\n%s", status, body, log)
	}
	if strings.Contains(log.String(), used) {
		t.Error("the server logged the assertion")
	}
}
