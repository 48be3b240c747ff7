package export

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/dirsvc/dirsvc"
)

// TestWalkedIDsAreFoundExactly keeps the IDs of walks of every kind and looks up each of them, and
// IDs that are not among them (the same but one byte, a prefix, a longer one, another kind's).
func TestWalkedIDsAreFoundExactly(t *testing.T) {
	r := newReadability(context.Background(), nil)
	walked := map[string]bool{}
	rnd := rand.New(rand.NewSource(1))
	for _, kind := range dirsvc.ExportKinds {
		r.begin(kind)
		for i := range 1 + rnd.Intn(3000) {
			id := fmt.Sprintf("%s%06d", kind.IDPrefix(), i*3)
			r.add(id)
			walked[id] = true
		}
		r.done()
	}
	has := func(id string) bool {
		for i := range r.walked {
			if w := &r.walked[i]; w.has(id) {
				return true
			}
		}
		return false
	}
	for id := range walked {
		if !has(id) {
			t.Fatalf("%s walked, not found", id)
		}
		for _, other := range []string{id[:len(id)-1], id + "0", id[:len(id)-1] + "1", "x" + id[1:]} {
			if !walked[other] && has(other) {
				t.Fatalf("%s found, never walked", other)
			}
		}
	}
	if r.kept != len(walked) {
		t.Errorf("kept %d IDs, walked %d", r.kept, len(walked))
	}
}

// memSnapshot is a snapshot of views held in memory: the walks of walkPrepared's test. It counts
// the views it gave (walked, under mu; moved signals each).
type memSnapshot struct {
	dirsvc.ReadSnapshot
	views  []dirsvc.Published
	mu     sync.Mutex
	moved  *sync.Cond
	walked int
}

func (s *memSnapshot) Walk(_ context.Context, _ dirsvc.Kind, fn func(p dirsvc.Published) error) error {
	var body []byte
	for _, p := range s.views {
		body = append(body[:0], p.Body...) // valid only during the call, as a reader's are
		if err := fn(dirsvc.Published{PublicID: p.PublicID, Body: body}); err != nil {
			return err
		}
		s.mu.Lock()
		s.walked++
		s.moved.Broadcast()
		s.mu.Unlock()
	}
	return nil
}

// waitWalked waits until the walk gave n views.
func (s *memSnapshot) waitWalked(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.walked < n {
		s.moved.Wait()
	}
}

// TestWalkPreparedKeepsEachRecordUntilWritten walks many batches of views of every size, each
// record prepared by the workers (which write into the batch's block, as the FHIR writer does)
// and written in walk order: every record written has its own view and what was made of it, though
// the blocks of the batches written before are reused by the batches walked meanwhile (each record
// is written only once the walk has gone a batch further).
func TestWalkPreparedKeepsEachRecordUntilWritten(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("records are prepared ahead of their writing on two cores or more")
	}
	rnd := rand.New(rand.NewSource(2))
	var views []dirsvc.Published
	for i := range 40 * prepareBatch {
		body := bytes.Repeat([]byte{byte('a' + i%26)}, rnd.Intn(8000))
		if i%500 == 0 {
			body = bytes.Repeat([]byte{'z'}, batchBlock+rnd.Intn(batchBlock)) // larger than a block
		}
		views = append(views, dirsvc.Published{PublicID: fmt.Sprintf("svc_%06d", i), Body: body})
	}
	prepare := func(r *record) error {
		start := len(*r.out)
		*r.out = append(append(*r.out, r.id...), r.body...)
		r.csv = (*r.out)[start:len(*r.out):len(*r.out)]
		return nil
	}
	snap := &memSnapshot{views: views}
	snap.moved = sync.NewCond(&snap.mu)
	n := 0
	err := walkPrepared(context.Background(), snap, dirsvc.KindService, true, prepare, func(r *record) error {
		snap.waitWalked(min(n+prepareBatch+1, len(views)))
		want := views[n]
		n++
		if r.id != want.PublicID || !bytes.Equal(r.body, want.Body) {
			return fmt.Errorf("record %d: %s with a view of %d bytes, want %s of %d", n, r.id, len(r.body), want.PublicID, len(want.Body))
		}
		if !bytes.Equal(r.csv, append([]byte(want.PublicID), want.Body...)) {
			return fmt.Errorf("record %s: what was made of it changed", r.id)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != len(views) {
		t.Errorf("%d records written, %d walked", n, len(views))
	}
}

// TestPartFilesSyncAsTheyGo writes files in parts with a background sync every few parts: each
// committed file holds every record in order, and a file aborted while a sync runs is gone.
func TestPartFilesSyncAsTheyGo(t *testing.T) {
	dir := t.TempDir()
	for _, abort := range []bool{false, true} {
		name := fmt.Sprintf("records-%v.ndjson", abort)
		f, err := createPart(dir, name, 10)
		if err != nil {
			t.Fatal(err)
		}
		f.syncEvery = 4 << 10
		var want bytes.Buffer
		syncs := 0
		for i := range 5000 {
			line := fmt.Sprintf("{\"record\":%d,\"text\":%q}\n", i, strings.Repeat("x", i%97))
			want.WriteString(line)
			if _, err := f.WriteString(line); err != nil {
				t.Fatal(err)
			}
			if err := f.recorded(); err != nil {
				t.Fatal(err)
			}
			if f.syncing != nil {
				syncs++
			}
		}
		if syncs == 0 {
			t.Fatalf("%s: no sync began while it was written", name)
		}
		if abort {
			f.abort()
			if entries, _ := os.ReadDir(dir); len(entries) != 1 {
				t.Errorf("after an abort the folder holds %d files, want the one committed before", len(entries))
			}
			continue
		}
		n, err := f.commit()
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if n != int64(want.Len()) || !bytes.Equal(got, want.Bytes()) {
			t.Errorf("%s: %d bytes (said %d), want %d as written", name, len(got), n, want.Len())
		}
	}
}

// TestSettledFilesHoldEverythingWritten settles a file between records (as an export does when a
// kind's records are written), the second time while the first sync may still run: each settle
// writes out the buffer and begins a sync, one with nothing new written begins none, and the
// committed file holds every record in order.
func TestSettledFilesHoldEverythingWritten(t *testing.T) {
	dir := t.TempDir()
	r := &run{dir: dir, parts: 1000}
	f, err := r.create("records.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	for round := range 3 {
		for i := range 200 {
			line := fmt.Sprintf("{\"round\":%d,\"record\":%d}\n", round, i)
			want.WriteString(line)
			f.WriteString(line)
			if err := f.recorded(); err != nil {
				t.Fatal(err)
			}
		}
		if err := r.settle(); err != nil {
			t.Fatal(err)
		}
		if f.syncing == nil || f.syncedTo != int64(want.Len()) || f.w.Buffered() != 0 {
			t.Fatalf("round %d: settled with sync %v, synced to %d of %d, %d bytes buffered", round, f.syncing != nil, f.syncedTo, want.Len(), f.w.Buffered())
		}
		if on, err := os.ReadFile(f.path + partSuffix); err != nil || !bytes.Equal(on, want.Bytes()) {
			t.Fatalf("round %d: the part file holds %d bytes, want the %d written (%v)", round, len(on), want.Len(), err)
		}
		running := f.syncing
		if err := r.settle(); err != nil || f.syncing != running {
			t.Fatalf("round %d: a settle with nothing written began another sync (%v)", round, err)
		}
	}
	n, err := f.commit()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "records.ndjson"))
	if err != nil || n != int64(want.Len()) || !bytes.Equal(got, want.Bytes()) {
		t.Errorf("committed %d bytes (said %d), want %d as written (%v)", len(got), n, want.Len(), err)
	}
}

