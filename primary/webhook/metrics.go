package webhook

import (
	"context"
	"errors"
	"time"

	"github.com/dirsvc/dirsvc"
)

// Metrics counts what the workers send, for the node's private metrics (cmd/dirsvc exports them to
// Prometheus). Its methods must not block.
type Metrics interface {
	// Round counts a round of a message sent (one request, or a few close together), by its outcome:
	// one of the Outcome* constants.
	Round(outcome string)
	// Stopped counts an endpoint the workers stopped: state is dirsvc.WebhookPaused (its deliveries
	// failed for PauseAfter, or its client lost the access webhooks need) or dirsvc.WebhookDisabled
	// (its receiver answered 410, or it fell behind the change feed's retention).
	Stopped(state string)
}

// Outcomes of a round of a message.
const (
	// OutcomeDelivered: the receiver took the message.
	OutcomeDelivered = "delivered"
	// OutcomeFailed: the round failed; the message waits for its next round (or, sent again by
	// hand, stays as it was).
	OutcomeFailed = "failed"
	// OutcomeDead: the round failed and the message is given up: its retry schedule is spent, or it
	// was a ping (pings are not retried).
	OutcomeDead = "dead"
	// OutcomeGone: the receiver answered 410 Gone; its endpoint is disabled and the message waits for
	// it to be resumed.
	OutcomeGone = "gone"
)

// countRound counts a round of d once it is recorded; gone is whether the receiver answered 410.
func (s *Service) countRound(d *dirsvc.Delivery, gone bool) {
	if s.cfg.Metrics == nil {
		return
	}
	switch {
	case d.Status == dirsvc.DeliveryDelivered:
		s.cfg.Metrics.Round(OutcomeDelivered)
	case gone:
		s.cfg.Metrics.Round(OutcomeGone)
	case d.Status == dirsvc.DeliveryDead:
		s.cfg.Metrics.Round(OutcomeDead)
	default:
		s.cfg.Metrics.Round(OutcomeFailed)
	}
}

// countStopped counts an endpoint the workers stopped.
func (s *Service) countStopped(state string) {
	if s.cfg.Metrics != nil {
		s.cfg.Metrics.Stopped(state)
	}
}

// Queue is what waits to be sent on the node: the messages to active endpoints neither delivered
// nor dead, and when the oldest of them was made (zero when none waits).
type Queue struct {
	Waiting int
	Oldest  time.Time
}

// Queue reads what waits to be sent in every directory (dirsvc.WebhookStore.DeliveryQueue).
func (s *Service) Queue(ctx context.Context) (Queue, error) {
	var q Queue
	dirs, err := s.cfg.Directories(ctx)
	if err != nil {
		return q, err
	}
	for _, dir := range dirs {
		n, oldest, err := s.cfg.Store.DeliveryQueue(ctx, dir)
		if errors.Is(err, dirsvc.ErrNotFound) {
			continue // dropped meanwhile
		} else if err != nil {
			return q, err
		}
		q.Waiting += n
		if !oldest.IsZero() && (q.Oldest.IsZero() || oldest.Before(q.Oldest)) {
			q.Oldest = oldest
		}
	}
	return q, nil
}
