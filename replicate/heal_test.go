package replicate_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/replicate"
)

// flipByte flips one byte in the middle of the level-0 LTX file of a replicated file that ends at
// position txid, in the replica folder, as bit rot on its disk would; it returns the LTX file's
// name in the file's replica ("0/<min>-<max>.ltx").
func flipByte(t *testing.T, folder, name string, txid uint64) string {
	t.Helper()
	dir := filepath.Join(folder, filepath.FromSlash(name), "ltx", "0")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), fmt.Sprintf("-%016x.ltx", txid)) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)/2] ^= 0x5a
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return "0/" + e.Name()
	}
	t.Fatalf("no level-0 file of %s ends at %d in %s", name, txid, dir)
	return ""
}

// fileStatus returns what an edge reports of its copy of a directory.
func fileStatus(f *replicate.Follower, slug string) dirsvc.FileStatus {
	for _, fs := range f.Status().Files {
		if fs.Name == "dirs/"+slug+"/directory" {
			return fs
		}
	}
	return dirsvc.FileStatus{}
}

// TestAnEdgeHealsADamagedLTXFileWithNoPerson flips a byte in a directory's newest LTX file in the
// primary's replica folder before an edge has fetched it. The edge keeps serving its copy while the
// file fails verification, and, with no good point past its copy yet, leaves the copy as it is.
// The primary's check of its folder finds the damaged file, reports it and writes a snapshot past
// it; the edge bootstraps afresh from the newest good point, counts the heal, serves the change,
// and follows the primary on from there.
func TestAnEdgeHealsADamagedLTXFileWithNoPerson(t *testing.T) {
	ctx := context.Background()
	data, store := smallFolder(t)
	folder := t.TempDir()
	// The folder is checked on demand here (VerifyReplicas), not on a schedule.
	r, err := replicate.Open(ctx, data, replicate.Target{Dir: folder}, smallFiles, replicate.Options{Verify: replicate.VerifyOptions{Every: -1}})
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
	const name = "dirs/small/directory"
	sync := func() uint64 {
		t.Helper()
		txid, err := r.SyncFile(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return txid
	}
	// Long polls of a fifth of a second: the edge looks at the primary's files often.
	cfg := replicate.FollowConfig{Primary: srv.URL, Wait: 200 * time.Millisecond}
	edgeData := t.TempDir()
	e := startEdge(t, edgeData, cfg)
	e.waitServed(t, "small", sync())
	rename(t, store, "Before The Damage")
	good := sync()
	e.waitAt(t, "small", good)
	e.stop()

	rename(t, store, "Written To A Rotting Disk")
	damaged := sync()
	ltxName := flipByte(t, folder, name, damaged)

	// The edge fails to verify the file, again and again, and serves its copy meanwhile. The
	// primary's files offer no good point past the copy until the primary writes one, unless
	// Litestream's compaction (every 30 s of the clock) has covered the damaged file meanwhile: the
	// edge then heals from that.
	e = startEdge(t, edgeData, cfg)
	deadline := time.Now().Add(30 * time.Second)
	for st := fileStatus(e.follower, "small"); st.FailedVerifications < 3 ||
		st.Heals == 0 && !strings.Contains(e.log.String(), "no good point past the copy yet"); st = fileStatus(e.follower, "small") {
		if time.Now().After(deadline) {
			t.Fatalf("the edge did not try to heal within 30s: %+v\n%s", st, e.log)
		}
		time.Sleep(20 * time.Millisecond) // the follower's rounds, polled with a deadline
	}
	switch got := publicName(t, e.store, "svc_counsel"); got {
	case "Before The Damage": // its last good copy
		if st := fileStatus(e.follower, "small"); st.Position != good && st.Heals == 0 {
			t.Errorf("the copy over a damaged file: %+v, want it left at %d", st, good)
		}
	case "Written To A Rotting Disk": // healed from a compaction already
	default:
		t.Errorf("the edge serves %q meanwhile", got)
	}
	if !strings.Contains(e.log.String(), "level=ERROR") || !strings.Contains(e.log.String(), "failed verification") {
		t.Errorf("the failed verifications are not logged as an error:\n%s", e.log)
	}

	// The primary's check finds the damaged file, reports it, and writes a snapshot past it.
	if err := r.VerifyReplicas(ctx); err != nil {
		t.Fatal(err)
	}
	got := r.Damaged()
	if len(got) != 1 || got[0].Name != name || got[0].LTX != ltxName || got[0].SnapshotPast < damaged {
		t.Fatalf("the primary reports damaged files %+v, want %s of %s with a snapshot past %d", got, ltxName, name, damaged)
	}

	// The edge heals from it with no one's help, and follows on.
	if !e.follower.WaitFor(ctx, "small", damaged, "", 30*time.Second) {
		t.Fatalf("the edge did not heal within 30s: %+v\n%s", fileStatus(e.follower, "small"), e.log)
	}
	if got := publicName(t, e.store, "svc_counsel"); got != "Written To A Rotting Disk" {
		t.Errorf("the healed edge serves %q", got)
	}
	for deadline := time.Now().Add(10 * time.Second); fileStatus(e.follower, "small").Heals != 1; { // counted once the copy is in place
		if time.Now().After(deadline) {
			t.Fatalf("the heal is not counted: %+v", fileStatus(e.follower, "small"))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(e.log.String(), "healed a directory") {
		t.Errorf("the heal is not logged:\n%s", e.log)
	}
	rename(t, store, "Followed After The Heal")
	e.waitServed(t, "small", sync())
	if got := publicName(t, e.store, "svc_counsel"); got != "Followed After The Heal" {
		t.Errorf("after the heal the edge serves %q\n%s", got, e.log)
	}
}

// TestThePrimaryFindsBitRotInFilesItCheckedBefore checks a replica folder one file at a time (a
// bound of one byte a check): a byte flipped in a file already checked and found good is found
// when its turn comes again, within as many checks as the folder holds files, and reported with a
// snapshot past it; the folder's other files stay unreported.
func TestThePrimaryFindsBitRotInFilesItCheckedBefore(t *testing.T) {
	ctx := context.Background()
	data, store := smallFolder(t)
	folder := t.TempDir()
	r, err := replicate.Open(ctx, data, replicate.Target{Dir: folder}, smallFiles,
		replicate.Options{Verify: replicate.VerifyOptions{Every: -1, Bytes: 1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close(); r.Close(ctx) })
	const name = "dirs/small/directory"
	var positions []uint64
	for i := range 3 {
		rename(t, store, fmt.Sprintf("Change %d", i))
		txid, err := r.SyncFile(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		positions = append(positions, txid)
	}
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	files := 0
	filepath.WalkDir(folder, func(path string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(path, ".ltx") {
			files++
		}
		return nil
	})
	for range files { // every file once
		if err := r.VerifyReplicas(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := r.Damaged(); len(got) != 0 {
		t.Fatalf("damaged files before any damage: %+v", got)
	}
	ltxName := flipByte(t, folder, name, positions[0])
	checks := 0
	for ; len(r.Damaged()) == 0 && checks < files; checks++ {
		if err := r.VerifyReplicas(ctx); err != nil {
			t.Fatal(err)
		}
	}
	got := r.Damaged()
	if len(got) != 1 || got[0].Name != name || got[0].LTX != ltxName || got[0].SnapshotPast < positions[len(positions)-1] {
		t.Fatalf("after %d checks of one file each (the folder holds %d), damaged files %+v, want %s of %s with a snapshot past it",
			checks, files, got, ltxName, name)
	}
}
