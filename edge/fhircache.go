package edge

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/maphash"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/klauspost/compress/s2"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/fhir"
)

// fhirCache keeps resources mapped from views, so a view read again is not decoded and mapped
// again. An entry is keyed by the view's directory, record and entity tag (which changes with every
// change of the view's body), and holds the readability of each record the resource refers to, as
// it was when it was mapped: an entry is used only when every one of those records is still
// readable, or not, for the caller exactly as then (see fhirReader.resource), so a reference to a
// record the caller may not read can never come from the cache. That is checked record by record,
// except when the entry was last checked for the same viewer (audience and narrowing) of the same
// open directory at the directory's current generation: nothing the caller may read has changed
// since, so neither has the readability. Resources that hold leadership are never kept (they depend
// on the day and the caller's scope).
//
// Memory: the cache holds at most fhirCacheBudget bytes of entries, plus its index (about 40 bytes
// an entry). Each of its parts keeps its entries in fhirCacheGens generations of append-only chunks,
// oldest dropped whole when the newest is full (first in, first out: a walk of every resource that
// fits the budget finds them all on its next pass). An entry is one piece of a chunk, reached
// through a map from the hash of its key to its place, and holds no pointer: however many resources
// it keeps, the cache costs the garbage collector a few hundred chunks to mark. A chunk's bytes are
// never written again once appended (a dropped generation's chunks are let go, not reused), so an
// entry read from the cache keeps its resource's compressed body where the chunk holds it, and a
// search page decodes it straight into the page (fhirCacheEntry.appendBody).
type fhirCache struct {
	seed   maphash.Seed
	shards [fhirCacheShards]fhirCacheShard

	mu     sync.Mutex
	epochs map[string]fhirEpoch // by directory slug
	last   uint64
}

const (
	// fhirCacheBudget bounds the bytes of the entries of the cache. A HealthcareService entry takes
	// about 1.7 KB (its body compressed with S2, 3.3 KB as JSON), so the cache keeps the resources
	// of a directory of 100,000 services (measured on the generated one).
	fhirCacheBudget = 256 << 20
	fhirCacheShards = 16
	fhirCacheGens   = 8
	// fhirCacheChunk is the size of a chunk; a larger entry is not kept.
	fhirCacheChunk = 256 << 10
	// fhirCacheGenChunks is how many chunks a generation of a part holds.
	fhirCacheGenChunks = fhirCacheBudget / fhirCacheShards / fhirCacheGens / fhirCacheChunk
)

type fhirCacheShard struct {
	mu   sync.RWMutex
	gens [fhirCacheGens]fhirCacheGen // gens[newest] is written; the others are older, in a ring
	// newest is the index of the generation entries are added to.
	newest int
}

type fhirCacheGen struct {
	index  map[uint64]fhirSpan
	chunks [][]byte
}

// fhirSpan is the place of an entry: its chunk and its bytes there.
type fhirSpan struct{ chunk, off, n uint32 }

// fhirEpoch tells apart the successive open directories of one slug: the generations of a
// directory opened again start again, so an entry checked at a generation of the directory before
// must not pass as checked at the same number of the new one.
type fhirEpoch struct {
	dir dirsvc.DirectoryReader
	n   uint64
}

type fhirCacheKey struct {
	dir, id, etag string
}

// fhirChecked is when an entry's readability was last found true: for a viewer (viewerKey) of an
// open directory (epoch) at its generation.
type fhirChecked struct {
	epoch, gen uint64
	viewer     string
}

type fhirCacheEntry struct {
	// res is the resource; read from the cache, its Body is left out (see packed).
	res *fhir.Resource
	// refs are the records the mapping asked about: "true" the readable ones, "false" the others,
	// for the caller it was mapped for.
	refs    fhir.Values
	checked fhirChecked
	// sum is the SHA-256 of the resource's JSON: a read's entity tag, and its part of a page's.
	sum [sha256.Size]byte
	// packed is the resource's JSON compressed with S2 as the cache holds it, for an entry read from
	// the cache (whose res.Body is nil until body decodes it).
	packed []byte
}

// newFHIREntry returns the entry of a resource just mapped.
func newFHIREntry(res *fhir.Resource, refs fhir.Values, checked fhirChecked) *fhirCacheEntry {
	return &fhirCacheEntry{res: res, refs: refs, checked: checked, sum: sha256.Sum256(res.Body)}
}

// body returns the resource's JSON, decoding it from the cache's form the first time.
func (e *fhirCacheEntry) body() (json.RawMessage, error) {
	if e.res.Body == nil && e.packed != nil {
		b, err := e.appendBody(nil)
		if err != nil {
			return nil, err
		}
		e.res.Body = b
	}
	return e.res.Body, nil
}

