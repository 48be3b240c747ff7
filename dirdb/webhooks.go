package dirdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/schema"
)

// The store keeps each directory's webhook endpoints and deliveries in the directory's webhooks file
// (see dirsvc.WebhookStore). The file has its own writer connection and lock: an import holds the
// directory's other files for its whole length, and deliveries must not wait for it.
var _ dirsvc.WebhookStore = (*Store)(nil)

// hookTime is how times are written in the webhooks file: fixed width, so that text order is time
// order (RFC 3339 with a varying number of fraction digits is not).
const hookTime = "2006-01-02T15:04:05.000000Z"

func hookText(t time.Time) string { return t.UTC().Format(hookTime) }

// hookTextOrNull writes a zero time as NULL.
func hookTextOrNull(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return hookText(t)
}

func parseHookTime(s sql.NullString) (time.Time, error) {
	if !s.Valid {
		return time.Time{}, nil
	}
	return time.Parse(hookTime, s.String)
}

// hooksDB returns the directory's webhooks file, opening it on first use; with create, it creates the
// file when there is none, else it returns nil for a directory that never had a webhook (reads
// answer as of an empty file, and no file is made by merely looking). It fails on an edge, which
// keeps no operational data.
func (s *Store) hooksDB(ctx context.Context, dir string, create bool) (*hookDB, error) {
	if s.replica {
		return nil, errors.New("webhooks are kept on the primary only")
	}
	d, err := s.directory(ctx, dir)
	if err != nil {
		return nil, err
	}
	d.hmu.Lock()
	defer d.hmu.Unlock()
	if d.hooks == nil {
		path := dirsvc.FilePath(s.root, dirsvc.FileName(dirsvc.WebhooksFile, dir))
		if _, err := os.Stat(path); !create && errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		db, err := openWriter(ctx, path, schema.Webhooks)
		if err != nil {
			return nil, err
		}
		d.hooks = &hookDB{db: db}
	}
	return d.hooks, nil
}

// hookDB is a webhooks file's one connection, with its statements prepared once: runners make a few
// statements a message, and parsing them was most of their cost.
type hookDB struct {
	db    *sql.DB
	stmts stmtCache
}

func (h *hookDB) stmt(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	if tx != nil {
		// The file has one connection, which the transaction holds: a statement is prepared on
		// it before the transaction begins (ready), never inside it.
		h.stmts.mu.Lock()
		st := h.stmts.stmts[query]
		h.stmts.mu.Unlock()
		if st == nil {
			return nil, errors.New("a webhooks statement was not made ready before its transaction")
		}
		return tx.StmtContext(ctx, st), nil
	}
	st, err := h.stmts.stmt(ctx, h.db, query)
	if err != nil || st == nil {
		if err == nil {
			err = errors.New("the webhooks file's statements are too many to keep")
		}
		return nil, err
	}
	return st, nil
}

// begin prepares the statements a transaction will run, then begins it.
func (h *hookDB) begin(ctx context.Context, queries ...string) (*sql.Tx, error) {
	for _, q := range queries {
		if _, err := h.stmt(ctx, nil, q); err != nil {
			return nil, err
		}
	}
	return h.db.BeginTx(ctx, nil)
}

// ExecContext, QueryContext and QueryRowContext run a statement kept prepared, in tx when not nil.
func (h *hookDB) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return h.exec(ctx, nil, query, args...)
}

