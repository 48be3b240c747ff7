package replicate

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/litestream"
	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/internal/walindex"
	"github.com/superfly/ltx"
)

// Replicator replicates the files of a data folder with Litestream: each file is a Litestream
// database with one replica (the target's client for its name), all in one store that compacts the
// replica's files by level.
//
// Litestream's own monitors (two goroutines a file, each running a sync every interval whether or not
// the file changed) cost about 0.1 ms of CPU a file a look: at a tenth of a second, a primary of a
// thousand directories spent more than one core doing nothing. The Replicator instead looks at
// each file itself every interval (the header of its mapped WAL index, see internal/walindex) and syncs only
// the files that changed.
//
// Litestream keeps its own connection and a long read transaction on each file, and runs the
// checkpoints: the service never checkpoints a replicated file itself. Close the service's own
// connections to a file before the Replicator.
type Replicator struct {
	target   Target
	data     string
	store    *litestream.Store
	log      *slog.Logger
	interval time.Duration
	stop     context.CancelFunc
	watching chan struct{} // closed when the watcher stopped

	mu       sync.Mutex
	dbs      map[string]*litestream.DB
	lineages map[string]string // by file (see fileLineage)

	mirror  *mirror              // copies the folder to the bucket; nil without a bucket
	failing map[string]syncError // files whose last sync to the folder failed
	checks  replicaChecks        // of the folder's LTX files (verify.go)

	// moved counts the events that may move a position or change the set of files (syncs, files
	// added and removed): a waiting request of the stream looks at the positions only when it moves.
	moved atomic.Uint64

	syncing sync.Map // a *sync.Mutex by file: see sync

	// files names the files to replicate (Options.Files); nil: those given and added. adding makes
	// one Add at a time; copied holds the files the folder has held a position of, once synced.
	files   func(context.Context) ([]string, error)
	adding  sync.Mutex
	copied  map[string]bool
	closing atomic.Bool // Close is done with the platform file: its client writes no more (see gated)
}

// DefaultFolder is the replica folder, inside the data folder, of a target that names only a
// bucket.
const DefaultFolder = "replica"

// DefaultInterval is how often each file is looked at for new commits to copy to the target: often
// enough that edges see a write within a few tenths of a second. An idle file costs a few loads from
// its mapped WAL index each interval.
const DefaultInterval = 100 * time.Millisecond

// Options tune a Replicator.
type Options struct {
	Log      *slog.Logger  // nil: slog.Default()
	Interval time.Duration // zero: DefaultInterval
	// Platform returns what edges need of the platform file; with a bucket, the mirror writes it
	// there for edges (see EdgePlatformKey) whenever the platform file changes. It is called until
	// Close returns, after the service closed its own connections: read the file by its path.
	// Nil: no JSON for edges is written.
	Platform func(context.Context) (*dirsvc.Platform, error)
	// Verify tunes the checks of the replica folder's LTX files (see VerifyReplicas).
	Verify VerifyOptions
	// Files returns the files of the data folder to replicate (the platform's and every file of each
	// directory it lists), as the folder holds them at the call. It is asked each time the platform
	// file's changes are copied, every JoinEvery otherwise, and by Close; a file it names joins,
	// and the folder holds a position of it, before the platform file's changes are copied there,
	// so the replica never lists a directory whose files it does not hold. A file it no longer
	// names (a directory dropped) is replicated no more. It is called until Close returns, after
	// the service closed its own connections: read the folder by its path. Nil: the files given to
	// Open and to Add are replicated, in no order.
	Files func(context.Context) ([]string, error)
}

// JoinEvery is how often, besides each change of the platform file, a Replicator with
// Options.Files asks for the files to replicate (an ops or webhooks file created by another
// process, which changes no platform).
const JoinEvery = 2 * time.Second

