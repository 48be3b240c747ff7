package dirdb_test

import (
	"bytes"
	"context"
	"flag"
	"testing"

	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/primary"
	"github.com/dirsvc/dirsvc/primary/demo"
)

var importServices = flag.Int("import-services", 10000, "services in the directory BenchmarkImport imports")

// BenchmarkImport measures a first import of a generated directory (10,000 services unless
// -import-services says otherwise) into an empty store: parse, check, project for every audience,
// write.
func BenchmarkImport(b *testing.B) {
	var file bytes.Buffer
	if err := demo.Generate(&file, demo.Options{Slug: "bench", Country: "AU", Services: *importServices, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(file.Len()))
	for b.Loop() {
		b.StopTimer()
		s, err := dirdb.Open(context.Background(), b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, _, err := primary.Import(context.Background(), s, bytes.NewReader(file.Bytes())); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		s.Close()
		b.StartTimer()
	}
}
