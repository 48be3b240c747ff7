package replicate_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/replicate"
	"github.com/dirsvc/dirsvc/replicate/s3test"
)

// The access key of edges in these tests, restricted to replicate.EdgePolicy.
const (
	edgeKey    = "edge-key"
	edgeSecret = "edge-secret"
)

// bucketOfSmall replicates the small directory, with a partner client whose secret MAC is in the
// platform file, to a folder and a bucket under the path "dirsvc", stops the primary, and gives
// edgeKey the edge policy of the bucket. It returns the store, the bucket as a target, the client's
// stored MAC and the files' positions.
func bucketOfSmall(t *testing.T) (*s3test.Store, replicate.Target, []byte, map[string]uint64) {
	t.Helper()
	ctx := context.Background()
	fs := s3test.New(t)
	bucket := bucketOf(fs, "dirsvc")
	bucket.StorageTimeout = 10 * time.Second // the machine may be busy: only a hung store fails
	data, store := smallFolder(t)
	mac := make([]byte, 32)
	rand.Read(mac)
	if err := store.CreateClient(ctx, &dirsvc.Client{ID: "dirp_partner", Name: "A partner"}, mac); err != nil {
		t.Fatal(err)
	}
	rename(t, store, "Coast Counselling In The Bucket")
	pos := backupOnce(t, data, store, withFolder(bucket, t.TempDir()))
	policy, err := replicate.EdgePolicy(*bucket.S3)
	if err != nil {
		t.Fatal(err)
	}
	fs.Restrict(t, edgeKey, policy)
	return fs, bucket, mac, pos
}

// asEdge makes the S3 clients of the test process use the edge's credentials from now on.
func asEdge(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", edgeKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", edgeSecret)
}

// s3As returns an S3 client of the store signing with the access key.
func s3As(fs *s3test.Store, key, secret string) *s3.Client {
	return s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(fs.URL), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(key, secret, "")})
}

// accessDenied reports whether err is S3's AccessDenied.
func accessDenied(err error) bool {
	var api smithy.APIError
	return errors.As(err, &api) && api.ErrorCode() == "AccessDenied"
}

// TestAnEdgeBootstrapsFromTheBucketWithEdgeCredentials starts a new edge, with the primary away,
// whose bucket credentials reach only what the edge policy grants: it takes every directory from
// the bucket and serves it, with the platform's switches from the JSON the primary wrote there.
func TestAnEdgeBootstrapsFromTheBucketWithEdgeCredentials(t *testing.T) {
	ctx := context.Background()
	_, bucket, _, pos := bucketOfSmall(t)
	asEdge(t)

	away := httptest.NewServer(nil)
	away.Close()
	e := startEdge(t, t.TempDir(), replicate.FollowConfig{Primary: away.URL, Storage: bucket.S3})
	e.waitServed(t, "small", pos["dirs/small/directory"])
	if got := publicName(t, e.store, "svc_counsel"); got != "Coast Counselling In The Bucket" {
		t.Errorf("the edge serves %q", got)
	}
	if log := e.log.String(); strings.Contains(log, "AccessDenied") {
		t.Errorf("the edge asked for what its credentials do not reach:\n%s", log)
	}
	clients, err := e.store.Clients(ctx)
	if err != nil || len(clients) != 0 {
		t.Errorf("the edge's platform holds clients: %v %v", clients, err)
	}
}

