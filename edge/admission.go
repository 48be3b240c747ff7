package edge

import (
	"context"
	"errors"
	"hash/fnv"
	"net/http"
	"runtime"
	"time"

	"github.com/dirsvc/dirsvc"
)

// Admission keeps the capacity that record reads need whatever else is asked of a node.
//
// Every cheap read route (a record's brief view, a document) is admitted against a bound of requests
// in flight; past it a request waits at most Admission.Wait for a slot and is then shed: 503 with
// Retry-After, instead of queueing behind work the node cannot finish in time. A record page (composed
// from the views of its related records, read from the file) is admitted against a smaller bound of
// its own, so that pages can neither take the slots of brief reads, which are mostly answered from
// memory, nor fill the CPUs' run queues past what brief reads can cut through. Expensive requests
// (lists and searches: each may read many records) are admitted against bounds of their own instead,
// per directory and for the node (one per CPU); each has a time budget, past which its query is
// interrupted and it is answered 503. A record read is never held back by lists: lists take no slot
// of its bound, and at most one per CPU runs at a time.
//
// Pages and expensive requests wait longer for a slot than cheap reads do (Admission.PageWait and
// ExpensiveWait against Wait): a request that waits is parked and costs no CPU, whereas one shed at
// once comes straight back from a client that retries without waiting for Retry-After, is read,
// parsed and shed again, and every one of those steps queues in front of the cheap reads on the CPUs.
// Measured with 2,000 connections of the soak mix (bench/soak.sh, step 4), waits of 50 and 250 ms
// shed four answers in five and left brief reads a p50 of 70 to 95 ms beside them; waits of 1 and 2 s
// shed one in eight and brought it to 22 to 25 ms, at three times the brief reads' throughput.

// Admission limits. Zero fields of a Config's Admission take these.
const (
	// DefaultAdmissionWait is the longest a request waits for a slot before it is shed.
	DefaultAdmissionWait = 50 * time.Millisecond
	// DefaultPageWait is the longest a record page waits for a slot of its own.
	DefaultPageWait = time.Second
	// DefaultExpensiveWait is the longest an expensive request waits for a slot of its own.
	DefaultExpensiveWait = 2 * time.Second
	// DefaultExpensiveBudget is the time an expensive request's work may take once admitted.
	DefaultExpensiveBudget = 2 * time.Second
)

// Admission configures a Server's admission; zero fields take the defaults.
type Admission struct {
	// InFlight bounds the cheap read requests in flight; zero means 64 per CPU.
	InFlight int
	// Pages bounds the record pages in flight; zero means 4 per CPU (as many as the directory's
	// connections for reads other than single records, twice over).
	Pages int
	// Expensive bounds the expensive requests in flight on the node, and per directory; zero means
	// one per CPU.
	Expensive int
	// Wait, PageWait, ExpensiveWait and ExpensiveBudget: see the defaults above.
	Wait, PageWait, ExpensiveWait, ExpensiveBudget time.Duration
}

func (a Admission) withDefaults() Admission {
	cpus := runtime.GOMAXPROCS(0)
	if a.InFlight <= 0 {
		a.InFlight = 64 * cpus
	}
	if a.Pages <= 0 {
		a.Pages = 4 * cpus
	}
	if a.Expensive <= 0 {
		a.Expensive = cpus
	}
	if a.Wait <= 0 {
		a.Wait = DefaultAdmissionWait
	}
	if a.PageWait <= 0 {
		a.PageWait = DefaultPageWait
	}
	if a.ExpensiveWait <= 0 {
		a.ExpensiveWait = DefaultExpensiveWait
	}
	if a.ExpensiveBudget <= 0 {
		a.ExpensiveBudget = DefaultExpensiveBudget
	}
	return a
}

// expensiveShards is how many per-directory bounds there are: a directory's bound is the shard its
// slug hashes to, so that requests naming made-up directories cannot grow a table.
const expensiveShards = 64

// admission is a Server's admission state: semaphores as buffered channels.
type admission struct {
	cfg       Admission
	inFlight  chan struct{}
	pages     chan struct{}
	expensive chan struct{}
	perDir    [expensiveShards]chan struct{}
}

func newAdmission(cfg Admission) *admission {
	cfg = cfg.withDefaults()
	a := &admission{cfg: cfg, inFlight: make(chan struct{}, cfg.InFlight), pages: make(chan struct{}, cfg.Pages),
		expensive: make(chan struct{}, cfg.Expensive)}
	for i := range a.perDir {
		a.perDir[i] = make(chan struct{}, cfg.Expensive)
	}
	return a
}

