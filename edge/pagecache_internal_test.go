package edge

import (
	"testing"

	"github.com/dirsvc/dirsvc"
)

// TestAPageTheSameInTheNextMinuteKeepsItsCodedForms puts pages of one record as they would be
// composed minute after minute: the same body moves the kept page to the new minute with its coded
// forms (compressed once, not once a minute); another body replaces it; a page of an earlier minute
// or generation, composed late, replaces nothing.
func TestAPageTheSameInTheNextMinuteKeepsItsCodedForms(t *testing.T) {
	c := newPageCache(1 << 20)
	key := pageKey{id: "loc_ultimo", aud: dirsvc.Public, country: "AU"}
	page := func(gen uint64, minute int64, body string) *keptPage {
		return &keptPage{key: key, gen: gen, minute: minute, body: []byte(body), etag: `"` + body + `"`}
	}
	first := c.put(page(1, 100, "closed"))
	if first == nil {
		t.Fatal("the first page was not kept")
	}
	coded := 0
	first.enc.Form("br", func() []byte { coded++; return []byte("coded") })

	if got := c.get(key, 1, 101); got != nil {
		t.Fatalf("the page of minute 100 was served in minute 101")
	}
	same := c.put(page(1, 101, "closed"))
	if same != first || same.minute != 101 {
		t.Fatalf("the same page composed in minute 101: kept %p (minute %d), want the first, moved", same, same.minute)
	}
	if got := c.get(key, 1, 101); got != first {
		t.Fatalf("minute 101 is not served the page kept")
	}
	first.enc.Form("br", func() []byte { coded++; return []byte("coded") })
	if coded != 1 {
		t.Errorf("the page was compressed %d times, want once", coded)
	}

	if late := c.put(page(1, 100, "late")); late != nil {
		t.Errorf("a page composed for minute 100, put after minute 101's, was kept")
	}
	opened := c.put(page(1, 102, "open"))
	if opened == nil || opened == first || c.get(key, 1, 102) != opened {
		t.Fatalf("a changed page in minute 102 did not replace the kept one")
	}
	if old := c.put(page(0, 102, "open")); old != nil {
		t.Errorf("a page of an older generation was kept")
	}
	if c.get(key, 2, 102) != nil || c.get(key, 1, 102) != nil {
		t.Errorf("a page of generation 1 was served at generation 2, or kept after it")
	}
}
