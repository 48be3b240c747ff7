package dirdb

import (
	"sync"
	"sync/atomic"
)

// viewCacheBudget bounds the bytes of views all directories of a store keep in memory.
const viewCacheBudget = 256 << 20

// viewCache keeps views a directory served recently, so a hot record is answered without SQLite.
// It holds only views (what one audience receives of a visible record), keyed by record and
// audience. A view read from the file is kept only if no commit came between the reader looking at
// the generation and keeping it, and a commit empties the cache after bumping the generation, so no
// view read before a commit outlives it.
type viewCache struct {
	mu      sync.RWMutex
	entries map[viewKey]cachedView
	bytes   int64
	total   *atomic.Int64 // the store's bytes, shared by its directories
}

type viewKey struct {
	publicID string
	bit      int64
}

type cachedView struct {
	body []byte
	etag string
}

func newViewCache(total *atomic.Int64) *viewCache {
	return &viewCache{entries: map[viewKey]cachedView{}, total: total}
}

func (c *viewCache) get(k viewKey) (cachedView, bool) {
	c.mu.RLock()
	v, ok := c.entries[k]
	c.mu.RUnlock()
	return v, ok
}

// put keeps v if the generation is still gen, evicting other views while the store is over budget.
func (c *viewCache) put(k viewKey, v cachedView, gen uint64, current *atomic.Uint64) {
	size := int64(len(v.body) + len(v.etag) + len(k.publicID) + 64)
	c.mu.Lock()
	defer c.mu.Unlock()
	if current.Load() != gen {
		return
	}
	if _, ok := c.entries[k]; ok {
		return
	}
	for old, ov := range c.entries { // map order is random: random eviction
		if c.total.Load()+size <= viewCacheBudget {
			break
		}
		c.drop(old, ov)
	}
	if c.total.Load()+size > viewCacheBudget {
		return // other directories hold the budget
	}
	c.entries[k] = v
	c.bytes += size
	c.total.Add(size)
}

func (c *viewCache) drop(k viewKey, v cachedView) {
	size := int64(len(v.body) + len(v.etag) + len(k.publicID) + 64)
	delete(c.entries, k)
	c.bytes -= size
	c.total.Add(-size)
}

// clear forgets every view.
func (c *viewCache) clear() {
	c.mu.Lock()
	c.total.Add(-c.bytes)
	c.entries, c.bytes = map[viewKey]cachedView{}, 0
	c.mu.Unlock()
}