// Open starts replicating the named files of the data folder to the target. Litestream replicates
// to the target's folder (data/replica when it names none), and a mirror copies the folder to the
// target's bucket, if any. Before a file is replicated, its copy in the folder is brought to the
// bucket's history when the bucket holds a later position (a new folder beside a data folder
// restored from the bucket), and Litestream's local state of the file is made to continue from the
// folder's position: the next change is replicated after everything the targets hold, never over
// it (see history.go).
func Open(ctx context.Context, data string, target Target, names []string, opt Options) (*Replicator, error) {
	if err := target.Valid(); err != nil {
		return nil, err
	}
	if target.Dir == "" {
		target.Dir = filepath.Join(data, DefaultFolder)
	}
	log := opt.Log
	if log == nil {
		log = slog.Default()
	}
	if opt.Interval <= 0 {
		opt.Interval = DefaultInterval
	}
	r := &Replicator{target: target, data: data, log: log, interval: opt.Interval,
		dbs: map[string]*litestream.DB{}, lineages: map[string]string{}, failing: map[string]syncError{},
		files: opt.Files, copied: map[string]bool{}}
	r.checks.configure(opt.Verify)
	if target.S3 != nil {
		r.mirror = newMirror(target, log, opt.Platform)
	}
	var dbs []*litestream.DB
	var unlisted error // once the bucket could not be listed, the other files do not wait for it too
	for _, name := range names {
		db, err := r.prepare(ctx, name, &unlisted)
		if err != nil {
			return nil, err
		}
		dbs = append(dbs, db)
	}
	r.store = litestream.NewStore(dbs, litestream.DefaultCompactionLevels)
	if err := r.store.Open(ctx); err != nil {
		return nil, fmt.Errorf("replicate: %w", err)
	}
	if r.mirror != nil {
		r.mirror.start()
	}
	wctx, stop := context.WithCancel(context.Background())
	r.stop, r.watching = stop, make(chan struct{})
	go r.watch(wctx)
	return r, nil
}

// prepare makes a file ready to replicate: its folder copy continues the bucket's history, its
// local state continues the folder's, and the mirror knows it. unlisted holds why the bucket could
// not be listed for an earlier file of the same Open, so that each file does not wait the storage
// timeout again; prepare sets it when the bucket cannot be listed.
func (r *Replicator) prepare(ctx context.Context, name string, unlisted *error) (*litestream.DB, error) {
	var (
		bucket    map[fileKey]*ltx.FileInfo
		seeded    bool
		unreached error // the bucket could not be listed
	)
	if r.mirror != nil && *unlisted != nil {
		unreached = *unlisted
	} else if r.mirror != nil {
		var err error
		if bucket, seeded, err = r.seed(ctx, name); errors.Is(err, errBucketUnlisted) {
			unreached, *unlisted = err, err
		} else if err != nil {
			return nil, fmt.Errorf("replicate %s: %w", name, err)
		}
	}
	db, err := r.newDB(name, r.log)
	if err != nil {
		return nil, err
	}
	if unreached != nil {
		if !r.continuesFolder(ctx, name, db) {
			r.forget(name)
			return nil, fmt.Errorf("replicate %s: %w", name, unreached)
		}
		r.log.Warn("object storage cannot be listed: replicating to the replica folder, whose history this file's local state continues; the bucket is brought up to date once it answers",
			"file", name, "err", unreached)
	}
	if err := r.align(ctx, name, db, seeded); err != nil {
		r.forget(name)
		return nil, fmt.Errorf("replicate %s: %w", name, err)
	}
	if err := db.Replica.Client.Init(ctx); err != nil {
		r.forget(name)
		return nil, fmt.Errorf("replicate %s: %w", name, err)
	}
	if r.mirror != nil {
		r.mirror.add(name, bucket)
	}
	return db, nil
}

func (r *Replicator) forget(name string) {
	r.mu.Lock()
	delete(r.dbs, name)
	delete(r.lineages, name)
	r.mu.Unlock()
}

// look is what the watcher saw of a file, and when: the digest of its WAL index's header where the
// index is open (see internal/walindex), else its WAL's size and time.
type look struct {
	db     *litestream.DB // the file's database: one added anew is looked at anew
	index  *walindex.Index
	digest uint64
	at     time.Time
	size   int64
	mtime  time.Time
	quiet  int // looks in a row that found no change
}

// A file without a mapped index (not yet opened, or on a system without shared mappings) unchanged
// for quietLooks looks in a row is looked at only every quietEvery intervals (a write through the
// primary's own API syncs at once anyway): a primary of many idle directories spends its time on the
// few that change. A mapped index costs too little to need this.
const (
	quietLooks = 300
	quietEvery = 10
)

