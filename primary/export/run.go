package export

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/fhir"
)

// run runs export id, unless another worker runs it or it is no longer queued.
func (s *Service) run(parent context.Context, id string) {
	j, err := s.load(id)
	if err != nil || j.Status != dirsvc.ExportQueued {
		return
	}
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	s.mu.Lock()
	if _, dup := s.cancels[id]; dup {
		s.mu.Unlock()
		return
	}
	done := make(chan struct{})
	s.cancels[id] = running{cancel, done}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.cancels, id)
		s.mu.Unlock()
		close(done)
	}()
	now := s.cfg.Now().UTC()
	j.Status, j.StartedAt = dirsvc.ExportRunning, &now
	if err := s.save(j); err != nil {
		return // cancelled and removed, or the folder is unwritable (logged by the next look)
	}
	defer s.countFinished(parent, ctx, j, now)
	files, err := s.write(ctx, j)
	switch {
	case parent.Err() != nil:
		// The service stops: the status stays running, and the next start ends it failed.
		return
	case ctx.Err() != nil:
		return // cancelled: its folder is gone
	case err != nil:
		removeFiles(s.folder(id))
		j.Files = []File{}
		msg := "The export failed: ask for it again."
		var de *dirsvc.Error
		if errors.As(err, &de) && de.Code != dirsvc.EInternal {
			msg = de.Message
		} else {
			s.cfg.Log.Error("exports: export failed", "export", id, "directory", j.Directory, "err", err)
		}
		s.finish(j, dirsvc.ExportFailed, msg)
		return
	}
	j.Files = files
	if s.cfg.Store == nil {
		s.finish(j, dirsvc.ExportSucceeded, "")
		return
	}
	// Succeeded once the bucket holds the files, and the status that says so.
	s.settle(j, dirsvc.ExportSucceeded, "")
	if err := s.store(ctx, j); err != nil {
		if parent.Err() != nil {
			return // as above: the next start ends it failed, and pruning clears the bucket
		}
		if ctx.Err() != nil {
			return // cancelled: cancel removes it, from the bucket too
		}
		s.cfg.Log.Error("exports: copy an export to object storage", "export", id, "directory", j.Directory, "err", err)
		if err := s.unstore(ctx, id); err != nil {
			s.cfg.Log.Error("exports: remove a failed export from object storage", "export", id, "err", err)
		}
		removeFiles(s.folder(id))
		j.Files = []File{}
		s.finish(j, dirsvc.ExportFailed, "Object storage did not take the export's files: ask for it again.")
		return
	}
	if err := s.save(j); err != nil {
		s.cfg.Log.Error("exports: save", "export", j.ID, "err", err)
	}
}

// progress is how often (in records) a running export's count is saved.
const progress = 10_000

// Options say what an export writes and as whom it reads.
type Options struct {
	// Viewer is who the export reads as: its tier and narrowing.
	Viewer dirsvc.Viewer
	// Leaders: organisations' leadership is written (with leadership:read; only when senior
	// management is on in the directory too). Practitioners: practitioners are written
	// (practitioners:read: practitioners in bulk, section 5.4).
	Leaders, Practitioners bool
	// Formats and Kinds are written (kinds in ExportKinds order); FHIRTypes are the FHIR resource
	// types written (all when empty).
	Formats   []string
	Kinds     []dirsvc.Kind
	FHIRTypes []string
	// Since, when set, keeps the records whose view changed after it.
	Since *time.Time
	// BaseURL is the service's base address (FHIR canonical URLs).
	BaseURL string
	// PartRecords is how many records are written between flushes of a file (default 1000).
	PartRecords int
	Now         func() time.Time
	// Total, when set, is called with the number of records the export will look at (counted in
	// the snapshot first, from the records' rows rather than their views; with Since fewer are
	// written).
	Total func(records int64)
	// Progress, when set, is called with the records written so far every ProgressEvery records;
	// an error it returns ends the export.
	Progress func(records int64) error
}

// ProgressEvery is how often, in records, Options.Progress is called.
const ProgressEvery = 1000

// Result is what an export wrote.
type Result struct {
	Files      []File
	Records    int64
	SnapshotAt time.Time
}

