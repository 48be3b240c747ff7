package edge

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/dirsvc/dirsvc"
)

// A write the storage refused (dirsvc.InsufficientStorage) is answered 507 with Retry-After, and
// makes the node unhealthy on /healthz, so that a load balancer sends writes elsewhere and an
// operator is told, until the storage takes writes again. Nothing but a write tells that the storage
// takes writes, and a node out of rotation gets none: while it is unhealthy, each health check
// writes a probe (Config.StorageProbe), at most once every storageProbeEvery.

// storageRetry is how long a client is asked to wait after a write the storage refused, and how
// long a node without a probe says it is unhealthy after the last one.
const storageRetry = 30 * time.Second

// storageProbeEvery bounds how often a node whose storage refused a write probes it.
const storageProbeEvery = time.Second

// storageHealth is whether the node's storage refuses writes. The zero value is a storage that
// takes them.
type storageHealth struct {
	mu       sync.Mutex
	refused  time.Time // the last write refused; zero once the storage takes writes again
	probedAt time.Time // the last probe while refusing
	probing  bool      // a probe is under way: other health checks do not wait for it
}

// failed records a write the storage refused.
func (h *storageHealth) failed(now time.Time) {
	h.mu.Lock()
	h.refused = now
	h.mu.Unlock()
}

// refusing reports whether the storage still refuses writes: a write was refused, and the last
// probe since failed (or, without a probe, storageRetry has not passed). A write refused while a
// probe runs stands, whatever the probe finds.
func (h *storageHealth) refusing(ctx context.Context, probe func(context.Context) error, now time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.refused.IsZero():
		return false
	case probe == nil:
		if now.Sub(h.refused) >= storageRetry {
			h.refused = time.Time{}
		}
	case !h.probing && now.Sub(h.probedAt) >= storageProbeEvery:
		h.probing, h.probedAt = true, now
		refused := h.refused
		h.mu.Unlock()
		err := probe(ctx)
		h.mu.Lock()
		h.probing = false
		if err == nil && h.refused.Equal(refused) {
			h.refused = time.Time{}
		}
	}
	return !h.refused.IsZero()
}

// storageRefused answers a write the storage refused: it is logged (the cause may name a path),
// the node is unhealthy until its storage takes writes again, and the client is told when to try
// again. It returns the error the client sees: the domain's own when it says more (a change made
// but not replicated), else dirsvc.ErrInsufficientStorage.
func (s *Server) storageRefused(w http.ResponseWriter, r *http.Request, err error) *dirsvc.Error {
	s.log.Error("the storage refused a write", "method", r.Method, "path", r.URL.Path, "err", err)
	s.storage.failed(s.cfg.Now())
	if w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", strconv.Itoa(int(storageRetry.Seconds())))
	}
	if e := (*dirsvc.Error)(nil); errors.As(err, &e) && e.Code == dirsvc.EInsufficientStorage {
		return e
	}
	return dirsvc.ErrInsufficientStorage
}

// unavailableFor answers an unavailable error that has a cause of the service's own (a change made
// that no replica holds, dirsvc.NotReplicated): the cause is logged, and the client told when to
// try again.
func (s *Server) unavailableFor(w http.ResponseWriter, r *http.Request, e *dirsvc.Error) {
	s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", e)
	if w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", strconv.Itoa(int(unavailableRetry.Seconds())))
	}
}

// unavailableRetry is how long a client is asked to wait after an unavailable answer with a cause.
const unavailableRetry = 5 * time.Second
