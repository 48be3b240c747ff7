package dirsvc

import (
	"context"
	"time"
)

// RetentionStart returns the time before which the change log prunes events at now under the
// default retention of section 8 (13 calendar months); a cursor older than the oldest event kept
// answers 410.
func RetentionStart(now time.Time) time.Time { return now.AddDate(0, -13, 0) }

// Change-feed limits of section 8.
const (
	DefaultFeedLimit = 100
	MaxFeedLimit     = 500
)

// Tombstone reports whether an event type tells a consumer to stop showing the record.
func Tombstone(eventType string) bool {
	switch eventType {
	case EventClosed, EventDeleted, EventMerged, EventVisibilityReduced:
		return true
	}
	return false
}

// FeedReader is who reads a change feed: the viewer (tier and narrowing) and whether practitioners
// in bulk are theirs (a client with practitioners:read, or anyone where the directory lets anyone
// list practitioners; section 5.4 rules 3 and 4). A webhook endpoint reads as the client that
// registered it.
type FeedReader struct {
	Viewer        Viewer
	Practitioners bool
}

// ChangeQuery asks for the events after a position of a directory's change log.
type ChangeQuery struct {
	// After is the position (sequence) after which events are read.
	After int64
	// Oldest reads from the oldest event retained, whatever After.
	Oldest bool
	// Kinds keeps only events of these record kinds; empty keeps every kind.
	Kinds []Kind
	// Limit is the most events returned.
	Limit int
	// Expand asks for each event's record as the reader sees it now (Change.View).
	Expand bool
}

// Change is one event of a directory's change log as one reader receives it: projected for its
// tier and narrowing (a record that left its sight is a visibility_reduced tombstone).
type Change struct {
	Seq           int64
	Kind          Kind
	PublicID      string
	Version       int64
	LocalRevision int64
	EventType     string
	Survivor      string // merged tombstones
	Origin        string // mirrored records
	At            time.Time
	// View is, with ChangeQuery.Expand, the record's stored view as the reader sees it now; nil for
	// a tombstone and for a record the reader no longer sees.
	View []byte
}

// ChangePage is a page of a reader's change feed. Next is the position the following page starts
// after: the last event returned, or, when the page is not full, the last event the read looked
// at (events for other readers are skipped, a bounded number at a time, so a page may be short or
// empty while more follow). More reports whether the log holds events after Next.
type ChangePage struct {
	Changes []Change
	Next    int64
	More    bool
}

// ChangeLog is the read side of a directory's change log.
type ChangeLog interface {
	// Changes returns the reader's events after q.After, in log order; an error of code EGone when q.After
	// lies below the oldest position retained.
	Changes(ctx context.Context, r FeedReader, q ChangeQuery) (ChangePage, error)
}
