package replicate_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/replicate"
)

const followToken = "replication-token-for-tests"

// syncLog is a log buffer safe for the follower's goroutines.
type syncLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// edgeNode is an edge's store and follower, running until the test ends or stop is called.
type edgeNode struct {
	store    *dirdb.Store
	follower *replicate.Follower
	log      *syncLog
	stop     func()
}

func startEdge(t testing.TB, data string, cfg replicate.FollowConfig) *edgeNode {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	store, err := dirdb.OpenReplica(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	log := &syncLog{}
	cfg.Data, cfg.Host, cfg.Token = data, store, followToken
	cfg.Log = slog.New(slog.NewTextHandler(log, nil))
	if cfg.MaxLag == 0 {
		cfg.MaxLag = time.Minute
	}
	f, err := replicate.NewFollower(cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); f.Run(ctx) }()
	var once sync.Once
	e := &edgeNode{store: store, follower: f, log: log}
	e.stop = func() { once.Do(func() { cancel(); <-done; store.Close() }) }
	t.Cleanup(e.stop)
	return e
}

// waitServed waits until the edge serves the directory at least at position txid.
func (e *edgeNode) waitServed(t testing.TB, slug string, txid uint64) {
	t.Helper()
	if !e.follower.WaitFor(context.Background(), slug, txid, "", 30*time.Second) {
		t.Fatalf("the edge did not reach %s at %d:\n%s", slug, txid, e.log)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		slugs, err := e.store.Slugs(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(slugs, slug) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the edge does not serve %s:\n%s", slug, e.log)
		}
		time.Sleep(10 * time.Millisecond) // the platform follows the copy within the same round
	}
}

// waitAt waits until the edge's copy of a directory is exactly at position txid.
func (e *edgeNode) waitAt(t testing.TB, slug string, txid uint64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if pos, ok := e.follower.Position(slug); ok && pos == txid {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the edge's copy of %s is not at %d:\n%s", slug, txid, e.log)
		}
		time.Sleep(10 * time.Millisecond) // another goroutine's progress, polled with a deadline
	}
}

// publicName reads a service's public name from a store.
func publicName(t testing.TB, store *dirdb.Store, id string) string {
	t.Helper()
	ctx := context.Background()
	dir, err := store.Reader(ctx, "small")
	if err != nil {
		t.Fatal(err)
	}
	st, err := dir.Record(ctx, id, dirsvc.Viewer{Audience: dirsvc.Public})
	if err != nil || st.View == nil {
		t.Fatalf("read %s: %v", id, err)
	}
	var v struct{ Name string }
	if err := jsonUnmarshal(st.View.Body, &v); err != nil {
		t.Fatal(err)
	}
	return v.Name
}

