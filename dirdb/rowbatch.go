package dirdb

import (
	"fmt"
	"strings"
)

// An import publishes hundreds of thousands of records, each a row of records, one to three of
// projections and a few of list_keys; a statement costs more than the row it inserts, so during the
// records of an import (batchRows) the rows wait in memory and go in many to a statement. Outside
// it, a record's rows go in when it is applied, as before. The rows of a table go in in the order
// they were made, so what is stored (rowids included) is the same either way.

// rowInserts is a table's rows waiting to go in.
type rowInserts struct {
	table   string
	head    string // INSERT INTO table (columns) VALUES
	tail    string // ON CONFLICT clause, if any
	cols    int
	perStmt int      // rows in one statement
	args    []any    // cols values a row
	ids     []string // the record of each row, for errors
	texts   map[int]string
}

// statement returns the statement that inserts n rows.
func (r *rowInserts) statement(n int) string {
	if q, ok := r.texts[n]; ok {
		return q
	}
	row := "(?" + strings.Repeat(", ?", r.cols-1) + ")"
	q := r.head + strings.TrimSuffix(strings.Repeat(row+", ", n), ", ") + r.tail
	if r.texts == nil {
		r.texts = map[int]string{}
	}
	r.texts[n] = q
	return q
}

// add queues a row of record id.
func (r *rowInserts) add(id string, vals ...any) {
	r.args = append(r.args, vals...)
	r.ids = append(r.ids, id)
}

// full reports whether a statement's worth of rows waits.
func (r *rowInserts) full() bool { return len(r.ids) >= r.perStmt }

// flush inserts the waiting rows, a statement at a time. The queues keep their memory for the
// rows that follow.
func (r *rowInserts) flush(w *writeTx) error {
	for done := 0; done < len(r.ids); {
		n := min(len(r.ids)-done, r.perStmt)
		if err := w.exec(w.pub, r.statement(n), r.args[done*r.cols:(done+n)*r.cols]...); err != nil {
			if n == 1 {
				return fmt.Errorf("publish %s of %s: %w", r.table, r.ids[done], err)
			}
			return fmt.Errorf("publish %s of %s to %s: %w", r.table, r.ids[done], r.ids[done+n-1], err)
		}
		done += n
	}
	clear(r.args) // the values are the rows' and may be large: hold none of them
	r.args, r.ids = r.args[:0], r.ids[:0]
	return nil
}

// publishedRows are the rows apply writes to records, projections and list_keys.
type publishedRows struct {
	records, views, keys rowInserts
	batching             bool
}

func newPublishedRows() *publishedRows {
	return &publishedRows{
		records: rowInserts{table: "the record", head: `INSERT INTO records (public_id, kind, state, visible_to, seen_by, survivor_id, version, local_revision,
    view_hash, organisation_id, location_id, service_id, practitioner_id, updated_at, audience_heads) VALUES `, tail: `
ON CONFLICT (public_id) DO UPDATE SET kind = excluded.kind, state = excluded.state,
    visible_to = excluded.visible_to, seen_by = excluded.seen_by, survivor_id = excluded.survivor_id,
    version = excluded.version, local_revision = excluded.local_revision, view_hash = excluded.view_hash,
    organisation_id = excluded.organisation_id, location_id = excluded.location_id,
    service_id = excluded.service_id, practitioner_id = excluded.practitioner_id,
    updated_at = excluded.updated_at, audience_heads = excluded.audience_heads`, cols: 15, perStmt: 128},
		views: rowInserts{table: "the views", head: "INSERT INTO projections (public_id, audiences, body, etag, updated_ms) VALUES ", cols: 5, perStmt: 256},
		keys:  rowInserts{table: "the list keys", head: "INSERT INTO list_keys (public_id, key, audiences) VALUES ", cols: 3, perStmt: maxKeysPerInsert},
	}
}

// flushPublished inserts the published rows waiting, when any batch is full or, with all, every
// one; the records first, then their views and keys.
func (w *writeTx) flushPublished(all bool) error {
	p := w.published
	if !all && !p.records.full() && !p.views.full() && !p.keys.full() {
		return nil
	}
	for _, r := range []*rowInserts{&p.records, &p.views, &p.keys} {
		if err := r.flush(w); err != nil {
			return err
		}
	}
	return nil
}

// batchRows runs fn, during which apply's rows wait to go in many to a statement; they are all in
// when it returns without error.
func (w *writeTx) batchRows(fn func() error) error {
	w.published.batching = true
	err := fn()
	w.published.batching = false
	if err != nil {
		return err
	}
	return w.flushPublished(true)
}
