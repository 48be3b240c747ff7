package dirdb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/dirsvc/dirsvc"
)

// ReadSnapshot begins one read transaction of the directory for the viewer (exports read the whole
// directory from it): every statement of the snapshot sees the file as it was at its first read,
// whatever commits meanwhile (the published file is in WAL mode on the primary, where exports run,
// so the writer is never held back). It holds the gate's read side and one pooled reader until
// Close, so that the file is not retired under it.
func (d *Directory) ReadSnapshot(ctx context.Context, v dirsvc.Viewer) (dirsvc.ReadSnapshot, error) {
	d.gate.RLock()
	conn, err := d.readers.Conn(ctx)
	if err != nil {
		d.gate.RUnlock()
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	// A snapshot reads the whole file once, in order: through the reader's own page cache rather
	// than the map, so the process does not map (and count as its memory) every page of the file.
	if _, err := conn.ExecContext(ctx, "PRAGMA mmap_size = 0"); err != nil {
		conn.Close()
		d.gate.RUnlock()
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err == nil {
		// The transaction's snapshot begins with its first read: begin it now.
		var n int
		err = tx.QueryRowContext(ctx, "SELECT count(*) FROM records WHERE public_id = ''").Scan(&n)
	}
	if err != nil {
		if tx != nil {
			tx.Rollback()
		}
		conn.Close()
		d.gate.RUnlock()
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	return &snapshot{d: d, v: v, conn: conn, tx: tx}, nil
}

type snapshot struct {
	d    *Directory
	v    dirsvc.Viewer
	conn *sql.Conn
	tx   *sql.Tx
	once sync.Once
	// stmts are the point statements (Readable, Leadership) prepared once for the snapshot: an
	// export runs one for most records it writes, from more than one goroutine (mu).
	mu    sync.Mutex
	stmts map[string]*sql.Stmt
}

// stmt returns the statement of query prepared in the snapshot's transaction.
func (s *snapshot) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.stmts[query]; st != nil {
		return st, nil
	}
	st, err := s.tx.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if s.stmts == nil {
		s.stmts = map[string]*sql.Stmt{}
	}
	s.stmts[query] = st
	return st, nil
}

// walkSQL is the statement of a walk of the records of kind: the list statements (Services,
// Practitioners, Records) without a page's bounds.
func walkSQL(v dirsvc.Viewer, kind dirsvc.Kind) (sqlCond, bool) {
	if !v.Narrowing.AllowsKind(kind) {
		return sqlCond{}, false
	}
	const all = math.MaxInt32 - 1
	switch kind {
	case dirsvc.KindService:
		pl := planServices(v, dirsvc.ServiceQuery{Limit: all})
		return pl.page(walk), true
	case dirsvc.KindPractitioner:
		return viewsPage(v, kind, "", all, activeRole("p.public_id", audienceBit(v.Audience), condTrue)), true
	case dirsvc.KindOrganisation, dirsvc.KindLocation, dirsvc.KindRole:
		return viewsPage(v, kind, "", all, condTrue), true
	}
	return sqlCond{}, false
}

// Walk calls fn with every view of kind the viewer may list, in public-ID order.
func (s *snapshot) Walk(ctx context.Context, kind dirsvc.Kind, fn func(p dirsvc.Published) error) error {
	q, ok := walkSQL(s.v, kind)
	if !ok {
		return nil
	}
	rows, err := s.tx.QueryContext(ctx, q.sql, q.args...)
	if err != nil {
		return fmt.Errorf("walk %ss: %w", kind, err)
	}
	defer rows.Close()
	var p dirsvc.Published
	for rows.Next() {
		var body sql.RawBytes
		if err := rows.Scan(&p.PublicID, &body, &p.ETag); err != nil {
			return fmt.Errorf("walk %ss: %w", kind, err)
		}
		p.Body = body
		if err := fn(p); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("walk %ss: %w", kind, err)
	}
	return nil
}

// walkColumns begins the statement of every walk (walkSQL), and walkOrder ends it (its limit the
// last argument).
const (
	walkColumns = "SELECT p.public_id, p.body, p.etag"
	walkOrder   = "\nORDER BY p.public_id LIMIT ?"
)

// Count returns how many records Walk gives for kind: the walk's statement, counted on the records
// table instead of the views. A record has a view for an audience exactly when its visible_to holds
// the audience (publish writes a view for each audience that may see it), so the rows are the
// walk's; but a count of the views reads every page of them, bodies and all (about as long as the
// walk itself), where the records' rows are a few dozen bytes each.
func (s *snapshot) Count(ctx context.Context, kind dirsvc.Kind) (int64, error) {
	q, ok := walkSQL(s.v, kind)
	if !ok {
		return 0, nil
	}
	// The walk's rows counted as they are found: without their views, and without the order and
	// limit of a page.
	body, found := strings.CutPrefix(q.sql, walkColumns+walkViews)
	body, ordered := strings.CutSuffix(body, walkOrder)
	head, rest, visible := strings.Cut(body, walkVisible)
	if !found || !ordered || !visible {
		return 0, fmt.Errorf("count %ss: the walk's statement is not %s...%s...%s", kind, walkColumns+walkViews, walkVisible, walkOrder)
	}
	var n int64
	query := "SELECT count(*)" + countRecords + head + countVisible + rest
	if err := s.tx.QueryRowContext(ctx, query, q.args[:len(q.args)-1]...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count %ss: %w", kind, err)
	}
	return n, nil
}

// walkViews is the table every walk reads (walkSQL), walkVisible its audience condition; the count
// reads the records table under the same alias (countRecords) with the same condition on its
// audiences (countVisible).
const (
	walkViews    = "\nFROM projections p INDEXED BY sqlite_autoindex_projections_1"
	walkVisible  = " AND p.audiences & ? != 0 AND "
	countRecords = "\nFROM records p INDEXED BY sqlite_autoindex_records_1"
	countVisible = " AND p.visible_to & ? != 0 AND "
)

// Readable reports whether the viewer may read the record: a view of it for the viewer's audience
// exists and the record lies inside the narrowing.
func (s *snapshot) Readable(ctx context.Context, publicID string) (bool, error) {
	kind := dirsvc.KindOfID(publicID)
	if kind == "" {
		return false, nil
	}
	in := inside(kind, "p.public_id", s.v)
	st, err := s.stmt(ctx, "SELECT 1 FROM projections p WHERE p.public_id = ? AND p.audiences & ? != 0 AND ("+in.sql+")")
	if err != nil {
		return false, fmt.Errorf("read %s: %w", publicID, err)
	}
	var one int
	err = st.QueryRowContext(ctx, append([]any{publicID, audienceBit(s.v.Audience)}, in.args...)...).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("read %s: %w", publicID, err)
	}
	return true, nil
}

// Leadership returns the organisation's stored leadership view as of the snapshot.
func (s *snapshot) Leadership(ctx context.Context, orgID string) (*dirsvc.Published, error) {
	p := &dirsvc.Published{PublicID: orgID}
	st, err := s.stmt(ctx, "SELECT body, etag FROM projections WHERE public_id = ? AND audiences & ? != 0")
	if err != nil {
		return nil, fmt.Errorf("read leadership of %s: %w", orgID, err)
	}
	err = st.QueryRowContext(ctx, orgID, leadershipBit).Scan(&p.Body, &p.ETag)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, dirsvc.ErrNotFound
	} else if err != nil {
		return nil, fmt.Errorf("read leadership of %s: %w", orgID, err)
	}
	return p, nil
}

// Close ends the read transaction and gives its reader back.
func (s *snapshot) Close() error {
	var err error
	s.once.Do(func() {
		for _, st := range s.stmts {
			st.Close()
		}
		err = s.tx.Rollback()
		// The connection goes back to the pool as the other readers are: mapping the file.
		if _, merr := s.conn.ExecContext(context.Background(), fmt.Sprintf("PRAGMA mmap_size = %d", readerMmapSize)); merr != nil {
			s.conn.Raw(func(any) error { return driver.ErrBadConn }) // dropped, not pooled
		}
		if cerr := s.conn.Close(); err == nil {
			err = cerr
		}
		s.d.gate.RUnlock()
	})
	return err
}
