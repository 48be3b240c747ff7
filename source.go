package dirsvc

import (
	"context"
	"time"
)

// Snapshot is a whole directory as imported: its description, taxonomy, collections and records.
type Snapshot struct {
	Directory   Directory
	Taxonomy    Taxonomy
	Collections []Collection
	Records     []Record
}

// ImportStats counts what an import did.
type ImportStats struct {
	Created   int `json:"created"`
	Updated   int `json:"updated"`
	Unchanged int `json:"unchanged"`
	Removed   int `json:"removed"`
	Events    int `json:"events"`
	// Steps are how long the write's steps took, in order, for logs and benchmarks: no answer holds
	// them.
	Steps []Step `json:"-"`
}

// Step is a step of a write and how long it took.
type Step struct {
	Name string
	Took time.Duration
}

// Transition is a lifecycle operation on one record: close, remove, merge into a survivor, reduce
// visibility to some audiences, take down, or restore to live.
type Transition struct {
	To        State
	Survivor  string    // for StateMerged
	VisibleTo Audiences // for StateVisibilityReduced: who may still see the record
}

// Event types of the change log. The last four are the tombstones of section 6.1.
const (
	EventCreated           = "created"
	EventUpdated           = "updated"
	EventClosed            = "closed"
	EventDeleted           = "deleted"
	EventMerged            = "merged"
	EventVisibilityReduced = "visibility_reduced"
)

// DirectoryWriter is the write side of one directory, on the primary.
type DirectoryWriter interface {
	// Import makes the directory equal to the snapshot: new records are created, changed ones get a
	// new version, records the snapshot does not hold are removed. It changes nothing and writes no
	// event when the snapshot equals what is stored, and nothing at all when it fails.
	Import(ctx context.Context, snap *Snapshot) (ImportStats, error)
	// Update replaces one record (or adds it) with the given canonical form.
	Update(ctx context.Context, rec Record) (ImportStats, error)
	// Transition applies a lifecycle operation to a record.
	Transition(ctx context.Context, publicID string, t Transition) (ImportStats, error)
	// Record returns the canonical form of a record, with every detail.
	Source(ctx context.Context, publicID string) (Record, error)
}

// DirectoryStore is the primary's store of directories.
type DirectoryStore interface {
	Catalog
	// Writer returns the write side of a directory; ErrNotFound when there is none.
	Writer(ctx context.Context, slug string) (DirectoryWriter, error)
	// Create registers a new, empty directory; a conflict when the slug is taken.
	Create(ctx context.Context, slug string) (DirectoryWriter, error)
	// ImportNew creates a directory by its first import, as Create then DirectoryWriter.Import
	// would, except that no reader sees the directory before the import has committed, and an
	// import that fails leaves nothing behind. A directory of the slug that another process makes
	// meanwhile is imported into instead. The store holds snap only until it has written the
	// records: a caller that lets go of snap as it hands it over leaves that memory to the rest of
	// the write.
	ImportNew(ctx context.Context, snap *Snapshot) (ImportStats, error)
	// Drop deletes a directory and its files.
	Drop(ctx context.Context, slug string) error
}
