package edge

import (
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/dirsvc/dirsvc"
)

// Limits are request limits: requests per minute and per day, each a bucket that refills evenly.
type Limits = dirsvc.RateLimit

// DefaultAnonymousLimits are the anonymous limits of section 8: 60 requests a minute and 10,000 a
// day per client address.
var DefaultAnonymousLimits = Limits{PerMinute: 60, PerDay: 10_000}

// limiter keeps a minute bucket and a day bucket per caller, behind one lock: per client address for
// anonymous callers, per client and directory for partner clients.
//
// Its table is bounded: it holds at most maxLimited callers (about 200 bytes each, so some 20 MB),
// and a new caller past that takes the place of the one seen least recently. A forgotten caller
// starts again with full buckets, so the bound costs exactness only to a caller that more than
// maxLimited others came between two requests of: a client spraying addresses pushes out its own
// addresses, not the clients that keep asking. Callers whose buckets are full again (equal to new
// ones) are forgotten every sweepEvery, which costs nothing.
type limiter[K comparable] struct {
	mu    sync.Mutex
	index map[K]int32 // into slots
	slots []slot[K]   // a ring of the callers, most recently seen at head; free slots chained by next
	head  int32       // most recently seen, or -1
	free  int32       // first free slot, or -1
	max   int
	swept time.Time
}

// slot is a caller's buckets and its place in the recency list.
type slot[K comparable] struct {
	key        K
	b          buckets
	prev, next int32
}

// maxLimited bounds the callers a limiter keeps (see limiter).
const maxLimited = 100_000

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

// wait returns how long until the bucket holds n tokens (at most its size).
func (b *bucket) wait(n float64) time.Duration {
	n = min(n, b.size)
	if b.tokens >= n {
		return 0
	}
	return time.Duration((n - b.tokens) / b.perSecond * float64(time.Second))
}

// untilFull returns how long until the bucket is full again.
func (b *bucket) untilFull() time.Duration {
	return time.Duration((b.size - b.tokens) / b.perSecond * float64(time.Second))
}

// sweepEvery is how often buckets that are full again (so equal to new ones) are forgotten, which
// bounds the memory of many passing clients.
const sweepEvery = time.Minute

func newLimiter[K comparable](max int) *limiter[K] {
	return &limiter[K]{index: map[K]int32{}, head: -1, free: -1, max: max}
}

// len returns how many callers the limiter keeps.
func (l *limiter[K]) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.index)
}

// lookup returns the buckets of key, made new (and the least recently seen caller forgotten when
// the table is full) if it has none, and makes key the most recently seen.
func (l *limiter[K]) lookup(key K, lim Limits, now time.Time) *buckets {
	if i, ok := l.index[key]; ok {
		l.unlink(i)
		l.pushFront(i)
		return &l.slots[i].b
	}
	var i int32
	switch {
	case l.free >= 0:
		i, l.free = l.free, l.slots[l.free].next
	case len(l.slots) < l.max:
		l.slots = append(l.slots, slot[K]{})
		i = int32(len(l.slots) - 1)
	default:
		i = l.slots[l.head].prev // the tail: least recently seen
		l.unlink(i)
		delete(l.index, l.slots[i].key)
	}
	l.slots[i].key = key
	l.slots[i].b = buckets{minute: newBucket(lim.PerMinute, time.Minute, now), day: newBucket(lim.PerDay, 24*time.Hour, now)}
	l.index[key] = i
	l.pushFront(i)
	return &l.slots[i].b
}

func (l *limiter[K]) unlink(i int32) {
	s := &l.slots[i]
	if s.next == i { // the only one
		l.head = -1
		return
	}
	l.slots[s.prev].next, l.slots[s.next].prev = s.next, s.prev
	if l.head == i {
		l.head = s.next
	}
}

func (l *limiter[K]) pushFront(i int32) {
	s := &l.slots[i]
	if l.head < 0 {
		s.prev, s.next, l.head = i, i, i
		return
	}
	h := &l.slots[l.head]
	s.prev, s.next = h.prev, l.head
	l.slots[h.prev].next = i
	h.prev = i
	l.head = i
}

// forget removes the caller in slot i and chains the slot as free.
func (l *limiter[K]) forget(i int32) {
	l.unlink(i)
	delete(l.index, l.slots[i].key)
	var zero K
	l.slots[i] = slot[K]{key: zero, next: l.free}
	l.free = i
}

// resize gives the bucket a new size (a grant's limit changed), keeping the tokens it has up to it.
func (b *bucket) resize(size int, per time.Duration) {
	if b.size != float64(size) {
		b.size, b.perSecond = float64(size), float64(size)/per.Seconds()
		b.tokens = min(b.tokens, b.size)
	}
}

// decision is the outcome of taking one request.
type decision struct {
	ok         bool
	retryAfter time.Duration // when refused
	remaining  int           // in the tighter bucket, after this request
	policy     string        // that bucket: "minute" or "day"
	reset      time.Duration // until that bucket is full again
}

// take takes one request for key at now from both buckets, or from neither; lim sizes the buckets.
func (l *limiter[K]) take(key K, lim Limits, now time.Time) decision {
	return l.takeN(key, lim, now, 1)
}

// takeN takes a request that counts as cost requests (a list, when lists cost more; at most a
// whole bucket).
func (l *limiter[K]) takeN(key K, lim Limits, now time.Time, cost int) decision {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.swept) >= sweepEvery {
		l.sweep(now)
	}
	b := l.lookup(key, lim, now)
	b.minute.resize(lim.PerMinute, time.Minute)
	b.day.resize(lim.PerDay, 24*time.Hour)
	b.minute.refill(now)
	b.day.refill(now)
	n := float64(cost)
	if wait := max(b.minute.wait(n), b.day.wait(n)); wait > 0 {
		return decision{retryAfter: wait}
	}
	b.minute.tokens -= min(n, b.minute.size)
	b.day.tokens -= min(n, b.day.size)
	d := decision{ok: true, policy: "minute", remaining: int(b.minute.tokens), reset: b.minute.untilFull()}
	if day := int(b.day.tokens); day < d.remaining {
		d.policy, d.remaining, d.reset = "day", day, b.day.untilFull()
	}
	return d
}

func (l *limiter[K]) sweep(now time.Time) {
	for _, i := range l.index {
		b := &l.slots[i].b
		b.minute.refill(now)
		b.day.refill(now)
		if b.minute.tokens >= b.minute.size && b.day.tokens >= b.day.size {
			l.forget(i)
		}
	}
	l.swept = now
}

// clientKey returns the key an anonymous caller is limited by: its address, taken from the trusted
// proxy header when one is configured, else from the connection. Of the header, the last entry
// counts: the last of its lines, and the last of a comma-separated list in it. That is the one the
// nearest proxy set or appended; whatever comes before it, the client may have written itself. An
// entry that is not an address counts as no header: the connection's address is used. IPv6
// addresses count by their /64, which one subscriber usually holds whole.
func (s *Server) clientKey(r *http.Request) netip.Addr {
	var addr netip.Addr
	if v := s.forwardedClient(r); v != "" {
		addr, _ = netip.ParseAddr(v)
	} else if h := s.cfg.ClientIPHeader; h != "" {
		if vs := r.Header.Values(h); len(vs) > 0 {
			v := vs[len(vs)-1]
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