// TestNothingEdgeCredentialsReachInTheBucketHoldsSecrets tries every object of the bucket and every
// listing with the edge's credentials, restores every directory file they reach, and scans all of it
// for the partner client's MAC and the staff-only canary: none is there. The platform and ops
// files are answered AccessDenied. The same scan finds both in the primary's own files in the
// bucket, so it can fail.
func TestNothingEdgeCredentialsReachInTheBucketHoldsSecrets(t *testing.T) {
	ctx := context.Background()
	fs, bucket, mac, _ := bucketOfSmall(t)
	scan := secretScan(mac)
	// An export's file, as a primary keeps it beside the replicated files: a partner tier's view.
	exports, err := bucket.Blobs(ctx, replicate.ExportsPrefix)
	if err != nil {
		t.Fatal(err)
	}
	if err := exports.Put(ctx, "e1/services.csv", strings.NewReader("id\n"), 3, "text/csv"); err != nil {
		t.Fatal(err)
	}
	edge := s3As(fs, edgeKey, edgeSecret)
	var fetched bytes.Buffer // every byte the edge's credentials reach

	got, denied := map[string]bool{}, map[string]bool{}
	for _, key := range fs.Keys(t) {
		out, err := edge.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s3test.BucketName), Key: aws.String(key)})
		if accessDenied(err) {
			denied[key] = true
			continue
		} else if err != nil {
			t.Fatalf("get %s: %v", key, err)
		}
		b, err := io.ReadAll(out.Body)
		out.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		fetched.Write(b)
		got[key] = true
	}
	for key := range got {
		if !strings.HasPrefix(key, "dirsvc/dirs/small/directory/") && key != "dirsvc/"+replicate.EdgePlatformKey {
			t.Errorf("the edge's credentials get %s", key)
		}
	}
	for _, prefix := range []string{"dirsvc/platform/", "dirsvc/dirs/small/ops/", "dirsvc/exports/"} {
		n := 0
		for key := range denied {
			if strings.HasPrefix(key, prefix) {
				n++
			}
		}
		if n == 0 {
			t.Errorf("no object under %s was denied to the edge's credentials (denied: %v)", prefix, denied)
		}
	}
	if !got["dirsvc/"+replicate.EdgePlatformKey] || len(got) < 2 {
		t.Errorf("the edge's credentials got %v: want the platform JSON and the directory file", got)
	}

	for _, c := range []struct {
		prefix string
		allow  bool
	}{{"", false}, {"dirsvc/", false}, {"dirsvc/platform/", false}, {"dirsvc/dirs/small/ops/", false},
		{"dirsvc/dirs/", false}, {"dirsvc/exports/", false}, {"dirsvc/dirs/small/directory/", true}, {"dirsvc/dirs/small/directory/0000/", true}} {
		out, err := edge.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(s3test.BucketName), Prefix: aws.String(c.prefix)})
		switch {
		case c.allow && err != nil, !c.allow && !accessDenied(err):
			t.Errorf("list %q with the edge's credentials: %v (allowed: %v)", c.prefix, err, c.allow)
		case err == nil:
			for _, o := range out.Contents {
				fetched.WriteString(aws.ToString(o.Key) + "\n")
			}
		}
	}

	asEdge(t)
	edgeBucket := replicate.Target{S3: bucket.S3, StorageTimeout: bucket.StorageTimeout}
	p, err := replicate.ReadEdgePlatform(ctx, edgeBucket)
	if err != nil {
		t.Fatal(err)
	}
	restored := t.TempDir()
	for _, d := range p.Directories {
		if _, err := replicate.Restore(ctx, restored, edgeBucket, "dirs/"+d.Slug+"/directory", replicate.At{}); err != nil {
			t.Fatalf("restore %s with the edge's credentials: %v", d.Slug, err)
		}
	}
	if got := copyServiceName(t, restored, p, "svc_counsel"); got != "Coast Counselling In The Bucket" {
		t.Errorf("the directory restored with the edge's credentials: %q", got)
	}
	for _, name := range []string{"platform", "dirs/small/ops"} {
		if _, err := replicate.Restore(ctx, t.TempDir(), edgeBucket, name, replicate.At{}); err == nil || !strings.Contains(err.Error(), "AccessDenied") {
			t.Errorf("restore %s with the edge's credentials: %v, want AccessDenied", name, err)
		}
	}
	fetched.Write(readFolder(t, restored))
	if found := scan(fetched.Bytes()); len(found) > 0 {
		t.Errorf("what the edge's credentials reach in the bucket holds %v", found)
	}

	// The scan finds them in the primary's own files, restored from the bucket with its credentials.
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	own := t.TempDir()
	for _, name := range []string{"platform", "dirs/small/ops"} {
		if _, err := replicate.Restore(ctx, own, edgeBucket, name, replicate.At{}); err != nil {
			t.Fatal(err)
		}
	}
	found := strings.Join(scan(readFolder(t, own)), ", ")
	for _, what := range []string{"the client's MAC", "a staff-only canary"} {
		if !strings.Contains(found, what) {
			t.Errorf("the scan does not find %s in the primary's own files (found %s)", what, found)
		}
	}
}

// TestTheBucketsPlatformJSONFollowsThePlatform changes a directory's switch on a running primary:
// once the bucket holds the platform file's new position, the JSON for edges there holds the
// change too.
func TestTheBucketsPlatformJSONFollowsThePlatform(t *testing.T) {
	ctx := context.Background()
	fs := s3test.New(t)
	bucket := bucketOf(fs, "dirsvc")
	bucket.StorageTimeout = 10 * time.Second
	data, store := smallFolder(t)
	r, err := replicate.Open(ctx, data, withFolder(bucket, t.TempDir()), smallFiles, replicate.Options{Platform: platformOf(data)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { store.Close(); r.Close(ctx) }()
	// The JSON names a directory once the bucket holds it.
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		p, err := replicate.ReadEdgePlatform(ctx, bucket)
		if err == nil && len(p.Directories) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the platform JSON does not name the directory: %+v, %v", p, err)
		}
		time.Sleep(20 * time.Millisecond) // the mirror's rounds: polled, with a deadline
	}
	switched := func() bool {
		t.Helper()
		txid, err := r.SyncFile(ctx, "platform")
		if err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if !r.Stored(wctx, "platform", txid) {
			t.Fatalf("the bucket does not hold the platform file at %d: %+v", txid, r.Status())
		}
		p, err := replicate.ReadEdgePlatform(ctx, bucket)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Directories) != 1 || p.Directories[0].Slug != "small" {
			t.Fatalf("the platform JSON: %+v", p)
		}
		return p.Directories[0].SeniorManagementAvailable
	}
	if switched() {
		t.Fatal("the switch is on before it was set")
	}
	if err := store.SetSeniorManagementAvailable(ctx, "small", true); err != nil {
		t.Fatal(err)
	}
	if !switched() {
		t.Error("the platform JSON in the bucket does not follow the switch")
	}
}

