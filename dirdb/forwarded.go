package dirdb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dirsvc/dirsvc"
)

// The store keeps each directory's forwarded items, their history and its moderators in the
// directory's ops file (see dirsvc.ForwardedStore), under the directory's write lock like every other
// write of that file.
var _ dirsvc.ForwardedStore = (*Store)(nil)

// opsTx runs fn in a transaction of a directory's ops file, with its write lock held (see
// opsLocked); on the primary only.
func (s *Store) opsTx(ctx context.Context, dir string, fn func(tx *sql.Tx) error) error {
	d, err := s.directory(ctx, dir)
	if err != nil {
		return err
	}
	return d.opsLocked(ctx, func(ops *sql.DB) error {
		tx, err := ops.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("begin ops write: %w", err)
		}
		defer tx.Rollback()
		if err := fn(tx); err != nil {
			return err
		}
		return tx.Commit()
	})
}

// CreateForwarded stores a new item with its first history step.
func (s *Store) CreateForwarded(ctx context.Context, dir string, it *dirsvc.ForwardedItem) error {
	var changes []byte
	if len(it.Changes) > 0 {
		var err error
		if changes, err = json.Marshal(it.Changes); err != nil {
			return err
		}
	}
	var name, email, phone any
	if r := it.Reporter; r != nil {
		name, email, phone = r.Name, r.Email, r.Phone
	}
	return s.opsTx(ctx, dir, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO forwarded (id, kind, client_id, public_id, record_kind, organisation,
			status, changes, gated, message, reference, category, reporter_name, reporter_email, reporter_phone,
			created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			it.ID, it.Kind, it.ClientID, it.PublicID, string(it.RecordKind), it.Organisation, it.Status, changes,
			it.Gated, it.Message, it.Reference, it.Category, name, email, phone, hookText(it.CreatedAt), hookText(it.UpdatedAt))
		if err != nil {
			return fmt.Errorf("store a forwarded %s: %w", it.Kind, err)
		}
		for _, a := range it.History {
			if err := addAction(ctx, tx, it.ID, a); err != nil {
				return err
			}
		}
		return nil
	})
}

func addAction(ctx context.Context, tx *sql.Tx, id string, a dirsvc.ModerationAction) error {
	_, err := tx.ExecContext(ctx, "INSERT INTO forwarded_actions (item_id, at, action, operator, role, note) VALUES (?, ?, ?, ?, ?, ?)",
		id, hookText(a.At), a.Action, a.Operator, a.Role, a.Note)
	if err != nil {
		return fmt.Errorf("record a moderation action: %w", err)
	}
	return nil
}

const forwardedColumns = `id, kind, status, client_id, public_id, record_kind, organisation, reason, changes, gated,
	message, reference, category, reporter_name, reporter_email, reporter_phone, published_version, created_at, updated_at`

func scanForwarded(sc interface{ Scan(...any) error }) (dirsvc.ForwardedItem, error) {
	var it dirsvc.ForwardedItem
	var kind string
	var changes []byte
	var name, email, phone, created, updated sql.NullString
	err := sc.Scan(&it.ID, &it.Kind, &it.Status, &it.ClientID, &it.PublicID, &kind, &it.Organisation, &it.Reason, &changes,
		&it.Gated, &it.Message, &it.Reference, &it.Category, &name, &email, &phone, &it.PublishedVersion, &created, &updated)
	if err != nil {
		return it, err
	}
	it.RecordKind = dirsvc.Kind(kind)
	if len(changes) > 0 {
		if err := json.Unmarshal(changes, &it.Changes); err != nil {
			return it, fmt.Errorf("decode the changes of %s: %w", it.ID, err)
		}
	}
	if name.Valid || email.Valid || phone.Valid {
		it.Reporter = &dirsvc.Reporter{Name: name.String, Email: email.String, Phone: phone.String}
	}
	if it.CreatedAt, err = parseHookTime(created); err != nil {
		return it, err
	}
	it.UpdatedAt, err = parseHookTime(updated)
	return it, err
}

