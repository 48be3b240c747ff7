package replicate_test

import (
	"context"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/replicate"
	"github.com/dirsvc/dirsvc/replicate/s3test"
)

// bucketOf returns the store's bucket under a path as a target, with a short timeout for every call.
func bucketOf(fs *s3test.Store, path string) replicate.Target {
	return replicate.Target{S3: &replicate.S3{Endpoint: fs.URL, Bucket: s3test.BucketName, Path: path, Region: "us-east-1",
		ForcePathStyle: true}, StorageTimeout: 500 * time.Millisecond}
}

// withFolder returns the target with a replica folder as well.
func withFolder(t replicate.Target, dir string) replicate.Target { t.Dir = dir; return t }

// restoreAll restores every small file from the target into a new data folder and returns it.
func restoreAll(t *testing.T, target replicate.Target) string {
	t.Helper()
	out := t.TempDir()
	for _, name := range smallFiles {
		if _, err := replicate.Restore(context.Background(), out, target, name, replicate.At{}); err != nil {
			t.Fatalf("restore %s: %v", name, err)
		}
	}
	return out
}

// TestARestoredPrimaryContinuesTheBucketsHistory restores a data folder from the bucket onto a
// fresh volume (an empty replica folder beside it, as fly.toml lays out) and writes on: the write
// lands after everything the bucket held, a later restore brings it back, and the bucket's older
// points still restore as they were.
func TestARestoredPrimaryContinuesTheBucketsHistory(t *testing.T) {
	ctx := context.Background()
	fs := s3test.New(t)
	bucket := bucketOf(fs, "history")
	data, store := smallFolder(t)
	r, err := replicate.Open(ctx, data, withFolder(bucket, t.TempDir()), smallFiles, replicate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"First Name", "Second Name", "Third Name"} {
		rename(t, store, name)
		if err := r.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	before := r.Positions()["dirs/small/directory"]
	store.Close()
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}

	// The volume is lost: a new data folder restored from the bucket, and a new replica folder.
	restored := restoreAll(t, bucket)
	store, err = dirdb.Open(ctx, restored)
	if err != nil {
		t.Fatal(err)
	}
	r, err = replicate.Open(ctx, restored, withFolder(bucket, t.TempDir()), smallFiles, replicate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rename(t, store, "After The Restore")
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	after := r.Positions()["dirs/small/directory"]
	store.Close()
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if after <= before {
		t.Errorf("the restored primary's position %d is not past the bucket's %d: its history started again over the old one", after, before)
	}
	if got := serviceName(t, restoreAll(t, bucket), "svc_counsel"); got != "After The Restore" {
		t.Errorf("a restore after the write made on the restored primary gives %q", got)
	}
	// The older points of the bucket are what they were.
	older := t.TempDir()
	for _, name := range smallFiles {
		at := replicate.At{}
		if name == "dirs/small/directory" {
			at.TXID = before
		}
		if _, err := replicate.Restore(ctx, older, bucket, name, at); err != nil {
			t.Fatal(err)
		}
	}
	if got := serviceName(t, older, "svc_counsel"); got != "Third Name" {
		t.Errorf("the bucket at position %d gives %q", before, got)
	}
}

// TestTheBucketCatchesUpAfterAnOutage replicates while object storage is down: syncs to the folder
// go on, the status says the bucket is behind, and once the store is back the bucket gets every
// committed change with no further write.
func TestTheBucketCatchesUpAfterAnOutage(t *testing.T) {
	ctx := context.Background()
	fs := s3test.New(t)
	bucket := bucketOf(fs, "outage")
	data, store := smallFolder(t)
	fs.Set(s3test.Down)
	r, err := replicate.Open(ctx, data, withFolder(bucket, t.TempDir()), smallFiles, replicate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { store.Close(); r.Close(ctx) }()
	rename(t, store, "Written In The Outage")
	pos, err := r.SyncFile(ctx, "dirs/small/directory")
	if err != nil {
		t.Fatalf("a sync to the folder failed while the bucket is down: %v", err)
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if r.Stored(short, "dirs/small/directory", pos) {
		t.Fatal("the bucket is said to hold a change made while it was down")
	}
	waitFor(t, 5*time.Second, "the status to say the bucket is behind and failing", func() bool {
		for _, f := range r.Status() {
			if f.Name == "dirs/small/directory" {
				return f.Bucket != nil && f.Bucket.Err != nil && f.Bucket.Lag > 0 && f.Bucket.Position < pos
			}
		}
		return false
	})

	fs.Set(s3test.Up) // and nothing is written again
	for _, name := range smallFiles {
		wait, cancel := context.WithTimeout(ctx, 20*time.Second)
		ok := r.Stored(wait, name, r.Positions()[name])
		cancel()
		if !ok {
			t.Fatalf("the bucket never got %s after the outage: %+v", name, r.Status())
		}
	}
	waitFor(t, 5*time.Second, "the status to say the bucket caught up", func() bool {
		for _, f := range r.Status() {
			if f.Bucket == nil || f.Bucket.Err != nil || f.Bucket.Lag != 0 {
				return false
			}
		}
		return true
	})
	if got := serviceName(t, restoreAll(t, bucket), "svc_counsel"); got != "Written In The Outage" {
		t.Errorf("the bucket after the outage restores %q", got)
	}
}

// TestAHungBucketHoldsNothingBack hangs object storage: opening, syncing to the folder, and closing
// all finish in bounded time, and Close says what the bucket lacks.
func TestAHungBucketHoldsNothingBack(t *testing.T) {
	ctx := context.Background()
	fs := s3test.New(t)
	bucket := bucketOf(fs, "hung")
	data, store := smallFolder(t)
	folder := t.TempDir()
	fs.Set(s3test.Hung)
	start := time.Now()
	r, err := replicate.Open(ctx, data, withFolder(bucket, folder), smallFiles, replicate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("opening took %s with the bucket hung", d)
	}
	rename(t, store, "Written While Hung")
	start = time.Now()
	pos, err := r.SyncFile(ctx, "dirs/small/directory")
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("a sync to the folder took %s with the bucket hung", d)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if r.Stored(short, "dirs/small/directory", pos) {
		t.Error("a hung bucket is said to hold a write")
	}
	store.Close()
	grace, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	start = time.Now()
	err = r.Close(grace)
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("closing took %s with the bucket hung", d)
	}
	if err == nil {
		t.Error("closing with a hung bucket did not say the bucket lacks changes")
	}
	// The folder holds the write all the same.
	if got := serviceName(t, restoreAll(t, replicate.Target{Dir: folder}), "svc_counsel"); got != "Written While Hung" {
		t.Errorf("the folder restores %q", got)
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
