package edge

import (
	"fmt"
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dirsvc/dirsvc"
)

// Limits are request limits: tokens per minute and per day, each a bucket that refills evenly.
type Limits struct {
	PerMinute int
	PerDay    int
}

// DefaultAnonymousLimits are the anonymous limits of section 8: 60 requests a minute and 10,000 a
// day per client address.
var DefaultAnonymousLimits = Limits{PerMinute: 60, PerDay: 10_000}

// limiter keeps a minute bucket and a day bucket per client, behind one lock.
type limiter struct {
	limits Limits
	mu     sync.Mutex
	byKey  map[netip.Addr]*buckets
	swept  time.Time
}

type buckets struct{ minute, day bucket }

// bucket is a token bucket: it holds up to size tokens and refills perSecond of them each second.
type bucket struct {
	tokens    float64
	size      float64
	perSecond float64
	at        time.Time
}

func newBucket(size int, per time.Duration, now time.Time) bucket {
	return bucket{tokens: float64(size), size: float64(size), perSecond: float64(size) / per.Seconds(), at: now}
}

// refill brings the bucket up to now.
func (b *bucket) refill(now time.Time) {
	if now.After(b.at) {
		b.tokens = min(b.size, b.tokens+now.Sub(b.at).Seconds()*b.perSecond)
		b.at = now
	}
}

// wait returns how long until the bucket holds a whole token.
func (b *bucket) wait() time.Duration {
	if b.tokens >= 1 {
		return 0
	}
	return time.Duration((1 - b.tokens) / b.perSecond * float64(time.Second))
}

// untilFull returns how long until the bucket is full again.
func (b *bucket) untilFull() time.Duration {
	return time.Duration((b.size - b.tokens) / b.perSecond * float64(time.Second))
}

// sweepEvery is how often buckets that are full again (so equal to new ones) are forgotten, which
// bounds the memory of many passing clients.
const sweepEvery = time.Minute

func newLimiter(l Limits) *limiter { return &limiter{limits: l, byKey: map[netip.Addr]*buckets{}} }

// decision is the outcome of taking one request.
type decision struct {
	ok         bool
	retryAfter time.Duration // when refused
	remaining  int           // in the tighter bucket, after this request
	policy     string        // that bucket: "minute" or "day"
	reset      time.Duration // until that bucket is full again
}

// take takes one request for key at now from both buckets, or from neither.
func (l *limiter) take(key netip.Addr, now time.Time) decision {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.swept) >= sweepEvery {
		l.sweep(now)
	}
	b, ok := l.byKey[key]
	if !ok {
		b = &buckets{minute: newBucket(l.limits.PerMinute, time.Minute, now), day: newBucket(l.limits.PerDay, 24*time.Hour, now)}
		l.byKey[key] = b
	}
	b.minute.refill(now)
	b.day.refill(now)
	if wait := max(b.minute.wait(), b.day.wait()); wait > 0 {
		return decision{retryAfter: wait}
	}
	b.minute.tokens--
	b.day.tokens--
	d := decision{ok: true, policy: "minute", remaining: int(b.minute.tokens), reset: b.minute.untilFull()}
	if day := int(b.day.tokens); day < d.remaining {
		d.policy, d.remaining, d.reset = "day", day, b.day.untilFull()
	}
	return d
}

func (l *limiter) sweep(now time.Time) {
	for k, b := range l.byKey {
		b.minute.refill(now)
		b.day.refill(now)
		if b.minute.tokens >= b.minute.size && b.day.tokens >= b.day.size {
			delete(l.byKey, k)
		}
	}
	l.swept = now
}

// clientKey returns the key an anonymous caller is limited by: its address, taken from the trusted
// proxy header when one is configured (the last address in it, the one the proxy saw), else from the
// connection. IPv6 addresses count by their /64, which one subscriber usually holds whole.
func (s *Server) clientKey(r *http.Request) netip.Addr {
	var addr netip.Addr
	if h := s.cfg.ClientIPHeader; h != "" {
		if v := r.Header.Get(h); v != "" {
			if i := strings.LastIndexByte(v, ','); i >= 0 {
				v = v[i+1:]
			}
			addr, _ = netip.ParseAddr(strings.TrimSpace(v))
		}
	}
	if !addr.IsValid() {
		if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
			addr = ap.Addr()
		}
	}
	addr = addr.Unmap()
	if addr.Is6() {
		p, _ := addr.Prefix(64)
		addr = p.Addr()
	}
	return addr
}

// limit refuses a request over its caller's limit with 429 and Retry-After, and tells every other
// caller where it stands (RateLimit-Policy and RateLimit, IETF draft).
func (s *Server) limit(next http.Handler) http.Handler {
	policy := []string{fmt.Sprintf(`"minute";q=%d;w=60, "day";q=%d;w=86400`, s.cfg.AnonymousLimits.PerMinute, s.cfg.AnonymousLimits.PerDay)}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/v1/d/") {
			next.ServeHTTP(w, r)
			return
		}
		d := s.anonymous.take(s.clientKey(r), s.cfg.Now())
		h := w.Header()
		h[keyRateLimitPolicy] = policy
		if !d.ok {
			secs := int(math.Ceil(d.retryAfter.Seconds()))
			h.Set("Retry-After", strconv.Itoa(secs))
			h.Set("RateLimit", `"minute";r=0;t=`+strconv.Itoa(secs))
			h.Set("Cache-Control", "no-store")
			s.error(w, r, dirsvc.Errorf(dirsvc.ERateLimited, "Too many requests: try again in %d seconds.", secs))
			return
		}
		h.Set("RateLimit", `"`+d.policy+`";r=`+strconv.Itoa(d.remaining)+";t="+strconv.Itoa(int(math.Ceil(d.reset.Seconds()))))
		next.ServeHTTP(w, r)
	})
}
