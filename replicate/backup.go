package replicate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"

	"github.com/benbjohnson/litestream"
)

// Replicator replicates the files of a data folder with Litestream: each file is a Litestream
// database with one replica (the target's client for its name), all in one store that compacts the
// replica's files by level.
//
// Litestream keeps its own connection and a long read transaction on each file, and runs the
// checkpoints: the service never checkpoints a replicated file itself. Close the service's own
// connections to a file before the Replicator.
type Replicator struct {
	target Target
	data   string
	store  *litestream.Store
	log    *slog.Logger

	mu  sync.Mutex
	dbs map[string]*litestream.DB
}

// Open starts replicating the named files of the data folder to the target.
func Open(ctx context.Context, data string, target Target, names []string, log *slog.Logger) (*Replicator, error) {
	if err := target.Valid(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	r := &Replicator{target: target, data: data, log: log, dbs: map[string]*litestream.DB{}}
	var dbs []*litestream.DB
	for _, name := range names {
		db, err := r.newDB(name, log)
		if err != nil {
			return nil, err
		}
		if err := db.Replica.Client.Init(ctx); err != nil {
			return nil, fmt.Errorf("replicate %s: %w", name, err)
		}
		dbs = append(dbs, db)
	}
	r.store = litestream.NewStore(dbs, litestream.DefaultCompactionLevels)
	if err := r.store.Open(ctx); err != nil {
		return nil, fmt.Errorf("replicate: %w", err)
	}
	return r, nil
}

func (r *Replicator) newDB(name string, log *slog.Logger) (*litestream.DB, error) {
	c, err := r.target.client(name)
	if err != nil {
		return nil, err
	}
	db := litestream.NewDB(FilePath(r.data, name))
	db.Logger = log.With("file", name)
	db.Replica = litestream.NewReplicaWithClient(db, c)
	r.mu.Lock()
	r.dbs[name] = db
	r.mu.Unlock()
	return db, nil
}

// Add starts replicating one more file (a directory created while running) and reports whether it
// was not replicated before.
func (r *Replicator) Add(ctx context.Context, name string) (bool, error) {
	r.mu.Lock()
	_, ok := r.dbs[name]
	r.mu.Unlock()
	if ok {
		return false, nil
	}
	db, err := r.newDB(name, r.log)
	if err != nil {
		return false, err
	}
	if err := db.Replica.Client.Init(ctx); err != nil {
		r.mu.Lock()
		delete(r.dbs, name)
		r.mu.Unlock()
		return false, fmt.Errorf("replicate %s: %w", name, err)
	}
	if err := r.store.RegisterDB(db); err != nil {
		r.mu.Lock()
		delete(r.dbs, name)
		r.mu.Unlock()
		return false, fmt.Errorf("replicate %s: %w", name, err)
	}
	return true, nil
}

// Remove stops replicating a file (a directory dropped after its first import failed); what the
// target holds of it stays there.
func (r *Replicator) Remove(ctx context.Context, name string) error {
	r.mu.Lock()
	_, ok := r.dbs[name]
	delete(r.dbs, name)
	r.mu.Unlock()
	if !ok {
		return nil
	}
	if err := r.store.UnregisterDB(ctx, FilePath(r.data, name)); err != nil {
		return fmt.Errorf("stop replicating %s: %w", name, err)
	}
	return nil
}

// Sync copies every file's committed changes to the replica and waits until they are there.
func (r *Replicator) Sync(ctx context.Context) error {
	var errs []error
	for name, db := range r.snapshot() {
		if err := db.SyncAndWait(ctx); err != nil {
			errs = append(errs, fmt.Errorf("sync %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// Positions returns each file's position: the Litestream transaction ID of its latest synced change
// (one ID covers every commit between two syncs).
func (r *Replicator) Positions() (map[string]uint64, error) {
	out := map[string]uint64{}
	for name, db := range r.snapshot() {
		pos, err := db.Pos()
		if err != nil {
			return nil, fmt.Errorf("position of %s: %w", name, err)
		}
		out[name] = uint64(pos.TXID)
	}
	return out, nil
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

// Close syncs every file a last time and stops.
func (r *Replicator) Close(ctx context.Context) error { return r.store.Close(ctx) }
