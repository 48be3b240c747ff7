package dirdb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"

	"github.com/dirsvc/dirsvc"
)

// recordQuery is the statement of every single record read, whatever its answer: the record's
// status, and its view for an audience when it lies inside the reader's narrowing (in, a condition
// on q0.id). It always returns one row, and it probes the same indexes in the same order whether
// the record is missing, hidden from the audience, outside the narrowing or visible, so that the
// time of a not-found answer tells nothing of which it was. A view outside the narrowing is not even
// read: its body would be copied for nothing, and take longer to. (The narrowing's own check reads
// the same keys for a record the directory holds as for a missing one: see inside.) Its arguments:
// those of in, then the public ID and the audience bit.
func recordQuery(in sqlCond) string {
	return `WITH q (id, inside) AS MATERIALIZED (SELECT q0.id, ` + in.sql + ` FROM (SELECT ? AS id) q0)
SELECT p.body, p.etag, r.kind, r.state, COALESCE(r.survivor_id, ''), r.seen_by
FROM q
LEFT JOIN records r ON r.public_id = q.id
LEFT JOIN projections p ON p.public_id = q.id AND p.audiences & ? != 0 AND q.inside`
}

// plainRecordQuery is the statement of the reads that no narrowing limits.
var plainRecordQuery = recordQuery(condTrue)

// Record returns the status of a record and its view for the viewer; the view is nil when the
// record is hidden from the viewer's audience or lies outside its narrowing. A view is stored only
// for a visible record, so when one is returned the record is live for the audience and its kind is
// its ID's prefix.
//
// Whatever the answer, the read makes the same lookups (see recordQuery). Only views are cached,
// never their absence, so a hidden record and a missing one are both read from the file; and a read
// whose narrowing has a condition on the record never uses the cache, so a record outside the
// narrowing is never answered from memory while a missing one is read.
func (d *Directory) Record(ctx context.Context, publicID string, v dirsvc.Viewer) (dirsvc.RecordStatus, error) {
	d.gate.RLock()
	defer d.gate.RUnlock()
	var st dirsvc.RecordStatus
	key := viewKey{publicID, audienceBit(v.Audience)}
	in := inside(dirsvc.KindOfID(publicID), "q0.id", v)
	plain := in.sql == condTrue.sql
	visible := func(cv *cachedView) (dirsvc.RecordStatus, error) {
		st.Kind, st.State, st.SeenBy = dirsvc.KindOfID(publicID), dirsvc.StateLive, dirsvc.AudiencesOf(v.Audience)
		st.View = &dirsvc.Published{PublicID: publicID, Body: cv.body, ETag: cv.etag, Encoded: cv.enc}
		return st, nil
	}
	query := plainRecordQuery
	if plain {
		if cv, ok := d.cache.get(key); ok {
			return visible(cv)
		}
	} else {
		query = recordQuery(in)
	}
	args := make([]driver.NamedValue, 0, len(in.args)+2)
	for _, a := range append(in.args, publicID, key.bit) {
		args = append(args, driver.NamedValue{Ordinal: len(args) + 1, Value: a})
	}
	gen := d.records.gen.Load()
	row := make([]driver.Value, 6)
	if _, err := d.records.query(ctx, query, args, row); err != nil {
		return st, fmt.Errorf("read record %s: %w", publicID, err)
	}
	kind, _ := row[2].(string)
	switch body, _ := row[0].([]byte); {
	case kind == "":
		return st, dirsvc.ErrNotFound
	case body != nil:
		etag, _ := row[1].(string)
		cv := &cachedView{body: body, etag: etag}
		if plain { // the view kept, or the one another read kept first
			if kept := d.cache.put(key, cv, gen, &d.records.gen); kept != nil {
				cv = kept
			}
		}
		return visible(cv)
	}
	state, _ := row[3].(string)
	seen, _ := row[5].(int64)
	st.Kind, st.State, st.SeenBy = dirsvc.Kind(kind), dirsvc.State(state), dirsvc.Audiences(seen)
	st.Survivor, _ = row[4].(string)
	return st, nil
}

// Generation returns the generation of the directory's file: it moves at every commit to the file,
// when the kept views are dropped (changed). A read begun after it was read never sees the file as
// it was before that generation: a hot reader begins a new snapshot when the generation moved
// (recordReaders.query), and other reads take a new one each time.
func (d *Directory) Generation() uint64 { return d.records.gen.Load() }

