package dirdb_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/dirdb"
)

// The tests here open two stores on one data folder: the server's, which keeps what it read, and
// another's (a command run beside the server), whose commits go through connections of its own, as
// another process's would. The server's next read must see each commit.

// openTwice returns the server's store and another on the same folder, with the small directory.
func openTwice(t testing.TB) (server, other *dirdb.Store) {
	t.Helper()
	ctx := context.Background()
	root := t.TempDir()
	var err error
	if other, err = dirdb.Open(ctx, root); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	MustImport(t, other, readFixture(t))
	if server, err = dirdb.Open(ctx, root); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	return server, other
}

// readRecord reads a record as a request does: the directory from the store, then the record.
func readRecord(t testing.TB, s *dirdb.Store, id string, a dirsvc.Audience) dirsvc.RecordStatus {
	t.Helper()
	d, err := s.Directory(context.Background(), "small")
	if err != nil {
		t.Fatal(err)
	}
	st, err := d.Record(context.Background(), id, dirsvc.Viewer{Audience: a})
	if err != nil {
		t.Fatalf("Record(%s): %v", id, err)
	}
	return st
}

func transition(t testing.TB, s *dirdb.Store, id string, to dirsvc.Transition) {
	t.Helper()
	w, err := s.Writer(context.Background(), "small")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Transition(context.Background(), id, to); err != nil {
		t.Fatalf("transition %s to %s: %v", id, to.To, err)
	}
}

func TestAnotherStoresLifecycleCommitIsSeenByTheNextRead(t *testing.T) {
	server, other := openTwice(t)
	for range 2 { // the second read is served from what the server keeps
		if st := readRecord(t, server, "svc_gp", dirsvc.Public); st.View == nil {
			t.Fatal("svc_gp is not visible before any change")
		}
	}
	for _, c := range []struct {
		to    dirsvc.State
		state dirsvc.State
		view  bool
	}{
		{dirsvc.StateTakedown, dirsvc.StateTakedown, false},
		{dirsvc.StateLive, dirsvc.StateLive, true},
		{dirsvc.StateClosed, dirsvc.StateClosed, false},
		{dirsvc.StateLive, dirsvc.StateLive, true},
	} {
		transition(t, other, "svc_gp", dirsvc.Transition{To: c.to})
		st := readRecord(t, server, "svc_gp", dirsvc.Public)
		if (st.View != nil) != c.view || st.State != c.state {
			t.Fatalf("the first read after another store's %s: state %s, view %v", c.to, st.State, st.View != nil)
		}
		readRecord(t, server, "svc_gp", dirsvc.Public)
	}
}

func TestAnotherStoresPlatformCommitIsSeenByTheNextRead(t *testing.T) {
	ctx := context.Background()
	server, other := openTwice(t)
	info := func() bool {
		t.Helper()
		d, err := server.Directory(ctx, "small")
		if err != nil {
			t.Fatal(err)
		}
		i, err := d.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return i.SeniorManagementAvailable
	}
	for _, on := range []bool{true, false, true} {
		info() // kept
		if err := other.SetSeniorManagementAvailable(ctx, "small", on); err != nil {
			t.Fatal(err)
		}
		if got := info(); got != on {
			t.Fatalf("senior management after another store switched it to %v: %v", on, got)
		}
	}
}

