package federation

import (
	"context"

	"github.com/dirsvc/dirsvc"
)

// applyMirror writes a batch of a mirror's harvest, and tells MirrorConfig.Wrote what it wrote.
func (h *Harvester) applyMirror(ctx context.Context, slug string, b dirsvc.MirrorBatch) (dirsvc.MirrorStats, error) {
	ms, err := h.cfg.Store.ApplyMirror(ctx, slug, b)
	if err == nil && h.cfg.Wrote != nil {
		h.cfg.Wrote(ms)
	}
	return ms, err
}