// refColumns are the columns that hold a record's references, by the kind they refer to.
var refColumns = map[dirsvc.Kind]string{
	dirsvc.KindOrganisation: "organisation_id",
	dirsvc.KindLocation:     "location_id",
	dirsvc.KindService:      "service_id",
	dirsvc.KindPractitioner: "practitioner_id",
}

// relatedSQL is the statement of Related: it walks the index of the reference column in public-ID
// order, so its cost is the number of records that refer to refID (the plan test holds it).
func relatedSQL(v dirsvc.Viewer, kind, ref dirsvc.Kind, refID string) (sqlCond, error) {
	col, ok := refColumns[ref]
	if !ok {
		return sqlCond{}, fmt.Errorf("records do not refer to kind %q", ref)
	}
	in := inside(kind, "r.public_id", v)
	return sqlCond{`
SELECT r.public_id, p.body, p.etag
FROM records r JOIN projections p ON p.public_id = r.public_id AND p.audiences & ? != 0
WHERE r.` + col + ` = ? AND r.kind = ? AND ` + in.sql + `
ORDER BY r.public_id`, append([]any{audienceBit(v.Audience), refID, string(kind)}, in.args...)}, nil
}

// Related returns the views for the viewer of the records of kind that refer to refID and are inside
// the viewer's narrowing.
func (d *Directory) Related(ctx context.Context, v dirsvc.Viewer, kind, ref dirsvc.Kind, refID string) ([]dirsvc.Published, error) {
	q, err := relatedSQL(v, kind, ref, refID)
	if err != nil {
		return nil, err
	}
	d.gate.RLock()
	defer d.gate.RUnlock()
	rows, err := d.lists.query(ctx, d.readers, q.sql, q.args...)
	if err != nil {
		return nil, fmt.Errorf("read %ss of %s: %w", kind, refID, err)
	}
	defer rows.Close()
	var out []dirsvc.Published
	for rows.Next() {
		var p dirsvc.Published
		var body sql.RawBytes
		if err := rows.Scan(&p.PublicID, &body, &p.ETag); err != nil {
			return nil, err
		}
		p.Body = ownBody(body)
		out = append(out, p)
	}
	return out, rows.Err()
}

// Readable returns which of the records ids the viewer may read: those a Record read would give a
// view (a view for the viewer's audience, inside its narrowing), read in one statement a kind,
// however many the ids are. It answers for references, many at once (the records a page of FHIR
// resources refers to), not for a read of one record, whose answer must take as long whatever it
// is (see Record).
func (d *Directory) Readable(ctx context.Context, v dirsvc.Viewer, ids []string) (map[string]bool, error) {
	byKind := map[dirsvc.Kind][]any{}
	for _, id := range ids {
		if kind := dirsvc.KindOfID(id); kind != "" && v.Narrowing.AllowsKind(kind) {
			byKind[kind] = append(byKind[kind], id)
		}
	}
	out := make(map[string]bool, len(ids))
	d.gate.RLock()
	defer d.gate.RUnlock()
	for kind, kindIDs := range byKind {
		for len(kindIDs) > 0 {
			part := kindIDs[:min(len(kindIDs), maxReadableIDs)]
			kindIDs = kindIDs[len(part):]
			// The ids padded with the last to a power of two: few texts for the statement cache.
			n := 8
			for n < len(part) {
				n *= 2
			}
			in := inside(kind, "p.public_id", v)
			args := make([]any, 0, n+1+len(in.args))
			args = append(args, part...)
			for len(args) < n {
				args = append(args, part[len(part)-1])
			}
			rows, err := d.lists.query(ctx, d.readers, "SELECT p.public_id\nFROM projections p INDEXED BY sqlite_autoindex_projections_1\nWHERE p.public_id IN ("+
				placeholders(n)+") AND p.audiences & ? != 0 AND ("+in.sql+")", append(append(args, audienceBit(v.Audience)), in.args...)...)
			if err != nil {
				return nil, fmt.Errorf("read the readability of %ss: %w", kind, err)
			}
			for rows.Next() {
				var id string
				if err := rows.Scan(&id); err != nil {
					rows.Close()
					return nil, err
				}
				out[id] = true
			}
			err = rows.Err()
			rows.Close()
			if err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// maxReadableIDs bounds the ids of one statement of Readable (a power of two).
const maxReadableIDs = 256
