package edge

import (
	"context"
	"errors"
	"hash/fnv"
	"net/http"
	"runtime"
	"sync/atomic"
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
	// heldBodies is the bytes of composed answers being written by expensive requests that gave
	// their slots back (expensiveDone).
	heldBodies atomic.Int64
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

// shed answers a request the node has no capacity for, and counts it under reason (ShedReads...).
func (s *Server) shed(w http.ResponseWriter, r *http.Request, reason string) {
	if r.Context().Err() != nil {
		return // the client went away while it waited
	}
	s.shedFor(reason)
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
		reason := ShedReads
		if sem == s.admit.pages {
			reason = ShedPages
		}
		s.shed(w, r, reason)
		return
	}
	defer func() { <-sem }()
	h(w, r)
}

// errOverBudget is the cause of an expensive request's context ending at its time budget.
var errOverBudget = errors.New("the request's time budget is spent")

// expensive admits an expensive read route's requests against the expensive bounds of the request's
// directory and of the node; once admitted, its work has the time budget. The slots and the budget
// are for reading the store: a handler whose answer is composed, or which goes on reading a step at
// a time while it writes, gives them back first (expensiveDone, expensiveStep), so that a client
// that reads slowly holds no slot and is cut by no budget (only by the idle bound of a streamed
// body, see deadline.go).
func (s *Server) expensive(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		work := &expensiveWork{admit: s.admit, dir: s.admit.perDir[shardOf(r.PathValue("dir"))]}
		work.free = context.WithValue(r.Context(), expensiveKey{}, work)
		// One wait for both bounds: a request is shed ExpensiveWait after it came at the latest.
		ctx, ok := work.take(s.admit.cfg.ExpensiveWait)
		if !ok {
			s.shed(w, r, ShedExpensive)
			return
		}
		defer work.end()
		h(w, r.WithContext(ctx))
	}
}

// maxHeldBodies bounds the bytes of composed answers that expensive requests write holding no slot.
// Past it, a request that has composed its answer keeps its slots while it writes it (expensiveDone),
// as every expensive request did before, so that slow clients can make the node hold at most this
// much (64 feed pages of 500 expanded records) plus what the requests in the slots compose.
const maxHeldBodies = 64 << 20

// expensiveWork is the admission of one expensive request: the slots it holds, and the time budget
// of its current work. It travels in the request's context, for expensiveDone and expensiveStep.
type expensiveWork struct {
	admit  *admission
	dir    chan struct{}      // the directory's bound
	free   context.Context    // the request's context without a budget (still ended by its client)
	held   bool               // whether the slots are taken
	cancel context.CancelFunc // ends the budget of the current work
	kept   int64              // bytes counted in admission.heldBodies until the handler returns
}

type expensiveKey struct{}

func workOf(r *http.Request) *expensiveWork {
	wk, _ := r.Context().Value(expensiveKey{}).(*expensiveWork)
	return wk
}

// take takes a slot of the directory's bound and one of the node's, waiting at most wait for both
// together (or until the client goes away), and returns the context of the work they are for: the
// request's, ending at the time budget.
func (wk *expensiveWork) take(wait time.Duration) (context.Context, bool) {
	t := time.NewTimer(wait)
	defer t.Stop()
	if !acquireBefore(wk.free, wk.dir, t.C) {
		return nil, false
	}
	if !acquireBefore(wk.free, wk.admit.expensive, t.C) {
		<-wk.dir
		return nil, false
	}
	wk.held = true
	ctx, cancel := context.WithTimeoutCause(wk.free, wk.admit.cfg.ExpensiveBudget, errOverBudget)
	wk.cancel = cancel
	return ctx, true
}

// release gives the slots back, if taken, and ends the budget of the work they were for.
func (wk *expensiveWork) release() {
	if !wk.held {
		return
	}
	wk.held = false
	<-wk.admit.expensive
	<-wk.dir
	wk.cancel()
}

// end is release once the handler has returned, with the bytes it held given back too.
func (wk *expensiveWork) end() {
	wk.release()
	if wk.kept > 0 {
		wk.admit.heldBodies.Add(-wk.kept)
	}
}

// expensiveDone tells the admission of r, an expensive request, that its reading is done: what is
// left is writing its answer, which holds keep bytes (its composed body, or 0) until the handler
// returns. The request's slots go back to the next list or search, and its time budget ends; it
// returns r with a context without the budget, ended still by its client going away, to write the
// answer with (a store read under it would be unbounded: take a step for one, see expensiveStep).
// While the bodies held so would pass maxHeldBodies, the slots are kept, and r is returned as it is.
// Outside an expensive route, it returns r.
func expensiveDone(r *http.Request, keep int) *http.Request {
	wk := workOf(r)
	if wk == nil || !wk.held {
		return r
	}
	if keep > 0 {
		if wk.admit.heldBodies.Add(int64(keep)) > maxHeldBodies {
			wk.admit.heldBodies.Add(-int64(keep))
			return r
		}
		wk.kept += int64(keep)
	}
	wk.release()
	return r.WithContext(wk.free)
}

// errNoSlot is the error of a step of an answer that found no expensive slot in time.
var errNoSlot = errors.New("no expensive slot came free in time")

// expensiveStep takes the slots of r, an expensive request that is writing its answer, again for
// one more step of reading (the next batch of a sitemap part): it returns the context of the step,
// with a time budget of its own, and the function that gives the slots back once the step has read.
// A step waits for the slots as long as its client may go without bytes (the idle bound of a
// streamed body, see deadline.go): an answer begun is worth more than a request not yet served.
// errNoSlot when none came, and the context's error when the client went away.
func (s *Server) expensiveStep(r *http.Request) (context.Context, func(), error) {
	wk := workOf(r)
	if wk == nil {
		return r.Context(), func() {}, nil
	}
	wk.release() // a budget spent before the step is not the step's
	wait := s.cfg.StreamIdle
	if wait <= 0 {
		wait = DefaultStreamIdle
	}
	ctx, ok := wk.take(wait)
	if !ok {
		if err := wk.free.Err(); err != nil {
			return nil, nil, err
		}
		return nil, nil, errNoSlot
	}
	return ctx, wk.release, nil
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