// write writes the files of an export from one snapshot of its directory.
func (s *Service) write(ctx context.Context, j *job) ([]File, error) {
	if err := s.granted(ctx, j); err != nil {
		return nil, err
	}
	rd, err := s.cfg.Catalog.Reader(ctx, j.Directory)
	if err != nil {
		return nil, err
	}
	o := Options{Viewer: j.Viewer, Leaders: j.Leaders, Practitioners: j.Practitioners, Formats: formatsOf(j),
		Kinds: kindsOf(j), FHIRTypes: j.FHIRTypes, Since: j.Request.Since, BaseURL: s.cfg.BaseURL,
		PartRecords: s.cfg.PartRecords, Now: s.cfg.Now}
	o.Progress = func(n int64) error {
		j.Records = n
		if n%progress == 0 {
			return s.save(j)
		}
		return nil
	}
	res, err := Write(ctx, rd, s.folder(j.ID), o)
	if err != nil {
		return nil, err
	}
	j.Records, j.SnapshotAt = res.Records, &res.SnapshotAt
	return res.Files, nil
}

// Write writes an export of the directory rd into the folder dir, from one snapshot, as o says:
// each file under a temporary name until the whole export is written, then under its own. On an
// error the files written are removed.
func Write(ctx context.Context, rd dirsvc.DirectoryReader, dir string, o Options) (res Result, err error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.PartRecords <= 0 {
		o.PartRecords = 1000
	}
	info, err := rd.Info(ctx)
	if err != nil {
		return res, err
	}
	sn, ok := rd.(dirsvc.ReadSnapshotter)
	if !ok {
		return res, errors.New("the directory reader takes no snapshots")
	}
	snap, err := sn.ReadSnapshot(ctx, o.Viewer)
	if err != nil {
		return res, err
	}
	defer snap.Close()
	at := o.Now().UTC()
	res.SnapshotAt = at
	r := &run{dir: dir, opts: &o, info: info, at: at, parts: o.PartRecords, baseURL: o.BaseURL}
	readable := newReadability(ctx, snap)
	// refers: a format writes references, which name only records the caller may read.
	refers := slices.ContainsFunc(o.Formats, func(f string) bool { return f == dirsvc.ExportFHIR || f == dirsvc.ExportHSDS })
	var writers []formatWriter
	// mapper is the FHIR writer's, when FHIR is written: its workers decode each view for it.
	var mapper *fhir.Mapper
	defer func() {
		if err != nil {
			for _, w := range writers {
				w.abort()
			}
		}
	}()
	for _, f := range o.Formats {
		switch f {
		case dirsvc.ExportCSV:
			writers = append(writers, &csvWriter{run: r})
		case dirsvc.ExportJSON:
			w, err := newJSONWriter(r)
			if err != nil {
				return res, err
			}
			writers = append(writers, w)
		case dirsvc.ExportFHIR:
			fw := newFHIRWriter(r, readable.check)
			mapper = fw.mapper
			writers = append(writers, fw)
		case dirsvc.ExportHSDS:
			writers = append(writers, newHSDSWriter(r, readable.check))
		}
	}
	if o.Total != nil {
		var total int64
		for _, kind := range o.Kinds {
			if kind == dirsvc.KindPractitioner && !o.Practitioners {
				continue
			}
			n, err := snap.Count(ctx, kind)
			if err != nil {
				return res, err
			}
			total += n
		}
		o.Total(total)
	}
	leaders := o.Leaders && info.LeadershipOn()
	today := dirsvc.Today(at, info.TimeZone)
	for _, kind := range o.Kinds {
		if kind == dirsvc.KindPractitioner && !o.Practitioners {
			continue
		}
		for _, w := range writers {
			if err := w.begin(kind); err != nil {
				return res, err
			}
		}
		ahead := o.Since != nil || slices.ContainsFunc(o.Formats, func(f string) bool { return f != dirsvc.ExportJSON })
		// Leaders are added to an organisation in order (below), after the workers are done with it.
		prepare := func(rec *record) error {
			if o.Since != nil {
				if _, err := rec.head(); err != nil {
					return err
				}
			}
			if mapper != nil { // FHIR maps the decoded view; the other formats read what they need of its JSON
				if _, err := rec.decoded(mapper); err != nil {
					return err
				}
			}
			if rec.kind == dirsvc.KindOrganisation && leaders {
				return nil
			}
			for _, w := range writers {
				if p, ok := w.(preparer); ok {
					if err := p.prepare(rec); err != nil {
						return err
					}
				}
			}
			return nil
		}
		readable.begin(kind)
		err := walkPrepared(ctx, snap, kind, ahead, prepare, func(rec *record) error {
			if refers {
				readable.add(rec.id)
			}
			if o.Since != nil {
				h, err := rec.head()
				if err != nil {
					return err
				}
				if !h.LastUpdated.After(*o.Since) {
					return nil
				}
			}
			if kind == dirsvc.KindOrganisation && leaders {
				if err := withLeaders(ctx, snap, rec, today); err != nil {
					return err
				}
			}
			for _, w := range writers {
				if err := w.write(ctx, rec); err != nil {
					return err
				}
			}
			if err := readable.failed(); err != nil {
				return err
			}
			res.Records++
			if o.Progress != nil && res.Records%ProgressEvery == 0 {
				return o.Progress(res.Records)
			}
			return nil
		})
		if err != nil {
			return res, err
		}
		readable.done()
		for _, w := range writers {
			if err := w.end(kind); err != nil {
				return res, err
			}
		}
		if err := r.settle(); err != nil {
			return res, err
		}
	}
	// The files get their names only now, all of them whole.
	for _, w := range writers {
		fs, err := w.commit()
		if err != nil {
			return res, err
		}
		res.Files = append(res.Files, fs...)
	}
	att := []byte(attributionText(info, o.Viewer.Audience, at))
	if err := writeWhole(dir, AttributionFile, att); err != nil {
		return res, err
	}
	res.Files = append(res.Files, File{Name: AttributionFile, Format: "text", Bytes: int64(len(att))})
	return res, nil
}

