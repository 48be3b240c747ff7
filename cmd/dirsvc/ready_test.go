package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/primary"
)

// importSmallAs imports the small fixture into store as the directory slug.
func importSmallAs(t *testing.T, store *dirdb.Store, slug string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "small.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.ReplaceAll(b, []byte(`"slug":"small"`), []byte(`"slug":"`+slug+`"`))
	b = bytes.ReplaceAll(b, []byte(`"small:`), []byte(`"`+slug+`:`))
	if _, _, err := primary.Import(context.Background(), store, bytes.NewReader(b)); err != nil {
		t.Fatal(err)
	}
}

// lookUntilSettled looks until no directory is warming, each look after the last cold one warmed.
func lookUntilSettled(r *readiness) {
	for {
		cold := r.look(context.Background())
		if len(cold) == 0 {
			return
		}
		for _, c := range cold {
			<-c
		}
	}
}

// TestReadinessWaitsForTheStartAndThenStays follows a node's readiness: not ready before it has
// what it serves (an edge before its first copies), ready once every directory it lists is warm,
// and still ready when a directory is added later, which is warmed (opened ahead of its first
// request) without the node leaving rotation.
func TestReadinessWaitsForTheStartAndThenStays(t *testing.T) {
	ctx := context.Background()
	store, err := dirdb.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	store.SetWarmSearch(true)
	importSmallAs(t, store, "small")
	started := false
	r := newReadiness(store, slog.New(slog.DiscardHandler), func() bool { return started })

	lookUntilSettled(r)
	if ready, _ := r.Ready(); ready {
		t.Fatal("ready before the node has what it serves")
	}
	started = true
	lookUntilSettled(r)
	if ready, warming := r.Ready(); !ready || len(warming) != 0 {
		t.Fatalf("Ready() = %v, %v once started and every directory warm; want true, none", ready, warming)
	}

	importSmallAs(t, store, "later")
	started = false // an edge that lost the primary meanwhile says so as unhealthy, not unready
	r.look(ctx)
	if ready, _ := r.Ready(); !ready {
		t.Error("a directory added later made the node unready")
	}
	lookUntilSettled(r)
	if !r.warm["later"] {
		t.Error("the directory added later was not opened and warmed ahead of its first request")
	}
}
