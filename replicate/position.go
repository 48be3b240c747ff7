package replicate

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/superfly/ltx"
)

func (f *Follower) position(fl *followed) ltx.Pos {
	f.mu.Lock()
	defer f.mu.Unlock()
	return fl.pos
}

// setPosition records a copy's new position, on disk first, and wakes readers waiting for it.
func (f *Follower) setPosition(fl *followed, lineage string, pos ltx.Pos) error {
	if err := writePos(f.path(fl.slug), lineage, pos); err != nil {
		return err
	}
	f.mu.Lock()
	fl.lineage, fl.pos = lineage, pos
	close(f.changed)
	f.changed = make(chan struct{})
	f.mu.Unlock()
	return nil
}

// Position returns the position of the edge's copy of a directory; ok is false when it has none.
func (f *Follower) Position(slug string) (txid uint64, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fl := f.files[slug]
	if fl == nil {
		return 0, false
	}
	return uint64(fl.pos.TXID), true
}

// WaitFor waits up to max for the copy of a directory to reach txid in the history of the lineage
// (any, when empty), and reports whether it did: a copy of another history (the primary was
// restored since) is not there whatever its position, until it is bootstrapped afresh.
func (f *Follower) WaitFor(ctx context.Context, slug string, txid uint64, lineage string, max time.Duration) bool {
	t := time.NewTimer(max)
	defer t.Stop()
	for {
		f.mu.Lock()
		fl, ch := f.files[slug], f.changed
		ok := fl != nil && uint64(fl.pos.TXID) >= txid && (lineage == "" || fl.lineage == lineage)
		f.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-t.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// Status reports the edge's copies: each one's position and lag (how long it has been behind the
// primary, or out of touch with it), and whether every lag is within the bound.
func (f *Follower) Status() dirsvc.NodeStatus {
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	st := dirsvc.NodeStatus{Role: dirsvc.RoleEdge, Healthy: f.started, Files: []dirsvc.FileStatus{}}
	for _, fl := range f.files {
		var lag time.Duration
		if !fl.behindSince.IsZero() {
			lag = now.Sub(fl.behindSince)
		}
		if !f.lostSince.IsZero() {
			lag = max(lag, now.Sub(f.lostSince))
		}
		if f.cfg.MaxLag > 0 && lag > f.cfg.MaxLag {
			st.Healthy = false
		}
		st.Files = append(st.Files, dirsvc.FileStatus{Name: directoryName(fl.slug), Position: uint64(fl.pos.TXID), LagSeconds: lag.Seconds(),
			FailedVerifications: fl.failedVerifications, Heals: fl.heals})
	}
	if !f.lostSince.IsZero() && f.cfg.MaxLag > 0 && now.Sub(f.lostSince) > f.cfg.MaxLag {
		st.Healthy = false
	}
	sort.Slice(st.Files, func(i, j int) bool { return st.Files[i].Name < st.Files[j].Name })
	return st
}

// The position of a copy is kept beside it, written after the copy reached it: after a crash the
// copy may be ahead of its recorded position, never behind, and applying a change again is harmless
// (each LTX file holds whole pages as they are after it).

func posPath(path string) string { return path + "-pos" }

// readPos reads the lineage and position recorded beside a copy ("<lineage> <position>").
func readPos(path string) (string, ltx.Pos, error) {
	b, err := os.ReadFile(posPath(path))
	if err != nil {
		return "", ltx.Pos{}, err
	}
	if _, err := os.Stat(path); err != nil {
		return "", ltx.Pos{}, err
	}
	lineage, pos, ok := strings.Cut(strings.TrimSpace(string(b)), " ")
	if !ok {
		return "", ltx.Pos{}, fmt.Errorf("%s: want a lineage and a position", posPath(path))
	}
	p, err := ltx.ParsePos(pos)
	return lineage, p, err
}

func writePos(path, lineage string, pos ltx.Pos) error {
	if lineage == "" {
		lineage = "-" // unknown (a bootstrap from object storage)
	}
	return writeFileAtomic(posPath(path), []byte(lineage+" "+pos.String()+"\n"))
}
