package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/edge"
)

// The management API (section 4.7), served on the primary (edges forward it). Every route needs a
// client's access token with webhooks:manage in the path's directory; registering an endpoint also
// needs feed:read. A client sees and changes its own endpoints only: another client's answers
// exactly as a missing one.

// Limits of the management API.
const (
	maxBody        = 16 << 10
	maxDescription = 500
	// MaxEndpoints is the most endpoints one client registers in one directory.
	MaxEndpoints = 20
	// RotationOverlap is how long the previous secret co-signs after a rotation.
	RotationOverlap = 24 * time.Hour
	defaultPage     = 50
	maxPage         = 100
	previewItems    = 20
)

// API serves the management routes of a Service. Token returns the caller's verified access token
// (nil without one); WriteError writes an error as the service's problem answers.
type API struct {
	Service    *Service
	Token      func(r *http.Request) *dirsvc.AccessToken
	WriteError func(w http.ResponseWriter, r *http.Request, err error)
}

// EndpointView is an endpoint as its client sees it; Secret only in the answers that create it.
type EndpointView struct {
	dirsvc.WebhookEndpoint
	Secret                  string     `json:"secret,omitempty"`
	PreviousSecretExpiresAt *time.Time `json:"previousSecretExpiresAt,omitempty"`
}

func (a *API) view(e *dirsvc.WebhookEndpoint, secret string) EndpointView {
	v := EndpointView{WebhookEndpoint: *e, Secret: secret}
	if len(e.SealedPrevious) > 0 && a.Service.cfg.Now().Before(e.PreviousUntil) {
		t := e.PreviousUntil.UTC()
		v.PreviousSecretExpiresAt = &t
	}
	return v
}

// caller checks the request's token: a client of the directory with webhooks:manage (and the extra
// scopes asked for). A call without a token lacks the scope, as on every other scope-gated route
// (403); a token presented and refused was answered 401 by the guard before.
func (a *API) caller(r *http.Request, extra ...string) (*dirsvc.AccessToken, error) {
	t := a.Token(r)
	if t == nil {
		return nil, dirsvc.Errorf(dirsvc.EForbiddenScope, "Webhooks need a partner client's access token with the scope %s.", dirsvc.ScopeWebhooksManage)
	}
	for _, s := range append([]string{dirsvc.ScopeWebhooksManage}, extra...) {
		if !t.HasScope(s) {
			return nil, dirsvc.Errorf(dirsvc.EForbiddenScope, "This needs the scope %s.", s)
		}
	}
	return t, nil
}

// endpoint returns the path's endpoint if it is the caller's; any other answers as missing.
func (a *API) endpoint(r *http.Request, t *dirsvc.AccessToken) (*dirsvc.WebhookEndpoint, error) {
	id := r.PathValue("id")
	if !dirsvc.ValidUUID(id) {
		return nil, dirsvc.ErrNotFound
	}
	e, err := a.Service.cfg.Store.Webhook(r.Context(), r.PathValue("dir"), id)
	if err != nil {
		return nil, err
	}
	if e.ClientID != t.ClientID {
		return nil, dirsvc.ErrNotFound
	}
	return e, nil
}

// owned checks the caller, then returns the path's endpoint if it is the caller's.
func (a *API) owned(r *http.Request) (*dirsvc.WebhookEndpoint, error) {
	t, err := a.caller(r)
	if err != nil {
		return nil, err
	}
	return a.endpoint(r, t)
}

// delivery returns the caller's endpoint of the path and its delivery of the path.
func (a *API) delivery(r *http.Request) (*dirsvc.WebhookEndpoint, *dirsvc.Delivery, error) {
	e, err := a.owned(r)
	if err != nil {
		return nil, nil, err
	}
	id := r.PathValue("deliveryId")
	if !dirsvc.ValidUUID(id) {
		return nil, nil, dirsvc.ErrNotFound
	}
	d, err := a.Service.cfg.Store.Delivery(r.Context(), e.Directory, e.ID, id)
	return e, d, err
}

