package webhook

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/dirsvc/dirsvc"
)

// Feed reads a directory's change feed as a caller sees it: the same items, projection and narrowing
// as GET changes.
type Feed interface {
	// Head returns the position of the directory's latest change.
	Head(ctx context.Context, dir string) (int64, error)
	// Page returns the reader's items of the changes after a position, at most limit, with the cursor
	// after them and the position of the last change looked at (past the last item when the changes
	// after it are none the reader may see). The reader of an endpoint is its client, as the client's
	// grant stands when the message is made.
	Page(ctx context.Context, dir string, reader dirsvc.FeedReader, after int64, limit int) (FeedPage, error)
}

// FeedPage is a page of a reader's feed. More reports whether the log held changes after Position
// when the page was read.
type FeedPage struct {
	Items      []json.RawMessage
	NextCursor string
	Position   int64
	More       bool
}

// MaxItems is the most items in one feed.changes message.
const MaxItems = 100

// Config configures a Service. Zero durations take the defaults of send.go.
type Config struct {
	Store   dirsvc.WebhookStore
	Clients dirsvc.ClientStore
	Feed    Feed
	// Directories lists the directories whose endpoints are served.
	Directories func(ctx context.Context) ([]string, error)
	// SealKey (32 bytes, derived from the server key) seals signing secrets at rest.
	SealKey []byte
	Now     func() time.Time
	Log     *slog.Logger
	// Replicate, when set, makes an acknowledged change of an endpoint durable in every replica of
	// the directory's webhooks file before it is answered. An error matching
	// dirsvc.ErrStorageUnconfirmed makes the answer say Replication-Pending; any other (no replica
	// holds the change) is answered as an error (dirsvc.NotReplicated).
	Replicate func(ctx context.Context, dir string) error

	RoundWaits, QuickWaits []time.Duration
	PauseAfter, Timeout    time.Duration
	// Poll is how often directories are looked at for new changes (default 1 s); Retention how long
	// the delivery log is kept (default 30 days).
	Poll, Retention time.Duration
	// Sending bounds the requests to receivers in flight (default 64).
	Sending int
	// Metrics counts the rounds sent and the endpoints stopped (see Metrics); nil counts nothing.
	Metrics Metrics

	// AllowNetworks are the networks besides the public internet that endpoints may be registered
	// in and messages sent to (the operator's --webhook-allow-networks; see CheckNetworks): an
	// address inside one is reached, a loopback address only inside a loopback network (127.0.0.0/8,
	// ::1/128), and cloud metadata never. None: public addresses only.
	AllowNetworks []netip.Prefix
	// RootCAs, when set, replaces the system's certificate authorities (tests' receivers).
	RootCAs *x509.CertPool
	// Resolver resolves endpoints' names at registration (nil: the system's).
	Resolver *net.Resolver
}

// Service delivers each endpoint's messages and serves the management API.
type Service struct {
	cfg   Config
	seal  *sealer
	guard *guard
	send  *sender
	slots chan struct{} // requests to receivers in flight
	pages *pageCache

	mu      sync.Mutex
	runners map[runnerKey]chan struct{} // running endpoints, with the channel that wakes each
	wg      sync.WaitGroup              // the runners
	running context.Context             // Run's, once it runs
}

type runnerKey struct{ dir, id string }

