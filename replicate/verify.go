package replicate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/benbjohnson/litestream"
	"github.com/superfly/ltx"
)

// A replica folder is a disk like any other: a bit flipped in one of its LTX files (bit rot, a
// failing disk) would go unnoticed until a restore or an edge read it, and then stop them. So the
// primary reads its folder's LTX files back and verifies each (its checksum, and that it decodes):
// every file once soon after it is written, and the older ones again in turn, within a bound of
// bytes read each time, so that a large folder costs a steady, small amount of reading. A damaged
// file is logged, reported on the health report (Damaged), and passed: the primary writes a
// snapshot of its database past it, from which restores and edges (which bootstrap afresh after
// failed verifications, see heal.go) start instead.

// VerifyOptions tune the checks of the replica folder's LTX files.
type VerifyOptions struct {
	// Every is how often the folder is checked; zero means DefaultVerifyEvery, a negative value
	// never (VerifyReplicas checks on demand).
	Every time.Duration
	// Bytes bounds what one check reads of the folder (at least one file is read); zero means
	// DefaultVerifyBytes.
	Bytes int64
}

// DefaultVerifyEvery is how often a primary checks its replica folder's LTX files.
const DefaultVerifyEvery = time.Minute

// DefaultVerifyBytes bounds what one check of the replica folder reads: about a second of a disk's
// reading, once a minute.
const DefaultVerifyBytes = 64 << 20

// DamagedFile is an LTX file of the replica folder that failed verification.
type DamagedFile struct {
	Name  string    // the replicated file, e.g. "dirs/demo/directory"
	LTX   string    // the LTX file in the file's replica: "<level>/<min>-<max>.ltx"
	Found time.Time // when it was found damaged
	// SnapshotPast is the position of a snapshot the folder holds past the damaged file (written
	// when it was found, unless there was one): restores and edges pass the damaged file from
	// it. Zero until there is one.
	SnapshotPast uint64
}

// replicaChecks is the state of a Replicator's checks of its folder. The zero value checks with the
// defaults.
type replicaChecks struct {
	opt     VerifyOptions
	running sync.Mutex // one check at a time

	mu    sync.Mutex
	files map[checkKey]*checked
}

// checkKey names one LTX file of one replicated file.
type checkKey struct {
	name string
	key  fileKey
}

// checked is what the checks know of one LTX file.
type checked struct {
	size    int64
	at      time.Time    // when it was last read and verified
	damaged *DamagedFile // nil while it verifies
}

// configure sets the options of the checks (Options.Verify).
func (c *replicaChecks) configure(opt VerifyOptions) {
	if opt.Every == 0 {
		opt.Every = DefaultVerifyEvery
	}
	if opt.Bytes <= 0 {
		opt.Bytes = DefaultVerifyBytes
	}
	c.opt = opt
}

// verifying checks the folder every Options.Verify.Every until ctx ends, and returns a function that
// waits for the checks to end (the Replicator's watcher runs them, and Close waits for it).
func (r *Replicator) verifying(ctx context.Context) (wait func()) {
	every := r.checks.opt.Every
	if every <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if err := r.VerifyReplicas(ctx); err != nil && ctx.Err() == nil {
				r.log.Error("check the replica folder's files", "err", err)
			}
		}
	}()
	return func() { <-done }
}

