package edge

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// expensiveServer is a server of nothing but admission: one expensive slot, a budget of budget.
func expensiveServer(budget time.Duration) *Server {
	return &Server{admit: newAdmission(Admission{Expensive: 1, ExpensiveBudget: budget, ExpensiveWait: time.Second}),
		cfg: Config{StreamIdle: 50 * time.Millisecond}}
}

// serveExpensive runs h as the handler of an expensive route of directory demo.
func serveExpensive(s *Server, h http.HandlerFunc) {
	r := httptest.NewRequest("GET", "/v1/d/demo/changes", nil)
	r.SetPathValue("dir", "demo")
	s.expensive(h)(httptest.NewRecorder(), r)
}

// expensiveTaken reports how many slots of the node's expensive bound and of directory demo's are taken.
func (s *Server) expensiveTaken() (node, dir int) {
	return len(s.admit.expensive), len(s.admit.perDir[shardOf("demo")])
}

func TestAnExpensiveRequestDoneReadingHoldsNoSlot(t *testing.T) {
	const budget = time.Hour
	s := expensiveServer(budget)
	serveExpensive(s, func(w http.ResponseWriter, r *http.Request) {
		if node, dir := s.expensiveTaken(); node != 1 || dir != 1 {
			t.Fatalf("while reading: %d of the node's slots and %d of the directory's taken, want 1 and 1", node, dir)
		}
		if _, ok := r.Context().Deadline(); !ok {
			t.Fatal("the reading has no time budget")
		}
		written := expensiveDone(r, 1000)
		if node, dir := s.expensiveTaken(); node != 0 || dir != 0 {
			t.Errorf("once done: %d of the node's slots and %d of the directory's taken, want none", node, dir)
		}
		if _, ok := written.Context().Deadline(); ok || written.Context().Err() != nil {
			t.Error("the answer is written under the time budget")
		}
		if r.Context().Err() == nil {
			t.Error("the budget of the reading did not end")
		}
		if got := s.admit.heldBodies.Load(); got != 1000 {
			t.Errorf("bodies held while writing: %d bytes, want 1000", got)
		}
		if again := expensiveDone(written, 1000); again != written || s.admit.heldBodies.Load() != 1000 {
			t.Error("a second expensiveDone changed the request or the bytes held")
		}
	})
	if got := s.admit.heldBodies.Load(); got != 0 {
		t.Errorf("bodies held once the handler returned: %d bytes, want 0", got)
	}
}

func TestSlowClientsHoldAtMostMaxHeldBodies(t *testing.T) {
	s := expensiveServer(time.Hour)
	s.admit.heldBodies.Store(maxHeldBodies - 10) // slow clients are reading that much already
	serveExpensive(s, func(w http.ResponseWriter, r *http.Request) {
		if got := expensiveDone(r, 11); got != r {
			t.Error("a body past the bound was written without the slots")
		}
		if node, dir := s.expensiveTaken(); node != 1 || dir != 1 {
			t.Errorf("past the bound: %d of the node's slots and %d of the directory's taken, want 1 and 1", node, dir)
		}
		if got := s.admit.heldBodies.Load(); got != maxHeldBodies-10 {
			t.Errorf("bodies held: %d bytes, want %d", got, maxHeldBodies-10)
		}
	})
	if node, dir := s.expensiveTaken(); node != 0 || dir != 0 {
		t.Errorf("once the handler returned: %d and %d slots taken, want none", node, dir)
	}
}

func TestAStepOfAnAnswerTakesTheSlotsForItsReadOnly(t *testing.T) {
	s := expensiveServer(time.Hour)
	serveExpensive(s, func(w http.ResponseWriter, r *http.Request) {
		r = expensiveDone(r, 0)
		for i := range 3 {
			ctx, done, err := s.expensiveStep(r)
			if err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
			if _, ok := ctx.Deadline(); !ok {
				t.Errorf("step %d has no time budget", i)
			}
			if node, dir := s.expensiveTaken(); node != 1 || dir != 1 {
				t.Errorf("during step %d: %d and %d slots taken, want 1 and 1", i, node, dir)
			}
			done()
			if node, dir := s.expensiveTaken(); node != 0 || dir != 0 {
				t.Errorf("after step %d: %d and %d slots taken, want none", i, node, dir)
			}
			if ctx.Err() == nil {
				t.Errorf("the budget of step %d outlived it", i)
			}
		}
		// With the node's slot taken by another request, a step waits the idle bound and gives up.
		s.admit.expensive <- struct{}{}
		start := time.Now()
		if _, _, err := s.expensiveStep(r); !errors.Is(err, errNoSlot) {
			t.Errorf("a step with no slot free: %v, want errNoSlot", err)
		}
		if waited := time.Since(start); waited < s.cfg.StreamIdle {
			t.Errorf("the step gave up after %v, before the idle bound %v", waited, s.cfg.StreamIdle)
		}
		if node, dir := s.expensiveTaken(); node != 1 || dir != 0 {
			t.Errorf("after a step that found no slot: %d and %d slots taken, want 1 (the other's) and 0", node, dir)
		}
		<-s.admit.expensive
	})
	if node, dir := s.expensiveTaken(); node != 0 || dir != 0 {
		t.Errorf("once the handler returned: %d and %d slots taken, want none", node, dir)
	}
}

func TestAStepEndsWithItsClient(t *testing.T) {
	s := expensiveServer(time.Hour)
	s.cfg.StreamIdle = time.Hour
	r := httptest.NewRequest("GET", "/v1/d/demo/sitemap.xml", nil)
	r.SetPathValue("dir", "demo")
	ctx, cancel := context.WithCancel(r.Context())
	s.expensive(func(w http.ResponseWriter, r *http.Request) {
		r = expensiveDone(r, 0)
		s.admit.expensive <- struct{}{} // another request's
		defer func() { <-s.admit.expensive }()
		cancel() // the client goes away
		if _, _, err := s.expensiveStep(r); !errors.Is(err, context.Canceled) {
			t.Errorf("a step whose client went away: %v, want context.Canceled", err)
		}
	})(httptest.NewRecorder(), r.WithContext(ctx))
}
