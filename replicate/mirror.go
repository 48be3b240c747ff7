package replicate

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/benbjohnson/litestream"
	"github.com/dirsvc/dirsvc"
	"github.com/superfly/ltx"
)

// The mirror copies a primary's replica folder to object storage.
//
// Litestream replicates each file to the replica folder only: a local disk that answers at once, so
// a write's sync, the edges that follow the folder and a shutdown never wait on a remote store.
// The mirror then brings the bucket to what the folder holds, file by file, in the order of their
// positions, so the bucket is at every moment a prefix of the folder's history that a restore can
// use. A file whose copy fails is tried again (after 1 s, then up to every 30 s) until the bucket
// holds everything the folder does, whether or not the database is written again; every call to
// the bucket is bounded in time (see bounded). Files the folder dropped (compacted into a higher
// level, or past retention) are dropped from the bucket once the bucket holds what covers them.
//
// With the platform file, the mirror also writes what edges need of it as JSON (EdgePlatformKey):
// edges that bootstrap from the bucket read that, never the platform file. It is written, when it
// changed, each time the platform file's copy is brought up to date, after the folder is listed and
// before the files listed are copied: once the bucket holds a position of the platform file, the
// JSON holds what the platform held at least then. The platform file is copied after the other
// files of its round, and waits until the bucket holds every directory it may name (see
// awaiting), so a restore from the bucket never finds a listed directory missing; the JSON names
// only directories the bucket holds, so an edge never reads of one it cannot bootstrap.

// mirrorLevels are the levels Litestream writes: its compaction levels and the snapshot level.
var mirrorLevels = func() []int {
	var out []int
	for _, l := range litestream.DefaultCompactionLevels {
		out = append(out, l.Level)
	}
	return append(out, litestream.SnapshotLevel)
}()

// fileKey names one LTX file of a replicated file.
type fileKey struct {
	level    int
	min, max ltx.TXID
}

func keyOf(info *ltx.FileInfo) fileKey { return fileKey{info.Level, info.MinTXID, info.MaxTXID} }

// mirrored is the mirror's state of one replicated file.
type mirrored struct {
	bucket      map[fileKey]*ltx.FileInfo // what the bucket holds; nil until listed
	seen        map[fileKey]bool          // what the folder held at the last look
	dirty       bool                      // the folder changed since the last copy
	pos         ltx.TXID                  // the highest position the bucket holds
	folderPos   ltx.TXID                  // the highest position the folder held at the last look
	behindSince time.Time                 // when the bucket first lacked a file of the folder; zero when not
	edge        []byte                    // of the platform file: the JSON for edges last written
	err         error                     // the last copy's error
	retryAt     time.Time
	backoff     time.Duration
}

// mirror copies the replica folder of each file to the bucket.
type mirror struct {
	target   Target
	log      *slog.Logger
	platform func(context.Context) (*dirsvc.Platform, error) // nil: no JSON for edges

	mu      sync.Mutex
	files   map[string]*mirrored
	changed chan struct{} // closed and replaced when a position moves
	wake    chan struct{}
	// edgeShort is whether the JSON for edges last written left out a directory the bucket did not
	// hold yet: each round writes it again until it names every one.
	edgeShort bool

	stop context.CancelFunc
	done chan struct{}
}

// Retry delays of a file whose copy failed.
const (
	mirrorFirstRetry = time.Second
	mirrorMaxRetry   = 30 * time.Second
	mirrorParallel   = 4
)

func newMirror(target Target, log *slog.Logger, platform func(context.Context) (*dirsvc.Platform, error)) *mirror {
	return &mirror{target: target, log: log, platform: platform, files: map[string]*mirrored{},
		changed: make(chan struct{}), wake: make(chan struct{}, 1)}
}

// start runs the mirror until close.
func (m *mirror) start() {
	ctx, stop := context.WithCancel(context.Background())
	m.stop, m.done = stop, make(chan struct{})
	go m.run(ctx)
}

// add starts mirroring a file, with what the bucket is known to hold (nil: unknown, listed first).
func (m *mirror) add(name string, bucket map[fileKey]*ltx.FileInfo) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f := &mirrored{bucket: bucket, dirty: true, behindSince: time.Now(), pos: maxTXID(bucket)}
	m.files[name] = f
	m.poke()
}

// remove stops mirroring a file; what the bucket holds of it stays.
func (m *mirror) remove(name string) {
	m.mu.Lock()
	delete(m.files, name)
	m.mu.Unlock()
}

// touch marks a file's folder as changed.
func (m *mirror) touch(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if f := m.files[name]; f != nil {
		f.dirty = true
		if f.behindSince.IsZero() {
			f.behindSince = time.Now()
		}
		m.poke()
	}
}