// readableSnapshot answers Readable for the IDs it holds, and counts the questions.
type readableSnapshot struct {
	dirsvc.ReadSnapshot
	readable map[string]bool
	asked    int
}

func (s *readableSnapshot) Readable(_ context.Context, id string) (bool, error) {
	s.asked++
	return s.readable[id], nil
}

// TestReadabilityKeepsItsOwnIDs asks about IDs that are pieces of a block later reused, as the IDs
// a view refers to are (the mapper decodes views without copying them): the answers remembered
// stay those of the IDs asked, not of what the block holds later.
func TestReadabilityKeepsItsOwnIDs(t *testing.T) {
	snap := &readableSnapshot{readable: map[string]bool{"svc_000001": true}}
	r := newReadability(context.Background(), snap)
	block := []byte("svc_000001")
	id := unsafe.String(&block[0], len(block))
	if !r.check(id) {
		t.Fatal("svc_000001 not readable")
	}
	copy(block, "svc_000002")
	if r.check("svc_000001") != true || r.check("svc_000002") != false {
		t.Error("an answer changed with the block its ID was a piece of")
	}
	if snap.asked != 2 {
		t.Errorf("the snapshot was asked %d times, want 2 (once for each ID)", snap.asked)
	}
}

// BenchmarkWalkedIDsLookup looks up, in the IDs of walks as large as a 100,000-service directory's,
// IDs that were walked and some that were not, as the FHIR mapping's references do.
func BenchmarkWalkedIDsLookup(b *testing.B) {
	r := newReadability(context.Background(), nil)
	counts := map[dirsvc.Kind]int{dirsvc.KindOrganisation: 25_000, dirsvc.KindLocation: 47_000, dirsvc.KindService: 100_000}
	var ids []string
	for _, kind := range []dirsvc.Kind{dirsvc.KindOrganisation, dirsvc.KindLocation, dirsvc.KindService} {
		r.begin(kind)
		for i := range counts[kind] {
			id := fmt.Sprintf("%s%026x", kind.IDPrefix(), uint64(i)*0x9e3779b97f4a7c15)
			r.add(id)
			ids = append(ids, id)
		}
		r.done()
	}
	rnd := rand.New(rand.NewSource(3))
	rnd.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	b.ResetTimer()
	found := 0
	for i := range b.N {
		id := ids[i%len(ids)]
		for j := range r.walked {
			if w := &r.walked[j]; strings.HasPrefix(id, w.prefix) && w.has(id) {
				found++
				break
			}
		}
	}
	if found != b.N {
		b.Fatalf("%d of %d walked IDs found", found, b.N)
	}
}