// prepareBatch is how many records go to a worker at a time.
const prepareBatch = 128

// batchBlock is the size a batch's blocks are made with: the records' views, copied from the walk,
// and what the workers make of them (see record.out).
const batchBlock = 512 << 10

// blocks are the batches' blocks, reused once a batch is written (all of them in flight make a
// few megabytes); one grown past maxBlock is left to the collector.
var blocks = sync.Pool{New: func() any { b := make([]byte, 0, batchBlock); return &b }}

const maxBlock = 4 << 20

// walkBatch is a batch of records of a walk, prepared by a worker (done is closed then). Its views
// and what was made of them are in its blocks (bodies, out), which are reused once it is written:
// nothing of a record outlives its write.
type walkBatch struct {
	recs   []record
	bodies *[]byte
	out    *[]byte
	done   chan struct{}
	err    error
}

// release gives the batch's blocks back.
func (b *walkBatch) release() {
	for _, p := range []*[]byte{b.bodies, b.out} {
		if cap(*p) <= maxBlock {
			*p = (*p)[:0]
			blocks.Put(p)
		}
	}
	b.recs, b.bodies, b.out = nil, nil, nil
}

// preparer is a formatWriter with work of its own to do on each record before it is written that
// needs no order (a CSV row, HSDS objects, FHIR resources): workers do it ahead of the writing (see
// walkPrepared), and write uses what they prepared (or prepares itself, for a record they left).
type preparer interface {
	prepare(r *record) error
}

