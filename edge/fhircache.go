package edge

import (
	"hash/maphash"
	"sync"

	"github.com/dirsvc/dirsvc/fhir"
)

// fhirCache keeps resources mapped from views, so a view read again is not decoded and mapped
// again. An entry is keyed by the view's directory, record and entity tag (which changes with every
// change of the view's body), and holds the readability of each record the resource refers to, as
// it was when it was mapped: an entry is used only when every one of those records is still
// readable, or not, for the caller exactly as then (checked on every use, see fhirReader.resource),
// so a reference to a record the caller may not read can never come from the cache. Resources that
// hold leadership are never kept (they depend on the day and the caller's scope).
type fhirCache struct {
	seed   maphash.Seed
	shards [fhirCacheShards]fhirCacheShard
}

const (
	fhirCacheShards = 16
	// fhirCachePerShard bounds the entries of a shard; a full shard is emptied (a cache of mapped
	// resources is cheap to refill, and this keeps its memory bounded without bookkeeping).
	fhirCachePerShard = 4096
)

type fhirCacheShard struct {
	mu      sync.RWMutex
	entries map[fhirCacheKey]*fhirCacheEntry
}

type fhirCacheKey struct {
	dir, id, etag string
}

type fhirCacheEntry struct {
	res *fhir.Resource
	// refs is the readability, for the caller it was mapped for, of each record the mapping asked
	// about.
	refs map[string]bool
}

func newFHIRCache() *fhirCache {
	c := &fhirCache{seed: maphash.MakeSeed()}
	for i := range c.shards {
		c.shards[i].entries = map[fhirCacheKey]*fhirCacheEntry{}
	}
	return c
}

func (c *fhirCache) shard(k fhirCacheKey) *fhirCacheShard {
	return &c.shards[maphash.String(c.seed, k.etag)%fhirCacheShards]
}

func (c *fhirCache) get(k fhirCacheKey) *fhirCacheEntry {
	sh := c.shard(k)
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	return sh.entries[k]
}

func (c *fhirCache) put(k fhirCacheKey, e *fhirCacheEntry) {
	sh := c.shard(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if len(sh.entries) >= fhirCachePerShard {
		clear(sh.entries)
	}
	sh.entries[k] = e
}