// TestAnEdgeBootstrapsFromObjectStorageWithThePrimaryAway replicates a primary to a folder and a
// bucket, stops it, and starts a new edge: it takes every directory from the bucket, serves it,
// and brings no client of the primary's platform file with it.
func TestAnEdgeBootstrapsFromObjectStorageWithThePrimaryAway(t *testing.T) {
	ctx := context.Background()
	backend := s3mem.New()
	if err := backend.CreateBucket("backups"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(srv.Close)
	t.Setenv("AWS_CA_BUNDLE", "")
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	s3 := &replicate.S3{Endpoint: srv.URL, Bucket: "backups", Path: "dirsvc", Region: "us-east-1", ForcePathStyle: true}

	data, store := smallFolder(t)
	if err := store.CreateClient(ctx, &dirsvc.Client{ID: "dirp_partner", Name: "Partner"}, []byte("mac-of-a-secret-0123456789abcdef")); err != nil {
		t.Fatal(err)
	}
	rename(t, store, "Coast Counselling In The Bucket")
	pos := backupOnce(t, data, store, replicate.Target{Dir: t.TempDir(), S3: s3})

	// The primary is away: nothing listens at its address.
	away := httptest.NewServer(nil)
	away.Close()
	e := startEdge(t, t.TempDir(), replicate.FollowConfig{Primary: away.URL, Storage: s3})
	e.waitServed(t, "small", pos["dirs/small/directory"])
	if got := publicName(t, e.store, "svc_counsel"); got != "Coast Counselling In The Bucket" {
		t.Errorf("the edge serves %q", got)
	}
	if !strings.Contains(e.log.String(), "bootstrapping from object storage") {
		t.Errorf("the bootstrap from object storage was not logged:\n%s", e.log)
	}
	clients, err := e.store.Clients(ctx)
	if err != nil || len(clients) != 0 {
		t.Errorf("the edge's platform holds clients: %v %v", clients, err)
	}
	// The edge knows the primary is away: its copies lag from the start.
	if st := e.follower.Status(); st.Role != dirsvc.RoleEdge || len(st.Files) != 1 || st.Files[0].Position != pos["dirs/small/directory"] {
		t.Errorf("status: %+v", st)
	}
}

// TestAnEdgeBootstrapsAfreshOverAGap breaks the chain between an edge's copy and the primary's
// changes (the copy is recorded past the primary's position): the edge bootstraps afresh, over the
// copy its readers have open, and serves the primary's state; so it does when the primary's
// lineage changes (a restore).
func TestAnEdgeBootstrapsAfreshOverAGap(t *testing.T) {
	ctx := context.Background()
	data, store := smallFolder(t)
	r, err := replicate.Open(ctx, data, replicate.Target{Dir: t.TempDir()}, smallFiles, replicate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close(); r.Close(ctx) })
	stream, err := replicate.Stream(r, followToken, store.Platform)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(stream)
	t.Cleanup(srv.Close)
	sync := func() uint64 {
		t.Helper()
		txid, err := r.SyncFile(ctx, "dirs/small/directory")
		if err != nil {
			t.Fatal(err)
		}
		return txid
	}

	edgeData := t.TempDir()
	e := startEdge(t, edgeData, replicate.FollowConfig{Primary: srv.URL})
	e.waitServed(t, "small", sync())
	rename(t, store, "Followed")
	e.waitServed(t, "small", sync())
	if got := publicName(t, e.store, "svc_counsel"); got != "Followed" {
		t.Fatalf("followed: %q", got)
	}
	e.stop()

	// The copy's recorded position is now past the primary's: the primary went back in history.
	posFile := filepath.Join(edgeData, "dirs", "small", "directory.db-pos")
	rewritePos := func(lineage, pos string) {
		t.Helper()
		b, err := os.ReadFile(posFile)
		if err != nil {
			t.Fatal(err)
		}
		was := strings.Fields(string(b))
		if lineage == "" {
			lineage = was[0]
		}
		if pos == "" {
			pos = was[1]
		}
		if err := os.WriteFile(posFile, []byte(lineage+" "+pos+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rewritePos("", "00000000000003e8/0000000000000000")
	e = startEdge(t, edgeData, replicate.FollowConfig{Primary: srv.URL})
	if got := publicName(t, e.store, "svc_counsel"); got != "Followed" { // the copy is open and read
		t.Fatalf("the copy after a restart: %q", got)
	}
	rename(t, store, "After The Gap")
	e.waitAt(t, "small", sync())
	if got := publicName(t, e.store, "svc_counsel"); got != "After The Gap" {
		t.Errorf("after the gap: %q\n%s", got, e.log)
	}
	if !strings.Contains(e.log.String(), "bootstrapping afresh") {
		t.Errorf("the fresh bootstrap was not logged:\n%s", e.log)
	}
	// And it follows on from the fresh copy.
	rename(t, store, "Followed Again")
	e.waitServed(t, "small", sync())
	if got := publicName(t, e.store, "svc_counsel"); got != "Followed Again" {
		t.Errorf("after the fresh bootstrap: %q", got)
	}

	// Another lineage of the primary's file (a restore) makes the copy bootstrap afresh.
	e.stop()
	rewritePos("an-older-history", "")
	e = startEdge(t, edgeData, replicate.FollowConfig{Primary: srv.URL})
	rename(t, store, "New Lineage")
	e.waitServed(t, "small", sync())
	if got := publicName(t, e.store, "svc_counsel"); got != "New Lineage" {
		t.Errorf("after a new lineage: %q", got)
	}
	if !strings.Contains(e.log.String(), "history of this directory changed") || !strings.Contains(e.log.String(), "bootstrapped a directory") {
		t.Errorf("the new lineage did not bootstrap afresh:\n%s", e.log)
	}
}