func TestAnotherStoresSigningKeyIsFoundByTheNextLookup(t *testing.T) {
	ctx := context.Background()
	server, other := openTwice(t)
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := server.TokenKey("added-elsewhere"); ok {
		t.Fatal("an unknown key was found")
	}
	if err := other.AddSigningKey(ctx, dirsvc.SigningKey{ID: "added-elsewhere", Public: pub, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if k, ok := server.TokenKey("added-elsewhere"); !ok || !k.Equal(pub) {
		t.Fatal("a key another store added is not found at once")
	}
	if _, ok := server.PublicKeys()["added-elsewhere"]; !ok {
		t.Fatal("a key another store added is not published at once")
	}
}

func TestAnotherStoresDropAndNewImportAreSeenByTheNextRead(t *testing.T) {
	ctx := context.Background()
	server, other := openTwice(t)
	if st := readRecord(t, server, "svc_gp", dirsvc.Public); st.View == nil {
		t.Fatal("svc_gp is not visible")
	}
	// Dropped: the server serves the directory no more.
	if err := other.DropDirectory(ctx, "small"); err != nil {
		t.Fatal(err)
	}
	if _, err := server.Directory(ctx, "small"); !errors.Is(err, dirsvc.ErrNotFound) {
		t.Fatalf("a dropped directory: %v, want not found", err)
	}
	slugs, err := server.Slugs(ctx)
	if err != nil || len(slugs) != 0 {
		t.Fatalf("slugs after the drop: %v %v", slugs, err)
	}
	// Made anew, with other content: the server reads the new file, not the removed one.
	file := bytes.Replace(readFixture(t), []byte(`"name":"Harbour GP"`), []byte(`"name":"Harbour GP Anew"`), 1)
	MustImport(t, other, file)
	st := readRecord(t, server, "svc_gp", dirsvc.Public)
	if st.View == nil || !bytes.Contains(st.View.Body, []byte("Harbour GP Anew")) {
		t.Fatalf("the directory imported anew: %+v", st)
	}
	// Dropped and made anew between two of the server's reads.
	if err := other.DropDirectory(ctx, "small"); err != nil {
		t.Fatal(err)
	}
	MustImport(t, other, readFixture(t))
	st = readRecord(t, server, "svc_gp", dirsvc.Public)
	if st.View == nil || !bytes.Contains(st.View.Body, []byte(`"Harbour GP"`)) {
		t.Fatalf("the directory dropped and imported again: %+v", st)
	}
}

// BenchmarkAnotherStoresCommitToVisible measures how long a commit by another store (the connections another
// process would use) takes to be seen by the server's store: from the end of the other store's
// takedown or restore of a record to the end of the server's first read that shows it. Every
// first read must show it. It reports the median and 99th percentile, and the same figures for a
// read with no commit before it.
func BenchmarkAnotherStoresCommitToVisible(b *testing.B) {
	server, other := openTwice(b)
	read := func() bool { return readRecord(b, server, "svc_gp", dirsvc.Public).View != nil }
	var after, plain []time.Duration
	for i := 0; b.Loop(); i++ {
		to := dirsvc.StateTakedown
		if i%2 == 1 {
			to = dirsvc.StateLive
		}
		read()
		start := time.Now()
		read()
		plain = append(plain, time.Since(start))
		transition(b, other, "svc_gp", dirsvc.Transition{To: to})
		start = time.Now()
		if visible := read(); visible != (to == dirsvc.StateLive) {
			b.Fatalf("the first read after %s does not show it", to)
		}
		after = append(after, time.Since(start))
	}
	report := func(ds []time.Duration, name string) {
		slices.Sort(ds)
		b.ReportMetric(float64(ds[len(ds)/2].Nanoseconds())/1000, name+"-p50-µs")
		b.ReportMetric(float64(ds[len(ds)*99/100].Nanoseconds())/1000, name+"-p99-µs")
	}
	report(after, "visible")
	report(plain, "unchanged-read")
}

// BenchmarkStoreDirectory measures what a request pays to get its directory, the looks at the
// platform file and the directory's file included.
func BenchmarkStoreDirectory(b *testing.B) {
	s, err := dirdb.Open(context.Background(), b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	MustImport(b, s, readFixture(b))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.Directory(context.Background(), "small"); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// TestAnotherStoresCommitIsSeenByTheNextSearch searches a service's name on the server's store (so
// the server keeps the word's posting, its summary and the service's card), then takes the service
// down and puts it back live through the other store: each next search, alone and by organisation,
// answers the change.
func TestAnotherStoresCommitIsSeenByTheNextSearch(t *testing.T) {
	server, other := openTwice(t)
	ctx := context.Background()
	var sv dirsvc.ServiceView
	if st := readRecord(t, server, "svc_gp", dirsvc.Public); st.View == nil || json.Unmarshal(st.View.Body, &sv) != nil {
		t.Fatal("svc_gp is not visible before any change")
	}
	found := func() (alone, grouped bool) {
		t.Helper()
		d, err := server.Directory(ctx, "small")
		if err != nil {
			t.Fatal(err)
		}
		for _, byOrg := range []bool{false, true} {
			res, err := d.SearchServices(ctx, dirsvc.Viewer{Audience: dirsvc.Public}, dirsvc.SearchQuery{Text: sv.Name, Limit: 50, ByOrganisation: byOrg})
			if err != nil {
				t.Fatal(err)
			}
			has := slices.ContainsFunc(res.Hits, func(h dirsvc.SearchHit) bool { return h.PublicID == "svc_gp" && h.Card != nil })
			if byOrg {
				grouped = has
			} else {
				alone = has
			}
		}
		return alone, grouped
	}
	if alone, grouped := found(); !alone || !grouped {
		t.Fatalf("before any change, searching %q finds svc_gp %v, by organisation %v", sv.Name, alone, grouped)
	}
	for _, c := range []struct {
		to   dirsvc.State
		want bool
	}{{dirsvc.StateTakedown, false}, {dirsvc.StateLive, true}} {
		transition(t, other, "svc_gp", dirsvc.Transition{To: c.to})
		for range 2 { // the second search is answered from what the first kept
			if alone, grouped := found(); alone != c.want || grouped != c.want {
				t.Fatalf("after another store's %s: searching %q finds svc_gp %v, by organisation %v", c.to, sv.Name, alone, grouped)
			}
		}
	}
}
