package dirsvc

import (
	"context"
	"time"
)

// Webhooks (sections 4.7 and 6.2): a partner client registers an endpoint, and the primary pushes it
// the client's change feed as signed feed.changes messages, in feed order. Endpoints and deliveries
// are operational data of the primary: they live in a file of their own beside each directory's
// (never in the replicated directory file), so that delivery bookkeeping never queues behind a long
// import.

// Webhook endpoint states. An endpoint is active, paused by its client (or by the service after a long
// failure, or when its client lost the access it needs), or disabled for good by its receiver (410).
const (
	WebhookActive   = "active"
	WebhookPaused   = "paused"
	WebhookDisabled = "disabled"
)

// Delivery statuses (6.2.5): pending until an attempt succeeds (delivered); failed while attempts fail
// and more are scheduled; dead once the schedule is spent.
const (
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed"
	DeliveryDead      = "dead"
)

// Delivery kinds: a message of the feed, and a test ping sent on demand.
const (
	DeliveryChanges = "feed.changes"
	DeliveryPing    = "webhook.ping"
)

// WebhookEndpoint is a registered receiver of a client's change feed in one directory.
type WebhookEndpoint struct {
	ID          string    `json:"id"` // a UUID
	Directory   string    `json:"-"`
	ClientID    string    `json:"clientId"`
	URL         string    `json:"url"`
	Description string    `json:"description,omitempty"`
	State       string    `json:"state"`
	StateReason string    `json:"stateReason,omitempty"`
	CreatedAt   time.Time `json:"createdAt"`
	UpdatedAt   time.Time `json:"updatedAt"`
	// SealedSecret is the current signing secret (whsec_...), sealed by the webhook service: the
	// store never holds it in the clear. SealedPrevious, the secret before the last rotation, co-signs
	// until PreviousUntil.
	SealedSecret   []byte    `json:"-"`
	SealedPrevious []byte    `json:"-"`
	PreviousUntil  time.Time `json:"-"`
	// Position is the feed position after the last change put in a message for the endpoint (a
	// change log sequence number): its next message starts after it.
	Position int64 `json:"-"`
	// FailingSince is when the endpoint's deliveries started failing without a success since; zero
	// while they succeed.
	FailingSince time.Time `json:"-"`
}

// Delivery is one message to an endpoint, with its attempts. Its ID is also the message's webhook-id,
// kept by every attempt and by a replay.
type Delivery struct {
	ID        string    `json:"id"` // a UUID
	Endpoint  string    `json:"endpointId"`
	Kind      string    `json:"kind"`
	Status    string    `json:"status"`
	CreatedAt time.Time `json:"createdAt"`
	// NextAttempt is when the next round of attempts is due; zero when none is scheduled (delivered,
	// dead, or waiting for its endpoint to be resumed). Rounds counts the rounds made.
	NextAttempt time.Time `json:"nextAttemptAt,omitzero"`
	Rounds      int       `json:"-"`
	// Items counts the feed items in the message; From and To are the change log positions they span.
	Items    int       `json:"items"`
	From, To int64     `json:"-"`
	Body     []byte    `json:"-"`
	Attempts []Attempt `json:"attempts,omitempty"`
}

// Attempt is one try at sending a delivery.
type Attempt struct {
	At time.Time `json:"at"`
	// Status is the receiver's HTTP status; zero when no answer came (Error says why).
	Status     int    `json:"status,omitempty"`
	DurationMs int64  `json:"durationMs"`
	Error      string `json:"error,omitempty"`
}

// WebhookStore keeps webhook endpoints and deliveries, per directory.
type WebhookStore interface {
	// CreateWebhook stores a new endpoint.
	CreateWebhook(ctx context.Context, e *WebhookEndpoint) error
	// Webhook returns one endpoint of a directory; ErrNotFound when there is none.
	Webhook(ctx context.Context, dir, id string) (*WebhookEndpoint, error)
	// Webhooks returns a directory's endpoints (every client's when clientID is empty), oldest first.
	Webhooks(ctx context.Context, dir, clientID string) ([]WebhookEndpoint, error)
	// UpdateWebhook replaces an endpoint's settings, state and secrets (not its position).
	UpdateWebhook(ctx context.Context, e *WebhookEndpoint) error
	// SetWebhookState sets an endpoint's state and its reason (the workers' changes: a pause after a
	// long failure, a receiver's 410), leaving its settings as they are.
	SetWebhookState(ctx context.Context, dir, id, state, reason string, at time.Time) error
	// AdvanceWebhook moves an endpoint's position from one change log position to a later one without
	// a message: the changes between are none the endpoint's client may see. It is a conflict when
	// the position is no longer from.
	AdvanceWebhook(ctx context.Context, dir, id string, from, to int64) error
	// DeleteWebhook removes an endpoint and its deliveries.
	DeleteWebhook(ctx context.Context, dir, id string) error
	// EnqueueDelivery stores a new pending delivery and, for a feed message, moves the endpoint's
	// position to d.To, in one transaction; it fails with a conflict when the endpoint's position is
	// no longer d.From (another writer got there first).
	EnqueueDelivery(ctx context.Context, dir string, d *Delivery) error
	// NextDelivery returns the endpoint's oldest delivery not yet delivered or dead, or nil.
	NextDelivery(ctx context.Context, dir, endpoint string) (*Delivery, error)
	// Delivery returns one delivery with its attempts; ErrNotFound when the endpoint has none of that ID.
	Delivery(ctx context.Context, dir, endpoint, id string) (*Delivery, error)
	// Deliveries returns an endpoint's deliveries created before before, newest first, of a status
	// when status is not empty, at most limit.
	Deliveries(ctx context.Context, dir, endpoint, status string, before time.Time, limit int) ([]Delivery, error)
	// RecordRound adds a round's attempts to a delivery and sets its status, rounds and next attempt,
	// and the failing time of its endpoint; ErrNotFound when the delivery is gone (its endpoint was
	// deleted).
	RecordRound(ctx context.Context, dir string, d *Delivery, tries []Attempt, failingSince time.Time) error
	// PruneDeliveries removes deliveries created before before that are delivered or dead.
	PruneDeliveries(ctx context.Context, dir string, before time.Time) (int, error)
	// DeliveryQueue returns how many messages to a directory's active endpoints wait to be sent
	// (neither delivered nor dead) and when the oldest of them was made (zero when none waits).
	DeliveryQueue(ctx context.Context, dir string) (waiting int, oldest time.Time, err error)
}
