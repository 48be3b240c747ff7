package replicate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/benbjohnson/litestream"
	"github.com/superfly/ltx"
)

// At is the point a restore goes back to: the latest state (the zero At), a position, or the last
// state replicated before a time.
type At struct {
	TXID uint64
	Time time.Time
}

// ErrNotReplicated is the answer for a file the target holds nothing of (or nothing at the point).
var ErrNotReplicated = errors.New("replicate: the target holds no copy of this file at that point")

// Restore writes the file named name, as the target holds it at the point, to the data folder. The
// file must not exist there: a restore never overwrites. Every page is checked (PRAGMA
// integrity_check) before the file takes its place.
func Restore(ctx context.Context, data string, target Target, name string, at At) error {
	if err := target.Valid(); err != nil {
		return err
	}
	c, err := target.client(name)
	if err != nil {
		return err
	}
	return restore(ctx, data, c, name, at)
}

func restore(ctx context.Context, data string, c litestream.ReplicaClient, name string, at At) error {
	if !ValidName(name) {
		return fmt.Errorf("replicate: %q is not a replicated file", name)
	}
	if at.TXID != 0 && !at.Time.IsZero() {
		return errors.New("replicate: restore to a position or to a time, not both")
	}
	out := FilePath(data, name)
	if _, err := os.Stat(out); err == nil {
		return fmt.Errorf("replicate: %s exists: restore into a data folder that does not hold it", out)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	opt := litestream.NewRestoreOptions()
	opt.OutputPath = out
	opt.TXID = ltx.TXID(at.TXID)
	opt.Timestamp = at.Time
	opt.IntegrityCheck = litestream.IntegrityCheckFull
	err := litestream.NewReplicaWithClient(nil, c).Restore(ctx, opt)
	if errors.Is(err, litestream.ErrTxNotAvailable) {
		return fmt.Errorf("restore %s: %w", name, ErrNotReplicated)
	} else if err != nil {
		return fmt.Errorf("restore %s: %w", name, err)
	}
	return nil
}