// Forwarded returns an item with its history.
func (s *Store) Forwarded(ctx context.Context, dir, id string) (*dirsvc.ForwardedItem, error) {
	var it dirsvc.ForwardedItem
	err := s.opsTx(ctx, dir, func(tx *sql.Tx) error {
		var err error
		it, err = scanForwarded(tx.QueryRowContext(ctx, "SELECT "+forwardedColumns+" FROM forwarded WHERE id = ?", id))
		if errors.Is(err, sql.ErrNoRows) {
			return dirsvc.ErrNotFound
		} else if err != nil {
			return fmt.Errorf("read forwarded item: %w", err)
		}
		rows, err := tx.QueryContext(ctx, "SELECT at, action, operator, role, note FROM forwarded_actions WHERE item_id = ? ORDER BY seq", id)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var a dirsvc.ModerationAction
			var at sql.NullString
			if err := rows.Scan(&at, &a.Action, &a.Operator, &a.Role, &a.Note); err != nil {
				return err
			}
			if a.At, err = parseHookTime(at); err != nil {
				return err
			}
			it.History = append(it.History, a)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return &it, nil
}

// ForwardedItems returns the items of the statuses given (all when none), oldest first.
func (s *Store) ForwardedItems(ctx context.Context, dir string, statuses ...string) ([]dirsvc.ForwardedItem, error) {
	q := "SELECT " + forwardedColumns + " FROM forwarded"
	args := make([]any, len(statuses))
	if len(statuses) > 0 {
		q += " WHERE status IN (?" + strings.Repeat(", ?", len(statuses)-1) + ")"
		for i, st := range statuses {
			args[i] = st
		}
	}
	q += " ORDER BY created_at, id"
	var out []dirsvc.ForwardedItem
	err := s.opsTx(ctx, dir, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("list forwarded items: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			it, err := scanForwarded(rows)
			if err != nil {
				return err
			}
			out = append(out, it)
		}
		return rows.Err()
	})
	return out, err
}

// ActOnForwarded records an action and moves the item's status, if its status is one of from.
func (s *Store) ActOnForwarded(ctx context.Context, dir, id string, from []string, to, reason string, version int64, act dirsvc.ModerationAction) error {
	return s.opsTx(ctx, dir, func(tx *sql.Tx) error {
		var status string
		err := tx.QueryRowContext(ctx, "SELECT status FROM forwarded WHERE id = ?", id).Scan(&status)
		if errors.Is(err, sql.ErrNoRows) {
			return dirsvc.ErrNotFound
		} else if err != nil {
			return fmt.Errorf("read forwarded item: %w", err)
		}
		if !slices.Contains(from, status) {
			return dirsvc.Errorf(dirsvc.EConflict, "The item is %s: %s is not possible now.", dirsvc.ReceiptStatus(status), act.Action)
		}
		_, err = tx.ExecContext(ctx, `UPDATE forwarded SET status = ?, reason = ?, updated_at = ?,
			published_version = CASE WHEN ? > 0 THEN ? ELSE published_version END WHERE id = ?`,
			to, reason, hookText(act.At), version, version, id)
		if err != nil {
			return fmt.Errorf("update forwarded item: %w", err)
		}
		return addAction(ctx, tx, id, act)
	})
}

// Moderators returns the directory's moderators, by name.
func (s *Store) Moderators(ctx context.Context, dir string) ([]dirsvc.Moderator, error) {
	var out []dirsvc.Moderator
	err := s.opsTx(ctx, dir, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, "SELECT name, role, organisation FROM moderators ORDER BY name, role, organisation")
		if err != nil {
			return fmt.Errorf("list moderators: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var m dirsvc.Moderator
			if err := rows.Scan(&m.Name, &m.Role, &m.Organisation); err != nil {
				return err
			}
			out = append(out, m)
		}
		return rows.Err()
	})
	return out, err
}

// AddModerator adds a moderator's role; adding one it holds changes nothing.
func (s *Store) AddModerator(ctx context.Context, dir string, m dirsvc.Moderator) error {
	return s.opsTx(ctx, dir, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "INSERT OR IGNORE INTO moderators (name, role, organisation) VALUES (?, ?, ?)",
			m.Name, m.Role, m.Organisation)
		return err
	})
}

// RemoveModerator removes every role of a name.
func (s *Store) RemoveModerator(ctx context.Context, dir, name string) error {
	return s.opsTx(ctx, dir, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, "DELETE FROM moderators WHERE name = ?", name)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return dirsvc.ErrNotFound
		}
		return nil
	})
}
