package dirdb

import (
	"context"
	"database/sql"
	"sync"
)

// stmtCache keeps the prepared statements of a directory's readers by their text. List queries are
// written for the request's filters, and SQLite's parsing and planning of one cost about as much as
// running it (a sixth of a loaded node's CPU before they were kept); the texts of a directory's
// lists are few (one per combination of filters and number of values), so each is prepared once.
type stmtCache struct {
	mu    sync.Mutex
	stmts map[string]*sql.Stmt
}

// maxCachedStmts bounds the statements kept; past it, a new text runs unprepared.
const maxCachedStmts = 1024

// query runs query on db with a statement kept for its text.
func (c *stmtCache) query(ctx context.Context, db *sql.DB, query string, args ...any) (*sql.Rows, error) {
	st, err := c.stmt(ctx, db, query)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return db.QueryContext(ctx, query, args...)
	}
	return st.QueryContext(ctx, args...)
}

// queryRow is query for one row.
func (c *stmtCache) queryRow(ctx context.Context, db *sql.DB, query string, args ...any) *sql.Row {
	st, err := c.stmt(ctx, db, query)
	if err != nil || st == nil {
		return db.QueryRowContext(ctx, query, args...) // an error comes again, with the row
	}
	return st.QueryRowContext(ctx, args...)
}

// stmt returns the statement kept for query, preparing it the first time; nil when the cache is full.
func (c *stmtCache) stmt(ctx context.Context, db *sql.DB, query string) (*sql.Stmt, error) {
	c.mu.Lock()
	st, full := c.stmts[query], len(c.stmts) >= maxCachedStmts
	c.mu.Unlock()
	if st != nil || full {
		return st, nil
	}
	st, err := db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if kept := c.stmts[query]; kept != nil { // another read prepared it meanwhile
		st.Close()
		return kept, nil
	}
	if c.stmts == nil {
		c.stmts = map[string]*sql.Stmt{}
	}
	c.stmts[query] = st
	return st, nil
}

// close closes every statement kept.
func (c *stmtCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var first error
	for q, st := range c.stmts {
		if err := st.Close(); err != nil && first == nil {
			first = err
		}
		delete(c.stmts, q)
	}
	return first
}
