package export

import (
	"context"
	"time"

	"github.com/dirsvc/dirsvc"
)

// Metrics counts the exports that end, for the node's private metrics (cmd/dirsvc exports them to
// Prometheus). Its methods must not block.
type Metrics interface {
	// Finished counts an export that ended: state is dirsvc.ExportSucceeded, dirsvc.ExportFailed or
	// StateCancelled; took is how long it ran; written is the size of the files it left (zero but
	// for a succeeded export).
	Finished(state string, took time.Duration, written int64)
}

// StateCancelled is the state Metrics.Finished counts an export cancelled while it ran under (its
// client deleted it: it has no status left to say so).
const StateCancelled = "cancelled"

// Running returns how many exports run on the node now.
func (s *Service) Running() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.cancels)
}

// countFinished counts how a run of export j ended, once it has: parent is the workers' context
// (ended: the service stops, and the export is ended failed by the next start, which counts
// nothing), ctx the run's own (ended: the export was cancelled).
func (s *Service) countFinished(parent, ctx context.Context, j *job, started time.Time) {
	if s.cfg.Metrics == nil || parent.Err() != nil {
		return
	}
	state := j.Status
	switch {
	case ctx.Err() != nil:
		state = StateCancelled
	case state != dirsvc.ExportSucceeded && state != dirsvc.ExportFailed:
		return // not ended: its status could not be saved
	}
	var written int64
	if state == dirsvc.ExportSucceeded {
		for _, f := range j.Files {
			written += f.Bytes
		}
	}
	s.cfg.Metrics.Finished(state, s.cfg.Now().Sub(started), written)
}
