package webhook

import (
	"context"
	"maps"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
)

// countedMetrics is a Metrics that keeps its counts for the test.
type countedMetrics struct {
	mu      sync.Mutex
	rounds  map[string]int
	stopped map[string]int
}

func newCountedMetrics() *countedMetrics {
	return &countedMetrics{rounds: map[string]int{}, stopped: map[string]int{}}
}

func (m *countedMetrics) Round(outcome string) {
	m.mu.Lock()
	m.rounds[outcome]++
	m.mu.Unlock()
}

func (m *countedMetrics) Stopped(state string) {
	m.mu.Lock()
	m.stopped[state]++
	m.mu.Unlock()
}

// waitFor waits until the counts are rounds and stopped (the workers count a round once it is
// recorded, after the receiver has answered), and fails the test when they are not within 30 s.
func (m *countedMetrics) waitFor(t *testing.T, rounds, stopped map[string]int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		m.mu.Lock()
		done := maps.Equal(m.rounds, rounds) && maps.Equal(m.stopped, stopped)
		got, gotStopped := maps.Clone(m.rounds), maps.Clone(m.stopped)
		m.mu.Unlock()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("rounds %v and stopped endpoints %v, want %v and %v", got, gotStopped, rounds, stopped)
		}
	}
}

// TestMetricsCountRoundsByOutcome sends one change to a receiver that takes it, one that fails its
// first round and takes the second, and one that answers 410; then a ping to a receiver that fails
// (pings are not retried). Each round is counted once by its outcome, and the endpoint disabled by
// its 410 is counted as stopped. The queue holds a message while its endpoint is active and
// waiting for its next round, and nothing once every message is settled.
func TestMetricsCountRoundsByOutcome(t *testing.T) {
	m := newCountedMetrics()
	w := newHookWorld(t, func(c *Config) {
		c.Metrics = m
		c.RoundWaits = []time.Duration{time.Second}
	})
	plain := newReceiver(t, 1, nil)
	secondRound := newReceiver(t, 1, func(n int, rw http.ResponseWriter) bool {
		if n <= 2 { // the first round: a request and its one quick retry
			rw.WriteHeader(http.StatusInternalServerError)
			return true
		}
		return false
	})
	gone := newReceiver(t, 1, func(n int, rw http.ResponseWriter) bool {
		rw.WriteHeader(http.StatusGone)
		return true
	})
	w.trust(plain, secondRound, gone)
	w.register(t, plain)
	waiting := w.register(t, secondRound)
	disabled := w.register(t, gone)
	w.feed.add(1)
	w.run(t)
	plain.check(t, "the receiver that takes it", 1, nil)
	w.waitState(t, disabled.ID, dirsvc.WebhookDisabled)
	w.waitQueue(t, waiting.ID)
	q, err := w.svc.Queue(context.Background())
	if err != nil || q.Waiting != 1 || q.Oldest.IsZero() || time.Since(q.Oldest) > time.Minute {
		t.Errorf("the queue while a message waits for its next round: %+v, %v; want 1 waiting, made just now", q, err)
	}
	secondRound.check(t, "the receiver that takes the second round", 1, nil)
	m.waitFor(t, map[string]int{OutcomeDelivered: 2, OutcomeFailed: 1, OutcomeGone: 1}, map[string]int{dirsvc.WebhookDisabled: 1})
	if q, err := w.svc.Queue(context.Background()); err != nil || q.Waiting != 0 || !q.Oldest.IsZero() {
		t.Errorf("the queue once every message is settled (the disabled endpoint's waits outside it): %+v, %v", q, err)
	}

	failing := newReceiver(t, 1, func(n int, rw http.ResponseWriter) bool {
		rw.WriteHeader(http.StatusServiceUnavailable)
		return true
	})
	w.trust(failing)
	e := w.register(t, failing)
	ping := &dirsvc.Delivery{ID: dirsvc.NewUUID(), Endpoint: e.ID, Kind: dirsvc.DeliveryPing, Status: dirsvc.DeliveryPending,
		CreatedAt: time.Now(), Body: []byte("{}")}
	if err := w.store.EnqueueDelivery(context.Background(), "demo", ping); err != nil {
		t.Fatal(err)
	}
	if _, err := w.svc.once(context.Background(), e, ping); err != nil {
		t.Fatal(err)
	}
	m.waitFor(t, map[string]int{OutcomeDelivered: 2, OutcomeFailed: 1, OutcomeGone: 1, OutcomeDead: 1}, map[string]int{dirsvc.WebhookDisabled: 1})
}

// waitQueue waits until a round of the endpoint's next message has failed (the message waits for
// its next round).
func (w *hookWorld) waitQueue(t *testing.T, endpoint string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		d, err := w.store.NextDelivery(context.Background(), "demo", endpoint)
		if err != nil {
			t.Fatal(err)
		}
		if d != nil && d.Rounds > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no failed round of the message after 30 s")
		}
	}
}

// waitState waits until the endpoint is in state.
func (w *hookWorld) waitState(t *testing.T, endpoint, state string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		e, err := w.store.Webhook(context.Background(), "demo", endpoint)
		if err != nil {
			t.Fatal(err)
		}
		if e.State == state {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the endpoint is %s after 30 s, want %s", e.State, state)
		}
	}
}
