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

// recordReaders run the single record reads, the hottest statements of the service, through the
// driver itself: each holds one reader connection out of the pool for the directory's life, with
// the statements it ran prepared on it, and uses it only inside sql.Conn.Raw. This leaves out
// database/sql's per-query locking, conversion and second copy of the body.
//
// Each reader also keeps one read transaction open across queries, and begins a new one only when
// the file changed since (gen), which saves starting and ending a WAL read, with its shared-memory
// locks, on every query. Whoever changes the file calls changed, which also ends the transactions of
// idle readers, so no reader holds an old snapshot (and the WAL) for long.
type recordReaders struct {
	idle chan *recordReader
	all  []*recordReader
	gen  atomic.Uint64
}

// maxReaderStmts bounds the statements a reader keeps prepared. A read's statement depends only on
// the shape of the caller's narrowing, never on the record asked for, so whether it was kept tells
// nothing of the record.
const maxReaderStmts = 64

type recordReader struct {
	conn  *sql.Conn
	stmts map[string]driver.StmtQueryContext
	open  bool   // a read transaction is open
	gen   uint64 // the generation it was opened at
}

func openRecordReaders(ctx context.Context, db *sql.DB, n int) (*recordReaders, error) {
	rr := &recordReaders{idle: make(chan *recordReader, n)}
	for range n {
		conn, err := db.Conn(ctx)
		if err != nil {
			rr.close()
			return nil, err
		}
		r := &recordReader{conn: conn, stmts: map[string]driver.StmtQueryContext{}}
		rr.all = append(rr.all, r)
		// The statement of every read without a narrowing is prepared now, so that the first of
		// those reads costs what the others do.
		if err := conn.Raw(func(dc any) error { _, _, err := r.prepare(ctx, dc, plainRecordQuery); return err }); err != nil {
			rr.close()
			return nil, fmt.Errorf("prepare record statement: %w", err)
		}
		rr.idle <- r
	}
	return rr, nil
}

// prepare returns the reader's prepared statement of query; keep is false when the reader holds
// too many to keep it, and the caller closes it after use.
func (r *recordReader) prepare(ctx context.Context, dc any, query string) (st driver.StmtQueryContext, keep bool, err error) {
	if st, ok := r.stmts[query]; ok {
		return st, true, nil
	}
	p, ok := dc.(driver.ConnPrepareContext)
	if !ok {
		return nil, false, errors.New("the driver cannot prepare with a context")
	}
	s, err := p.PrepareContext(ctx, query)
	if err != nil {
		return nil, false, err
	}
	if st, ok = s.(driver.StmtQueryContext); !ok {
		s.Close()
		return nil, false, errors.New("the driver's statements cannot query with a context")
	}
	if len(r.stmts) >= maxReaderStmts {
		return st, false, nil
	}
	r.stmts[query] = st
	return st, true, nil
}

// query runs a statement that returns at most one row and reads that row into dest; ok is false
// when it returns none. The driver's values are handed over as they are: the driver gives each
// row's text and blobs their own memory.
func (rr *recordReaders) query(ctx context.Context, query string, args []driver.NamedValue, dest []driver.Value) (ok bool, err error) {
	var r *recordReader
	select {
	case r = <-rr.idle:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	defer func() { rr.idle <- r }()
	err = r.conn.Raw(func(dc any) error {
		if gen := rr.gen.Load(); !r.open || r.gen != gen {
			if err := r.end(ctx, dc); err != nil {
				return err
			}
			// The snapshot is taken by the first query after BEGIN: never older than gen.
			if err := execDriver(ctx, dc, "BEGIN"); err != nil {
				return err
			}
			r.open, r.gen = true, gen
		}
		st, keep, err := r.prepare(ctx, dc, query)
		if err != nil {
			return err
		}
		if !keep {
			defer st.(driver.Stmt).Close()
		}
		rows, err := st.QueryContext(ctx, args)
		if err != nil {
			return err
		}
		defer rows.Close()
		switch err := rows.Next(dest); {
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return err
		}
		ok = true
		return nil
	})
	return ok, err
}

// end ends the reader's read transaction, if it has one open.
func (r *recordReader) end(ctx context.Context, dc any) error {
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
func (rr *recordReaders) changed() {
	rr.gen.Add(1)
	for range len(rr.all) {
		select {
		case r := <-rr.idle:
			r.conn.Raw(func(dc any) error { return r.end(context.Background(), dc) })
			rr.idle <- r
		default:
			return
		}
	}
}

func (rr *recordReaders) close() error {
	var errs []error
	for _, r := range rr.all {
		errs = append(errs, r.conn.Raw(func(dc any) error {
			errs := []error{r.end(context.Background(), dc)}
			for _, st := range r.stmts {
				errs = append(errs, st.(driver.Stmt).Close())
			}
			return errors.Join(errs...)
		}))
		errs = append(errs, r.conn.Close())
	}
	rr.all = nil
	return errors.Join(errs...)
}