// readBody reads a capped JSON body into v by the service's rule for bodies (edge.ReadJSON).
func readBody(w http.ResponseWriter, r *http.Request, v any) error {
	return edge.ReadJSON(w, r, maxBody, v)
}

// replicated makes an acknowledged change durable in every replica before it is answered, and
// reports whether to answer it. When object storage does not confirm in time, the answer says
// Replication-Pending (the change is in the replica folder and reaches the bucket later); when no
// replica holds it, the answer is an error (dirsvc.NotReplicated), written here.
func (a *API) replicated(w http.ResponseWriter, r *http.Request) bool {
	if a.Service.cfg.Replicate == nil {
		return true
	}
	err := a.Service.cfg.Replicate(r.Context(), r.PathValue("dir"))
	switch {
	case err == nil:
	case errors.Is(err, dirsvc.ErrStorageUnconfirmed):
		a.Service.cfg.Log.Warn("webhooks: object storage did not confirm a change of an endpoint in time", "directory", r.PathValue("dir"))
		w.Header().Set("Replication-Pending", "object-storage")
	default:
		a.WriteError(w, r, dirsvc.NotReplicated(err))
		return false
	}
	return true
}

// HandleList answers the caller's endpoints in the directory.
func (a *API) HandleList(w http.ResponseWriter, r *http.Request) {
	t, err := a.caller(r)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	eps, err := a.Service.cfg.Store.Webhooks(r.Context(), r.PathValue("dir"), t.ClientID)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	list := EndpointList{Items: make([]EndpointView, 0, len(eps))}
	for i := range eps {
		list.Items = append(list.Items, a.view(&eps[i], ""))
	}
	edge.WriteNoStoreJSON(w, http.StatusOK, list)
}

// EndpointList is the answer of the endpoint list.
type EndpointList struct {
	Items []EndpointView `json:"items"`
}

// Settings is the body of a registration or a change: the fields given are set.
type Settings struct {
	URL         *string `json:"url,omitempty"`
	Description *string `json:"description,omitempty"`
	State       *string `json:"state,omitempty"` // changes only: active (resume) or paused
}

// apply checks and applies settings to e.
func (a *API) apply(ctx context.Context, e *dirsvc.WebhookEndpoint, s Settings) error {
	if s.URL != nil {
		u, err := a.Service.guard.checkURL(ctx, *s.URL)
		if err != nil {
			return err
		}
		e.URL = u
	}
	if s.Description != nil {
		if len(*s.Description) > maxDescription {
			return dirsvc.InvalidParam("description", "at most %d characters", maxDescription)
		}
		e.Description = strings.TrimSpace(*s.Description)
	}
	return nil
}

// HandleCreate registers an endpoint for the caller. Its messages start with the changes after now;
// the signing secret is in this answer only.
func (a *API) HandleCreate(w http.ResponseWriter, r *http.Request) {
	t, err := a.caller(r, dirsvc.ScopeFeedRead)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	var s Settings
	if err := readBody(w, r, &s); err != nil {
		a.WriteError(w, r, err)
		return
	}
	if s.URL == nil {
		a.WriteError(w, r, dirsvc.InvalidParam("url", "the endpoint's URL is required"))
		return
	}
	if s.State != nil {
		a.WriteError(w, r, dirsvc.InvalidParam("state", "a new endpoint is active; pause it afterwards"))
		return
	}
	ctx, dir := r.Context(), r.PathValue("dir")
	svc := a.Service
	now := svc.cfg.Now()
	e := &dirsvc.WebhookEndpoint{ID: dirsvc.NewUUID(), Directory: dir, ClientID: t.ClientID, State: dirsvc.WebhookActive, CreatedAt: now, UpdatedAt: now}
	if err := a.apply(ctx, e, s); err != nil {
		a.WriteError(w, r, err)
		return
	}
	have, err := svc.cfg.Store.Webhooks(ctx, dir, t.ClientID)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	if len(have) >= MaxEndpoints {
		a.WriteError(w, r, dirsvc.Errorf(dirsvc.EConflict, "A client registers at most %d endpoints in a directory.", MaxEndpoints))
		return
	}
	if e.Position, err = svc.cfg.Feed.Head(ctx, dir); err != nil {
		a.WriteError(w, r, err)
		return
	}
	secret := newSecret()
	e.SealedSecret = svc.seal.seal(dir, e.ID, secret)
	if err := svc.cfg.Store.CreateWebhook(ctx, e); err != nil {
		a.WriteError(w, r, err)
		return
	}
	if !a.replicated(w, r) {
		return
	}
	w.Header().Set("Location", "/v1/d/"+dir+"/webhooks/"+e.ID)
	edge.WriteNoStoreJSON(w, http.StatusCreated, a.view(e, secret))
}

