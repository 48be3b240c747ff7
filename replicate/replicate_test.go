package replicate_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/primary"
	"github.com/dirsvc/dirsvc/replicate"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

var smallFiles = []string{"platform", "dirs/small/directory", "dirs/small/ops"}

// smallFolder makes a data folder holding the small test directory and returns it with its store.
func smallFolder(t *testing.T) (string, *dirdb.Store) { return smallFolderTB(t) }

func smallFolderTB(t testing.TB) (string, *dirdb.Store) {
	t.Helper()
	data := t.TempDir()
	store, err := dirdb.Open(context.Background(), data)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join("..", "testdata", "small.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, _, err := primary.Import(context.Background(), store, f); err != nil {
		t.Fatal(err)
	}
	return data, store
}

// serviceName reads the name of a service, as the public sees it, from a data folder.
func serviceName(t *testing.T, data, id string) string {
	t.Helper()
	store, err := dirdb.Open(context.Background(), data)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	return publicName(t, store, id)
}

// backupOnce replicates the small files of a data folder to the target once, closes the store and
// the replicator (the service's connections first), and returns the files' positions.
func backupOnce(t *testing.T, data string, store *dirdb.Store, target replicate.Target) map[string]uint64 {
	t.Helper()
	ctx := context.Background()
	r, err := replicate.Open(ctx, data, target, smallFiles, replicate.Options{Platform: platformOf(data)})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	pos := r.Positions()
	store.Close()
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	return pos
}

// platformOf returns what edges need of a data folder's platform file, read by its path as a
// primary does (see replicate.Options.Platform).
func platformOf(data string) func(context.Context) (*dirsvc.Platform, error) {
	return func(ctx context.Context) (*dirsvc.Platform, error) {
		return dirdb.ReadPlatform(ctx, dirsvc.FilePath(data, "platform"))
	}
}

func rename(t *testing.T, store *dirdb.Store, name string) {
	t.Helper()
	line := `{"kind":"service","publicId":"svc_counsel","organisation":"org_coast","location":"loc_coast","name":"` + name + `","type":"psychology"}`
	if _, err := primary.UpdateRecord(context.Background(), store, "small", []byte(line)); err != nil {
		t.Fatal(err)
	}
}

// backupAndRestore replicates a data folder to the target, changes a record, and restores the
// folder latest and at the position before the change.
func backupAndRestore(t *testing.T, target replicate.Target) {
	ctx := context.Background()
	data, store := smallFolder(t)
	addIndexes(t, dirsvc.FilePath(data, "dirs/small/directory"))
	r, err := replicate.Open(ctx, data, target, smallFiles, replicate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	before := r.Positions()
	between := time.Now() // after the first state is replicated, before the change
	rename(t, store, "Coast Counselling Renamed")
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	after := r.Positions()
	if after["dirs/small/directory"] <= before["dirs/small/directory"] {
		t.Fatalf("the directory's position did not move on: %v, then %v", before, after)
	}
	// The service's connections close before Litestream's.
	store.Close()
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}

	latest := t.TempDir()
	for _, name := range smallFiles {
		if _, err := replicate.Restore(ctx, latest, target, name, replicate.At{}); err != nil {
			t.Fatal(err)
		}
	}
	if got := serviceName(t, latest, "svc_counsel"); got != "Coast Counselling Renamed" {
		t.Errorf("latest restore: %q", got)
	}
	earlier := t.TempDir()
	for _, name := range smallFiles {
		if _, err := replicate.Restore(ctx, earlier, target, name, replicate.At{TXID: before[name]}); err != nil {
			t.Fatal(err)
		}
	}
	if got := serviceName(t, earlier, "svc_counsel"); got != "Coast Counselling" {
		t.Errorf("restore at the position before the change: %q", got)
	}
	atTime := t.TempDir()
	for _, name := range smallFiles {
		if _, err := replicate.Restore(ctx, atTime, target, name, replicate.At{Time: between}); err != nil {
			t.Fatal(err)
		}
	}
	if got := serviceName(t, atTime, "svc_counsel"); got != "Coast Counselling" {
		t.Errorf("restore at the time before the change: %q", got)
	}
	for _, dir := range []string{latest, earlier, atTime} {
		checkIndexes(t, dirsvc.FilePath(dir, "dirs/small/directory"))
	}
	// A restore never overwrites, and a file the target never held is not there.
	if _, err := replicate.Restore(ctx, latest, target, "platform", replicate.At{}); err == nil {
		t.Error("a restore over an existing file succeeded")
	}
	if _, err := replicate.Restore(ctx, t.TempDir(), target, "dirs/nowhere/directory", replicate.At{}); !errors.Is(err, replicate.ErrNotReplicated) {
		t.Errorf("restore of a file never replicated: %v", err)
	}
}