// VerifyReplicas checks the replica folder's LTX files once: each file not checked before (new, or
// rewritten), then those found damaged, then the rest, longest unchecked first, until it has read
// Options.Verify.Bytes. A damaged file is logged and reported (Damaged), and a snapshot is written
// past it unless the folder holds one. It fails only when the folder cannot be listed or read.
func (r *Replicator) VerifyReplicas(ctx context.Context) error {
	r.checks.running.Lock()
	defer r.checks.running.Unlock()
	todo, snapshots, err := r.checksDue(ctx)
	spent, budget := int64(0), r.checks.opt.Bytes
	if budget <= 0 {
		budget = DefaultVerifyBytes
	}
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	for i, f := range todo {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if i > 0 && spent >= budget {
			break
		}
		spent += f.info.Size
		if err := r.check(ctx, f, snapshots); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// due is an LTX file a check reads.
type due struct {
	checkKey
	info  *ltx.FileInfo
	fresh bool
	prev  checked
}

// checksDue lists the folder's LTX files, forgets those gone, and returns those to read in order,
// with the newest snapshot position of each replicated file.
func (r *Replicator) checksDue(ctx context.Context) ([]due, map[string]ltx.TXID, error) {
	present := map[checkKey]*ltx.FileInfo{}
	snapshots := map[string]ltx.TXID{}
	var errs []error
	for _, name := range r.Names() {
		c, err := r.target.folderClient(name)
		if err != nil {
			return nil, nil, err
		}
		infos, err := listLevels(ctx, c)
		if err != nil {
			errs = append(errs, fmt.Errorf("list %s in the replica folder: %w", name, err))
			continue
		}
		for k, info := range infos {
			present[checkKey{name, k}] = info
			if k.level == litestream.SnapshotLevel {
				snapshots[name] = max(snapshots[name], k.max)
			}
		}
	}
	var todo []due
	r.checks.mu.Lock()
	if r.checks.files == nil {
		r.checks.files = map[checkKey]*checked{}
	}
	for k, f := range r.checks.files {
		if present[k] == nil {
			if f.damaged != nil {
				r.log.Info("a damaged file of the replica folder is gone (compacted or past retention)", "file", k.name, "ltx", f.damaged.LTX)
			}
			delete(r.checks.files, k)
		}
	}
	for k, info := range present {
		prev := r.checks.files[k]
		d := due{checkKey: k, info: info, fresh: prev == nil || prev.size != info.Size}
		if prev != nil {
			d.prev = *prev
		}
		todo = append(todo, d)
	}
	r.checks.mu.Unlock()
	slices.SortFunc(todo, func(a, b due) int {
		switch {
		case a.fresh != b.fresh:
			return boolFirst(a.fresh)
		case (a.prev.damaged != nil) != (b.prev.damaged != nil):
			return boolFirst(a.prev.damaged != nil)
		case !a.fresh && !a.prev.at.Equal(b.prev.at):
			return a.prev.at.Compare(b.prev.at)
		}
		return cmp.Or(cmp.Compare(a.name, b.name), cmp.Compare(a.key.level, b.key.level), cmp.Compare(a.key.min, b.key.min))
	})
	return todo, snapshots, errors.Join(errs...)
}

// boolFirst orders a true before a false.
func boolFirst(a bool) int {
	if a {
		return -1
	}
	return 1
}

// check reads one LTX file and records whether it verifies; a damaged one gets a snapshot past it
// (snapshots holds the newest the folder holds of each file).
func (r *Replicator) check(ctx context.Context, f due, snapshots map[string]ltx.TXID) error {
	c, err := r.target.folderClient(f.name)
	if err != nil {
		return err
	}
	ltxName := fmt.Sprintf("%d/%s", f.key.level, ltx.FormatFilename(f.key.min, f.key.max))
	damage, err := verifyLTX(ctx, c, f.info)
	if errors.Is(err, os.ErrNotExist) {
		return nil // compacted away since it was listed
	} else if err != nil {
		return fmt.Errorf("read %s %s in the replica folder: %w", f.name, ltxName, err)
	}
	now := time.Now()
	r.checks.mu.Lock()
	st := &checked{size: f.info.Size, at: now, damaged: f.prev.damaged}
	if damage == nil {
		if st.damaged != nil {
			r.log.Info("a damaged file of the replica folder verifies again (it was written afresh)", "file", f.name, "ltx", ltxName)
		}
		st.damaged = nil
	} else if st.damaged == nil {
		r.log.Error("a file of the replica folder fails verification: its disk gave back other bytes than were written (check the disk); writing a snapshot past it so that restores and edges pass it",
			"file", f.name, "ltx", ltxName, "err", damage)
		st.damaged = &DamagedFile{Name: f.name, LTX: ltxName, Found: now}
	} else {
		d := *st.damaged
		st.damaged = &d
	}
	r.checks.files[f.checkKey] = st
	r.checks.mu.Unlock()
	if st.damaged == nil || st.damaged.SnapshotPast != 0 {
		return nil
	}
	return r.snapshotPast(ctx, f.checkKey, snapshots)
}

// snapshotPast makes sure the folder holds a snapshot of a file past its damaged LTX file k: the
// newest it holds (snapshots, by file) when it is past, else a new one.
func (r *Replicator) snapshotPast(ctx context.Context, k checkKey, snapshots map[string]ltx.TXID) error {
	pos := snapshots[k.name]
	if pos < k.key.max || k.key.level == litestream.SnapshotLevel && pos == k.key.max {
		db := r.snapshot()[k.name]
		if db == nil {
			return nil // no longer replicated
		}
		info, err := db.Snapshot(ctx)
		if err != nil {
			return fmt.Errorf("write a snapshot of %s past a damaged file: %w", k.name, err)
		}
		pos = info.MaxTXID
		snapshots[k.name] = pos
		r.log.Info("wrote a snapshot past a damaged file of the replica folder", "file", k.name, "position", uint64(pos))
	}
	r.checks.mu.Lock()
	if st := r.checks.files[k]; st != nil && st.damaged != nil {
		d := *st.damaged
		d.SnapshotPast = uint64(pos)
		st.damaged = &d
	}
	r.checks.mu.Unlock()
	return nil
}

// Damaged returns the LTX files of the replica folder found damaged and still there, by file.
func (r *Replicator) Damaged() []DamagedFile {
	r.checks.mu.Lock()
	defer r.checks.mu.Unlock()
	var out []DamagedFile
	for _, f := range r.checks.files {
		if f.damaged != nil {
			out = append(out, *f.damaged)
		}
	}
	slices.SortFunc(out, func(a, b DamagedFile) int { return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.LTX, b.LTX)) })
	return out
}

// verifyLTX reads one LTX file whole and verifies it: damage is why it does not verify (nil when
// it does); err is a failure to read it.
func verifyLTX(ctx context.Context, c litestream.ReplicaClient, info *ltx.FileInfo) (damage, err error) {
	rc, err := c.OpenLTXFile(ctx, info.Level, info.MinTXID, info.MaxTXID, 0, 0)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	r := &readErr{r: rc}
	if err := ltx.NewDecoder(r).Verify(); err != nil {
		if r.err != nil {
			return nil, r.err
		}
		return err, nil
	}
	return nil, nil
}

// readErr remembers the error of a read that failed (not the end of the file).
type readErr struct {
	r   io.Reader
	err error
}

func (r *readErr) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF {
		r.err = err
	}
	return n, err
}
