// Command manydirs makes a data folder holding many small generated directories, for the benchmark
// of an edge serving them (bench/idle.sh).
//
//	go run ./bench/manydirs --data DIR --n 1000 --services 5
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"log"
	"time"

	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/primary"
	"github.com/dirsvc/dirsvc/primary/demo"
)

func main() {
	data := flag.String("data", "", "data folder to fill")
	n := flag.Int("n", 1000, "directories")
	services := flag.Int("services", 5, "services in each")
	flag.Parse()
	if *data == "" {
		log.Fatal("--data is required")
	}
	ctx := context.Background()
	store, err := dirdb.Open(ctx, *data)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	start := time.Now()
	for i := range *n {
		var buf bytes.Buffer
		slug := fmt.Sprintf("dir-%04d", i)
		if err := demo.Generate(&buf, demo.Options{Services: *services, Seed: int64(i + 1), Slug: slug, Country: "AU"}); err != nil {
			log.Fatal(err)
		}
		if _, _, err := primary.Import(ctx, store, &buf); err != nil {
			log.Fatalf("%s: %v", slug, err)
		}
	}
	log.Printf("%d directories of %d services in %s", *n, *services, time.Since(start).Round(time.Millisecond))
}