// mtimeGrain is how coarse file modification times may be: a write this long before a look may
// carry a time before it.
const mtimeGrain = 20 * time.Millisecond

// watch syncs, every interval, the files that changed since the last look: a new WAL index header,
// or, where the index is not mapped, a new WAL size, or a modification time not clearly before the
// last look (a WAL restarted after a checkpoint is rewritten from its start at the same size).
func (r *Replicator) watch(ctx context.Context) {
	defer close(r.watching)
	defer r.verifying(ctx)() // the folder's checks run, and end, with the watcher
	joinTicks := max(1, int(JoinEvery/r.interval))
	t := time.NewTicker(r.interval)
	defer t.Stop()
	looks := map[string]look{}
	logged := map[string]time.Time{} // when a file's failing sync was last logged
	for tick := 0; ; tick++ {
		dbs := r.snapshot()
		due := changedSince(looks, dbs, tick, time.Now())
		// The platform file's sync asks which files to replicate (see Options.Files).
		if r.files != nil && tick%joinTicks == 0 && dbs[dirsvc.PlatformFile] != nil && !slices.Contains(due, dirsvc.PlatformFile) {
			due = append(due, dirsvc.PlatformFile)
		}
		// A file whose last sync failed is tried again until one succeeds, changed or not: its
		// commits are not yet in the folder.
		for name := range dbs {
			if r.isFailing(name) && !slices.Contains(due, name) {
				due = append(due, name)
			}
		}
		for name := range logged {
			if dbs[name] == nil {
				delete(logged, name)
			}
		}
		// A few files at a time: one large change (an import) does not hold up the others.
		sem := make(chan struct{}, 4)
		var wg sync.WaitGroup
		var mu sync.Mutex
		for _, name := range due {
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				err := r.sync(ctx, name, dbs[name])
				if ctx.Err() != nil {
					return
				}
				mu.Lock()
				defer mu.Unlock()
				if last, failed := logged[name]; err == nil {
					if failed {
						r.log.Info("replicating the file again", "file", name)
					}
					delete(logged, name)
				} else if time.Since(last) > time.Minute {
					logged[name] = time.Now()
					r.log.Error("replicate a file; trying again", "file", name, "err", err)
				}
			}()
		}
		wg.Wait()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// changedSince returns the files of dbs that changed since the looks recorded in looks, which it
// brings up to date; tick counts the looks so far.
func changedSince(looks map[string]look, dbs map[string]*litestream.DB, tick int, now time.Time) []string {
	var due []string
	for name, db := range dbs {
		prev, seen := looks[name]
		if seen && prev.db != db {
			prev, seen = look{}, false
		}
		if prev.index == nil {
			prev.index, _ = walindex.Open(db.Path()) // none yet: stat below, and try again next look
		}
		if prev.index != nil {
			if d, err := prev.index.Digest(); err == nil {
				if !seen || d != prev.digest {
					due = append(due, name)
				}
				looks[name] = look{db: db, index: prev.index, digest: d, at: now}
				continue
			}
		}
		if seen && prev.quiet >= quietLooks && (tick+len(name))%quietEvery != 0 {
			continue
		}
		st, err := os.Stat(db.WALPath())
		if err != nil {
			st, err = os.Stat(db.Path())
		}
		if err != nil {
			continue // dropped since; Remove follows
		}
		l := look{db: db, index: prev.index, at: now, size: st.Size(), mtime: st.ModTime(), quiet: prev.quiet + 1}
		if !seen || st.Size() != prev.size || !st.ModTime().Equal(prev.mtime) || !st.ModTime().Before(prev.at.Add(-mtimeGrain)) {
			due = append(due, name)
			l.quiet = 0
		}
		looks[name] = l
	}
	for name := range looks {
		if dbs[name] == nil {
			delete(looks, name)
		}
	}
	return due
}

func (r *Replicator) newDB(name string, log *slog.Logger) (*litestream.DB, error) {
	c, err := r.target.folderClient(name)
	if err != nil {
		return nil, err
	}
	if r.mirror != nil { // what Litestream writes to the folder (syncs, compactions) is mirrored
		c = &notifying{ReplicaClient: c, changed: func() { r.mirror.touch(name) }}
	}
	if name == dirsvc.PlatformFile && r.files != nil {
		c = &gated{ReplicaClient: c, closed: &r.closing}
	}
	lineage, err := fileLineage(r.data, name)
	if err != nil {
		return nil, err
	}
	db := litestream.NewDB(dirsvc.FilePath(r.data, name))
	db.Logger = log.With("file", name)
	db.MonitorInterval = 0 // the Replicator's watcher syncs (see watch)
	db.Replica = litestream.NewReplicaWithClient(db, c)
	db.Replica.MonitorEnabled = false
	r.mu.Lock()
	r.dbs[name], r.lineages[name] = db, lineage
	r.mu.Unlock()
	return db, nil
}

// Add starts replicating one more file (a directory created while running) and reports whether it
// was not replicated before.
func (r *Replicator) Add(ctx context.Context, name string) (bool, error) {
	known := func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		_, ok := r.dbs[name]
		return ok
	}
	if known() {
		return false, nil
	}
	r.adding.Lock() // one at a time, or two could each find the file new
	defer r.adding.Unlock()
	if known() {
		return false, nil
	}
	var unlisted error
	db, err := r.prepare(ctx, name, &unlisted)
	if err != nil {
		return false, err
	}
	if err := r.store.RegisterDB(db); err != nil {
		r.forget(name)
		if r.mirror != nil {
			r.mirror.remove(name)
		}
		return false, fmt.Errorf("replicate %s: %w", name, err)
	}
	r.moved.Add(1)
	return true, nil
}

