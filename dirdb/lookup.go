package dirdb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/dirsvc/dirsvc"
)

// memLookup serves the projection gate from a snapshot held in memory (imports).
type memLookup struct {
	dir    *dirsvc.Directory
	tax    *dirsvc.Taxonomy
	byID   map[string]dirsvc.Record
	locsOf map[string][]*dirsvc.Location
}

func newMemLookup(snap *dirsvc.Snapshot) *memLookup {
	m := &memLookup{tax: &snap.Taxonomy, byID: make(map[string]dirsvc.Record, len(snap.Records)),
		locsOf: map[string][]*dirsvc.Location{}}
	for _, r := range snap.Records {
		m.byID[r.Base().PublicID] = r
		if l, ok := r.(*dirsvc.Location); ok {
			m.locsOf[l.Organisation] = append(m.locsOf[l.Organisation], l)
		}
	}
	for _, ls := range m.locsOf {
		sort.Slice(ls, func(i, j int) bool { return ls[i].PublicID < ls[j].PublicID })
	}
	return m
}

func (m *memLookup) Taxonomy() *dirsvc.Taxonomy { return m.tax }
func (m *memLookup) LocationsOf(org string) []*dirsvc.Location {
	return m.locsOf[org]
}
func (m *memLookup) Organisation(id string) *dirsvc.Organisation {
	r, _ := m.byID[id].(*dirsvc.Organisation)
	return r
}
func (m *memLookup) Location(id string) *dirsvc.Location {
	r, _ := m.byID[id].(*dirsvc.Location)
	return r
}
func (m *memLookup) Service(id string) *dirsvc.Service {
	r, _ := m.byID[id].(*dirsvc.Service)
	return r
}
func (m *memLookup) Practitioner(id string) *dirsvc.Practitioner {
	r, _ := m.byID[id].(*dirsvc.Practitioner)
	return r
}

// txLookup serves the projection gate from the canonical records in ops.db, inside a write, with the
// records being changed laid over them. Records are decoded once and kept for the write.
type txLookup struct {
	ctx     context.Context
	ops     *sql.Tx
	pub     *sql.Tx
	tax     *dirsvc.Taxonomy
	cache   map[string]dirsvc.Record
	missing map[string]bool
	err     error
}

func newTxLookup(ctx context.Context, ops, pub *sql.Tx) (*txLookup, error) {
	l := &txLookup{ctx: ctx, ops: ops, pub: pub, cache: map[string]dirsvc.Record{}, missing: map[string]bool{}}
	var taxDoc []byte
	err := ops.QueryRowContext(ctx, "SELECT taxonomy FROM source_directory WHERE id = 1").Scan(&taxDoc)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, dirsvc.Errorf(dirsvc.EConflict, "the directory has not been imported yet")
	} else if err != nil {
		return nil, fmt.Errorf("read source taxonomy: %w", err)
	}
	l.tax = new(dirsvc.Taxonomy)
	if err := json.Unmarshal(taxDoc, l.tax); err != nil {
		return nil, fmt.Errorf("decode source taxonomy: %w", err)
	}
	return l, nil
}

// put lays a changed record over the stored ones.
func (l *txLookup) put(r dirsvc.Record) {
	l.cache[r.Base().PublicID] = r
	delete(l.missing, r.Base().PublicID)
}

// get returns the canonical record, loading it from ops.db; nil when there is none.
func (l *txLookup) get(id string) dirsvc.Record {
	if r, ok := l.cache[id]; ok {
		return r
	}
	if l.missing[id] || l.err != nil {
		return nil
	}
	r, err := loadSource(l.ctx, l.ops, id)
	if errors.Is(err, dirsvc.ErrNotFound) {
		l.missing[id] = true
		return nil
	} else if err != nil {
		l.err = err
		return nil
	}
	l.cache[id] = r
	return r
}

func (l *txLookup) Taxonomy() *dirsvc.Taxonomy { return l.tax }
func (l *txLookup) Organisation(id string) *dirsvc.Organisation {
	r, _ := l.get(id).(*dirsvc.Organisation)
	return r
}
func (l *txLookup) Location(id string) *dirsvc.Location {
	r, _ := l.get(id).(*dirsvc.Location)
	return r
}
func (l *txLookup) Service(id string) *dirsvc.Service {
	r, _ := l.get(id).(*dirsvc.Service)
	return r
}
func (l *txLookup) Practitioner(id string) *dirsvc.Practitioner {
	r, _ := l.get(id).(*dirsvc.Practitioner)
	return r
}
func (l *txLookup) LocationsOf(org string) []*dirsvc.Location {
	ids, err := referrers(l.ctx, l.pub, dirsvc.KindLocation, "organisation_id", org)
	if err != nil {
		l.err = err
		return nil
	}
	var out []*dirsvc.Location
	for _, id := range ids {
		if loc := l.Location(id); loc != nil && loc.Organisation == org {
			out = append(out, loc)
		}
	}
	// A location being moved to this organisation in the same write is not yet in the table.
	for id, r := range l.cache {
		if loc, ok := r.(*dirsvc.Location); ok && loc.Organisation == org && !containsID(ids, id) {
			out = append(out, loc)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PublicID < out[j].PublicID })
	return out
}

func containsID(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// loadSource reads and decodes one canonical record from ops.db.
func loadSource(ctx context.Context, ops *sql.Tx, id string) (dirsvc.Record, error) {
	var kind string
	var doc []byte
	err := ops.QueryRowContext(ctx, "SELECT kind, doc FROM source_records WHERE public_id = ?", id).Scan(&kind, &doc)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, dirsvc.ErrNotFound
	} else if err != nil {
		return nil, fmt.Errorf("read source record %s: %w", id, err)
	}
	return decodeRecord(dirsvc.Kind(kind), doc)
}

func decodeRecord(kind dirsvc.Kind, doc []byte) (dirsvc.Record, error) {
	r := dirsvc.NewRecord(kind)
	if r == nil {
		return nil, fmt.Errorf("unknown record kind %q", kind)
	}
	if err := json.Unmarshal(doc, r); err != nil {
		return nil, fmt.Errorf("decode %s: %w", kind, err)
	}
	return r, nil
}

// referrers returns the public IDs of records of kind whose column col is id.
func referrers(ctx context.Context, pub *sql.Tx, kind dirsvc.Kind, col, id string) ([]string, error) {
	ids, err := queryStrings(ctx, pub, "SELECT public_id FROM records WHERE "+col+" = ? AND kind = ? ORDER BY public_id", id, string(kind))
	if err != nil {
		return nil, fmt.Errorf("find %ss by %s: %w", kind, col, err)
	}
	return ids, nil
}

// queryStrings runs a query of one text column.
func queryStrings(ctx context.Context, db interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, query string, args ...any) ([]string, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