// New returns a webhook service.
func New(cfg Config) (*Service, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.RoundWaits == nil {
		cfg.RoundWaits = DefaultRoundWaits
	}
	if cfg.QuickWaits == nil {
		cfg.QuickWaits = DefaultQuickWaits
	}
	if cfg.PauseAfter <= 0 {
		cfg.PauseAfter = DefaultPauseAfter
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.Retention <= 0 {
		cfg.Retention = 30 * 24 * time.Hour
	}
	if cfg.Sending <= 0 {
		cfg.Sending = 64
	}
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	seal, err := newSealer(cfg.SealKey)
	if err != nil {
		return nil, err
	}
	networks, err := CheckNetworks(cfg.AllowNetworks)
	if err != nil {
		return nil, fmt.Errorf("webhooks: allowed networks: %w", err)
	}
	g := &guard{networks: networks, resolver: cfg.Resolver}
	return &Service{
		cfg:     cfg,
		seal:    seal,
		guard:   g,
		send:    newSender(g, cfg.RootCAs, cfg.Timeout, cfg.QuickWaits, cfg.Now),
		slots:   make(chan struct{}, cfg.Sending),
		pages:   newPageCache(cfg.Now),
		runners: map[runnerKey]chan struct{}{},
	}, nil
}

// Run delivers until ctx ends: at start (and once a minute) every active endpoint resumes what it had
// queued (a primary stopped mid-delivery sends it again, under the same webhook-id), and from then on
// every endpoint behind its directory's latest change gets its next message.
func (s *Service) Run(ctx context.Context) {
	s.mu.Lock()
	s.running = ctx
	s.mu.Unlock()
	t := time.NewTicker(s.cfg.Poll)
	defer t.Stop()
	heads := map[string]int64{} // each directory's latest change at the last look
	var lastAll, lastPrune time.Time
	for {
		dirs, err := s.cfg.Directories(ctx)
		if err != nil && ctx.Err() == nil {
			s.cfg.Log.Error("webhooks: list directories", "err", err)
		}
		// Every endpoint is looked at once a minute too: a runner that stopped on an error (a
		// file busy, say) starts again even when its directory does not move.
		all := time.Since(lastAll) >= time.Minute
		for _, dir := range dirs {
			s.look(ctx, dir, heads, all)
		}
		if all {
			lastAll = time.Now()
		}
		if now := s.cfg.Now(); now.Sub(lastPrune) > time.Hour {
			lastPrune = now
			s.prune(ctx, dirs)
		}
		select {
		case <-ctx.Done():
			s.wait()
			return
		case <-t.C:
		}
	}
}

// look starts the runners of a directory's endpoints that have work: all active ones at start, then
// those behind a head that moved.
func (s *Service) look(ctx context.Context, dir string, heads map[string]int64, all bool) {
	head, err := s.cfg.Feed.Head(ctx, dir)
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, dirsvc.ErrNotFound) {
			s.cfg.Log.Error("webhooks: read the change log's head", "directory", dir, "err", err)
		}
		return
	}
	if !all && heads[dir] == head {
		return
	}
	eps, err := s.cfg.Store.Webhooks(ctx, dir, "")
	if err != nil {
		if ctx.Err() == nil {
			s.cfg.Log.Error("webhooks: list endpoints", "directory", dir, "err", err)
		}
		return
	}
	heads[dir] = head
	for _, e := range eps {
		if e.State == dirsvc.WebhookActive && (all || e.Position < head) {
			s.wake(dir, e.ID)
		}
	}
}

// wake starts an endpoint's runner, or wakes it if it is waiting for its next round.
func (s *Service) wake(dir, id string) {
	k := runnerKey{dir, id}
	s.mu.Lock()
	defer s.mu.Unlock()
	ctx := s.running
	if ctx == nil || ctx.Err() != nil {
		return // not running: Run's first look starts it
	}
	if kick, ok := s.runners[k]; ok {
		select {
		case kick <- struct{}{}:
		default:
		}
		return
	}
	kick := make(chan struct{}, 1)
	s.runners[k] = kick
	s.wg.Add(1)
	go s.run(ctx, k, kick)
}

// wait waits for the runners to stop (their context has ended).
func (s *Service) wait() { s.wg.Wait() }

// run sends an endpoint's messages one at a time, in feed order, until it has none left to send now.
func (s *Service) run(ctx context.Context, k runnerKey, kick chan struct{}) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		if s.runners[k] == kick { // not a runner started after this one left
			delete(s.runners, k)
		}
		s.mu.Unlock()
	}()
	for ctx.Err() == nil {
		more, wait, err := s.step(ctx, k.dir, k.id)
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, dirsvc.ErrNotFound) {
				s.cfg.Log.Error("webhooks: deliver", "directory", k.dir, "endpoint", k.id, "err", err)
			}
			return // the next look starts it again
		}
		if !more {
			// Leave, unless a wake came meanwhile (it found this runner and did not start another).
			s.mu.Lock()
			select {
			case <-kick:
				s.mu.Unlock()
				continue
			default:
			}
			delete(s.runners, k)
			s.mu.Unlock()
			return
		}
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
			case <-kick:
			case <-t.C:
			}
			t.Stop()
		}
	}
}

