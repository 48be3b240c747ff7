package replicate_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc/replicate"
	"github.com/dirsvc/dirsvc/replicate/s3test"
)

// TestBlobsKeepFilesBesideTheReplicatedOnes writes, reads (whole, and by ranges through
// http.ServeContent, as a download does), lists and deletes blobs under the exports prefix of a
// bucket's path, and checks that they land where an edge's credentials do not reach.
func TestBlobsKeepFilesBesideTheReplicatedOnes(t *testing.T) {
	ctx := context.Background()
	fs := s3test.New(t)
	target := bucketOf(fs, "dirsvc")
	target.StorageTimeout = 10 * time.Second
	b, err := target.Blobs(ctx, replicate.ExportsPrefix)
	if err != nil {
		t.Fatal(err)
	}
	body := make([]byte, 300_000)
	rand.Read(body)
	if err := b.Put(ctx, "e1/services.csv", bytes.NewReader(body), int64(len(body)), "text/csv"); err != nil {
		t.Fatal(err)
	}
	if err := b.Put(ctx, "e1/export.json", strings.NewReader(`{"id":"e1"}`), 11, "application/json"); err != nil {
		t.Fatal(err)
	}
	if err := b.Put(ctx, "e2/export.json", strings.NewReader(`{}`), 2, "application/json"); err != nil {
		t.Fatal(err)
	}
	if keys := fs.Keys(t); !slices.Contains(keys, "dirsvc/exports/e1/services.csv") {
		t.Errorf("the bucket's keys: %v", keys)
	}

	if got, err := b.Get(ctx, "e1/export.json", 100); err != nil || string(got) != `{"id":"e1"}` {
		t.Errorf("Get: %q %v", got, err)
	}
	if _, err := b.Get(ctx, "e1/export.json", 5); err == nil {
		t.Error("Get read past its limit")
	}
	if _, err := b.Get(ctx, "e3/export.json", 100); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Get of a missing blob: %v", err)
	}
	if _, err := b.Open(ctx, "e3/services.csv"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open of a missing blob: %v", err)
	}
	for _, bad := range []string{"", "../platform/x", "/e1/a", "e1/../../x", "e1//a"} {
		if err := b.Put(ctx, bad, strings.NewReader(""), 0, "text/plain"); err == nil {
			t.Errorf("Put took the name %q", bad)
		}
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bl, err := b.Open(r.Context(), "e1/services.csv")
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		defer bl.Close()
		http.ServeContent(w, r, "services.csv", bl.ModTime(), bl)
	}))
	defer srv.Close()
	fetch := func(rng string) (int, []byte) {
		req, _ := http.NewRequest("GET", srv.URL, nil)
		if rng != "" {
			req.Header.Set("Range", rng)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		got, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, got
	}
	if st, got := fetch(""); st != 200 || !bytes.Equal(got, body) {
		t.Errorf("whole: %d, %d bytes, equal %v", st, len(got), bytes.Equal(got, body))
	}
	if st, got := fetch("bytes=1000-1999"); st != 206 || !bytes.Equal(got, body[1000:2000]) {
		t.Errorf("a range: %d, %d bytes", st, len(got))
	}
	if st, got := fetch("bytes=-10"); st != 206 || !bytes.Equal(got, body[len(body)-10:]) {
		t.Errorf("a suffix: %d, %d bytes", st, len(got))
	}

	names, err := b.List(ctx, "e1/", 100)
	if err != nil || !slices.Equal(names, []string{"e1/export.json", "e1/services.csv"}) {
		t.Errorf("List e1/: %v %v", names, err)
	}
	if names, err := b.List(ctx, "", 2); err != nil || len(names) != 2 {
		t.Errorf("List with a limit of 2: %v %v", names, err)
	}
	if err := b.Delete(ctx, "e1/export.json", "e1/services.csv", "e1/never-written"); err != nil {
		t.Fatal(err)
	}
	if names, err := b.List(ctx, "", 100); err != nil || !slices.Equal(names, []string{"e2/export.json"}) {
		t.Errorf("after the delete: %v %v", names, err)
	}
}

// TestBlobsGiveUpOnAHungStore checks that a call to a store that does not answer fails after the
// storage timeout instead of waiting for ever.
func TestBlobsGiveUpOnAHungStore(t *testing.T) {
	ctx := context.Background()
	fs := s3test.New(t)
	target := bucketOf(fs, "dirsvc") // a timeout of 500 ms
	b, err := target.Blobs(ctx, replicate.ExportsPrefix)
	if err != nil {
		t.Fatal(err)
	}
	fs.Set(s3test.Hung)
	done := make(chan error, 1)
	go func() { done <- b.Put(ctx, "e1/a.csv", strings.NewReader("a,b\n"), 4, "text/csv") }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "did not answer in time") {
			t.Errorf("Put to a hung store: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Put to a hung store did not give up")
	}
}
