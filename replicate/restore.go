package replicate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/benbjohnson/litestream"
	"github.com/dirsvc/dirsvc"
	"github.com/superfly/ltx"
)

// At is the point a restore goes back to: the latest state (the zero At), a position, or the last
// state replicated before a time.
type At struct {
	TXID uint64
	Time time.Time
	// Tolerance bounds, for a restore at a time, how much earlier than asked the point restored may
	// be when the target cannot tell whether changes in between happened before the time (they were
	// compacted into one file with later ones): such a restore fails with ErrTooCoarse. Zero means
	// DefaultTolerance; a negative value accepts any earlier point.
	Tolerance time.Duration
}

// DefaultTolerance is how much earlier than asked a restore at a time may land without being
// refused: the interval of Litestream's first compaction level, which is how fine the history is
// once level-0 files have been pruned (after 5 minutes).
const DefaultTolerance = time.Minute

// Restored is the point a restore brought a file to: its position and the time of its last change
// there. Exact is false when the target cannot tell whether changes after the position happened
// before the time asked for (they were compacted with later ones); Next is then when the first
// file holding them was written.
type Restored struct {
	Name  string
	TXID  uint64
	Time  time.Time
	Exact bool
	Next  time.Time
}

var (
	// ErrNotReplicated is the answer for a file the target holds nothing of (or nothing at the point).
	ErrNotReplicated = errors.New("replicate: the target holds no copy of this file at that point")
	// ErrTooCoarse is the answer for a restore at a time that could only land earlier than asked by
	// more than the tolerance, with changes in between it cannot place.
	ErrTooCoarse = errors.New("replicate: the target can restore the file only to a point earlier than asked")
)

// Restore writes the file named name, as the target holds it at the point, to the data folder, and
// returns the point restored. The file must not exist there: a restore never overwrites. Every page
// is checked (PRAGMA integrity_check) before the file takes its place. With both a folder and a
// bucket, the one holding the later position is read.
func Restore(ctx context.Context, data string, target Target, name string, at At) (Restored, error) {
	if err := target.Valid(); err != nil {
		return Restored{}, err
	}
	if !ValidName(name) {
		return Restored{}, fmt.Errorf("replicate: %q is not a replicated file", name)
	}
	c, err := target.client(ctx, name)
	if err != nil {
		return Restored{}, err
	}
	return restore(ctx, data, c, name, at)
}

func restore(ctx context.Context, data string, c litestream.ReplicaClient, name string, at At) (Restored, error) {
	if !ValidName(name) {
		return Restored{}, fmt.Errorf("replicate: %q is not a replicated file", name)
	}
	if at.TXID != 0 && !at.Time.IsZero() {
		return Restored{}, errors.New("replicate: restore to a position or to a time, not both")
	}
	out := dirsvc.FilePath(data, name)
	if _, err := os.Stat(out); err == nil {
		return Restored{}, fmt.Errorf("replicate: %s exists: restore into a data folder that does not hold it", out)
	}
	point, err := restorePoint(ctx, c, name, at)
	if err != nil {
		return point, err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o700); err != nil {
		return point, err
	}
	opt := litestream.NewRestoreOptions()
	opt.OutputPath = out
	opt.TXID = ltx.TXID(point.TXID) // the point planned, whatever is replicated meanwhile
	opt.IntegrityCheck = litestream.IntegrityCheckFull
	if err := litestream.NewReplicaWithClient(nil, c).Restore(ctx, opt); err != nil {
		if errors.Is(err, litestream.ErrTxNotAvailable) {
			return point, fmt.Errorf("restore %s: %w", name, ErrNotReplicated)
		}
		return point, fmt.Errorf("restore %s: %w", name, err)
	}
	// Litestream creates the restored file with the default mode (0644 less the umask): a data file
	// is for the service's user alone.
	if err := os.Chmod(out, 0o600); err != nil {
		return point, fmt.Errorf("restore %s: %w", name, err)
	}
	return point, nil
}

// restorePoint plans the restore and tells which point it reaches; at a time, it refuses a point
// earlier than asked by more than the tolerance when the changes in between cannot be placed.
func restorePoint(ctx context.Context, c litestream.ReplicaClient, name string, at At) (Restored, error) {
	point := Restored{Name: name, Exact: true}
	plan, err := litestream.CalcRestorePlan(ctx, c, ltx.TXID(at.TXID), at.Time, slogDiscard)
	if errors.Is(err, litestream.ErrTxNotAvailable) {
		return point, fmt.Errorf("restore %s: %w", name, ErrNotReplicated)
	} else if err != nil {
		return point, fmt.Errorf("restore %s: plan: %w", name, err)
	}
	last := plan[len(plan)-1]
	point.TXID, point.Time = uint64(last.MaxTXID), last.CreatedAt
	if at.TXID != 0 {
		point.TXID = min(point.TXID, at.TXID)
	}
	if at.Time.IsZero() {
		return point, nil
	}
	// The changes right after the point: in a level-0 file they are one transaction, written after
	// the time asked for (else the plan would hold it); in a compacted file, some may be earlier.
	all, err := listLevels(ctx, c)
	if err != nil {
		return point, fmt.Errorf("restore %s: %w", name, err)
	}
	var next *ltx.FileInfo
	for k, info := range all {
		if k.min <= last.MaxTXID+1 && k.max > last.MaxTXID && (next == nil || k.level == 0 && next.Level != 0) {
			next = info
		}
	}
	if next == nil || next.Level == 0 {
		return point, nil
	}
	point.Exact, point.Next = false, next.CreatedAt
	tolerance := at.Tolerance
	if tolerance == 0 {
		tolerance = DefaultTolerance
	}
	if tolerance > 0 && at.Time.Sub(point.Time) > tolerance {
		return point, fmt.Errorf("restore %s at %s: %w: the closest is position %d of %s (%s earlier); the changes after it were compacted into a file written %s: %w",
			name, at.Time.Format(time.RFC3339), ErrTooCoarse, point.TXID, point.Time.Format(time.RFC3339),
			at.Time.Sub(point.Time).Round(time.Second), next.CreatedAt.Format(time.RFC3339), errTolerance)
	}
	return point, nil
}

var slogDiscard = slog.New(slog.DiscardHandler)

// errTolerance says what to do about ErrTooCoarse.
var errTolerance = errors.New("restore at a later time, or accept the earlier point with a larger tolerance")