// HandleGet answers one of the caller's endpoints.
func (a *API) HandleGet(w http.ResponseWriter, r *http.Request) {
	e, err := a.owned(r)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	edge.WriteNoStoreJSON(w, http.StatusOK, a.view(e, ""))
}

// HandlePatch changes an endpoint's URL or description, pauses it, or resumes it (state active): a
// resumed endpoint sends what waited, from its next undelivered message.
func (a *API) HandlePatch(w http.ResponseWriter, r *http.Request) {
	t, err := a.caller(r)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	var s Settings
	if err := readBody(w, r, &s); err != nil {
		a.WriteError(w, r, err)
		return
	}
	e, err := a.endpoint(r, t)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	if err := a.apply(r.Context(), e, s); err != nil {
		a.WriteError(w, r, err)
		return
	}
	if s.State != nil {
		switch *s.State {
		case dirsvc.WebhookActive:
			if e.State != dirsvc.WebhookActive {
				e.FailingSince = time.Time{} // the pause after a long failure counts afresh
			}
			e.State, e.StateReason = dirsvc.WebhookActive, ""
		case dirsvc.WebhookPaused:
			e.State, e.StateReason = dirsvc.WebhookPaused, "paused by its client"
		default:
			a.WriteError(w, r, dirsvc.InvalidParam("state", "active (resume) or paused"))
			return
		}
	}
	e.UpdatedAt = a.Service.cfg.Now()
	if err := a.Service.cfg.Store.UpdateWebhook(r.Context(), e); err != nil {
		a.WriteError(w, r, err)
		return
	}
	if !a.replicated(w, r) {
		return
	}
	if e.State == dirsvc.WebhookActive {
		a.Service.wake(e.Directory, e.ID)
	}
	edge.WriteNoStoreJSON(w, http.StatusOK, a.view(e, ""))
}

// HandleDelete removes an endpoint and its delivery log.
func (a *API) HandleDelete(w http.ResponseWriter, r *http.Request) {
	e, err := a.owned(r)
	if err == nil {
		err = a.Service.cfg.Store.DeleteWebhook(r.Context(), e.Directory, e.ID)
	}
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	if !a.replicated(w, r) {
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNoContent)
}

// HandleRotate gives an endpoint a new signing secret, in this answer only; the previous one co-signs
// for RotationOverlap.
func (a *API) HandleRotate(w http.ResponseWriter, r *http.Request) {
	e, err := a.owned(r)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	svc := a.Service
	now := svc.cfg.Now()
	secret := newSecret()
	e.SealedPrevious, e.PreviousUntil = e.SealedSecret, now.Add(RotationOverlap)
	e.SealedSecret, e.UpdatedAt = svc.seal.seal(e.Directory, e.ID, secret), now
	if err := svc.cfg.Store.UpdateWebhook(r.Context(), e); err != nil {
		a.WriteError(w, r, err)
		return
	}
	if !a.replicated(w, r) {
		return
	}
	edge.WriteNoStoreJSON(w, http.StatusOK, a.view(e, secret))
}