// walkPrepared walks the records of kind in the snapshot and calls fn with each, in order. When
// ahead is set, prepare is called with each record (reading its view: the most costly step of
// every format but JSON), by workers on every core, a bounded number of batches ahead, while fn,
// which writes the files and makes the snapshot's other reads, runs in one goroutine in walk order.
func walkPrepared(ctx context.Context, snap dirsvc.ReadSnapshot, kind dirsvc.Kind, ahead bool, prepare, fn func(*record) error) error {
	if !ahead || runtime.GOMAXPROCS(0) < 2 {
		return snap.Walk(ctx, kind, func(p dirsvc.Published) error {
			return fn(&record{kind: kind, id: p.PublicID, body: p.Body})
		})
	}
	workers := runtime.GOMAXPROCS(0)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan *walkBatch, 2*workers)
	ordered := make(chan *walkBatch, 2*workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range work {
				for i := range b.recs {
					if err := prepare(&b.recs[i]); err != nil {
						b.err = err
						break
					}
				}
				close(b.done)
			}
		}()
	}
	written := make(chan error, 1)
	go func() {
		var err error
		for b := range ordered { // to the end, so that the walk never blocks on a failed write
			<-b.done
			if err != nil {
				continue
			}
			if err = b.err; err == nil {
				for i := range b.recs {
					if err = fn(&b.recs[i]); err != nil {
						break
					}
				}
			}
			b.release()
			if err != nil {
				cancel()
			}
		}
		written <- err
	}()
	send := func(b *walkBatch) error {
		for _, ch := range []chan *walkBatch{ordered, work} {
			select {
			case ch <- b:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	}
	newBatch := func() *walkBatch {
		return &walkBatch{recs: make([]record, 0, prepareBatch), bodies: blocks.Get().(*[]byte), out: blocks.Get().(*[]byte),
			done: make(chan struct{})}
	}
	cur := newBatch()
	err := snap.Walk(ctx, kind, func(p dirsvc.Published) error {
		// A block a body does not fit grows (append makes it anew): the bodies already in it keep
		// the old one, left to the collector.
		n := len(*cur.bodies)
		*cur.bodies = append(*cur.bodies, p.Body...)
		body := (*cur.bodies)[n:len(*cur.bodies):len(*cur.bodies)]
		cur.recs = append(cur.recs, record{kind: kind, id: p.PublicID, body: body, out: cur.out})
		if len(cur.recs) < prepareBatch {
			return nil
		}
		b := cur
		cur = newBatch()
		return send(b)
	})
	if err == nil && len(cur.recs) > 0 {
		err = send(cur)
	}
	close(work)
	close(ordered)
	werr := <-written
	wg.Wait()
	if werr != nil {
		return werr // the walk's error is then the cancellation it caused
	}
	return err
}

// AttributionFile is the name of every export's attribution file.
const AttributionFile = "ATTRIBUTION.txt"

// withLeaders adds an organisation's current leadership to its record: the member leadership of its
// view (as the REST brief view shows it) and the leaders for its FHIR Organization.contact.
func withLeaders(ctx context.Context, snap dirsvc.ReadSnapshot, rec *record, today string) error {
	rec.leaders = []dirsvc.LeaderView{}
	p, err := snap.Leadership(ctx, rec.id)
	if err != nil && !errors.Is(err, dirsvc.ErrNotFound) {
		return err
	}
	if p != nil {
		var all []dirsvc.LeaderView
		if err := json.Unmarshal(p.Body, &all); err != nil {
			return err
		}
		for _, l := range all {
			if l.Current(today) {
				rec.leaders = append(rec.leaders, l)
			}
		}
	}
	ls, err := json.Marshal(rec.leaders)
	if err != nil {
		return err
	}
	body := rec.body
	for len(body) > 0 && (body[len(body)-1] == '\n' || body[len(body)-1] == ' ') {
		body = body[:len(body)-1]
	}
	if len(body) == 0 || body[len(body)-1] != '}' {
		return fmt.Errorf("view of %s is not an object", rec.id)
	}
	out := make([]byte, 0, len(body)+len(ls)+16)
	out = append(out, body[:len(body)-1]...)
	out = append(out, `,"leadership":`...)
	out = append(out, ls...)
	rec.body = append(out, '}')
	return nil
}

// formatsOf returns the formats of an export, in ExportFormats order.
func formatsOf(j *job) []string {
	if j.Bulk {
		return []string{dirsvc.ExportFHIR}
	}
	var out []string
	for _, f := range dirsvc.ExportFormats {
		if len(j.Request.Formats) == 0 && f != dirsvc.ExportHSDS || slices.Contains(j.Request.Formats, f) {
			out = append(out, f)
		}
	}
	return out
}

// kindsOf returns the kinds an export holds: those asked for, in ExportKinds order, without
// practitioners for a caller who may not receive them in bulk (section 5.4, rule 3).
func kindsOf(j *job) []dirsvc.Kind {
	var out []dirsvc.Kind
	for _, k := range dirsvc.ExportKinds {
		if k == dirsvc.KindPractitioner && !j.Practitioners {
			continue
		}
		if len(j.Request.Types) == 0 || slices.Contains(j.Request.Types, k) {
			out = append(out, k)
		}
	}
	return out
}

// writeWhole writes a small file under a temporary name, then names it.
func writeWhole(dir, name string, b []byte) error {
	tmp := filepath.Join(dir, name+partSuffix)
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return os.Rename(tmp, filepath.Join(dir, name))
}

// readability answers whether the caller may read a record, from the snapshot. The viewer may read
// what it may list, so the records the walk gave are readable without a query: their IDs are kept,
// a kind's in one block with a hash table of them, and a kind walked to its end is looked up without
// a lock by the workers that map the next kinds (kinds are walked organisations first, so that
// locations, services and roles refer mostly to records walked already). Other IDs are asked of the
// snapshot, and the answers for the records most referred to are remembered (bounded, so memory
// stays flat).
type readability struct {
	ctx  context.Context
	snap dirsvc.ReadSnapshot
	// walked are the IDs of the kinds walked to their end; kept counts them. Set between kinds'
	// walks only (done), read without a lock during them.
	walked []walkedIDs
	kept   int
	// cur gathers the IDs of the kind being walked, from the goroutine that writes.
	cur walkedIDs

	mu   sync.Mutex // the answers of the snapshot, asked by the workers
	seen map[string]bool
	err  error
}

// walkedIDs are the IDs of one kind's records: ids (text, once the kind is walked to its end) holds
// them one after another, ends[i] is where the i-th ends (until the kind is walked), and slots is a
// hash table of them (open addressing: an ID's start in text in the high half, its end in the low
// half, 0 for none), which a lookup reads with the ID's text and nothing else. No pointer per ID
// for the collector to follow.
type walkedIDs struct {
	prefix string
	ids    []byte
	ends   []uint32
	text   string
	slots  []uint64
}

// idSeed seeds the hashes of walkedIDs.
var idSeed = maphash.MakeSeed()

// maxRemembered bounds the IDs a readability keeps, walked (about 40 bytes each, their text and
// slots: 40 MB for a directory of 350,000 services) or answered by the snapshot (about 60 bytes
// each, at most maxAnswers); past the bound, further walked IDs are not kept (they are asked of the
// snapshot), and the answers are forgotten.
const (
	maxRemembered = 1_000_000
	maxAnswers    = 100_000
)

func newReadability(ctx context.Context, snap dirsvc.ReadSnapshot) *readability {
	return &readability{ctx: ctx, snap: snap, seen: map[string]bool{}}
}

// begin starts the IDs of the kind about to be walked.
func (r *readability) begin(kind dirsvc.Kind) {
	r.cur = walkedIDs{prefix: kind.IDPrefix()}
}

// add keeps the ID of a record the walk gave (the goroutine that writes calls it).
func (r *readability) add(id string) {
	c := &r.cur
	if r.kept+len(c.ends) >= maxRemembered || len(c.ids)+len(id) > math.MaxUint32 {
		return
	}
	c.ids = append(c.ids, id...)
	c.ends = append(c.ends, uint32(len(c.ids)))
}

// done ends the kind being walked: its IDs are looked up from then on. Called between kinds' walks.
func (r *readability) done() {
	c := r.cur
	r.cur = walkedIDs{}
	if len(c.ends) == 0 {
		return
	}
	c.text, c.ids = string(c.ids), nil
	n := 2
	for n < 2*len(c.ends) {
		n <<= 1
	}
	c.slots = make([]uint64, n)
	mask := uint64(n - 1)
	start := uint32(0)
	for _, end := range c.ends {
		h := maphash.String(idSeed, c.text[start:end]) & mask
		for c.slots[h] != 0 {
			h = (h + 1) & mask
		}
		c.slots[h] = uint64(start)<<32 | uint64(end) // not 0: an ID is not empty
		start = end
	}
	r.kept += len(c.ends)
	c.ends = nil
	r.walked = append(r.walked, c)
}

// has reports whether id is one of the IDs.
func (w *walkedIDs) has(id string) bool {
	mask := uint64(len(w.slots) - 1)
	for h := maphash.String(idSeed, id) & mask; ; h = (h + 1) & mask {
		slot := w.slots[h]
		if slot == 0 {
			return false
		}
		if start, end := int(slot>>32), int(uint32(slot)); end-start == len(id) && w.text[start:end] == id {
			return true
		}
	}
}

func (r *readability) check(id string) bool {
	for i := range r.walked {
		if w := &r.walked[i]; strings.HasPrefix(id, w.prefix) && w.has(id) {
			return true
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if ok, seen := r.seen[id]; seen {
		return ok
	}
	ok, err := r.snap.Readable(r.ctx, id)
	if err != nil {
		if r.err == nil {
			r.err = err
		}
		return false
	}
	if len(r.seen) >= maxAnswers {
		clear(r.seen)
	}
	r.seen[strings.Clone(id)] = ok // id may be a piece of a view, whose block is reused
	return ok
}

func (r *readability) failed() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}
