package edge

import (
	"container/list"
	"crypto/sha256"
	"sync"

	"github.com/dirsvc/dirsvc"
)

// Bounds of the coded forms kept of bodies composed at read time (bodyCache).
const (
	maxCodedBytes   = 32 << 20
	maxCodedEntries = 8192
)

// bodyCache keeps the coded forms (br, gzip) of bodies composed at read time, record pages and list
// pages, by the SHA-256 of the body: a body asked for again, by anyone, is sent in the coded form
// made the first time instead of being compressed again. The key is the hash of the very bytes
// coded, so a form never reaches a request whose body differs, whatever its audience or query, and
// a changed directory changes the bodies and so the keys; forms of old bodies leave as the least
// recently used. It holds at most maxCodedEntries bodies and maxCodedBytes of forms.
type bodyCache struct {
	mu      sync.Mutex
	entries map[[sha256.Size]byte]*list.Element
	lru     list.List // of *bodyEntry, most recently used first
	bytes   int64
}

type bodyEntry struct {
	key  [sha256.Size]byte
	enc  *dirsvc.Encoded
	size int64
}

func newBodyCache() *bodyCache {
	return &bodyCache{entries: map[[sha256.Size]byte]*list.Element{}}
}

// forms returns where the coded forms of the body whose hash is sum are kept. Nothing is kept until
// a form is asked for.
func (c *bodyCache) forms(sum [sha256.Size]byte) forms { return bodyForms{c, sum} }

type bodyForms struct {
	c   *bodyCache
	sum [sha256.Size]byte
}

func (f bodyForms) Form(coding string, encode func() []byte) []byte {
	return f.c.entry(f.sum).Form(coding, encode)
}

// entry returns the Encoded of the body whose hash is key, made if there is none.
func (c *bodyCache) entry(key [sha256.Size]byte) *dirsvc.Encoded {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[key]; ok {
		c.lru.MoveToFront(el)
		return el.Value.(*bodyEntry).enc
	}
	e := &bodyEntry{key: key}
	el := c.lru.PushFront(e)
	e.enc = dirsvc.NewEncoded(func(n int) { c.kept(el, int64(n)) })
	c.entries[key] = el
	c.evict()
	return e.enc
}

// kept counts a form of the entry of el, if it is still kept, and evicts the least recently used
// entries while over the bounds.
func (c *bodyCache) kept(el *list.Element, n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := el.Value.(*bodyEntry)
	if c.entries[e.key] != el {
		return
	}
	e.size += n
	c.bytes += n
	c.evict()
}

func (c *bodyCache) evict() {
	for c.bytes > maxCodedBytes || len(c.entries) > maxCodedEntries {
		el := c.lru.Back()
		e := el.Value.(*bodyEntry)
		c.lru.Remove(el)
		delete(c.entries, e.key)
		c.bytes -= e.size
	}
}
