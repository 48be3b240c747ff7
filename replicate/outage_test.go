package replicate_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/replicate"
)

// TestReplicationStartsOnItsFolderWhileTheBucketIsDown opens replication again on a data folder
// and its replica folder while object storage does not answer (a primary killed during an
// outage): it replicates to the folder, and the bucket takes the changes once it answers. Beside a
// replica folder that holds nothing of the files (a lost volume) it refuses to start: only the
// bucket could tell whether it holds a later history.
func TestReplicationStartsOnItsFolderWhileTheBucketIsDown(t *testing.T) {
	ctx := context.Background()
	backend := s3mem.New()
	if err := backend.CreateBucket("backups"); err != nil {
		t.Fatal(err)
	}
	s3 := gofakes3.New(backend).Server()
	var down atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !down.Load() {
			s3.ServeHTTP(w, r)
			return
		}
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close() // unreachable: no answer
		}
	}))
	t.Cleanup(srv.Close)
	t.Setenv("AWS_CA_BUNDLE", "")
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	bucket := &replicate.S3{Endpoint: srv.URL, Bucket: "backups", Path: "dirsvc", Region: "us-east-1", ForcePathStyle: true}
	target := replicate.Target{Dir: t.TempDir(), S3: bucket, StorageTimeout: time.Second}

	data, store := smallFolder(t)
	r, err := replicate.Open(ctx, data, target, smallFiles, replicate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	store.Close()
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}

	down.Store(true)
	if _, err := replicate.Open(ctx, data, replicate.Target{Dir: t.TempDir(), S3: bucket, StorageTimeout: time.Second},
		smallFiles, replicate.Options{}); err == nil {
		t.Fatal("replication started beside an empty replica folder without listing the bucket")
	}
	r, err = replicate.Open(ctx, data, target, smallFiles, replicate.Options{})
	if err != nil {
		t.Fatalf("replication on its own folder with the bucket down: %v", err)
	}
	if store, err = dirdb.Open(ctx, data); err != nil {
		t.Fatal(err)
	}
	rename(t, store, "Written While The Bucket Is Down")
	pos, err := r.SyncFile(ctx, "dirs/small/directory")
	if err != nil {
		t.Fatalf("sync to the folder with the bucket down: %v", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel()
	if r.Stored(wctx, "dirs/small/directory", pos) {
		t.Fatal("the bucket is down, yet it holds the write")
	}
	down.Store(false)
	wctx, cancel = context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if !r.Stored(wctx, "dirs/small/directory", pos) {
		t.Fatal("the bucket did not take the write within 30s of answering again")
	}
	store.Close()
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	restored := t.TempDir()
	for _, name := range smallFiles {
		if _, err := replicate.Restore(ctx, restored, replicate.Target{S3: bucket}, name, replicate.At{}); err != nil {
			t.Fatal(err)
		}
	}
	if got := serviceName(t, restored, "svc_counsel"); got != "Written While The Bucket Is Down" {
		t.Errorf("the bucket restores %q", got)
	}
}
