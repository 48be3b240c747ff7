package replicate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/benbjohnson/litestream"
	"github.com/superfly/ltx"
)

// An LTX file that fails verification (bit rot in the primary's replica folder or in the bucket, a
// disk that returns other bytes than were written) would stop an edge's copy for good: it is fetched
// again each round and fails each time. After healAfter such failures in a row the edge bootstraps
// the directory afresh from the newest point whose files all verify (a snapshot the primary writes
// past a damaged file, or compacted files that cover it), then follows on from there. It serves its
// copy meanwhile, and replaces it only by a newer one: until the primary's files offer a good point
// past the copy, each attempt leaves the copy as it is, and the next waits for twice as many
// failures (up to healBackoffMax doublings), so a lasting fault costs a bounded number of attempts.

// healAfter is how many failed verifications of a directory's LTX files in a row make the edge
// bootstrap it afresh: a file damaged only on its way is fetched again a few times first.
const healAfter = 3

// healBackoffMax bounds the doublings of healAfter after attempts that found no good point.
const healBackoffMax = 4

// maxHealSteps bounds how many points, each earlier than the last, a bootstrap tries when the files
// of the newer ones fail verification.
const maxHealSteps = 4

// corruptError is an LTX file that failed verification.
type corruptError struct {
	file string // its name, e.g. 0000000000000005-0000000000000005.ltx
	err  error
}

func (e *corruptError) Error() string { return fmt.Sprintf("verify %s: %v", e.file, e.err) }
func (e *corruptError) Unwrap() error { return e.err }

// errNoGoodPoint means the files a bootstrap would restore fail verification at every point tried.
var errNoGoodPoint = errors.New("the replicated files fail verification at every point tried")

// errNotPast means the newest point whose files verify is not past the copy: the copy stays.
var errNotPast = errors.New("no point past the copy whose files verify")

// healed records what a failed verification of a copy's files means: it counts the failure, and
// once there were enough in a row, bootstraps the copy afresh (see above). It returns the error to
// log when the copy was not brought forward.
func (f *Follower) healed(ctx context.Context, fl *followed, fp FilePosition, c litestream.ReplicaClient, bad *corruptError) error {
	f.mu.Lock()
	fl.failedVerifications++
	fl.failures++
	due := fl.failures >= healAfter<<min(fl.healAttempts, healBackoffMax)
	failures := fl.failures
	if due {
		fl.failures = 0
		fl.healAttempts++
	}
	f.mu.Unlock()
	if !due {
		return bad
	}
	past := f.position(fl).TXID
	f.cfg.Log.Error("an LTX file of this directory failed verification again and again: bootstrapping it afresh from the newest point whose files verify, serving the copy meanwhile",
		"directory", fl.slug, "file", bad.file, "failures", failures, "copy", uint64(past), "err", bad.err)
	err := f.bootstrapPast(ctx, fl.slug, fp.Lineage, c, past)
	if errors.Is(err, errNotPast) || errors.Is(err, errNoGoodPoint) {
		f.cfg.Log.Warn("no good point past the copy yet (the primary writes one when it finds the damaged file): serving the copy, trying again later",
			"directory", fl.slug, "copy", uint64(past))
		return nil
	} else if err != nil {
		return fmt.Errorf("bootstrap afresh over a damaged LTX file: %w", err)
	}
	f.mu.Lock()
	fl.heals++
	fl.healAttempts = 0
	f.mu.Unlock()
	f.cfg.Log.Info("healed a directory: its copy was bootstrapped afresh past the damaged file", "directory", fl.slug,
		"position", uint64(f.position(fl).TXID))
	return nil
}

// verified notes that a copy moved on: its failed verifications in a row are forgotten.
func (f *Follower) verified(fl *followed) {
	f.mu.Lock()
	fl.failures, fl.healAttempts = 0, 0
	f.mu.Unlock()
}

