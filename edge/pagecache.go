package edge

import (
	"container/list"
	"sync"

	"github.com/dirsvc/dirsvc"
)

// DefaultPageCacheBytes is the memory a Server's kept record pages may take when its Config gives
// no other bound: about 8,000 pages of a few kilobytes with their coded forms.
const DefaultPageCacheBytes = 64 << 20

// pageCache keeps record pages as they were composed (body, entity tag, coded forms, whether they
// carry addresses), so a page asked for again costs what a brief view costs instead of reading,
// decoding and encoding the views of its related records and compressing the result.
//
// A page is kept under everything it was composed from: the directory's reader, the record, the
// caller's audience and the directory's country (its public holidays); with the minute of the clock
// it was composed for (its open status; opening hours are given in minutes); and with the generation
// of the directory's reader when composing began (dirsvc.DirectoryReader.Generation), which moves at
// every commit and every change an edge applies, so a page is served only while nothing it was
// composed from can have changed. A page asked for in a later minute is composed again; when it comes
// out the same, as it mostly does (an open status changes a few times a day), the page kept moves to
// the new minute with its coded forms, so a page is compressed once and not once a minute. Only
// callers without a narrowing are served from it: a narrowing leaves related records out of a page,
// and a narrowed read must cost what a read of a missing record costs.
//
// The least recently used pages leave past the byte bound; the bytes counted are the body's, its
// coded forms' and entryOverhead.
type pageCache struct {
	mu      sync.Mutex
	max     int64
	bytes   int64
	entries map[pageKey]*list.Element
	lru     list.List // of *keptPage, most recently used first
}

type pageKey struct {
	dir     dirsvc.DirectoryReader
	id      string
	aud     dirsvc.Audience
	country string
}

// keptPage is a composed page. Its fields do not change once it is kept; enc keeps its coded forms.
type keptPage struct {
	key       pageKey
	gen       uint64
	minute    int64 // of the clock (Unix time / 60) it was composed for, or has served since
	body      []byte
	etag      string
	addresses bool
	enc       *dirsvc.Encoded
	size      int64
}

// pageOverhead is the memory of an entry beside its body and forms: the keptPage, its list element,
// its map slot and its Encoded, about.
const pageOverhead = 400

func newPageCache(max int64) *pageCache {
	return &pageCache{max: max, entries: map[pageKey]*list.Element{}}
}

// get returns the page kept under k, when it was composed at the generation gen for the minute.
func (c *pageCache) get(k pageKey, gen uint64, minute int64) *keptPage {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[k]
	if !ok {
		return nil
	}
	p := el.Value.(*keptPage)
	switch {
	case p.gen != gen:
		c.remove(el) // composed before a change: never served again
	case p.minute == minute:
		c.lru.MoveToFront(el)
		return p
	}
	return nil // of another minute: kept until put sees whether the page composed now is the same
}

// put keeps p (composed at the generation p.gen for the minute p.minute) and returns the page kept:
// p, with the Encoded in which its coded forms are kept and counted, in place of any page kept under
// the same key of an older generation or minute; or the page kept before it, moved to p's minute,
// when that is the same page (same generation and body); or nil when it keeps nothing: a page larger
// than a quarter of the bound, or one kept meanwhile by a request of a later generation or minute.
func (c *pageCache) put(p *keptPage) *keptPage {
	p.size = int64(len(p.body)) + pageOverhead
	if p.size > c.max/4 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[p.key]; ok {
		old := el.Value.(*keptPage)
		switch {
		case old.gen == p.gen && old.etag == p.etag:
			old.minute = max(old.minute, p.minute)
			c.lru.MoveToFront(el)
			return old
		case old.gen > p.gen || old.gen == p.gen && old.minute > p.minute:
			return nil
		}
		c.remove(el)
	}
	el := c.lru.PushFront(p)
	p.enc = dirsvc.NewEncoded(func(n int) { c.kept(el, int64(n)) })
	c.entries[p.key] = el
	c.bytes += p.size
	c.evict()
	return p
}

// kept counts a coded form of the page of el, if it is still kept.
func (c *pageCache) kept(el *list.Element, n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := el.Value.(*keptPage)
	if c.entries[p.key] != el {
		return
	}
	p.size += n
	c.bytes += n
	c.evict()
}

// evict drops the least recently used pages while over the bound. Callers hold c.mu.
func (c *pageCache) evict() {
	for c.bytes > c.max {
		c.remove(c.lru.Back())
	}
}

func (c *pageCache) remove(el *list.Element) {
	p := el.Value.(*keptPage)
	c.lru.Remove(el)
	delete(c.entries, p.key)
	c.bytes -= p.size
}