func TestBackupToAFolderAndRestore(t *testing.T) {
	backupAndRestore(t, replicate.Target{Dir: t.TempDir()})
}

func TestBackupToObjectStorageAndRestore(t *testing.T) {
	backend := s3mem.New()
	if err := backend.CreateBucket("backups"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(srv.Close)
	t.Setenv("AWS_CA_BUNDLE", "") // this environment's bundle cannot be loaded by the S3 client
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	s3 := &replicate.S3{Endpoint: srv.URL, Bucket: "backups", Path: "dirsvc", Region: "us-east-1", ForcePathStyle: true}
	t.Run("bucket only", func(t *testing.T) { backupAndRestore(t, replicate.Target{S3: s3}) })
	t.Run("folder and bucket", func(t *testing.T) {
		dir := t.TempDir()
		backupAndRestore(t, replicate.Target{Dir: dir, S3: &replicate.S3{Endpoint: srv.URL, Bucket: "backups",
			Path: "both", Region: "us-east-1", ForcePathStyle: true}})
		// Both copies are whole: the bucket alone restores what the folder does.
		out := t.TempDir()
		for _, name := range smallFiles {
			if _, err := replicate.Restore(context.Background(), out, replicate.Target{S3: &replicate.S3{Endpoint: srv.URL,
				Bucket: "backups", Path: "both", Region: "us-east-1", ForcePathStyle: true}}, name, replicate.At{}); err != nil {
				t.Fatal(err)
			}
		}
		if got := serviceName(t, out, "svc_counsel"); got != "Coast Counselling Renamed" {
			t.Errorf("restore from the bucket of a tee: %q", got)
		}
	})
}

func TestNames(t *testing.T) {
	for name, ok := range map[string]bool{"platform": true, "dirs/demo/directory": true, "dirs/demo/ops": true,
		"dirs/../directory": false, "dirs/demo/other": false, "platform.db": false, "dirs//directory": false} {
		if got := replicate.ValidName(name); got != ok {
			t.Errorf("ValidName(%q) = %v", name, got)
		}
	}
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// addIndexes adds a full-text (FTS5) and a spatial (R*Tree) index to a file, as search keeps them.
func addIndexes(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = db.Exec(`
CREATE VIRTUAL TABLE test_text USING fts5(body);
INSERT INTO test_text (body) VALUES ('counselling by the coast'), ('general practice in the harbour');
CREATE VIRTUAL TABLE test_places USING rtree(id, min_x, max_x, min_y, max_y);
INSERT INTO test_places VALUES (1, 151.1, 151.3, -33.9, -33.8), (2, 174.7, 174.8, -36.9, -36.8);`)
	if err != nil {
		t.Fatal(err)
	}
}

// checkIndexes checks a restored file page by page and its FTS5 and R*Tree indexes.
func checkIndexes(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var ok, rtree string
	var hits, near int
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&ok); err != nil || ok != "ok" {
		t.Errorf("%s: integrity_check %q %v", path, ok, err)
	}
	if err := db.QueryRow("SELECT rtreecheck('test_places')").Scan(&rtree); err != nil || rtree != "ok" {
		t.Errorf("%s: rtreecheck %q %v", path, rtree, err)
	}
	if err := db.QueryRow("SELECT count(*) FROM test_text WHERE test_text MATCH 'coast'").Scan(&hits); err != nil || hits != 1 {
		t.Errorf("%s: full-text search found %d: %v", path, hits, err)
	}
	if err := db.QueryRow("SELECT count(*) FROM test_places WHERE min_x <= 151.2 AND max_x >= 151.2 AND min_y <= -33.85 AND max_y >= -33.85").Scan(&near); err != nil || near != 1 {
		t.Errorf("%s: spatial search found %d: %v", path, near, err)
	}
}

func TestAddAndRemoveFilesWhileReplicating(t *testing.T) {
	ctx := context.Background()
	data, store := smallFolder(t)
	target := replicate.Target{Dir: t.TempDir()}
	r, err := replicate.Open(ctx, data, target, []string{"platform"}, replicate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { store.Close(); r.Close(ctx) }()
	for _, want := range []bool{true, false} { // added once, then known
		if added, err := r.Add(ctx, "dirs/small/directory"); err != nil || added != want {
			t.Fatalf("Add: %v, %v; want %v", added, err, want)
		}
	}
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := replicate.Restore(ctx, t.TempDir(), target, "dirs/small/directory", replicate.At{}); err != nil {
		t.Errorf("a file added while replicating: %v", err)
	}
	if err := r.Remove(ctx, "dirs/small/directory"); err != nil {
		t.Fatal(err)
	}
	if got := r.Names(); len(got) != 1 || got[0] != "platform" {
		t.Errorf("after Remove: %v", got)
	}
	if _, err := r.Add(ctx, "dirs/../platform"); err == nil {
		t.Error("a name outside the data folder's layout was added")
	}
}

// TestANewTargetForAnExistingFolder replicates a folder whose Litestream state has pruned its first
// changes to a target that holds nothing: the file starts afresh there, whole, under a new lineage.
func TestANewTargetForAnExistingFolder(t *testing.T) {
	ctx := context.Background()
	data, store := smallFolder(t)
	r, err := replicate.Open(ctx, data, replicate.Target{Dir: t.TempDir()}, smallFiles, replicate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	rename(t, store, "Before The Move")
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	before := streamFiles(t, r, store)
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// Litestream's retention removes the first changes of its local state in time.
	first, _ := filepath.Glob(filepath.Join(data, "dirs", "small", ".directory.db-litestream", "ltx", "0", "0000000000000001-*.ltx"))
	if len(first) != 1 {
		t.Fatalf("local state: %v", first)
	}
	os.Remove(first[0])

	moved := replicate.Target{Dir: t.TempDir()}
	r, err = replicate.Open(ctx, data, moved, smallFiles, replicate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close(); r.Close(ctx) })
	if _, err := r.SyncFile(ctx, "dirs/small/directory"); err != nil {
		t.Fatal(err)
	}
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	for _, name := range smallFiles {
		if _, err := replicate.Restore(ctx, out, moved, name, replicate.At{}); err != nil {
			t.Fatal(err)
		}
	}
	if got := serviceName(t, out, "svc_counsel"); got != "Before The Move" {
		t.Errorf("restored from the new target: %q", got)
	}
	// The directory file starts a new lineage on the stream; the other files keep theirs.
	after := streamFiles(t, r, store)
	for name, l := range before {
		if changed := after[name] != l; changed != (name == "dirs/small/directory") {
			t.Errorf("%s: lineage %q, then %q", name, l, after[name])
		}
	}
}

// streamFiles returns the lineage of each file, as the replication stream gives them to edges.
func streamFiles(t *testing.T, r *replicate.Replicator, store *dirdb.Store) map[string]string {
	t.Helper()
	h, err := replicate.Stream(r, "replication-token-for-tests", store.Platform)
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest("GET", replicate.StreamPrefix+"files", nil)
	req.Header.Set("Authorization", "Bearer replication-token-for-tests")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	var files replicate.Files
	if err := json.Unmarshal(w.Body.Bytes(), &files); err != nil || len(files.Files) == 0 {
		t.Fatalf("files: %d %s", w.Code, w.Body)
	}
	out := map[string]string{}
	for _, f := range files.Files {
		if f.Lineage == "" {
			t.Errorf("%s has no lineage", f.Name)
		}
		out[f.Name] = f.Lineage
	}
	return out
}
