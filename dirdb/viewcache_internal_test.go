package dirdb

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
)

func newAccount(budget int64) *cacheAccount {
	a := new(cacheAccount)
	a.budget.Store(budget)
	return a
}

func TestViewCacheKeepsOnlyCurrentViewsWithinBudget(t *testing.T) {
	const budget = 64 << 20
	account := newAccount(budget)
	var gen atomic.Uint64
	c := newViewCache(account)
	k := viewKey{"svc_a", 1}
	c.put(k, &cachedView{body: []byte("old"), etag: `"1"`}, 0, &gen)
	if v, ok := c.get(k); !ok || string(v.body) != "old" {
		t.Fatal("a current view was not kept")
	}
	// A commit: the generation moves on, then the cache is emptied; a view read before it is refused.
	gen.Add(1)
	c.clear()
	if v := c.put(k, &cachedView{body: []byte("stale"), etag: `"1"`}, 0, &gen); v != nil {
		t.Fatal("put kept a view read before a commit")
	}
	if _, ok := c.get(k); ok {
		t.Fatal("a view read before a commit was kept after it")
	}
	if account.used.Load() != 0 {
		t.Fatalf("an empty cache counts %d bytes", account.used.Load())
	}
	// Another audience's view of the same record is another entry.
	c.put(k, &cachedView{body: []byte("public"), etag: `"2"`}, 1, &gen)
	c.put(viewKey{"svc_a", 2}, &cachedView{body: []byte("professional"), etag: `"3"`}, 1, &gen)
	if v, _ := c.get(k); string(v.body) != "public" {
		t.Fatalf("public view: %q", v.body)
	}
	// The store-wide budget holds: big views evict others.
	big := []byte(strings.Repeat("x", budget/3))
	for i := range 10 {
		c.put(viewKey{strings.Repeat("b", i+1), 1}, &cachedView{body: big, etag: `"4"`}, 1, &gen)
		if account.used.Load() > budget {
			t.Fatalf("after %d big views the cache holds %d bytes, over its budget", i+1, account.used.Load())
		}
	}
}

func TestViewCacheCountsCodedFormsInItsBudget(t *testing.T) {
	account := newAccount(1 << 20)
	var gen atomic.Uint64
	c := newViewCache(account)
	body := bytes.Repeat([]byte(`{"name":"a service"}`), 1000)
	v := c.put(viewKey{"svc_a", 1}, &cachedView{body: body, etag: `"1"`}, 0, &gen)
	before := account.used.Load()
	calls := 0
	encode := func() []byte { calls++; return gzipped(t, body) }
	form := v.enc.Form("gzip", encode)
	if again := v.enc.Form("gzip", encode); calls != 1 || !bytes.Equal(again, form) {
		t.Fatalf("the gzip form was made %d times, want once", calls)
	}
	if got, want := account.used.Load()-before, allocSize(len(form)); got != want {
		t.Errorf("keeping a %d-byte form counted %d bytes, want %d", len(form), got, want)
	}
	// A form as big as the budget takes its view out of the cache with it.
	v.enc.Form("br", func() []byte { return make([]byte, 1<<20) })
	if _, ok := c.get(viewKey{"svc_a", 1}); ok || account.used.Load() != 0 {
		t.Errorf("over budget by its forms, the view is kept (%v) and %d bytes are counted", ok, account.used.Load())
	}
	// A form made for a view dropped meanwhile is not counted.
	v = c.put(viewKey{"svc_b", 1}, &cachedView{body: body, etag: `"2"`}, 0, &gen)
	c.clear()
	v.enc.Form("gzip", encode)
	if account.used.Load() != 0 {
		t.Errorf("a dropped view's form counts %d bytes", account.used.Load())
	}
}

// TestViewCacheBudgetBoundsTheHeap fills a cache with views shaped as the service's are (bodies of
// 300 bytes to 8 KB as the driver returns them, public IDs and entity tags as published), with the
// gzip form of a third of them kept, and checks that the heap the cache holds stays within 1.25
// times its budget. It logs the ratio, and what it would be against the bytes counted before the
// accounting included allocator classes, the map and the coded forms.
func TestViewCacheBudgetBoundsTheHeap(t *testing.T) {
	if testing.Short() {
		t.Skip("fills 48 MB")
	}
	const budget = 48 << 20
	rng := rand.New(rand.NewPCG(1, 2))
	word := func() string {
		return []string{"clinic", "health", "community", "service", "centre", "mental", "care"}[rng.IntN(7)]
	}
	var gen atomic.Uint64
	before := heapAlloc()
	account := newAccount(budget)
	c := newViewCache(account)
	var naive int64 // the old count: len(body)+len(etag)+len(publicID)+64
	for i := 0; account.used.Load() < budget-(64<<10); i++ {
		var b strings.Builder
		b.WriteString(`{"publicId":"svc_` + fmt.Sprint(i) + `","name":"`)
		for n := 300 + rng.IntN(8000); b.Len() < n; {
			b.WriteString(word() + " ")
		}
		b.WriteString(`"}`)
		body := make([]byte, b.Len()) // the driver's copy of the column
		copy(body, b.String())
		id := fmt.Sprintf("svc_%08d", i)
		etag := fmt.Sprintf(`"%024x"`, i)
		v := c.put(viewKey{id, 1}, &cachedView{body: body, etag: etag}, 0, &gen)
		if v == nil {
			t.Fatalf("view %d not kept with %d of %d bytes used", i, account.used.Load(), budget)
		}
		naive += int64(len(body) + len(etag) + len(id) + 64)
		if i%3 == 0 {
			v.enc.Form("gzip", func() []byte { return gzipped(t, body) })
		}
	}
	grown := heapAlloc() - before
	runtime.KeepAlive(c)
	ratio := float64(grown) / float64(account.used.Load())
	t.Logf("%d views: heap grew %.1f MB for %.1f MB counted (%.2f×); the old count was %.1f MB (%.2f×)",
		c.len(), float64(grown)/(1<<20), float64(account.used.Load())/(1<<20), ratio,
		float64(naive)/(1<<20), float64(grown)/float64(naive))
	if ratio > 1.25 || ratio < 0.8 {
		t.Errorf("the cache holds %.2f× the heap it counts, want within 0.8 to 1.25", ratio)
	}
}

func gzipped(tb testing.TB, b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	if err := zw.Close(); err != nil {
		tb.Fatal(err)
	}
	return bytes.Clone(buf.Bytes())
}

func heapAlloc() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
