package dirdb

import (
	"bytes"
	"context"
	"flag"
	"testing"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/primary/demo"
)

var searchServices = flag.Int("search-services", 10000, "services in the directory the search benchmarks use")

// generated imports a generated directory of n services into a new store.
func generated(b *testing.B, n int) *Directory {
	b.Helper()
	var file bytes.Buffer
	if err := demo.Generate(&file, demo.Options{Slug: "bench", Country: "AU", Services: n, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	s, err := Open(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	d, err := s.CreateDirectory(ctx, "bench")
	if err != nil {
		b.Fatal(err)
	}
	snap := parseForTest(&testing.T{}, file.Bytes())
	if _, err := d.Import(ctx, snap); err != nil {
		b.Fatal(err)
	}
	return d
}

// BenchmarkSearchDocumentsWhole measures making every service's search documents anew (what a
// first import adds to its write), on a generated directory (-search-services, default 10,000).
func BenchmarkSearchDocumentsWhole(b *testing.B) {
	d := generated(b, *searchServices)
	ctx := context.Background()
	for b.Loop() {
		if _, err := d.writer.Exec("UPDATE projection SET search_filled = 0"); err != nil {
			b.Fatal(err)
		}
		if _, err := d.write(ctx, func(*writeTx) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSearchWarm measures what the first searches after the documents changed pay: reading
// every document into the index, then each audience's vocabulary and autocomplete list (the whole
// of it after a change to the documents), on a generated directory (-search-services).
func BenchmarkSearchWarm(b *testing.B) {
	d := generated(b, *searchServices)
	idx := &d.search
	for b.Loop() {
		idx.mu.Lock()
		idx.docs = nil // read every document again
		idx.gen = 0
		idx.mu.Unlock()
		d.warmSearch()
		idx.mu.RLock()
		loaded := len(idx.docs) > 0 && len(idx.suggestions) == len(dirsvc.ServedAudiences)
		idx.mu.RUnlock()
		if !loaded {
			b.Fatal("the index was not warmed")
		}
	}
}

// BenchmarkSearchGrouped measures searches of common words grouped by organisation (the first page
// of 20 organisations with their services), warm, on a generated directory (-search-services).
func BenchmarkSearchGrouped(b *testing.B) {
	d := generated(b, *searchServices)
	ctx := context.Background()
	pub := dirsvc.Viewer{Audience: dirsvc.Public}
	words := []string{"clinic", "medical", "counselling", "family", "health", "care"}
	for _, w := range words { // warm: the index, and each word's posting
		if _, err := d.SearchServices(ctx, pub, dirsvc.SearchQuery{Text: w, ByOrganisation: true, Limit: 20}); err != nil {
			b.Fatal(err)
		}
	}
	i := 0
	for b.Loop() {
		res, err := d.SearchServices(ctx, pub, dirsvc.SearchQuery{Text: words[i%len(words)], ByOrganisation: true, Limit: 20})
		if err != nil || len(res.Organisations) == 0 {
			b.Fatal(err, len(res.Organisations))
		}
		i++
	}
}