// Remove stops replicating a file (a directory dropped after its first import failed); what the
// target holds of it stays there.
func (r *Replicator) Remove(ctx context.Context, name string) error {
	r.mu.Lock()
	_, ok := r.dbs[name]
	delete(r.dbs, name)
	delete(r.lineages, name)
	delete(r.failing, name)
	delete(r.copied, name)
	r.mu.Unlock()
	if !ok {
		return nil
	}
	if r.mirror != nil {
		r.mirror.remove(name)
	}
	r.moved.Add(1)
	if err := r.store.UnregisterDB(ctx, dirsvc.FilePath(r.data, name)); err != nil {
		return fmt.Errorf("stop replicating %s: %w", name, err)
	}
	return nil
}

// Sync copies every file's committed changes to the replica folder and waits until they are
// there; the platform file's last, after the files that joined (see Options.Files).
func (r *Replicator) Sync(ctx context.Context) error {
	var errs []error
	dbs := r.snapshot()
	for _, name := range slices.Sorted(maps.Keys(dbs)) {
		if name == dirsvc.PlatformFile {
			continue
		}
		if err := r.sync(ctx, name, dbs[name]); err != nil {
			errs = append(errs, fmt.Errorf("sync %s: %w", name, err))
		}
	}
	if db := dbs[dirsvc.PlatformFile]; db != nil {
		if err := r.sync(ctx, dirsvc.PlatformFile, db); err != nil {
			errs = append(errs, fmt.Errorf("sync %s: %w", dirsvc.PlatformFile, err))
		}
	}
	return errors.Join(errs...)
}

// SyncFile copies one file's committed changes to the target, waits until they are there, and
// returns the file's position: a write's position, for a reader who wants to see it at an edge.
func (r *Replicator) SyncFile(ctx context.Context, name string) (uint64, error) {
	r.mu.Lock()
	db, ok := r.dbs[name]
	r.mu.Unlock()
	if !ok {
		return 0, fmt.Errorf("replicate: %s is not replicated", name)
	}
	if err := r.sync(ctx, name, db); err != nil {
		return 0, fmt.Errorf("sync %s: %w", name, err)
	}
	return uint64(db.Replica.Pos().TXID), nil
}