// poke wakes the mirror's loop; m.mu is held.
func (m *mirror) poke() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

func (m *mirror) run(ctx context.Context) {
	defer close(m.done)
	t := time.NewTicker(mirrorFirstRetry)
	defer t.Stop()
	for {
		m.round(ctx)
		select {
		case <-ctx.Done():
			return
		case <-m.wake:
		case <-t.C:
		}
	}
}

// round copies every file that changed, or whose retry is due, a few at a time.
func (m *mirror) round(ctx context.Context) {
	now := time.Now()
	var due []string
	m.mu.Lock()
	for name, f := range m.files {
		if (f.dirty || f.err != nil) && !now.Before(f.retryAt) {
			due = append(due, name)
			f.dirty = false
		}
	}
	m.mu.Unlock()
	slices.Sort(due)
	// The platform file last: the directories it names are in the bucket before it is (see
	// awaiting).
	m.mu.Lock()
	platform := slices.Contains(due, dirsvc.PlatformFile) || m.edgeShort && m.files[dirsvc.PlatformFile] != nil
	m.mu.Unlock()
	due = slices.DeleteFunc(due, func(name string) bool { return name == dirsvc.PlatformFile })
	sem := make(chan struct{}, mirrorParallel)
	var wg sync.WaitGroup
	for _, name := range due {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			m.copyFile(ctx, name)
		}()
	}
	wg.Wait()
	if platform {
		m.copyFile(ctx, dirsvc.PlatformFile)
	}
}

// copyFile brings the bucket's copy of one file to what the folder holds, and records the outcome.
// One goroutine at a time copies a file (rounds do not overlap), so only it touches f.bucket and
// f.seen; m.mu guards what others read.
func (m *mirror) copyFile(ctx context.Context, name string) {
	m.mu.Lock()
	f := m.files[name]
	m.mu.Unlock()
	if f == nil {
		return
	}
	folderPos, err := m.sync(ctx, name, f)
	m.mu.Lock()
	defer m.mu.Unlock()
	if errors.Is(err, errAwaiting) {
		// Not a failure: the file is copied once the bucket holds what it names, and the copies
		// of those poke the mirror.
		f.dirty = true
		return
	}
	if err == nil || folderPos > 0 { // the folder was listed
		f.folderPos = folderPos
	}
	if err != nil {
		if ctx.Err() != nil {
			f.dirty = true
			return
		}
		if f.err == nil {
			m.log.Warn("copy a file to object storage; trying again until it succeeds", "file", name, "err", err)
		}
		f.err = err
		f.backoff = min(max(2*f.backoff, mirrorFirstRetry), mirrorMaxRetry)
		f.retryAt = time.Now().Add(f.backoff)
		return
	}
	if f.err != nil {
		m.log.Info("object storage holds the file again", "file", name, "position", uint64(f.pos))
	}
	f.err, f.backoff, f.retryAt = nil, 0, time.Time{}
	if f.pos >= f.folderPos && !f.dirty {
		f.behindSince = time.Time{}
	}
}

// moved records that the bucket holds a file's position pos; m.mu is held.
func (m *mirror) moved(f *mirrored, pos ltx.TXID) {
	if pos > f.pos {
		f.pos = pos
		close(m.changed)
		m.changed = make(chan struct{})
	}
}