// Sent is the answer of a test ping and of a replay.
type Sent struct {
	OK         bool   `json:"ok"`
	Delivery   string `json:"delivery"`
	DurationMs int64  `json:"durationMs"`
	Status     int    `json:"status,omitempty"`
	Error      string `json:"error,omitempty"`
}

func sentOf(d *dirsvc.Delivery, out outcome) Sent {
	s := Sent{OK: out.ok, Delivery: d.ID}
	for _, a := range out.tries {
		s.DurationMs += a.DurationMs
	}
	if n := len(out.tries); n > 0 {
		s.Status, s.Error = out.tries[n-1].Status, out.tries[n-1].Error
	}
	return s
}

// HandleTest sends a ping to an endpoint now, whatever its state, one request without retries, and
// answers how it went; the ping is in the delivery log.
func (a *API) HandleTest(w http.ResponseWriter, r *http.Request) {
	e, err := a.owned(r)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	svc := a.Service
	now := svc.cfg.Now()
	body, _ := json.Marshal(envelope{Type: dirsvc.DeliveryPing, Timestamp: now.UTC(), Data: map[string]string{"endpointId": e.ID, "directory": e.Directory}})
	d := &dirsvc.Delivery{ID: dirsvc.NewUUID(), Endpoint: e.ID, Kind: dirsvc.DeliveryPing, Status: dirsvc.DeliveryPending, CreatedAt: now, Body: body}
	if err := svc.cfg.Store.EnqueueDelivery(r.Context(), e.Directory, d); err != nil {
		a.WriteError(w, r, err)
		return
	}
	out, err := svc.once(r.Context(), e, d)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	edge.WriteNoStoreJSON(w, http.StatusOK, sentOf(d, out))
}

// HandleReplay sends a delivered, failed-and-stopped or dead message again now, under its webhook-id,
// one request without retries. A message still queued for its next round is a conflict: the queue
// sends it.
func (a *API) HandleReplay(w http.ResponseWriter, r *http.Request) {
	e, d, err := a.delivery(r)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	if d.Status == dirsvc.DeliveryPending || d.Status == dirsvc.DeliveryFailed && !d.NextAttempt.IsZero() {
		a.WriteError(w, r, dirsvc.Errorf(dirsvc.EConflict, "The message is queued and will be sent in its turn."))
		return
	}
	out, err := a.Service.once(r.Context(), e, d)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	edge.WriteNoStoreJSON(w, http.StatusOK, sentOf(d, out))
}

// once sends a delivery now, one request without retries, and records it: delivered, or as it was
// (a failed ping is dead: pings are not retried).
func (s *Service) once(ctx context.Context, e *dirsvc.WebhookEndpoint, d *dirsvc.Delivery) (outcome, error) {
	secrets, err := s.secretsOf(e)
	if err != nil {
		return outcome{}, err
	}
	out := s.send.once(ctx, message{url: e.URL, id: d.ID, secrets: secrets, body: d.Body})
	d.Rounds++
	switch {
	case out.ok:
		d.Status, d.NextAttempt = dirsvc.DeliveryDelivered, time.Time{}
	case d.Kind == dirsvc.DeliveryPing:
		d.Status = dirsvc.DeliveryDead
	}
	failing := e.FailingSince
	if out.ok && d.Kind == dirsvc.DeliveryChanges {
		failing = time.Time{}
	}
	if err := s.cfg.Store.RecordRound(context.WithoutCancel(ctx), e.Directory, d, out.tries, failing); err != nil {
		return out, err
	}
	s.countRound(d, false) // a 410 here disables nothing
	return out, nil
}

// deliveryStatuses are the values of the status filter.
var deliveryStatuses = []string{dirsvc.DeliveryPending, dirsvc.DeliveryDelivered, dirsvc.DeliveryFailed, dirsvc.DeliveryDead}