// sync copies a file's committed changes to the replica folder, and records whether it failed (the
// watcher tries a failing file again every look; Status reports it).
func (r *Replicator) sync(ctx context.Context, name string, db *litestream.DB) error {
	// One sync of a file at a time (the watcher's and a write's): a sync may drop the file's
	// local state, which another would be writing into.
	l, _ := r.syncing.LoadOrStore(name, new(sync.Mutex))
	l.(*sync.Mutex).Lock()
	defer l.(*sync.Mutex).Unlock()
	defer r.moved.Add(1)
	err := r.syncLocked(ctx, name, db)
	if ctx.Err() != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		delete(r.failing, name)
		if r.dbs[name] == db {
			r.copied[name] = true
		}
	} else if f, ok := r.failing[name]; ok {
		r.failing[name] = syncError{since: f.since, err: err}
	} else {
		r.failing[name] = syncError{since: time.Now(), err: err}
	}
	return err
}

// syncError is a file's failing sync: since when, and the last error.
type syncError struct {
	since time.Time
	err   error
}

func (r *Replicator) isFailing(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.failing[name]
	return ok
}

// syncLocked syncs a file; the caller holds its sync lock. A folder that holds nothing of a file
// whose Litestream state in the data folder has pruned its first changes (a replica folder emptied
// while the primary ran; align handles the case at start) cannot be brought forward from that
// state: the state is dropped, so the next sync starts the folder with a snapshot, and the file
// starts a new lineage (its positions count from the start again).
func (r *Replicator) syncLocked(ctx context.Context, name string, db *litestream.DB) error {
	err := r.syncStages(ctx, name, db)
	var ltxErr *litestream.LTXError
	if err == nil || !errors.As(err, &ltxErr) || !ltxErr.IsAutoRecoverable() {
		return err
	}
	for _, level := range []int{0, litestream.SnapshotLevel} {
		itr, lerr := db.Replica.Client.LTXFiles(ctx, level, 0, false)
		if lerr != nil {
			return errors.Join(err, lerr)
		}
		infos, lerr := ltx.SliceFileIterator(itr)
		if lerr != nil {
			return errors.Join(err, lerr)
		}
		if len(infos) > 0 {
			return err // the target holds this file: not a state to drop
		}
	}
	r.log.Warn("the target holds nothing of a file whose local replication state is older: starting it afresh", "file", name)
	if rerr := db.ResetLocalState(ctx); rerr != nil {
		return errors.Join(err, rerr)
	}
	lineage, lerr := newFileLineage(r.data, name)
	if lerr != nil {
		return errors.Join(err, lerr)
	}
	r.mu.Lock()
	r.lineages[name] = lineage
	r.mu.Unlock()
	return r.syncStages(ctx, name, db)
}

// syncStages copies a file's committed changes to its local state, then to the folder. Between
// the two, the platform file's sync makes every file that Files names join and reach the folder
// (see join): the platform state copied is the one read in the first stage, and every directory
// it lists has its files on disk by then (a directory is registered once its files are in place),
// so the folder holds them before it holds a platform that names them.
func (r *Replicator) syncStages(ctx context.Context, name string, db *litestream.DB) error {
	if err := db.Sync(ctx); err != nil {
		return fmt.Errorf("db sync: %w", err)
	}
	if name == dirsvc.PlatformFile && r.files != nil {
		if err := r.join(ctx); err != nil {
			return fmt.Errorf("replicate the files the platform names first: %w", err)
		}
	}
	if err := db.Replica.Sync(ctx); err != nil {
		return fmt.Errorf("replica sync: %w", err)
	}
	return nil
}