// shardOf returns the per-directory bound of a directory slug.
func shardOf(slug string) uint32 {
	f := fnv.New32a()
	f.Write([]byte(slug))
	return f.Sum32() % expensiveShards
}

// acquire takes a slot of sem, waiting at most wait (or until ctx ends); false when none came.
func acquire(ctx context.Context, sem chan struct{}, wait time.Duration) bool {
	select {
	case sem <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	return acquireBefore(ctx, sem, t.C)
}

// acquireBefore takes a slot of sem unless deadline fires (or ctx ends) first.
func acquireBefore(ctx context.Context, sem chan struct{}, deadline <-chan time.Time) bool {
	select {
	case sem <- struct{}{}:
		return true
	case <-deadline:
		return false
	case <-ctx.Done():
		return false
	}
}

// shed answers a request the node has no capacity for.
func (s *Server) shed(w http.ResponseWriter, r *http.Request) {
	if r.Context().Err() != nil {
		return // the client went away while it waited
	}
	w.Header().Set("Retry-After", "1")
	w.Header().Set("Cache-Control", "no-store")
	s.error(w, r, dirsvc.Errorf(dirsvc.EUnavailable, "The service is busy: try again in 1 second."))
}

// read admits a read route's requests against the bound of requests in flight.
func (s *Server) read(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { s.admitted(w, r, s.admit.inFlight, s.admit.cfg.Wait, h) }
}

// record admits a record route's requests: one that asks for the record's page against the bound of
// pages, any other (its brief view, or a bad parameter) against the bound of requests in flight.
func (s *Server) record(rt recordRoute, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sem, wait := s.admit.inFlight, s.admit.cfg.Wait
		if brief, err := recordView(r, rt); err == nil && !brief {
			sem, wait = s.admit.pages, s.admit.cfg.PageWait
		}
		s.admitted(w, r, sem, wait, h)
	}
}

// admitted serves a request once it has a slot of sem, or sheds it after wait.
func (s *Server) admitted(w http.ResponseWriter, r *http.Request, sem chan struct{}, wait time.Duration, h http.HandlerFunc) {
	if !acquire(r.Context(), sem, wait) {
		s.shed(w, r)
		return
	}
	defer func() { <-sem }()
	h(w, r)
}

// errOverBudget is the cause of an expensive request's context ending at its time budget.
var errOverBudget = errors.New("the request's time budget is spent")

// expensive admits an expensive read route's requests against the expensive bounds of the request's
// directory and of the node; once admitted, its work has the time budget.
func (s *Server) expensive(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		// One wait for both bounds: a request is shed ExpensiveWait after it came at the latest.
		ctx := r.Context()
		t := time.NewTimer(s.admit.cfg.ExpensiveWait)
		defer t.Stop()
		dir := s.admit.perDir[shardOf(r.PathValue("dir"))]
		if !acquireBefore(ctx, dir, t.C) {
			s.shed(w, r)
			return
		}
		defer func() { <-dir }()
		if !acquireBefore(ctx, s.admit.expensive, t.C) {
			s.shed(w, r)
			return
		}
		defer func() { <-s.admit.expensive }()
		ctx, cancel := context.WithTimeoutCause(ctx, s.admit.cfg.ExpensiveBudget, errOverBudget)
		defer cancel()
		h(w, r.WithContext(ctx))
	}
}

// handleExpensive registers an expensive read route (see expensive); with Config.ListCost above one,
// its requests count as that many against the caller's rate limit.
func (s *Server) handleExpensive(pattern string, h http.HandlerFunc) {
	s.expensiveRoutes[pattern] = true
	s.mux.HandleFunc(pattern, s.expensive(h))
}

// costOf returns how many requests of the caller's rate limit a request counts as: ListCost for an
// expensive route, else one.
func (s *Server) costOf(r *http.Request) int {
	if s.cfg.ListCost <= 1 {
		return 1
	}
	if _, pattern := s.mux.Handler(r); s.expensiveRoutes[pattern] {
		return s.cfg.ListCost
	}
	return 1
}

// overBudget reports whether the request's context ended at its time budget (not by its client).
func overBudget(r *http.Request) bool { return errors.Is(context.Cause(r.Context()), errOverBudget) }