// sync lists the bucket's copy if unknown, copies the files the folder holds and the bucket lacks in
// the order of their positions, and drops from the bucket the files the folder dropped once the
// bucket holds a higher level covering them. It returns the folder's position.
func (m *mirror) sync(ctx context.Context, name string, f *mirrored) (ltx.TXID, error) {
	bc, err := m.target.bucketClient(name)
	if err != nil {
		return 0, err
	}
	fc, err := m.target.folderClient(name)
	if err != nil {
		return 0, err
	}
	if f.bucket == nil {
		held, err := listLevels(ctx, bc)
		if err != nil {
			return 0, fmt.Errorf("list the bucket: %w", err)
		}
		f.bucket = held
		m.mu.Lock()
		m.moved(f, maxTXID(held))
		m.mu.Unlock()
	}
	infos, err := listLevels(ctx, fc)
	if err != nil {
		return 0, fmt.Errorf("list the folder: %w", err)
	}
	if b, f := maxTXID(f.bucket), maxTXID(infos); b > f {
		// Another history (the folder was replaced while the bucket was away): copying would put
		// two changes under one position. A restart takes the bucket's history (see seed).
		return f, fmt.Errorf("the bucket holds position %d, past the replica folder's %d: restart the primary to continue from the bucket's history", b, f)
	}
	if name == dirsvc.PlatformFile {
		if waiting := m.awaiting(); waiting != "" {
			return maxTXID(infos), fmt.Errorf("%w: %s", errAwaiting, waiting)
		}
		if err := m.writeEdgePlatform(ctx, f); err != nil {
			return maxTXID(infos), fmt.Errorf("write %s: %w", EdgePlatformKey, err)
		}
	}
	seen := f.seen
	f.seen = make(map[fileKey]bool, len(infos))
	var folderPos ltx.TXID
	var missing []*ltx.FileInfo
	for k, info := range infos {
		f.seen[k] = true
		folderPos = max(folderPos, k.max)
		if f.bucket[k] == nil {
			missing = append(missing, info)
		}
	}
	// In the order of positions, a snapshot before the files it leads to.
	slices.SortFunc(missing, func(a, b *ltx.FileInfo) int {
		if a.MaxTXID != b.MaxTXID {
			return cmp.Compare(a.MaxTXID, b.MaxTXID)
		}
		return b.Level - a.Level
	})
	for _, info := range missing {
		if err := copyLTX(ctx, fc, bc, info); errors.Is(err, os.ErrNotExist) {
			continue // dropped from the folder since the listing
		} else if err != nil {
			return folderPos, fmt.Errorf("copy %s of level %d: %w", ltx.FormatFilename(info.MinTXID, info.MaxTXID), info.Level, err)
		}
		f.bucket[keyOf(info)] = info
		m.mu.Lock()
		m.moved(f, info.MaxTXID)
		m.mu.Unlock()
	}
	var drop []*ltx.FileInfo
	for k, info := range f.bucket {
		if !f.seen[k] && (seen[k] || k.level == 0) && covered(f.bucket, k) {
			drop = append(drop, info)
		}
	}
	if len(drop) > 0 {
		if err := bc.DeleteLTXFiles(ctx, drop); err != nil {
			return folderPos, fmt.Errorf("drop compacted files: %w", err)
		}
		for _, info := range drop {
			delete(f.bucket, keyOf(info))
		}
	}
	return folderPos, nil
}

// errAwaiting is the answer of a copy of the platform file that waits for the bucket to hold the
// files of a directory it names.
var errAwaiting = errors.New("the bucket does not hold yet every directory the platform names")

// awaiting names a file the bucket must hold before the platform file's copy may name its
// directory, or "" when there is none. The platform's copy, listed before this look, names only
// directories whose files the replica folder held by then (see Options.Files), and each joined the
// mirror and was touched by its first copy to the folder before: a file mirrored whose bucket holds
// nothing, once the folder held some of it (touched, listed or failing), is one the platform may
// name.
func (m *mirror) awaiting() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	for name, f := range m.files {
		if name != dirsvc.PlatformFile && f.pos == 0 && (f.dirty || f.folderPos > 0 || f.err != nil) {
			return name
		}
	}
	return ""
}

// writeEdgePlatform writes what edges need of the platform to the bucket as JSON, unless the
// bucket holds it as it is already. The platform is read from the data folder, which may already
// register a directory the bucket does not hold yet: the JSON names only directories whose
// published file the bucket holds; the next rounds write it again until it names every one.
func (m *mirror) writeEdgePlatform(ctx context.Context, f *mirrored) error {
	if m.platform == nil {
		return nil
	}
	p, err := m.platform(ctx)
	if err != nil {
		return fmt.Errorf("read the platform: %w", err)
	}
	m.mu.Lock()
	listed := len(p.Directories)
	p.Directories = slices.DeleteFunc(p.Directories, func(d dirsvc.PlatformDirectory) bool {
		held := m.files[dirsvc.FileName(dirsvc.DirectoryFile, d.Slug)]
		return held == nil || held.pos == 0
	})
	m.edgeShort = len(p.Directories) < listed
	m.mu.Unlock()
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if bytes.Equal(b, f.edge) {
		return nil
	}
	o, err := m.target.objects(ctx)
	if err != nil {
		return err
	}
	if err := o.put(ctx, EdgePlatformKey, b, "application/json"); err != nil {
		return err
	}
	f.edge = b
	return nil
}

// covered reports whether the bucket holds a file of a higher level that reaches as far as k.
func covered(held map[fileKey]*ltx.FileInfo, k fileKey) bool {
	for h := range held {
		if h.level > k.level && h.min <= k.min && h.max >= k.max || h.level == litestream.SnapshotLevel && h.max >= k.max {
			return true
		}
	}
	return false
}

