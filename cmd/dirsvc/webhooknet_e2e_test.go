package main_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// signedReceiver is a partner's webhook receiver on 127.0.0.1 (TLS): it keeps every request it is
// sent and answers 204.
type signedReceiver struct {
	*httptest.Server
	mu       sync.Mutex
	requests []receivedHook
	arrived  chan struct{}
}

type receivedHook struct {
	id, timestamp, signature string
	body                     []byte
}

func (h *signedReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	h.mu.Lock()
	h.requests = append(h.requests, receivedHook{r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp"),
		r.Header.Get("webhook-signature"), body})
	h.mu.Unlock()
	select {
	case h.arrived <- struct{}{}:
	default:
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *signedReceiver) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.requests)
}

// waitFor waits up to a minute for a request past the first n whose body holds want.
func (h *signedReceiver) waitFor(t *testing.T, n int, want string) receivedHook {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		h.mu.Lock()
		for _, m := range h.requests[min(n, len(h.requests)):] {
			if bytes.Contains(m.body, []byte(want)) {
				h.mu.Unlock()
				return m
			}
		}
		h.mu.Unlock()
		select {
		case <-h.arrived:
		case <-deadline:
			t.Fatalf("no delivery holding %q within a minute (%d requests)", want, h.count())
		}
	}
}