// HandleDeliveries answers an endpoint's delivery log, newest first: status filters by status, before
// (a date-time) pages back, limit (1 to 100, default 50) bounds the page; nextBefore continues it.
func (a *API) HandleDeliveries(w http.ResponseWriter, r *http.Request) {
	t, err := a.caller(r)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	q := r.URL.Query()
	for k := range q {
		if !slices.Contains([]string{"status", "before", "limit"}, k) {
			a.WriteError(w, r, dirsvc.InvalidParam(k, "unknown parameter"))
			return
		}
		if len(q[k]) > 1 {
			a.WriteError(w, r, dirsvc.InvalidParam(k, "given more than once"))
			return
		}
	}
	status := q.Get("status")
	if status != "" && !slices.Contains(deliveryStatuses, status) {
		a.WriteError(w, r, dirsvc.InvalidParam("status", "one of pending, delivered, failed, dead"))
		return
	}
	before := a.Service.cfg.Now().Add(time.Second)
	if v := q.Get("before"); v != "" {
		if before, err = time.Parse(time.RFC3339Nano, v); err != nil || len(v) > 40 {
			a.WriteError(w, r, dirsvc.InvalidParam("before", "a date-time such as 2026-11-23T09:00:00Z"))
			return
		}
	}
	limit := defaultPage
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > maxPage {
			a.WriteError(w, r, dirsvc.InvalidParam("limit", "a whole number from 1 to %d", maxPage))
			return
		}
	}
	e, err := a.endpoint(r, t)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	ds, err := a.Service.cfg.Store.Deliveries(r.Context(), e.Directory, e.ID, status, before, limit)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	page := DeliveryList{Items: append([]dirsvc.Delivery{}, ds...)}
	if len(ds) == limit {
		page.NextBefore = ds[len(ds)-1].CreatedAt.UTC().Format(time.RFC3339Nano)
	}
	edge.WriteNoStoreJSON(w, http.StatusOK, page)
}

// DeliveryList is a page of an endpoint's delivery log.
type DeliveryList struct {
	Items      []dirsvc.Delivery `json:"items"`
	NextBefore string            `json:"nextBefore,omitempty"`
}

// DeliveryDetail is one delivery with its attempts and a preview of its payload.
type DeliveryDetail struct {
	dirsvc.Delivery
	Payload Preview `json:"payload"`
}

// HandleDelivery answers one delivery with its attempts and a redacted preview of its payload: the
// message's type and time, and for a feed message its first items by ID, version and event (never
// their cursors), with the number of items.
func (a *API) HandleDelivery(w http.ResponseWriter, r *http.Request) {
	_, d, err := a.delivery(r)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	preview, err := redact(d.Body)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	edge.WriteNoStoreJSON(w, http.StatusOK, DeliveryDetail{Delivery: *d, Payload: preview})
}

// Preview is a redacted preview of a message: its type and time, and for a feed message its
// directory, number of items and first items by ID, version and event (never their cursors).
type Preview struct {
	Type      string        `json:"type"`
	Timestamp time.Time     `json:"timestamp"`
	Directory string        `json:"directory,omitempty"`
	ItemCount int           `json:"itemCount,omitempty"`
	Items     []PreviewItem `json:"items,omitempty"`
}

// PreviewItem is a feed item of a message as its preview shows it.
type PreviewItem struct {
	PublicID      string `json:"publicId"`
	EntityType    string `json:"entityType,omitempty"`
	Version       int64  `json:"version"`
	LocalRevision int64  `json:"localRevision"`
	EventType     string `json:"eventType"`
}

// redact returns the preview of a message body.
func redact(body []byte) (Preview, error) {
	var m struct {
		Type      string    `json:"type"`
		Timestamp time.Time `json:"timestamp"`
		Data      struct {
			Directory string        `json:"directory"`
			Items     []PreviewItem `json:"items"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return Preview{}, errors.New("webhook: a stored message does not decode")
	}
	p := Preview{Type: m.Type, Timestamp: m.Timestamp}
	if m.Type == dirsvc.DeliveryChanges {
		p.Directory, p.ItemCount = m.Data.Directory, len(m.Data.Items)
		p.Items = m.Data.Items[:min(len(m.Data.Items), previewItems)]
	}
	return p, nil
}