// step makes one move of an endpoint's delivery: a round of its next message if due, or its next
// message made from the feed. more is false when there is nothing to do now; wait is how long until
// the next message is due.
func (s *Service) step(ctx context.Context, dir, id string) (more bool, wait time.Duration, err error) {
	e, err := s.cfg.Store.Webhook(ctx, dir, id)
	if err != nil || e.State != dirsvc.WebhookActive {
		return false, 0, err
	}
	d, err := s.cfg.Store.NextDelivery(ctx, dir, id)
	if err != nil {
		return false, 0, err
	}
	if d == nil {
		made, err := s.nextMessage(ctx, e)
		return made, 0, err
	}
	if w := d.NextAttempt.Sub(s.cfg.Now()); !d.NextAttempt.IsZero() && w > 0 {
		return true, w, nil
	}
	return true, 0, s.deliver(ctx, e, d)
}

// nextMessage makes the endpoint's next message from its client's feed after its position, as the
// client's grant stands now. It reports whether it made one or moved the position.
func (s *Service) nextMessage(ctx context.Context, e *dirsvc.WebhookEndpoint) (bool, error) {
	reader, err := s.readerOf(ctx, e.Directory, e.ClientID)
	if errors.Is(err, errNoAccess) {
		return false, s.setState(ctx, e, dirsvc.WebhookPaused, "the client no longer has the access webhooks need (feed:read and webhooks:manage in this directory)")
	} else if err != nil {
		return false, err
	}
	page, err := s.pages.page(ctx, e.Directory, reader, e.Position, MaxItems, func(ctx context.Context) (FeedPage, error) {
		return s.cfg.Feed.Page(ctx, e.Directory, reader, e.Position, MaxItems)
	})
	if dirsvc.ErrorCode(err) == dirsvc.EGone {
		return false, s.setState(ctx, e, dirsvc.WebhookDisabled, "the endpoint fell behind the change feed's retention: read GET changes from the oldest event, then register a new endpoint")
	} else if err != nil {
		return false, err
	}
	if page.Position <= e.Position {
		return false, nil
	}
	if len(page.Items) == 0 {
		err := s.cfg.Store.AdvanceWebhook(ctx, e.Directory, e.ID, e.Position, page.Position)
		return err == nil || dirsvc.ErrorCode(err) == dirsvc.EConflict, ignoreConflict(err)
	}
	now := s.cfg.Now()
	body, err := json.Marshal(envelope{Type: dirsvc.DeliveryChanges, Timestamp: now.UTC(), Data: changesData{
		Directory: e.Directory, Items: page.Items, NextCursor: page.NextCursor}})
	if err != nil {
		return false, err
	}
	d := &dirsvc.Delivery{ID: dirsvc.NewUUID(), Endpoint: e.ID, Kind: dirsvc.DeliveryChanges, Status: dirsvc.DeliveryPending,
		CreatedAt: now, Items: len(page.Items), From: e.Position, To: page.Position, Body: body}
	return true, ignoreConflict(s.cfg.Store.EnqueueDelivery(ctx, e.Directory, d))
}

func ignoreConflict(err error) error {
	if dirsvc.ErrorCode(err) == dirsvc.EConflict {
		return nil // another runner moved the endpoint on: the next step reads it again
	}
	return err
}

// envelope is a message's body: its type, when it was made, and its data.
type envelope struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      any       `json:"data"`
}

type changesData struct {
	Directory  string            `json:"directory"`
	Items      []json.RawMessage `json:"items"`
	NextCursor string            `json:"nextCursor,omitempty"`
}

// errNoAccess: the endpoint's client is revoked, or lost its grant or the scopes webhooks need.
var errNoAccess = errors.New("the client no longer has the access webhooks need")

// readerOf returns who an endpoint's messages are made for: its client, by the grant it holds now
// (its tier, narrowing and practitioners:read), as GET changes reads for the client's token.
func (s *Service) readerOf(ctx context.Context, dir, clientID string) (dirsvc.FeedReader, error) {
	c, _, err := s.cfg.Clients.Client(ctx, clientID)
	if errors.Is(err, dirsvc.ErrNotFound) {
		return dirsvc.FeedReader{}, errNoAccess
	} else if err != nil {
		return dirsvc.FeedReader{}, err
	}
	g := c.Grant(dir)
	if c.Revoked || g == nil || !slices.Contains(g.Scopes, dirsvc.ScopeFeedRead) || !slices.Contains(g.Scopes, dirsvc.ScopeWebhooksManage) {
		return dirsvc.FeedReader{}, errNoAccess
	}
	return dirsvc.FeedReader{Viewer: dirsvc.Viewer{Audience: g.Tier, Narrowing: g.Narrowing},
		Practitioners: slices.Contains(g.Scopes, dirsvc.ScopePractitionersRead)}, nil
}

