package dirdb

import (
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dirsvc/dirsvc"
)

// DefaultViewCacheBudget is the bytes of memory the views of all directories of a store may take
// when the store is given no other budget (Store.SetViewCacheBudget).
const DefaultViewCacheBudget = 256 << 20

// cacheAccount is the memory of a store's view caches: the bytes they hold, and the most they may.
type cacheAccount struct {
	used   atomic.Int64
	budget atomic.Int64
}

// viewCache keeps views a directory served recently, so a hot record is answered without SQLite.
// It holds only views (what one audience receives of a visible record), keyed by record and
// audience, and beside each the content-coded forms of its body that were asked for. A view read
// from the file is kept only if no commit came between the reader looking at the generation and
// keeping it, and a commit empties the cache after bumping the generation, so no view read before a
// commit outlives it.
//
// What an entry costs is counted as the heap it takes (see entrySize), so the store's budget bounds
// the live heap of its caches, not only their bodies.
type viewCache struct {
	seed    maphash.Seed
	shards  [cacheShards]cacheShard
	account *cacheAccount // the store's, shared by its directories
}

// cacheShards is how many parts a cache is split into, each with its own lock, so that keeping a
// view (or a coded form of one) holds up only the reads of one part.
const cacheShards = 16

type cacheShard struct {
	mu      sync.RWMutex
	entries map[viewKey]*cachedView
	bytes   int64
}

type viewKey struct {
	publicID string
	bit      int64
}

type cachedView struct {
	body  []byte
	etag  string
	enc   *dirsvc.Encoded // coded forms of body, counted in extra once kept
	extra int64
}

func newViewCache(account *cacheAccount) *viewCache {
	c := &viewCache{seed: maphash.MakeSeed(), account: account}
	for i := range c.shards {
		c.shards[i].entries = map[viewKey]*cachedView{}
	}
	return c
}

// shard returns the part of the cache that holds k.
func (c *viewCache) shard(k viewKey) *cacheShard {
	return &c.shards[maphash.String(c.seed, k.publicID)%cacheShards]
}

func (c *viewCache) get(k viewKey) (*cachedView, bool) {
	sh := c.shard(k)
	sh.mu.RLock()
	v, ok := sh.entries[k]
	sh.mu.RUnlock()
	return v, ok
}

// len returns how many views the cache holds.
func (c *viewCache) len() int {
	n := 0
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.RLock()
		n += len(sh.entries)
		sh.mu.RUnlock()
	}
	return n
}

// entryOverhead is the heap an entry takes beyond its strings and body, measured for Go 1.26 on
// amd64: its map slot at the map's usual load (about 70 bytes), the cachedView (64), the Encoded
// (96) and the function through which it reports kept forms (48).
const entryOverhead = 280

// entrySize is the heap an entry of key k and view v takes, its coded forms apart: each allocation
// counted at the size the allocator gives it.
func entrySize(k viewKey, v *cachedView) int64 {
	return allocSize(len(k.publicID)) + allocSize(len(v.etag)) + allocSize(cap(v.body)) + entryOverhead
}

// allocSize is about what the Go allocator gives a request of n bytes: small sizes come in classes
// spaced about an eighth of a power of two apart, large ones in whole 8 KB pages.
func allocSize(n int) int64 {
	switch {
	case n <= 0:
		return 0
	case n > 32<<10:
		return int64((n + 8191) &^ 8191)
	}
	step := 16
	for p := 128; p < n; p <<= 1 {
		step = p / 8
	}
	return int64((n + step - 1) / step * step)
}

// put keeps v if the generation is still gen, evicting other views of its part while the store is
// over budget, and returns the view kept (v, or one kept before it), or nil when none is.
func (c *viewCache) put(k viewKey, v *cachedView, gen uint64, current *atomic.Uint64) *cachedView {
	k.publicID = strings.Clone(k.publicID) // not a piece of a request's memory
	size := entrySize(k, v)
	sh := c.shard(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if current.Load() != gen {
		return nil
	}
	if old, ok := sh.entries[k]; ok {
		return old
	}
	c.evict(sh, size, k)
	if c.account.used.Load()+size > c.account.budget.Load() {
		return nil // other parts or directories hold the budget
	}
	v.enc = dirsvc.NewEncoded(func(n int) { c.kept(k, v, int64(allocSize(n))) })
	sh.entries[k] = v
	sh.bytes += size
	c.account.used.Add(size)
	return v
}

// kept counts a coded form of v, kept beside it, in the budget, if v is still in the cache.
func (c *viewCache) kept(k viewKey, v *cachedView, n int64) {
	sh := c.shard(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.entries[k] != v {
		return // dropped meanwhile: its forms go with the last request that holds them
	}
	v.extra += n
	sh.bytes += n
	c.account.used.Add(n)
	c.evict(sh, 0, k)
	if c.account.used.Load() > c.account.budget.Load() {
		c.drop(sh, k, v)
	}
}

// evict drops views of the part sh other than k (map order is random: random eviction) until size
// more bytes fit the store's budget or none is left. Callers hold sh.mu.
func (c *viewCache) evict(sh *cacheShard, size int64, k viewKey) {
	for old, ov := range sh.entries {
		if c.account.used.Load()+size <= c.account.budget.Load() {
			return
		}
		if old != k {
			c.drop(sh, old, ov)
		}
	}
}

func (c *viewCache) drop(sh *cacheShard, k viewKey, v *cachedView) {
	size := entrySize(k, v) + v.extra
	delete(sh.entries, k)
	sh.bytes -= size
	c.account.used.Add(-size)
}

// clear forgets every view.
func (c *viewCache) clear() {
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		c.account.used.Add(-sh.bytes)
		sh.entries, sh.bytes = map[viewKey]*cachedView{}, 0
		sh.mu.Unlock()
	}
}