// verifyStandardWebhook checks a request as a Standard Webhooks receiver does: the timestamp within
// five minutes of now, and one of the v1 signatures the HMAC-SHA256, under the secret's key, of
// "id.timestamp.body".
func verifyStandardWebhook(m receivedHook, secret string) bool {
	ts, err := strconv.ParseInt(m.timestamp, 10, 64)
	if err != nil || time.Since(time.Unix(ts, 0)).Abs() > 5*time.Minute || m.id == "" {
		return false
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || !strings.HasPrefix(secret, "whsec_") {
		return false
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(m.id + "." + m.timestamp + "."))
	mac.Write(m.body)
	want := mac.Sum(nil)
	for _, s := range strings.Fields(m.signature) {
		sig, ok := strings.CutPrefix(s, "v1,")
		if b, err := base64.StdEncoding.DecodeString(sig); ok && err == nil && hmac.Equal(b, want) {
			return true
		}
	}
	return false
}

// hookPartner is a partner client of the demo directory calling a running binary.
type hookPartner struct {
	http *http.Client
	base string
}

func (p hookPartner) call(t *testing.T, method, path string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, p.base+path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := p.http.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// register registers an endpoint at u and returns the answer's status, endpoint ID, signing secret
// and problem (when refused).
func (p hookPartner) register(t *testing.T, u string) (status int, id, secret string, problem map[string]any) {
	t.Helper()
	status, b := p.call(t, "POST", "/v1/d/demo/webhooks", map[string]string{"url": u})
	var ep struct{ ID, Secret string }
	json.Unmarshal(b, &ep)
	json.Unmarshal(b, &problem)
	return status, ep.ID, ep.Secret, problem
}

// stopProcess stops a serving process as an operator does, with SIGTERM, and waits for it.
func stopProcess(t *testing.T, cmd *exec.Cmd, log *processLog) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	log.ended()
}

// TestWebhooksReachPrivateNetworksOnlyWhereAllowed runs the binary as a developer and an operator
// would: a receiver on 127.0.0.1 is refused at registration without --webhook-allow-networks, gets
// signed deliveries of the demo's changes with 127.0.0.0/8 allowed, and is refused at connect time
// once the operator allows another network only; a receiver at a 10.x address is registered only
// where 10.0.0.0/8 is allowed.
func TestWebhooksReachPrivateNetworksOnlyWhereAllowed(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")

	recv := &signedReceiver{arrived: make(chan struct{}, 1)}
	recv.Server = httptest.NewTLSServer(recv)
	t.Cleanup(recv.Close)
	// The binary trusts the receiver's certificate as a developer's machine trusts a local one: the
	// certificate file in SSL_CERT_FILE, which Go reads in place of the system's authorities.
	certFile := filepath.Join(dir, "receiver.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: recv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSL_CERT_FILE", certFile)
	t.Setenv("DIRSVC_WEBHOOK_ALLOW_NETWORKS", "")
	hookURL := recv.URL + "/hooks/directory"
	if !strings.HasPrefix(hookURL, "https://127.0.0.1:") {
		t.Fatalf("the receiver is at %s", hookURL)
	}
	const private10 = "https://10.20.30.40:8443/hook"

	t.Run("a network that is not one fails the start, naming the flag", func(t *testing.T) {
		for _, bad := range []string{"10.1.2.3/8", "10.0.0.5", "169.254.169.254/32", "ten"} {
			_, _, _, err := tryStart(t, bin, "serve", "--data", data, "--webhook-allow-networks", bad)
			if err == nil || !strings.Contains(err.Error(), "--webhook-allow-networks") {
				t.Errorf("--webhook-allow-networks %s: %v", bad, err)
			}
		}
	})

	var partnerID, partnerSecret string
	partner := func(addr string) hookPartner {
		cc := clientcredentials.Config{ClientID: partnerID, ClientSecret: partnerSecret, TokenURL: "http://" + addr + "/oauth/token",
			EndpointParams: url.Values{"directory": {"demo"}}, AuthStyle: oauth2.AuthStyleInHeader}
		ctx := context.WithValue(context.Background(), oauth2.HTTPClient, &http.Client{Timeout: 30 * time.Second})
		c := cc.Client(ctx)
		c.Timeout = 30 * time.Second
		return hookPartner{http: c, base: "http://" + addr}
	}
	refused := func(t *testing.T, p hookPartner, u string) {
		t.Helper()
		status, id, secret, problem := p.register(t, u)
		detail, _ := problem["detail"].(string)
		kind, _ := problem["type"].(string)
		if status != http.StatusBadRequest || id != "" || secret != "" || problem["param"] != "url" ||
			!strings.HasSuffix(kind, "invalid-parameter") {
			t.Fatalf("registering %s: %d %v", u, status, problem)
		}
		if !strings.Contains(detail, "not a public internet address") || !strings.Contains(detail, "--webhook-allow-networks") {
			t.Errorf("registering %s is refused saying %q", u, detail)
		}
	}

	// Without the flag: neither receiver is registered.
	addr, cmd, log := startServe(t, bin, data)
	partnerID, partnerSecret = createClient(t, bin, data, "--name", "Receiver Developer", "--directory", "demo",
		"--scopes", "feed:read webhooks:manage")
	p := partner(addr)
	refused(t, p, hookURL)
	refused(t, p, private10)
	stopProcess(t, cmd, log)

	// With 127.0.0.0/8 allowed: the receiver on 127.0.0.1 is registered and gets the demo's changes,
	// signed; 10.x is still refused, its network not named.
	addr, cmd, log = startMode(t, bin, "serve", "--data", data, "--webhook-allow-networks", "127.0.0.0/8")
	p = partner(addr)
	refused(t, p, private10)
	status, hookID, secret, problem := p.register(t, hookURL)
	if status != http.StatusCreated || hookID == "" || secret == "" {
		t.Fatalf("registering %s with 127.0.0.0/8 allowed: %d %v\n%s", hookURL, status, problem, log)
	}
	service := firstLiveService(t)
	if out, err := exec.Command(bin, "record", "--data", data, "--dir", "demo", "close", service).CombinedOutput(); err != nil {
		t.Fatalf("record close: %v\n%s", err, out)
	}
	m := recv.waitFor(t, 0, service)
	if !verifyStandardWebhook(m, secret) {
		t.Fatalf("the delivery does not verify with the endpoint's secret: id %q timestamp %q signature %q", m.id, m.timestamp, m.signature)
	}
	type feedItem struct {
		PublicID string `json:"publicId"`
	}
	var msg struct {
		Type string
		Data struct {
			Directory string
			Items     []feedItem
		}
	}
	if err := json.Unmarshal(m.body, &msg); err != nil || msg.Type != "feed.changes" || msg.Data.Directory != "demo" ||
		!slices.Contains(msg.Data.Items, feedItem{service}) {
		t.Fatalf("the delivery: %v %s", err, m.body)
	}
	if verifyStandardWebhook(receivedHook{m.id, m.timestamp, m.signature, append(m.body, ' ')}, secret) {
		t.Fatal("a changed body verifies")
	}
	stopProcess(t, cmd, log)

	// With 10.0.0.0/8 allowed (from the environment) and loopback no longer: 10.x is registered, and
	// the receiver on 127.0.0.1, registered before, is refused when the primary connects.
	t.Setenv("DIRSVC_WEBHOOK_ALLOW_NETWORKS", "10.0.0.0/8")
	addr, cmd, log = startServe(t, bin, data)
	p = partner(addr)
	status, id10, _, problem := p.register(t, private10)
	if status != http.StatusCreated || id10 == "" {
		t.Fatalf("registering %s with 10.0.0.0/8 allowed: %d %v", private10, status, problem)
	}
	// Nothing is sent there from the test.
	if status, b := p.call(t, "DELETE", "/v1/d/demo/webhooks/"+id10, nil); status != http.StatusNoContent {
		t.Fatalf("DELETE the 10.x endpoint: %d %s", status, b)
	}
	refused(t, p, hookURL)
	before := recv.count()
	status, b := p.call(t, "POST", "/v1/d/demo/webhooks/"+hookID+"/test", nil)
	var sent struct {
		OK    bool
		Error string
	}
	if err := json.Unmarshal(b, &sent); err != nil || status != http.StatusOK || sent.OK ||
		!strings.Contains(sent.Error, "not a public internet address") {
		t.Fatalf("a test ping to 127.0.0.1 with only 10.0.0.0/8 allowed: %d %s", status, b)
	}
	if n := recv.count(); n != before {
		t.Fatalf("the receiver got %d requests with loopback no longer allowed", n-before)
	}
	stopProcess(t, cmd, log)
}