func (h *hookDB) exec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	st, err := h.stmt(ctx, tx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

func (h *hookDB) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := h.stmt(ctx, nil, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

func (h *hookDB) queryRow(ctx context.Context, tx *sql.Tx, query string, args ...any) *sql.Row {
	st, err := h.stmt(ctx, tx, query)
	if err != nil {
		return h.db.QueryRowContext(ctx, query, args...) // the error comes again, with the row
	}
	return st.QueryRowContext(ctx, args...)
}

func (h *hookDB) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return h.queryRow(ctx, nil, query, args...)
}

func (h *hookDB) Close() error {
	return errors.Join(h.stmts.close(), h.db.Close())
}

// hooksFor returns the directory's webhooks file for a change of an endpoint that must exist:
// ErrNotFound when the directory never had a webhook.
func (s *Store) hooksFor(ctx context.Context, dir string) (*hookDB, error) {
	db, err := s.hooksDB(ctx, dir, false)
	if err == nil && db == nil {
		err = dirsvc.ErrNotFound
	}
	return db, err
}

// Statements run inside the webhooks file's transactions (prepared before each begins).
const (
	sqlMovePosition = `UPDATE endpoints SET position = ? WHERE id = ? AND position = ?`
	sqlEnqueue      = `INSERT INTO deliveries (id, endpoint_id, kind, status, items, from_seq, to_seq, body, next_attempt, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	sqlRound   = `UPDATE deliveries SET status = ?, rounds = ?, next_attempt = ? WHERE id = ? RETURNING seq`
	sqlAttempt = `INSERT INTO attempts (delivery_seq, at, status, duration_ms, error) VALUES (?, ?, ?, ?, ?)`
	sqlFailing = `UPDATE endpoints SET failing_since = ? WHERE id = ?`
)

const endpointColumns = `id, client_id, url, description, state, state_reason, secret, previous_secret,
previous_until, position, failing_since, created_at, updated_at`

func scanEndpoint(row scanner, dir string) (*dirsvc.WebhookEndpoint, error) {
	e := &dirsvc.WebhookEndpoint{Directory: dir}
	var until, failing, created, updated sql.NullString
	err := row.Scan(&e.ID, &e.ClientID, &e.URL, &e.Description, &e.State, &e.StateReason, &e.SealedSecret,
		&e.SealedPrevious, &until, &e.Position, &failing, &created, &updated)
	if err != nil {
		return nil, err
	}
	for _, t := range []struct {
		to *time.Time
		s  sql.NullString
	}{{&e.PreviousUntil, until}, {&e.FailingSince, failing}, {&e.CreatedAt, created}, {&e.UpdatedAt, updated}} {
		if *t.to, err = parseHookTime(t.s); err != nil {
			return nil, fmt.Errorf("webhook %s: %w", e.ID, err)
		}
	}
	return e, nil
}

// CreateWebhook stores a new endpoint.
func (s *Store) CreateWebhook(ctx context.Context, e *dirsvc.WebhookEndpoint) error {
	db, err := s.hooksDB(ctx, e.Directory, true)
	if err != nil {
		return err
	}
	_, err = db.ExecContext(ctx, `INSERT INTO endpoints (`+endpointColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		e.ID, e.ClientID, e.URL, e.Description, e.State, e.StateReason, e.SealedSecret, e.SealedPrevious,
		hookTextOrNull(e.PreviousUntil), e.Position, hookTextOrNull(e.FailingSince), hookText(e.CreatedAt), hookText(e.UpdatedAt))
	if err != nil {
		return fmt.Errorf("create webhook: %w", err)
	}
	return nil
}

// Webhook returns one endpoint of a directory.
func (s *Store) Webhook(ctx context.Context, dir, id string) (*dirsvc.WebhookEndpoint, error) {
	db, err := s.hooksFor(ctx, dir)
	if err != nil {
		return nil, err
	}
	e, err := scanEndpoint(db.QueryRowContext(ctx, `SELECT `+endpointColumns+` FROM endpoints WHERE id = ?`, id), dir)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, dirsvc.ErrNotFound
	}
	return e, err
}

// Webhooks returns a directory's endpoints, or one client's, oldest first.
func (s *Store) Webhooks(ctx context.Context, dir, clientID string) ([]dirsvc.WebhookEndpoint, error) {
	db, err := s.hooksDB(ctx, dir, false)
	if err != nil || db == nil {
		return nil, err
	}
	rows, err := db.QueryContext(ctx, `SELECT `+endpointColumns+` FROM endpoints
WHERE ?1 = '' OR client_id = ?1 ORDER BY created_at, id`, clientID)
	if err != nil {
		return nil, fmt.Errorf("list webhooks: %w", err)
	}
	defer rows.Close()
	var out []dirsvc.WebhookEndpoint
	for rows.Next() {
		e, err := scanEndpoint(rows, dir)
		if err != nil {
			return nil, err
		}
		out = append(out, *e)
	}
	return out, rows.Err()
}

// UpdateWebhook replaces an endpoint's settings, state and secrets; its position is the workers'.
func (s *Store) UpdateWebhook(ctx context.Context, e *dirsvc.WebhookEndpoint) error {
	db, err := s.hooksFor(ctx, e.Directory)
	if err != nil {
		return err
	}
	res, err := db.ExecContext(ctx, `UPDATE endpoints SET url = ?, description = ?, state = ?, state_reason = ?,
secret = ?, previous_secret = ?, previous_until = ?, failing_since = ?, updated_at = ? WHERE id = ?`,
		e.URL, e.Description, e.State, e.StateReason, e.SealedSecret, e.SealedPrevious, hookTextOrNull(e.PreviousUntil),
		hookTextOrNull(e.FailingSince), hookText(e.UpdatedAt), e.ID)
	if err != nil {
		return fmt.Errorf("update webhook: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return dirsvc.ErrNotFound
	}
	return nil
}

// SetWebhookState sets an endpoint's state and reason only.
func (s *Store) SetWebhookState(ctx context.Context, dir, id, state, reason string, at time.Time) error {
	db, err := s.hooksFor(ctx, dir)
	if err != nil {
		return err
	}
	res, err := db.ExecContext(ctx, `UPDATE endpoints SET state = ?, state_reason = ?, updated_at = ? WHERE id = ?`, state, reason, hookText(at), id)
	if err != nil {
		return fmt.Errorf("set webhook state: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return dirsvc.ErrNotFound
	}
	return nil
}

// AdvanceWebhook moves an endpoint's position from one change log position to a later one.
func (s *Store) AdvanceWebhook(ctx context.Context, dir, id string, from, to int64) error {
	db, err := s.hooksFor(ctx, dir)
	if err != nil {
		return err
	}
	res, err := db.ExecContext(ctx, sqlMovePosition, to, id, from)
	if err != nil {
		return fmt.Errorf("move webhook position: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return dirsvc.Errorf(dirsvc.EConflict, "webhook %s moved on from position %d, or is gone", id, from)
	}
	return nil
}

// DeleteWebhook removes an endpoint with its deliveries and their attempts.
func (s *Store) DeleteWebhook(ctx context.Context, dir, id string) error {
	db, err := s.hooksFor(ctx, dir)
	if err != nil {
		return err
	}
	res, err := db.ExecContext(ctx, `DELETE FROM endpoints WHERE id = ?`, id)
	if err != nil {
		return fmt.Errorf("delete webhook: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return dirsvc.ErrNotFound
	}
	return nil
}

// EnqueueDelivery stores a new pending delivery; a feed message also moves its endpoint's position
// from d.From to d.To, in the same transaction, and is a conflict when the position moved meanwhile.
func (s *Store) EnqueueDelivery(ctx context.Context, dir string, d *dirsvc.Delivery) error {
	db, err := s.hooksFor(ctx, dir)
	if err != nil {
		return err
	}
	tx, err := db.begin(ctx, sqlMovePosition, sqlEnqueue)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if d.Kind == dirsvc.DeliveryChanges {
		res, err := db.exec(ctx, tx, sqlMovePosition, d.To, d.Endpoint, d.From)
		if err != nil {
			return fmt.Errorf("move webhook position: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return dirsvc.Errorf(dirsvc.EConflict, "webhook %s moved on from position %d, or is gone", d.Endpoint, d.From)
		}
	}
	_, err = db.exec(ctx, tx, sqlEnqueue, d.ID, d.Endpoint, d.Kind, d.Status, d.Items, d.From, d.To, d.Body,
		hookTextOrNull(d.NextAttempt), hookText(d.CreatedAt))
	if err != nil {
		return fmt.Errorf("enqueue delivery: %w", err)
	}
	return tx.Commit()
}

const deliveryColumns = `seq, id, endpoint_id, kind, status, items, rounds, from_seq, to_seq, body, next_attempt, created_at`

func scanDelivery(row scanner) (*dirsvc.Delivery, int64, error) {
	d := new(dirsvc.Delivery)
	var seq int64
	var next, created sql.NullString
	if err := row.Scan(&seq, &d.ID, &d.Endpoint, &d.Kind, &d.Status, &d.Items, &d.Rounds, &d.From, &d.To, &d.Body, &next, &created); err != nil {
		return nil, 0, err
	}
	var err error
	if d.NextAttempt, err = parseHookTime(next); err == nil {
		d.CreatedAt, err = parseHookTime(created)
	}
	return d, seq, err
}

// NextDelivery returns the endpoint's oldest feed message neither delivered nor dead, or nil. Pings
// are sent at once by whoever asked for them and are not queued behind the feed.
func (s *Store) NextDelivery(ctx context.Context, dir, endpoint string) (*dirsvc.Delivery, error) {
	db, err := s.hooksDB(ctx, dir, false)
	if err != nil || db == nil {
		return nil, err
	}
	d, _, err := scanDelivery(db.QueryRowContext(ctx, `SELECT `+deliveryColumns+` FROM deliveries
WHERE endpoint_id = ? AND status IN ('pending', 'failed') AND kind = 'feed.changes' ORDER BY seq LIMIT 1`, endpoint))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return d, err
}

// Delivery returns one delivery of an endpoint with its attempts, oldest first.
func (s *Store) Delivery(ctx context.Context, dir, endpoint, id string) (*dirsvc.Delivery, error) {
	db, err := s.hooksFor(ctx, dir)
	if err != nil {
		return nil, err
	}
	d, seq, err := scanDelivery(db.QueryRowContext(ctx, `SELECT `+deliveryColumns+` FROM deliveries
WHERE id = ? AND endpoint_id = ?`, id, endpoint))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, dirsvc.ErrNotFound
	} else if err != nil {
		return nil, err
	}
	rows, err := db.QueryContext(ctx, `SELECT at, status, duration_ms, error FROM attempts WHERE delivery_seq = ? ORDER BY rowid`, seq)
	if err != nil {
		return nil, fmt.Errorf("read attempts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var a dirsvc.Attempt
		var at sql.NullString
		if err := rows.Scan(&at, &a.Status, &a.DurationMs, &a.Error); err != nil {
			return nil, err
		}
		if a.At, err = parseHookTime(at); err != nil {
			return nil, err
		}
		d.Attempts = append(d.Attempts, a)
	}
	return d, rows.Err()
}

// Deliveries returns an endpoint's deliveries created before before, newest first, of one status when
// status is not empty, at most limit; without attempts or bodies.
func (s *Store) Deliveries(ctx context.Context, dir, endpoint, status string, before time.Time, limit int) ([]dirsvc.Delivery, error) {
	db, err := s.hooksDB(ctx, dir, false)
	if err != nil || db == nil {
		return nil, err
	}
	rows, err := db.QueryContext(ctx, `SELECT seq, id, endpoint_id, kind, status, items, rounds, from_seq, to_seq, x'', next_attempt, created_at
FROM deliveries WHERE endpoint_id = ? AND created_at < ? AND (? = '' OR status = ?)
ORDER BY created_at DESC, seq DESC LIMIT ?`, endpoint, hookText(before), status, status, limit)
	if err != nil {
		return nil, fmt.Errorf("list deliveries: %w", err)
	}
	defer rows.Close()
	var out []dirsvc.Delivery
	for rows.Next() {
		d, _, err := scanDelivery(rows)
		if err != nil {
			return nil, err
		}
		d.Body = nil
		out = append(out, *d)
	}
	return out, rows.Err()
}

// RecordRound adds a round's attempts to a delivery, sets its status, rounds and next attempt, and
// sets its endpoint's failing time, in one transaction.
func (s *Store) RecordRound(ctx context.Context, dir string, d *dirsvc.Delivery, tries []dirsvc.Attempt, failingSince time.Time) error {
	db, err := s.hooksFor(ctx, dir)
	if err != nil {
		return err
	}
	tx, err := db.begin(ctx, sqlRound, sqlAttempt, sqlFailing)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var seq int64
	err = db.queryRow(ctx, tx, sqlRound,
		d.Status, d.Rounds, hookTextOrNull(d.NextAttempt), d.ID).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return dirsvc.ErrNotFound // its endpoint was deleted meanwhile
	} else if err != nil {
		return fmt.Errorf("record a round of attempts: %w", err)
	}
	for _, a := range tries {
		if _, err := db.exec(ctx, tx, sqlAttempt,
			seq, hookText(a.At), a.Status, a.DurationMs, a.Error); err != nil {
			return fmt.Errorf("record an attempt: %w", err)
		}
	}
	if d.Kind == dirsvc.DeliveryChanges {
		if _, err := db.exec(ctx, tx, sqlFailing, hookTextOrNull(failingSince), d.Endpoint); err != nil {
			return fmt.Errorf("record an endpoint's failures: %w", err)
		}
	}
	return tx.Commit()
}

// PruneDeliveries removes the deliveries created before before that are delivered or dead, with their
// attempts.
func (s *Store) PruneDeliveries(ctx context.Context, dir string, before time.Time) (int, error) {
	db, err := s.hooksDB(ctx, dir, false)
	if err != nil || db == nil {
		return 0, err
	}
	res, err := db.ExecContext(ctx, `DELETE FROM deliveries WHERE created_at < ? AND status IN ('delivered', 'dead')`, hookText(before))
	if err != nil {
		return 0, fmt.Errorf("prune deliveries: %w", err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// DeliveryQueue returns how many messages to the directory's active endpoints are neither delivered
// nor dead, and when the oldest was made. The open deliveries are read through their partial index
// (deliveries_open): an endpoint has at most one feed message open at a time, so the query reads
// about one row per endpoint however long the delivery log is.
func (s *Store) DeliveryQueue(ctx context.Context, dir string) (int, time.Time, error) {
	db, err := s.hooksDB(ctx, dir, false)
	if err != nil || db == nil {
		return 0, time.Time{}, err
	}
	var n int
	var oldest sql.NullString
	err = db.QueryRowContext(ctx, sqlDeliveryQueue).Scan(&n, &oldest)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("read the delivery queue: %w", err)
	}
	at, err := parseHookTime(oldest)
	return n, at, err
}

// sqlDeliveryQueue counts the open deliveries of active endpoints (see DeliveryQueue).
const sqlDeliveryQueue = `SELECT count(*), min(d.created_at) FROM deliveries d JOIN endpoints e ON e.id = d.endpoint_id
WHERE d.status IN ('pending', 'failed') AND e.state = 'active'`

// ChangeHead returns the position of the latest event of a directory's change log (0 when it has
// none): the webhook runners look at it to learn that a directory moved on, whichever process wrote.
func (s *Store) ChangeHead(ctx context.Context, slug string) (int64, error) {
	d, err := s.Directory(ctx, slug)
	if err != nil {
		return 0, err
	}
	d.gate.RLock()
	defer d.gate.RUnlock()
	var head int64
	if err := d.readers.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) FROM changes`).Scan(&head); err != nil {
		return 0, fmt.Errorf("read the change log's head of %q: %w", slug, err)
	}
	return head, nil
}
