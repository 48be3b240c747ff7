package main

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dirsvc/dirsvc/dirdb"
)

// readiness opens every directory a node serves, as they appear, so that each loads its search
// index before its first request rather than during it, and says whether the node is ready (see
// dirsvc.NodeStatus.Ready): once the node has what it serves (started) and every directory it then
// lists is warm. The node listens meanwhile and answers every request, but its health route
// answers 503, so that a load balancer sends it nothing yet: a search of a directory still loading
// waits for the load, and loading takes seconds of CPU at a hundred thousand services.
//
// Ready, once true, stays true: a directory that appears later (imported on the primary, or a new
// copy on an edge) warms in the background, named in the full report's warming list, without taking
// the node out of rotation for the reads of every other directory. A directory that cannot be
// opened does not hold readiness back: its requests answer 500 and say why.
type readiness struct {
	store *dirdb.Store
	log   *slog.Logger
	// started reports whether the node has what it serves: an edge, once it has followed the
	// primary a first time. Nil: at once.
	started func() bool
	since   time.Time

	ready   atomic.Bool
	mu      sync.Mutex
	warming []string
	// run's alone: the directories found warm, looked at no more (a node of a thousand idle
	// directories does not open each every second), and those that could not be opened, logged
	// once.
	warm, failed map[string]bool
}

func newReadiness(store *dirdb.Store, log *slog.Logger, started func() bool) *readiness {
	return &readiness{store: store, log: log, started: started, since: time.Now(), warm: map[string]bool{}, failed: map[string]bool{}}
}

// readyLook is how often readiness looks for directories that appeared since; coldLook, how often
// until the node is ready (an edge waits for its first copies).
const (
	readyLook = time.Second
	coldLook  = 100 * time.Millisecond
)

// Ready reports whether the node is ready, and the directories still warming.
func (r *readiness) Ready() (bool, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ready.Load(), slices.Clone(r.warming)
}

// run keeps the node's readiness up to date until ctx ends: it looks again as soon as a directory
// is warm, and every readyLook (coldLook until ready) for directories that appeared.
func (r *readiness) run(ctx context.Context) {
	for {
		var next <-chan struct{}
		if cold := r.look(ctx); len(cold) > 0 {
			next = cold[0]
		}
		wait := coldLook
		if r.ready.Load() {
			wait = readyLook
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-next:
		case <-t.C:
		}
		t.Stop()
	}
}

// look opens every directory the store lists (each starts loading its search index as it opens),
// records those still warming, and returns what each of them closes once warm.
func (r *readiness) look(ctx context.Context) []<-chan struct{} {
	started := r.ready.Load() || r.started == nil || r.started()
	slugs, err := r.store.Slugs(ctx)
	if err != nil {
		if ctx.Err() == nil {
			r.log.Warn("list the directories to warm", "err", err)
		}
		return nil
	}
	var warming []string
	var cold []<-chan struct{}
	listed := make(map[string]bool, len(slugs))
	for _, slug := range slugs {
		listed[slug] = true
	}
	for slug := range r.warm {
		if !listed[slug] {
			delete(r.warm, slug) // dropped: one imported anew under its slug warms again
		}
	}
	for _, slug := range slugs {
		if r.warm[slug] {
			continue
		}
		d, err := r.store.Directory(ctx, slug)
		if err != nil {
			if ctx.Err() == nil && !r.failed[slug] {
				r.failed[slug] = true
				r.log.Warn("a directory cannot be opened: its requests answer 500 and say why; the node is ready without it",
					"directory", slug, "err", err)
			}
			continue
		}
		delete(r.failed, slug)
		select {
		case <-d.Warmed():
			r.warm[slug] = true
		default:
			warming = append(warming, slug)
			cold = append(cold, d.Warmed())
		}
	}
	r.mu.Lock()
	r.warming = warming
	r.mu.Unlock()
	if started && len(warming) == 0 && !r.ready.Load() {
		r.ready.Store(true)
		r.log.Info("ready", "directories", len(slugs), "after", time.Since(r.since).Round(time.Millisecond))
	}
	return cold
}

// start runs r until the returned stop is called, which waits for it to end: call it before the
// store closes.
func (r *readiness) start(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); r.run(ctx) }()
	return func() { cancel(); <-done }
}

var metricReady = prometheus.NewDesc("dirsvc_ready", "1 once the node is ready: every directory it served at its start answers at its usual cost (search index loaded); else 0.", nil, nil)

// Describe and Collect export the node's readiness to Prometheus.
func (r *readiness) Describe(ch chan<- *prometheus.Desc) { ch <- metricReady }

func (r *readiness) Collect(ch chan<- prometheus.Metric) {
	v := 0.0
	if r.ready.Load() {
		v = 1
	}
	ch <- prometheus.MustNewConstMetric(metricReady, prometheus.GaugeValue, v)
}

// register exports r's metric to Prometheus until unregister is called.
func (r *readiness) register() (unregister func(), err error) {
	if err := prometheus.Register(r); err != nil {
		return nil, err
	}
	return func() { prometheus.Unregister(r) }, nil
}