// bodyLen returns the length of the resource's JSON.
func (e *fhirCacheEntry) bodyLen() int {
	if e.res.Body == nil && e.packed != nil {
		n, err := s2.DecodedLen(e.packed)
		if err == nil {
			return n
		}
	}
	return len(e.res.Body)
}

// appendBody appends the resource's JSON to b, decoded from the cache's form into b's free
// capacity when b has room for it.
func (e *fhirCacheEntry) appendBody(b []byte) ([]byte, error) {
	if e.res.Body != nil || e.packed == nil {
		return append(b, e.res.Body...), nil
	}
	n, err := s2.DecodedLen(e.packed)
	if err != nil {
		return nil, err
	}
	b = slices.Grow(b, n)
	out, err := s2.Decode(b[len(b):len(b)+n], e.packed)
	if err != nil {
		return nil, err
	}
	if len(out) != n {
		return nil, errors.New("a cached FHIR resource decodes to another length than it says")
	}
	return b[:len(b)+n], nil
}

func newFHIRCache() *fhirCache {
	c := &fhirCache{seed: maphash.MakeSeed(), epochs: map[string]fhirEpoch{}}
	for i := range c.shards {
		for g := range c.shards[i].gens {
			c.shards[i].gens[g].index = map[uint64]fhirSpan{}
		}
	}
	return c
}

// epoch returns the number of the open directory dir of slug, a new one for a directory not seen
// before.
func (c *fhirCache) epoch(slug string, dir dirsvc.DirectoryReader) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.epochs[slug]; ok && e.dir == dir {
		return e.n
	}
	c.last++
	c.epochs[slug] = fhirEpoch{dir: dir, n: c.last}
	return c.last
}

func (c *fhirCache) hash(k fhirCacheKey) uint64 {
	var h maphash.Hash
	h.SetSeed(c.seed)
	h.WriteString(k.dir)
	h.WriteByte(0)
	h.WriteString(k.id)
	h.WriteByte(0)
	h.WriteString(k.etag)
	return h.Sum64()
}

// get returns the entry of k, or nil.
func (c *fhirCache) get(k fhirCacheKey) *fhirCacheEntry {
	h := c.hash(k)
	sh := &c.shards[h%fhirCacheShards]
	sh.mu.RLock()
	var b []byte
	for i := range fhirCacheGens {
		g := &sh.gens[(sh.newest-i+fhirCacheGens)%fhirCacheGens]
		if sp, ok := g.index[h]; ok {
			b = g.chunks[sp.chunk][sp.off : sp.off+sp.n : sp.off+sp.n]
			break
		}
	}
	sh.mu.RUnlock()
	if b == nil {
		return nil
	}
	return decodeFHIREntry(b, k)
}