// restoreGood restores into fresh (which must not exist) the newest point c holds whose files all
// verify, past the position past (0: any), and returns that point. When a restore fails, it verifies
// the files of the restore one by one: a damaged one makes it try the latest point before that file;
// when none is damaged, the restore's error is returned (the primary away, a transfer cut short).
// It returns litestream.ErrTxNotAvailable when c holds nothing, errNotPast when the newest good point
// is not past past, and errNoGoodPoint when maxHealSteps points all fail.
func (f *Follower) restoreGood(ctx context.Context, slug string, c litestream.ReplicaClient, fresh string, past ltx.TXID) (ltx.Pos, error) {
	var (
		target   ltx.TXID // 0: the latest
		fallback ltx.TXID // the point before the damaged file's whole range, if target is not held
	)
	for range maxHealSteps {
		plan, err := litestream.CalcRestorePlan(ctx, c, target, time.Time{}, f.cfg.Log)
		if errors.Is(err, litestream.ErrTxNotAvailable) && target != 0 && fallback != 0 {
			target, fallback = fallback, 0
			continue
		} else if errors.Is(err, litestream.ErrTxNotAvailable) && target != 0 {
			return ltx.Pos{}, errNoGoodPoint
		} else if err != nil {
			return ltx.Pos{}, err // litestream.ErrTxNotAvailable: nothing replicated yet
		}
		last := plan[len(plan)-1]
		if past != 0 && last.MaxTXID <= past {
			return ltx.Pos{}, errNotPast
		}
		pos, rerr := restoreAt(ctx, c, fresh, last)
		if rerr == nil {
			return pos, nil
		} else if ctx.Err() != nil {
			return ltx.Pos{}, ctx.Err()
		}
		bad, err := f.firstDamaged(ctx, slug, c, plan)
		if err != nil || bad == nil {
			return ltx.Pos{}, rerr
		}
		f.cfg.Log.Warn("a replicated LTX file fails verification: restoring to the latest point before it", "directory", slug,
			"file", ltx.FormatFilename(bad.MinTXID, bad.MaxTXID), "level", bad.Level)
		// The latest point before the damaged file's end, from other files that cover its range
		// (level-0 files under a compacted one, an earlier snapshot); else the point before its
		// start.
		target, fallback = bad.MaxTXID-1, bad.MinTXID-1
		if fallback >= target {
			fallback = 0
		}
		if target == 0 {
			return ltx.Pos{}, errNoGoodPoint
		}
	}
	return ltx.Pos{}, errNoGoodPoint
}

// restoreAt restores c at the end of the file last (the last of a plan) into fresh, checked page by
// page, and returns the position restored.
func restoreAt(ctx context.Context, c litestream.ReplicaClient, fresh string, last *ltx.FileInfo) (ltx.Pos, error) {
	post, err := postApplyChecksum(ctx, c, last)
	if err != nil {
		return ltx.Pos{}, err
	}
	opt := litestream.NewRestoreOptions()
	opt.OutputPath, opt.TXID, opt.IntegrityCheck = fresh, last.MaxTXID, litestream.IntegrityCheckFull
	if err := litestream.NewReplicaWithClient(nil, c).Restore(ctx, opt); err != nil {
		return ltx.Pos{}, fmt.Errorf("restore: %w", err)
	}
	return ltx.Pos{TXID: last.MaxTXID, PostApplyChecksum: post}, nil
}

// firstDamaged fetches the files of a plan one by one and returns the first that fails
// verification, or nil when every one verifies; an error when a file cannot be fetched.
func (f *Follower) firstDamaged(ctx context.Context, slug string, c litestream.ReplicaClient, plan []*ltx.FileInfo) (*ltx.FileInfo, error) {
	for _, info := range plan {
		err := f.fetchVerified(ctx, slug, c, info, func(spooled, ltx.Header, ltx.Pos) error { return nil })
		var bad *corruptError
		if errors.As(err, &bad) {
			return info, nil
		} else if err != nil {
			return nil, err
		}
	}
	return nil, nil
}
