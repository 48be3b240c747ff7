package replicate_test

import (
	"context"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/replicate"
	"github.com/dirsvc/dirsvc/replicate/s3test"
)

// TestReplicationStartsOnItsFolderWhileTheBucketIsDown opens replication again on a data folder
// and its replica folder while object storage does not answer (a primary killed during an
// outage): it replicates to the folder, and the bucket takes the changes once it answers. Beside a
// replica folder that holds nothing of the files (a lost volume) it refuses to start: only the
// bucket could tell whether it holds a later history.
func TestReplicationStartsOnItsFolderWhileTheBucketIsDown(t *testing.T) {
	ctx := context.Background()
	fs := s3test.New(t)
	bucket := bucketOf(fs, "dirsvc").S3
	target := replicate.Target{Dir: t.TempDir(), S3: bucket, StorageTimeout: time.Second}

	data, store := smallFolder(t)
	backupOnce(t, data, store, target)

	fs.Set(s3test.Down)
	if _, err := replicate.Open(ctx, data, replicate.Target{Dir: t.TempDir(), S3: bucket, StorageTimeout: time.Second},
		smallFiles, replicate.Options{}); err == nil {
		t.Fatal("replication started beside an empty replica folder without listing the bucket")
	}
	r, err := replicate.Open(ctx, data, target, smallFiles, replicate.Options{})
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
	fs.Set(s3test.Up)
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
