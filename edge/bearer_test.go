package edge_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc/edge"
)

// syncBuffer is a log destination safe for the handlers' goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func TestWrongBearerTokensAreLimitedPerAddress(t *testing.T) {
	const token, wrong = "q8Vd0wR3Lk1bZ9xT4mNc7sPa2yEu6hJf", "a-wrong-token-of-an-attacker"
	c := newClock()
	var logs syncBuffer
	s := edge.New(edge.Config{Logger: slog.New(slog.NewTextHandler(&logs, nil)), Now: c.Now, ClientIPHeader: "X-Client-Ip"})
	unauthorized := func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", http.StatusUnauthorized) }
	s.Handle("GET /admin/v1/ping", s.RequireBearer("admin", token, unauthorized, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok"))
	})))
	get := func(addr, tok string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", "/admin/v1/ping", nil)
		r.Header.Set("X-Client-Ip", addr)
		r.Header.Set("Authorization", "Bearer "+tok)
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		return w
	}
	for i := range edge.MaxTokenFailures {
		if got := get("192.0.2.1", wrong).Code; got != 401 {
			t.Fatalf("wrong token %d: %d, want 401", i+1, got)
		}
	}
	w := get("192.0.2.1", wrong)
	if w.Code != 429 || w.Header().Get("Retry-After") != "60" {
		t.Fatalf("a wrong token past the limit: %d, Retry-After %q; want 429 after 60", w.Code, w.Header().Get("Retry-After"))
	}
	if got := get("192.0.2.1", token).Code; got != 429 {
		t.Errorf("the right token from the throttled address: %d, want 429 (its tokens are not tried)", got)
	}
	t.Run("another address is not affected", func(t *testing.T) {
		if got := get("198.51.100.7", wrong).Code; got != 401 {
			t.Errorf("a wrong token from another address: %d, want 401", got)
		}
		if got := get("198.51.100.8", token).Code; got != 200 {
			t.Errorf("the right token from another address: %d, want 200", got)
		}
	})
	t.Run("failures are logged at warn without the token", func(t *testing.T) {
		out := logs.String()
		if n := strings.Count(out, "level=WARN"); n != edge.MaxTokenFailures+1 {
			t.Errorf("%d warn lines, want %d:\n%s", n, edge.MaxTokenFailures+1, out)
		}
		if !strings.Contains(out, "route=admin client=192.0.2.1") || !strings.Contains(out, "client=198.51.100.7") {
			t.Errorf("the log does not name the route and address:\n%s", out)
		}
		if strings.Contains(out, wrong) || strings.Contains(out, token) {
			t.Errorf("the log holds a presented token:\n%s", out)
		}
	})
	t.Run("the address is let in again once the window passes", func(t *testing.T) {
		c.Add(30 * time.Second)
		if w := get("192.0.2.1", token); w.Code != 429 || w.Header().Get("Retry-After") != "30" {
			t.Fatalf("half way: %d, Retry-After %q; want 429 after 30", w.Code, w.Header().Get("Retry-After"))
		}
		c.Add(30 * time.Second)
		if got := get("192.0.2.1", token).Code; got != 200 {
			t.Fatalf("after the window: %d, want 200", got)
		}
	})
}