// TestAnEdgeSaysWhenTheBucketHoldsNoPlatformJSON bootstraps an edge from a bucket written by a
// primary that wrote no platform JSON (an older build): the edge says so, and reads nothing else.
func TestAnEdgeSaysWhenTheBucketHoldsNoPlatformJSON(t *testing.T) {
	ctx := context.Background()
	fs := s3test.New(t)
	bucket := bucketOf(fs, "dirsvc")
	data, store := smallFolder(t)
	r, err := replicate.Open(ctx, data, withFolder(bucket, t.TempDir()), smallFiles, replicate.Options{})
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
	if _, err := replicate.ReadEdgePlatform(ctx, bucket); !errors.Is(err, replicate.ErrNoEdgePlatform) {
		t.Fatalf("read the platform JSON of an older bucket: %v", err)
	}
	away := httptest.NewServer(nil)
	away.Close()
	e := startEdge(t, t.TempDir(), replicate.FollowConfig{Primary: away.URL, Storage: bucket.S3})
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(e.log.String(), "holds no "+replicate.EdgePlatformKey) {
		if time.Now().After(deadline) {
			t.Fatalf("the edge did not say the bucket holds no platform JSON:\n%s", e.log)
		}
		time.Sleep(10 * time.Millisecond) // the follower's goroutine logs; polled with a deadline
	}
}

// TestTheEdgePolicyReachesOnlyDirectoryFiles writes, under several bucket paths, the keys of the
// platform file, of ops and directory files of slugs chosen to look like the layout's own words,
// and the platform JSON, and asks for each with credentials restricted to the edge policy of the
// path: only the directory files and the JSON of that path are allowed, to get and to list.
func TestTheEdgePolicyReachesOnlyDirectoryFiles(t *testing.T) {
	ctx := context.Background()
	fs := s3test.New(t)
	full := s3As(fs, "test", "test")
	slugs := []string{"small", "directory", "ops", "platform", "edge", "dirs", "directory-ops", "ops-directory", "x"}
	if !dirsvc.ValidSlug("directory") || !dirsvc.ValidSlug("ops-directory") || dirsvc.ValidSlug("a/directory") {
		t.Fatal("the slugs of this test are not what dirsvc.ValidSlug allows")
	}
	for i, path := range []string{"dirsvc", "", "team/dirsvc"} {
		key := func(rel string) string {
			if path == "" {
				return rel
			}
			return path + "/" + rel
		}
		allow := map[string]bool{key(replicate.EdgePlatformKey): true}
		for _, level := range []string{"0000", "0001", "0009"} {
			file := level + "/0000000000000001-0000000000000001.ltx"
			allow[key("platform/"+file)] = false
			for _, slug := range slugs {
				allow[key("dirs/"+slug+"/ops/"+file)] = false
				allow[key("dirs/"+slug+"/directory/"+file)] = true
			}
		}
		for k := range allow {
			if _, err := full.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(s3test.BucketName), Key: aws.String(k), Body: strings.NewReader("x")}); err != nil {
				t.Fatal(err)
			}
		}
		policy, err := replicate.EdgePolicy(replicate.S3{Bucket: s3test.BucketName, Path: path})
		if err != nil {
			t.Fatal(err)
		}
		edgeKey := "edge-" + string(rune('a'+i))
		fs.Restrict(t, edgeKey, policy)
		edge := s3As(fs, edgeKey, edgeSecret)
		for k, want := range allow {
			_, err := edge.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s3test.BucketName), Key: aws.String(k)})
			if want && err != nil || !want && !accessDenied(err) {
				t.Errorf("path %q: get %s: %v (want allowed: %v)", path, k, err, want)
			}
			prefix := k[:strings.LastIndex(k, "/")+1]
			_, err = edge.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(s3test.BucketName), Prefix: aws.String(prefix)})
			if want := want && strings.Contains(prefix, "/directory/"); want && err != nil || !want && !accessDenied(err) {
				t.Errorf("path %q: list %s: %v (want allowed: %v)", path, prefix, err, want)
			}
		}
	}
}
