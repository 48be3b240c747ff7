package edge

import (
	"crypto/subtle"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/dirsvc/dirsvc"
)

// Failed bearer-token attempts (admin API, replication stream) are limited per client address:
// after MaxTokenFailures wrong tokens within TokenFailureWindow, the address is answered 429 until
// that window ends, whatever it presents. Other addresses are not affected.
const (
	MaxTokenFailures   = 10
	TokenFailureWindow = time.Minute
	// maxFailingAddrs bounds the table of failing addresses, so that failures from many addresses
	// cannot grow it without end: when full, ended windows are dropped, then the oldest one.
	maxFailingAddrs = 4096
)

// tokenFailures counts the failed attempts of each client address in its current window.
type tokenFailures struct {
	mu     sync.Mutex
	byAddr map[netip.Addr]*failureWindow
}

type failureWindow struct {
	start time.Time
	count int
}

// blocked returns how long addr stays refused, or 0.
func (t *tokenFailures) blocked(addr netip.Addr, now time.Time) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	w := t.byAddr[addr]
	if w == nil || w.count < MaxTokenFailures {
		return 0
	}
	if end := w.start.Add(TokenFailureWindow); now.Before(end) {
		return end.Sub(now)
	}
	delete(t.byAddr, addr)
	return 0
}

// fail counts one failure of addr and returns the failures of its window so far.
func (t *tokenFailures) fail(addr netip.Addr, now time.Time) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byAddr == nil {
		t.byAddr = map[netip.Addr]*failureWindow{}
	}
	w := t.byAddr[addr]
	if w != nil && !now.Before(w.start.Add(TokenFailureWindow)) {
		w = nil
	}
	if w == nil {
		if len(t.byAddr) >= maxFailingAddrs {
			t.evict(now)
		}
		w = &failureWindow{start: now}
		t.byAddr[addr] = w
	}
	w.count++
	return w.count
}

// evict drops every ended window, or when none has ended the oldest one.
func (t *tokenFailures) evict(now time.Time) {
	var oldest netip.Addr
	var oldestStart time.Time
	for a, w := range t.byAddr {
		if !now.Before(w.start.Add(TokenFailureWindow)) {
			delete(t.byAddr, a)
		} else if !oldest.IsValid() || w.start.Before(oldestStart) {
			oldest, oldestStart = a, w.start
		}
	}
	if len(t.byAddr) >= maxFailingAddrs {
		delete(t.byAddr, oldest)
	}
}

func (t *tokenFailures) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byAddr)
}

// RequireBearer returns h behind a check of "Authorization: Bearer <token>". A wrong or missing
// token is logged at warn with the client address and route (never what was presented) and
// answered by unauthorized, with the RFC 6750 challenge of realm dirsvc-<route> set (error
// invalid_token when a token was presented); an address with too many recent failures is answered 429 with
// Retry-After before its token is looked at. The client address is the one the anonymous rate
// limit counts (the trusted proxy header when configured). route names the API in the log.
func (s *Server) RequireBearer(route, token string, unauthorized http.HandlerFunc, h http.Handler) http.Handler {
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		addr := s.clientKey(r)
		if wait := s.tokenFailures.blocked(addr, s.cfg.Now()); wait > 0 {
			s.limitedBy(LimitTokenFailures)
			secs := int((wait + time.Second - 1) / time.Second)
			w.Header().Set("Cache-Control", "no-store")
			w.Header().Set("Retry-After", strconv.Itoa(secs))
			s.error(w, r, dirsvc.Errorf(dirsvc.ERateLimited, "Too many failed attempts: try again in %d seconds.", secs))
			return
		}
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			n := s.tokenFailures.fail(addr, s.cfg.Now())
			s.log.Warn("bearer token missing or wrong", "route", route, "client", addr.String(),
				"method", r.Method, "path", r.URL.Path, "failures", n, "throttled", n >= MaxTokenFailures)
			challenge := `Bearer realm="dirsvc-` + route + `"`
			if r.Header.Get("Authorization") != "" {
				challenge += `, error="invalid_token"`
			}
			w.Header().Set("WWW-Authenticate", challenge)
			unauthorized(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}
