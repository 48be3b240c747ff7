package dirdb

import (
	"strings"
	"sync/atomic"
	"testing"
)

func TestViewCacheKeepsOnlyCurrentViewsWithinBudget(t *testing.T) {
	var total atomic.Int64
	var gen atomic.Uint64
	c := newViewCache(&total)
	k := viewKey{"svc_a", 1}
	c.put(k, cachedView{[]byte("old"), `"1"`}, 0, &gen)
	if v, ok := c.get(k); !ok || string(v.body) != "old" {
		t.Fatal("a current view was not kept")
	}
	// A commit: the generation moves on, then the cache is emptied; a view read before it is refused.
	gen.Add(1)
	c.clear()
	c.put(k, cachedView{[]byte("stale"), `"1"`}, 0, &gen)
	if _, ok := c.get(k); ok {
		t.Fatal("a view read before a commit was kept after it")
	}
	if total.Load() != 0 {
		t.Fatalf("an empty cache counts %d bytes", total.Load())
	}
	// Another audience's view of the same record is another entry.
	c.put(k, cachedView{[]byte("public"), `"2"`}, 1, &gen)
	c.put(viewKey{"svc_a", 2}, cachedView{[]byte("professional"), `"3"`}, 1, &gen)
	if v, _ := c.get(k); string(v.body) != "public" {
		t.Fatalf("public view: %q", v.body)
	}
	// The store-wide budget holds: big views evict others.
	big := []byte(strings.Repeat("x", viewCacheBudget/3))
	for i := range 10 {
		c.put(viewKey{strings.Repeat("b", i+1), 1}, cachedView{big, `"4"`}, 1, &gen)
		if total.Load() > viewCacheBudget {
			t.Fatalf("after %d big views the cache holds %d bytes, over its budget", i+1, total.Load())
		}
	}
}