// secretsOf returns the secrets that sign an endpoint's messages now: its current one, and during a
// rotation its previous one.
func (s *Service) secretsOf(e *dirsvc.WebhookEndpoint) ([]string, error) {
	cur, err := s.seal.open(e.Directory, e.ID, e.SealedSecret)
	if err != nil {
		return nil, err
	}
	out := []string{cur}
	if len(e.SealedPrevious) > 0 && s.cfg.Now().Before(e.PreviousUntil) {
		prev, err := s.seal.open(e.Directory, e.ID, e.SealedPrevious)
		if err != nil {
			return nil, err
		}
		out = append(out, prev)
	}
	return out, nil
}

// attempt sends one round of a delivery and returns how it went.
func (s *Service) attempt(ctx context.Context, e *dirsvc.WebhookEndpoint, d *dirsvc.Delivery) (outcome, error) {
	secrets, err := s.secretsOf(e)
	if err != nil {
		return outcome{}, err
	}
	select {
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		return outcome{}, ctx.Err()
	}
	defer func() { <-s.slots }()
	return s.send.round(ctx, message{url: e.URL, id: d.ID, secrets: secrets, body: d.Body}), nil
}

// deliver sends a round of a feed message and records it: delivered; failed with the next round
// scheduled; dead once the schedule is spent. A 410 disables the endpoint (the message waits for it
// to be resumed); a long failure pauses it.
func (s *Service) deliver(ctx context.Context, e *dirsvc.WebhookEndpoint, d *dirsvc.Delivery) error {
	out, err := s.attempt(ctx, e, d)
	if err != nil {
		return err
	}
	now := s.cfg.Now()
	d.Rounds++
	failing := e.FailingSince
	state, reason := "", ""
	switch {
	case out.ok:
		d.Status, d.NextAttempt, failing = dirsvc.DeliveryDelivered, time.Time{}, time.Time{}
	case out.gone:
		d.Status, d.NextAttempt = dirsvc.DeliveryFailed, time.Time{}
		state, reason = dirsvc.WebhookDisabled, "the receiver answered 410 Gone: resume the endpoint once it takes messages again"
	case d.Rounds > len(s.cfg.RoundWaits):
		d.Status, d.NextAttempt = dirsvc.DeliveryDead, time.Time{}
	default:
		d.Status, d.NextAttempt = dirsvc.DeliveryFailed, now.Add(max(jitter(s.cfg.RoundWaits[d.Rounds-1]), out.retryAfter))
	}
	if !out.ok && failing.IsZero() {
		failing = now
	}
	if !out.ok && state == "" && now.Sub(failing) >= s.cfg.PauseAfter {
		state, reason = dirsvc.WebhookPaused, fmt.Sprintf("deliveries failed without a success since %s: resume the endpoint once it takes messages again", failing.UTC().Format(time.RFC3339))
	}
	if err := s.cfg.Store.RecordRound(ctx, e.Directory, d, out.tries, failing); err != nil {
		return err
	}
	s.countRound(d, out.gone)
	if state != "" {
		return s.setState(ctx, e, state, reason)
	}
	return nil
}

func (s *Service) setState(ctx context.Context, e *dirsvc.WebhookEndpoint, state, reason string) error {
	s.cfg.Log.Warn("webhooks: endpoint "+state, "directory", e.Directory, "endpoint", e.ID, "reason", reason)
	if err := s.cfg.Store.SetWebhookState(ctx, e.Directory, e.ID, state, reason, s.cfg.Now()); err != nil {
		return err
	}
	s.countStopped(state)
	return nil
}

// prune removes the delivery log older than the retention.
func (s *Service) prune(ctx context.Context, dirs []string) {
	before := s.cfg.Now().Add(-s.cfg.Retention)
	for _, dir := range dirs {
		if _, err := s.cfg.Store.PruneDeliveries(ctx, dir, before); err != nil && ctx.Err() == nil {
			s.cfg.Log.Error("webhooks: prune the delivery log", "directory", dir, "err", err)
		}
	}
}
