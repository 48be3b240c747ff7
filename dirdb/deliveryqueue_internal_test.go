package dirdb

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
)

// TestDeliveryQueueCountsWhatWaits: the queue holds the messages to active endpoints neither
// delivered nor dead, oldest first in time; a paused endpoint's message and a delivered one are not
// in it. The query reads the open deliveries through their partial index, never the whole log.
func TestDeliveryQueueCountsWhatWaits(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.CreateDirectory(ctx, "demo"); err != nil {
		t.Fatal(err)
	}
	if n, oldest, err := s.DeliveryQueue(ctx, "demo"); err != nil || n != 0 || !oldest.IsZero() {
		t.Fatalf("a directory that never had a webhook: %d waiting since %v, %v; want none", n, oldest, err)
	}
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	endpoint := func(id, state string) {
		t.Helper()
		e := &dirsvc.WebhookEndpoint{ID: id, Directory: "demo", ClientID: "dirc_test", URL: "https://receiver.example/hook",
			State: state, CreatedAt: t0, UpdatedAt: t0, SealedSecret: []byte("sealed")}
		if err := s.CreateWebhook(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	enqueue := func(endpoint string, kind string, at time.Time) *dirsvc.Delivery {
		t.Helper()
		d := &dirsvc.Delivery{ID: dirsvc.NewUUID(), Endpoint: endpoint, Kind: kind, Status: dirsvc.DeliveryPending,
			CreatedAt: at, Body: []byte("{}")}
		if kind == dirsvc.DeliveryChanges {
			d.From, d.To = 0, 1
		}
		if err := s.EnqueueDelivery(ctx, "demo", d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	endpoint("ep-active", dirsvc.WebhookActive)
	endpoint("ep-paused", dirsvc.WebhookPaused)
	enqueue("ep-paused", dirsvc.DeliveryChanges, t0) // the oldest, but its endpoint is paused
	changes := enqueue("ep-active", dirsvc.DeliveryChanges, t0.Add(time.Minute))
	ping := enqueue("ep-active", dirsvc.DeliveryPing, t0.Add(2*time.Minute))
	if n, oldest, err := s.DeliveryQueue(ctx, "demo"); err != nil || n != 2 || !oldest.Equal(changes.CreatedAt) {
		t.Fatalf("queue: %d waiting since %v, %v; want 2 since %v", n, oldest, err, changes.CreatedAt)
	}
	changes.Status, changes.Rounds = dirsvc.DeliveryDelivered, 1
	if err := s.RecordRound(ctx, "demo", changes, nil, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if n, oldest, err := s.DeliveryQueue(ctx, "demo"); err != nil || n != 1 || !oldest.Equal(ping.CreatedAt) {
		t.Fatalf("queue once the message was delivered: %d waiting since %v, %v; want 1 since %v", n, oldest, err, ping.CreatedAt)
	}

	db, err := s.hooksFor(ctx, "demo")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := db.db.QueryContext(ctx, "EXPLAIN QUERY PLAN "+sqlDeliveryQueue)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	// The partial index holds the open deliveries alone: scanning it reads no delivered message.
	if len(plan) == 0 || plan[0] != "SCAN d USING INDEX deliveries_open" {
		t.Errorf("the queue's query does not read the open deliveries through their index:\n%s", strings.Join(plan, "\n"))
	}
}
