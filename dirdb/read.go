package dirdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/dirsvc/dirsvc"
)

// readStmts are the prepared statements of the read paths.
type readStmts struct {
	views  *viewReaders // the hot path: a visible record's view, one B-tree lookup
	record *sql.Stmt    // the rest: why a record has no view for the audience
}

const (
	viewQuery   = `SELECT body, etag FROM projections WHERE public_id = ? AND audiences & ? != 0`
	recordQuery = `SELECT kind, state, COALESCE(survivor_id, ''), seen_by FROM records WHERE public_id = ?`
)

func (s *readStmts) prepare(ctx context.Context, db *sql.DB, hot int) (err error) {
	if s.views, err = openViewReaders(ctx, db, hot); err != nil {
		return err
	}
	s.record, err = db.PrepareContext(ctx, recordQuery)
	return err
}

func (s *readStmts) close() error {
	var errs []error
	if s.views != nil {
		errs = append(errs, s.views.close())
	}
	if s.record != nil {
		errs = append(errs, s.record.Close())
	}
	return errors.Join(errs...)
}

// Record returns the status of a record and its view for audience a. A view is stored only for a
// visible record, so when one exists the record is live for a and its kind is its ID's prefix.
func (d *Directory) Record(ctx context.Context, publicID string, a dirsvc.Audience) (dirsvc.RecordStatus, error) {
	d.gate.RLock()
	defer d.gate.RUnlock()
	var (
		st   dirsvc.RecordStatus
		seen int64
	)
	key := viewKey{publicID, audienceBit(a)}
	if v, ok := d.cache.get(key); ok {
		st.Kind, st.State, st.SeenBy = dirsvc.KindOfID(publicID), dirsvc.StateLive, dirsvc.AudiencesOf(a)
		st.View = &dirsvc.Published{PublicID: publicID, Body: v.body, ETag: v.etag, Encoded: v.enc}
		return st, nil
	}
	gen := d.stmts.views.gen.Load()
	body, etag, ok, err := d.stmts.views.read(ctx, publicID, key.bit)
	switch {
	case err != nil:
		return st, fmt.Errorf("read view of %s: %w", publicID, err)
	case ok:
		st.Kind, st.State, st.SeenBy = dirsvc.KindOfID(publicID), dirsvc.StateLive, dirsvc.AudiencesOf(a)
		st.View = &dirsvc.Published{PublicID: publicID, Body: body, ETag: etag}
		if v := d.cache.put(key, &cachedView{body: body, etag: etag}, gen, &d.stmts.views.gen); v != nil {
			st.View.Body, st.View.ETag, st.View.Encoded = v.body, v.etag, v.enc
		}
		return st, nil
	}
	err = d.stmts.record.QueryRowContext(ctx, publicID).Scan(&st.Kind, &st.State, &st.Survivor, &seen)
	if errors.Is(err, sql.ErrNoRows) {
		return st, dirsvc.ErrNotFound
	} else if err != nil {
		return st, fmt.Errorf("read record %s: %w", publicID, err)
	}
	st.SeenBy = dirsvc.Audiences(seen)
	return st, nil
}

// refColumns are the columns that hold a record's references, by the kind they refer to.
var refColumns = map[dirsvc.Kind]string{
	dirsvc.KindOrganisation: "organisation_id",
	dirsvc.KindLocation:     "location_id",
	dirsvc.KindService:      "service_id",
	dirsvc.KindPractitioner: "practitioner_id",
}

// Related returns the views for the viewer of the records of kind that refer to refID and are inside
// the viewer's narrowing.
func (d *Directory) Related(ctx context.Context, v dirsvc.Viewer, kind, ref dirsvc.Kind, refID string) ([]dirsvc.Published, error) {
	col, ok := refColumns[ref]
	if !ok {
		return nil, fmt.Errorf("records do not refer to kind %q", ref)
	}
	d.gate.RLock()
	defer d.gate.RUnlock()
	in := inside(kind, "r.public_id", v)
	rows, err := d.readers.QueryContext(ctx, `
SELECT r.public_id, p.body, p.etag
FROM records r JOIN projections p ON p.public_id = r.public_id AND p.audiences & ? != 0
WHERE r.`+col+` = ? AND r.kind = ? AND `+in.sql+`
ORDER BY r.public_id`, append([]any{audienceBit(v.Audience), refID, string(kind)}, in.args...)...)
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