// join makes the replicated files those Files names: each new one joins and is synced to the
// folder, each the folder has never held a position of is synced again, and each no longer named
// stops. It fails when a file named is not in the folder: the platform's changes wait for it.
func (r *Replicator) join(ctx context.Context) error {
	names, err := r.files(ctx)
	if err != nil {
		return fmt.Errorf("list the files to replicate: %w", err)
	}
	var errs []error
	for _, name := range names {
		if name == dirsvc.PlatformFile {
			continue
		}
		added, err := r.Add(ctx, name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if added {
			r.log.Info("replicating", "file", name)
		}
		r.mu.Lock()
		db, copied := r.dbs[name], r.copied[name]
		r.mu.Unlock()
		if !copied && db != nil {
			if err := r.sync(ctx, name, db); err != nil {
				errs = append(errs, fmt.Errorf("sync %s: %w", name, err))
			}
		}
	}
	// A directory dropped since (its first import failed) is replicated no more.
	for _, name := range r.Names() {
		if name != dirsvc.PlatformFile && !slices.Contains(names, name) {
			if err := r.Remove(ctx, name); err != nil {
				r.log.Error("stop replicating a dropped file", "file", name, "err", err)
			} else {
				r.log.Info("no longer replicating", "file", name)
			}
		}
	}
	return errors.Join(errs...)
}

// Lineage returns the lineage of a replicated file's history (see fileLineage), or "" for a file
// not replicated.
func (r *Replicator) Lineage(name string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lineages[name]
}

// Positions returns each file's position: the Litestream transaction ID of its latest change the
// target holds (one ID covers every commit between two syncs).
func (r *Replicator) Positions() map[string]uint64 {
	out := map[string]uint64{}
	for name, db := range r.snapshot() {
		out[name] = uint64(db.Replica.Pos().TXID)
	}
	return out
}

// positions returns the position of every file keep keeps, in name order, and a version that
// changes when any of those positions does.
func (r *Replicator) positions(keep func(name string) bool) ([]FilePosition, string) {
	pos := r.Positions()
	files := make([]FilePosition, 0, len(pos))
	h := fnv.New64a()
	r.mu.Lock()
	lineages := maps.Clone(r.lineages)
	r.mu.Unlock()
	for _, name := range r.Names() {
		if !keep(name) {
			continue
		}
		files = append(files, FilePosition{name, pos[name], lineages[name]})
		fmt.Fprintf(h, "%s\x00%d\x00%s\n", name, pos[name], lineages[name])
	}
	return files, strconv.FormatUint(h.Sum64(), 36)
}

// position returns the position of the file named name, 0 when it is not replicated.
func (r *Replicator) position(name string) uint64 {
	r.mu.Lock()
	db := r.dbs[name]
	r.mu.Unlock()
	if db == nil {
		return 0
	}
	return uint64(db.Replica.Pos().TXID)
}

// replicates reports whether the file named name is replicated.
func (r *Replicator) replicates(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.dbs[name]
	return ok
}

// Names returns the replicated files' names, in order.
func (r *Replicator) Names() []string {
	var out []string
	for name := range r.snapshot() {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

func (r *Replicator) snapshot() map[string]*litestream.DB {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]*litestream.DB, len(r.dbs))
	for k, v := range r.dbs {
		out[k] = v
	}
	return out
}

// Close syncs every file to the folder a last time (with Options.Files, those created since the
// last look too, before the platform file), copies what the bucket lacks for as long as ctx
// allows, and stops. It reports what the folder or the bucket still lacks.
func (r *Replicator) Close(ctx context.Context) error {
	r.stop()
	<-r.watching
	err := r.Sync(ctx)
	if r.files != nil {
		// The platform file is closed first, its client writing no more: its last sync would copy
		// what another process committed since Sync, maybe a directory registered since, which the
		// folder lacks. The next start copies that.
		r.closing.Store(true)
		path := dirsvc.FilePath(r.data, dirsvc.PlatformFile)
		if db := r.store.FindDB(path); db != nil {
			db.ShutdownSyncTimeout = 0 // one try: the client refuses
			if cerr := r.store.UnregisterDB(ctx, path); cerr != nil && !errors.Is(cerr, errClosing) {
				err = errors.Join(err, cerr)
			}
		}
	}
	err = errors.Join(err, r.store.Close(ctx))
	if r.mirror != nil {
		err = errors.Join(err, r.mirror.close(ctx))
	}
	return err
}

// gated is the platform file's replica client, which writes nothing once Close is done with the
// file (see Close).
type gated struct {
	litestream.ReplicaClient
	closed *atomic.Bool
}

// errClosing is a write of the platform file's client after Close copied it.
var errClosing = errors.New("replicate: the platform file is no longer replicated: Close copied it last")

func (c *gated) WriteLTXFile(ctx context.Context, level int, minTXID, maxTXID ltx.TXID, rd io.Reader) (*ltx.FileInfo, error) {
	if c.closed.Load() {
		return nil, errClosing
	}
	return c.ReplicaClient.WriteLTXFile(ctx, level, minTXID, maxTXID, rd)
}
