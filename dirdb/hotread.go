package dirdb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
)

// viewReaders read published views, the hottest statement of the service, through the driver
// itself: each holds one reader connection out of the pool for the directory's life with the view
// statement prepared on it, and uses it only inside sql.Conn.Raw. This leaves out database/sql's
// per-query locking, conversion and second copy of the body.
//
// Each reader also keeps one read transaction open across queries, and begins a new one only when
// the file changed since (gen), which saves starting and ending a WAL read, with its shared-memory
// locks, on every query. Whoever changes the file calls changed, which also ends the transactions of
// idle readers, so no reader holds an old snapshot (and the WAL) for long.
type viewReaders struct {
	idle chan *viewReader
	all  []*viewReader
	gen  atomic.Uint64
}

type viewReader struct {
	conn *sql.Conn
	stmt driver.StmtQueryContext
	open bool   // a read transaction is open
	gen  uint64 // the generation it was opened at
}

func openViewReaders(ctx context.Context, db *sql.DB, n int) (*viewReaders, error) {
	vr := &viewReaders{idle: make(chan *viewReader, n)}
	for range n {
		conn, err := db.Conn(ctx)
		if err != nil {
			vr.close()
			return nil, err
		}
		r := &viewReader{conn: conn}
		vr.all = append(vr.all, r)
		err = conn.Raw(func(dc any) error {
			p, ok := dc.(driver.ConnPrepareContext)
			if !ok {
				return errors.New("the driver cannot prepare with a context")
			}
			st, err := p.PrepareContext(ctx, viewQuery)
			if err != nil {
				return err
			}
			if r.stmt, ok = st.(driver.StmtQueryContext); !ok {
				st.Close()
				return errors.New("the driver's statements cannot query with a context")
			}
			return nil
		})
		if err != nil {
			vr.close()
			return nil, fmt.Errorf("prepare view statement: %w", err)
		}
		vr.idle <- r
	}
	return vr, nil
}

// read returns the body and entity tag of the view of publicID that audience bit receives; ok is
// false when the audience receives none.
func (vr *viewReaders) read(ctx context.Context, publicID string, bit int64) (body []byte, etag string, ok bool, err error) {
	var r *viewReader
	select {
	case r = <-vr.idle:
	case <-ctx.Done():
		return nil, "", false, ctx.Err()
	}
	defer func() { vr.idle <- r }()
	err = r.conn.Raw(func(dc any) error {
		if gen := vr.gen.Load(); !r.open || r.gen != gen {
			if err := r.end(ctx, dc); err != nil {
				return err
			}
			// The snapshot is taken by the first query after BEGIN: never older than gen.
			if err := execDriver(ctx, dc, "BEGIN"); err != nil {
				return err
			}
			r.open, r.gen = true, gen
		}
		rows, err := r.stmt.QueryContext(ctx, []driver.NamedValue{{Ordinal: 1, Value: publicID}, {Ordinal: 2, Value: bit}})
		if err != nil {
			return err
		}
		defer rows.Close()
		dest := make([]driver.Value, 2)
		switch err := rows.Next(dest); {
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return err
		}
		b, bok := dest[0].([]byte)
		e, eok := dest[1].(string)
		if !bok || !eok {
			return fmt.Errorf("view of %s: unexpected column types %T, %T", publicID, dest[0], dest[1])
		}
		body, etag, ok = b, e, true
		return nil
	})
	return body, etag, ok, err
}

// end ends the reader's read transaction, if it has one open.
func (r *viewReader) end(ctx context.Context, dc any) error {
	if !r.open {
		return nil
	}
	r.open = false
	return execDriver(ctx, dc, "COMMIT")
}

func execDriver(ctx context.Context, dc any, query string) error {
	ex, ok := dc.(driver.ExecerContext)
	if !ok {
		return errors.New("the driver cannot execute with a context")
	}
	_, err := ex.ExecContext(ctx, query, nil)
	return err
}

// changed tells the readers that the file changed: each begins a new read transaction before its
// next query, and idle ones end theirs now. Call it after every commit to the file.
func (vr *viewReaders) changed() {
	vr.gen.Add(1)
	for range len(vr.all) {
		select {
		case r := <-vr.idle:
			r.conn.Raw(func(dc any) error { return r.end(context.Background(), dc) })
			vr.idle <- r
		default:
			return
		}
	}
}

func (vr *viewReaders) close() error {
	var errs []error
	for _, r := range vr.all {
		if r.stmt != nil {
			errs = append(errs, r.conn.Raw(func(dc any) error {
				return errors.Join(r.end(context.Background(), dc), r.stmt.(driver.Stmt).Close())
			}))
		}
		errs = append(errs, r.conn.Close())
	}
	vr.all = nil
	return errors.Join(errs...)
}