// put keeps the entry of k, in place of any kept before.
func (c *fhirCache) put(k fhirCacheKey, e *fhirCacheEntry) {
	b := encodeFHIREntry(k, e)
	if len(b) > fhirCacheChunk {
		return
	}
	h := c.hash(k)
	sh := &c.shards[h%fhirCacheShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for i := range sh.gens {
		delete(sh.gens[i].index, h)
	}
	g := &sh.gens[sh.newest]
	last := len(g.chunks) - 1
	if last < 0 || len(g.chunks[last])+len(b) > fhirCacheChunk {
		if len(g.chunks) == fhirCacheGenChunks {
			// The newest generation is full: the oldest is dropped and becomes the newest.
			sh.newest = (sh.newest + 1) % fhirCacheGens
			g = &sh.gens[sh.newest]
			g.index, g.chunks = map[uint64]fhirSpan{}, nil
		}
		g.chunks = append(g.chunks, make([]byte, 0, fhirCacheChunk))
		last = len(g.chunks) - 1
	}
	off := len(g.chunks[last])
	g.chunks[last] = append(g.chunks[last], b...)
	g.index[h] = fhirSpan{chunk: uint32(last), off: uint32(off), n: uint32(len(b))}
}

// An entry's bytes: its key (directory, id, entity tag), when it was checked (epoch, generation,
// viewer), the readability of its references, then the resource (type, id, source, last updated,
// version, references, search values, the SHA-256 of its body, body compressed with S2, which
// halves what the cache holds for a microsecond a read: in its fast mode, as its better mode saves
// 2% of the bytes for half as much time again). Each string is preceded by its length (uvarint).

func encodeFHIREntry(k fhirCacheKey, e *fhirCacheEntry) []byte {
	r := e.res
	n := 16*binary.MaxVarintLen64 + len(k.dir) + len(k.id) + len(k.etag) + len(e.checked.viewer) + len(e.refs) +
		len(r.Type) + len(r.ID) + len(r.Source) + len(r.LastUpdated) + len(r.VersionID) + len(r.Refs) + len(r.Search) + sha256.Size
	packed := e.packed != nil && r.Body == nil
	if packed {
		n += len(e.packed)
	} else {
		// Room for the body compressed at worst, so that it is compressed in place.
		n += s2.MaxEncodedLen(len(r.Body))
	}
	b := make([]byte, 0, n)
	for _, s := range []string{k.dir, k.id, k.etag} {
		b = appendEntryString(b, s)
	}
	b = binary.AppendUvarint(b, e.checked.epoch)
	b = binary.AppendUvarint(b, e.checked.gen)
	for _, s := range []string{e.checked.viewer, string(e.refs), r.Type, r.ID, r.Source, r.LastUpdated, r.VersionID, string(r.Refs), string(r.Search)} {
		b = appendEntryString(b, s)
	}
	b = append(b, e.sum[:]...)
	if packed {
		return append(b, e.packed...)
	}
	return append(b, s2.Encode(b[len(b):cap(b)], r.Body)...)
}

func appendEntryString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// decodeFHIREntry reads the entry of b if its key is k (a hash of another key finds nothing). Its
// strings are b's own bytes, not copies: b is a piece of a chunk of the cache, which is never
// written again once appended (see fhirCache), and which the strings keep alive as long as they
// are used. The entry and its resource are one allocation: a read takes every resource from here.
func decodeFHIREntry(b []byte, k fhirCacheKey) *fhirCacheEntry {
	d := entryDecoder{b: b}
	if string(d.bytes()) != k.dir || string(d.bytes()) != k.id || string(d.bytes()) != k.etag {
		return nil
	}
	x := new(struct {
		e fhirCacheEntry
		r fhir.Resource
	})
	e := &x.e
	e.res = &x.r
	e.checked.epoch, e.checked.gen = d.uvarint(), d.uvarint()
	start := len(b) - len(d.b)
	var spans [9][2]int // viewer, refs, then the resource's type, id, source, last updated, version, references, search values
	for i := range spans {
		n := len(d.bytes())
		end := len(b) - len(d.b)
		spans[i] = [2]int{end - n - start, end - start}
	}
	if d.bad || len(d.b) < sha256.Size {
		return nil
	}
	text := unsafe.String(&b[start], len(b)-len(d.b)-start)
	str := func(i int) string { return text[spans[i][0]:spans[i][1]] }
	e.checked.viewer, e.refs = str(0), fhir.Values(str(1))
	r := e.res
	r.Type, r.ID, r.Source, r.LastUpdated, r.VersionID = str(2), str(3), str(4), str(5), str(6)
	r.Refs, r.Search = fhir.Values(str(7)), fhir.Values(str(8))
	copy(e.sum[:], d.b)
	e.packed = d.b[sha256.Size:]
	if _, err := s2.DecodedLen(e.packed); err != nil {
		return nil
	}
	return e
}

// entryDecoder reads an entry's fields in turn; a field that does not fit sets bad.
type entryDecoder struct {
	b   []byte
	bad bool
}

func (d *entryDecoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.bad, d.b = true, nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *entryDecoder) bytes() []byte {
	n := d.uvarint()
	if d.bad || n > uint64(len(d.b)) {
		d.bad, d.b = true, nil
		return nil
	}
	s := d.b[:n:n]
	d.b = d.b[n:]
	return s
}

// fhirReadability keeps whether a viewer may read each record a mapping asked about, across
// requests, by fhirChecked (the open directory, its generation, the viewer): what a viewer may read
// changes only with the directory's generation, as the cache's shortcut holds (see fhirCache), so a
// paging client's references (the same organisations and locations, page after page) are looked
// up once a generation rather than once a page. It holds at most maxFHIRReadable answers over at
// most maxFHIRReadableStates states, and starts again empty when it would hold more.
type fhirReadability struct {
	mu     sync.Mutex
	states map[fhirChecked]map[string]bool
	n      int
}

const (
	maxFHIRReadable       = 200_000
	maxFHIRReadableStates = 16
)

func newFHIRReadability() *fhirReadability {
	return &fhirReadability{states: map[fhirChecked]map[string]bool{}}
}

// get returns whether the viewer of at may read the record id, and whether that is known.
func (c *fhirReadability) get(at fhirChecked, id string) (readable, known bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	readable, known = c.states[at][id]
	return readable, known
}

// put keeps whether the viewer of at may read the record id.
func (c *fhirReadability) put(at fhirChecked, id string, readable bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.states[at]
	if m == nil || c.n >= maxFHIRReadable {
		if c.n >= maxFHIRReadable || len(c.states) >= maxFHIRReadableStates {
			c.states, c.n = map[fhirChecked]map[string]bool{}, 0
		}
		if m = c.states[at]; m == nil {
			m = map[string]bool{}
			c.states[at] = m
		}
	}
	if _, had := m[id]; !had {
		c.n++
		// A copy: id may be a piece of a view's body (a mapper's decoding shares it), which the
		// cache would otherwise keep whole.
		id = strings.Clone(id)
	}
	m[id] = readable
}
