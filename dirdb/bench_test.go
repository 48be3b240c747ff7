package dirdb_test

import (
	"bytes"
	"context"
	"flag"
	"syscall"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/primary"
	"github.com/dirsvc/dirsvc/primary/demo"
)

var importServices = flag.Int("import-services", 10000, "services in the directory BenchmarkImport imports")

// BenchmarkImport measures a first import of a generated directory (10,000 services unless
// -import-services says otherwise) into an empty store: parse, check, project for every audience,
// write. Besides the elapsed time it reports the CPU time of the imports (every thread, the
// collector's included), which other work on a shared machine disturbs less.
func BenchmarkImport(b *testing.B) {
	var file bytes.Buffer
	if err := demo.Generate(&file, demo.Options{Slug: "bench", Country: "AU", Services: *importServices, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(file.Len()))
	var cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		s, err := dirdb.Open(context.Background(), b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		before := cpuTime(b)
		if _, _, err := primary.Import(context.Background(), s, bytes.NewReader(file.Bytes())); err != nil {
			b.Fatal(err)
		}
		cpu += cpuTime(b) - before
		b.StopTimer()
		s.Close()
		b.StartTimer()
	}
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
}

// cpuTime returns the CPU time the process has used (user and system, every thread).
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
