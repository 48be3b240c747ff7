package primary_test

import (
	"bytes"
	"testing"

	"github.com/dirsvc/dirsvc/primary"
	"github.com/dirsvc/dirsvc/primary/demo"
)

// BenchmarkParseImport measures parsing and checking a generated 10,000-service directory.
func BenchmarkParseImport(b *testing.B) {
	var file bytes.Buffer
	if err := demo.Generate(&file, demo.Options{Slug: "bench", Country: "AU", Services: 10000, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(file.Len()))
	for b.Loop() {
		if _, err := primary.ParseImport(bytes.NewReader(file.Bytes())); err != nil {
			b.Fatal(err)
		}
	}
}