// copyLTX copies one LTX file from one client to another.
func copyLTX(ctx context.Context, from, to litestream.ReplicaClient, info *ltx.FileInfo) error {
	rc, err := from.OpenLTXFile(ctx, info.Level, info.MinTXID, info.MaxTXID, 0, 0)
	if err != nil {
		var le *litestream.LTXError
		if errors.As(err, &le) && errors.Is(le.Err, os.ErrNotExist) {
			return os.ErrNotExist
		}
		return err
	}
	defer rc.Close()
	_, err = to.WriteLTXFile(ctx, info.Level, info.MinTXID, info.MaxTXID, rc)
	return err
}

// listLevels lists every level a replica client holds of a file.
func listLevels(ctx context.Context, c litestream.ReplicaClient) (map[fileKey]*ltx.FileInfo, error) {
	out := map[fileKey]*ltx.FileInfo{}
	for _, level := range mirrorLevels {
		itr, err := c.LTXFiles(ctx, level, 0, false)
		if err != nil {
			return nil, err
		}
		infos, err := ltx.SliceFileIterator(itr)
		if err != nil {
			return nil, err
		}
		for _, info := range infos {
			out[keyOf(info)] = info
		}
	}
	return out, nil
}

// maxTXID returns the highest position of the files.
func maxTXID(files map[fileKey]*ltx.FileInfo) ltx.TXID {
	var pos ltx.TXID
	for k := range files {
		pos = max(pos, k.max)
	}
	return pos
}

// waitFor waits until the bucket holds a file's position txid, and reports whether it does.
func (m *mirror) waitFor(ctx context.Context, name string, txid uint64) bool {
	for {
		m.mu.Lock()
		f, ch := m.files[name], m.changed
		ok := f != nil && uint64(f.pos) >= txid
		m.mu.Unlock()
		if ok || f == nil {
			return ok
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}

// MirrorStatus is what the bucket holds of one file: its position there, how long it has lacked a
// file the folder holds, and the last error copying it.
type MirrorStatus struct {
	Position uint64
	Lag      time.Duration
	Err      error
}

// status reports every mirrored file.
func (m *mirror) status() map[string]MirrorStatus {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]MirrorStatus, len(m.files))
	for name, f := range m.files {
		st := MirrorStatus{Position: uint64(f.pos), Err: f.err}
		if !f.behindSince.IsZero() {
			st.Lag = now.Sub(f.behindSince)
		}
		out[name] = st
	}
	return out
}

// close copies what is still to copy, for as long as ctx allows, and stops.
func (m *mirror) close(ctx context.Context) error {
	m.stop()
	<-m.done
	m.mu.Lock()
	for _, f := range m.files {
		f.retryAt = time.Time{}
	}
	m.mu.Unlock()
	m.round(ctx)
	var errs []error
	for name, st := range m.status() {
		if st.Err != nil || st.Lag > 0 {
			errs = append(errs, fmt.Errorf("object storage lacks the latest changes of %s (it holds position %d): %v", name, st.Position, st.Err))
		}
	}
	return errors.Join(errs...)
}

// Stored waits up to ctx's end for object storage to hold a file's position txid, and reports
// whether it does; with no bucket to mirror to, the folder is every replica and it reports true.
func (r *Replicator) Stored(ctx context.Context, name string, txid uint64) bool {
	if r.mirror == nil {
		return true
	}
	return r.mirror.waitFor(ctx, name, txid)
}

// HasBucket reports whether the Replicator mirrors the folder to object storage.
func (r *Replicator) HasBucket() bool { return r.mirror != nil }

// FileState is the replication of one file: its position in the replica folder, how long its
// syncs to the folder have failed (and the last error), and, with a bucket, what the bucket holds
// of it.
type FileState struct {
	Name      string
	Position  uint64
	FolderLag time.Duration
	FolderErr error
	Bucket    *MirrorStatus // nil without a bucket
}

// Status reports every replicated file, in name order.
func (r *Replicator) Status() []FileState {
	pos := r.Positions()
	var mirrored map[string]MirrorStatus
	if r.mirror != nil {
		mirrored = r.mirror.status()
	}
	now := time.Now()
	r.mu.Lock()
	failing := maps.Clone(r.failing)
	r.mu.Unlock()
	var out []FileState
	for _, name := range r.Names() {
		st := FileState{Name: name, Position: pos[name]}
		if f, ok := failing[name]; ok {
			st.FolderLag, st.FolderErr = now.Sub(f.since), f.err
		}
		if m, ok := mirrored[name]; ok {
			st.Bucket = &m
		}
		out = append(out, st)
	}
	return out
}
