package dirdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/dirsvc/dirsvc"
)

// readStmts are the prepared statements of the hot read paths.
type readStmts struct {
	record *sql.Stmt
}

const recordQuery = `
SELECT r.kind, r.state, COALESCE(r.survivor_id, ''), r.seen_by, p.body, p.etag
FROM records r LEFT JOIN projections p ON p.public_id = r.public_id AND p.view = ?
WHERE r.public_id = ?`

func (s *readStmts) prepare(ctx context.Context, db *sql.DB) (err error) {
	s.record, err = db.PrepareContext(ctx, recordQuery)
	return err
}

func (s *readStmts) close() error {
	if s.record == nil {
		return nil
	}
	return s.record.Close()
}

// Record returns the status of a record and its view for audience a.
func (d *Directory) Record(ctx context.Context, publicID string, a dirsvc.Audience) (dirsvc.RecordStatus, error) {
	d.gate.RLock()
	defer d.gate.RUnlock()
	var (
		st         dirsvc.RecordStatus
		seen       int64
		body, etag []byte
	)
	err := d.stmts.record.QueryRowContext(ctx, a.String(), publicID).
		Scan(&st.Kind, &st.State, &st.Survivor, &seen, &body, &etag)
	if errors.Is(err, sql.ErrNoRows) {
		return st, dirsvc.ErrNotFound
	} else if err != nil {
		return st, fmt.Errorf("read record %s: %w", publicID, err)
	}
	st.SeenBy = dirsvc.Audiences(seen)
	if body != nil {
		st.View = &dirsvc.Published{PublicID: publicID, Body: body, ETag: string(etag)}
	}
	return st, nil
}

// refColumns are the columns that hold a record's references, by the kind they refer to.
var refColumns = map[dirsvc.Kind]string{
	dirsvc.KindOrganisation: "organisation_id",
	dirsvc.KindLocation:     "location_id",
	dirsvc.KindService:      "service_id",
	dirsvc.KindPractitioner: "practitioner_id",
}

// Related returns the views for audience a of the records of kind that refer to refID.
func (d *Directory) Related(ctx context.Context, a dirsvc.Audience, kind, ref dirsvc.Kind, refID string) ([]dirsvc.Published, error) {
	col, ok := refColumns[ref]
	if !ok {
		return nil, fmt.Errorf("records do not refer to kind %q", ref)
	}
	d.gate.RLock()
	defer d.gate.RUnlock()
	rows, err := d.readers.QueryContext(ctx, `
SELECT r.public_id, p.body, p.etag
FROM records r JOIN projections p ON p.public_id = r.public_id AND p.view = ?
WHERE r.`+col+` = ? AND r.kind = ?
ORDER BY r.public_id`, a.String(), refID, string(kind))
	if err != nil {
		return nil, fmt.Errorf("read %ss of %s: %w", kind, refID, err)
	}
	defer rows.Close()
	var out []dirsvc.Published
	for rows.Next() {
		var p dirsvc.Published
		if err := rows.Scan(&p.PublicID, &p.Body, &p.ETag); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}
