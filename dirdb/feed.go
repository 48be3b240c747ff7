package dirdb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dirsvc/dirsvc"
)

// maxFeedScan bounds the change-log rows one page reads: a reader that most events are not for
// (a narrowed client, a filter on kinds) gets a short page, with the position it reached, rather
// than a read of the whole log.
const maxFeedScan = 5000

// changeColumns is what a feed reads of a change-log row, as one text of fields separated by
// spaces: a harvest reads hundreds of thousands of rows, and through the driver each column costs
// two calls into SQLite that each take the connection's lock, which for the thirteen columns of a
// row came to three times SQLite's step of it. Every field but the last is a number, a kind, a
// public ID, an event type or a time, none of which holds a space; the origin, which may hold
// anything, comes last and takes the rest. A field that is NULL is empty (changeRowOf).
const changeColumns = `seq || ' ' || version || ' ' || local_revision || ' ' || audiences || ' ' || placement || ' ' ||
    COALESCE(placed_before, '') || ' ' || COALESCE(placed_after, '') || ' ' || kind || ' ' || public_id || ' ' ||
    event_type || ' ' || at || ' ' || COALESCE(survivor_id, '') || ' ' || COALESCE(origin, '')`

// The feed's statements: each reads by the log's primary key or another table's, so a page costs
// at most maxFeedScan rows of the log and one lookup per placement (feedStatements, for the plan
// test).
const (
	floorSQL       = "SELECT seq FROM change_floor WHERE id = 1"
	changeRowsSQL  = "SELECT " + changeColumns + " FROM changes WHERE seq > ? ORDER BY seq LIMIT ?"
	moreChangesSQL = "SELECT 1 FROM changes WHERE seq > ? LIMIT 1"
	placeSQL       = "SELECT placed FROM places WHERE id = ?"
	pruneSQL       = "SELECT seq, at FROM changes WHERE seq > ? ORDER BY seq LIMIT ?"
)

// prunePlacesSQL removes the placements that no event of the log and no record's kept placement
// names. It keeps the empty placement (0) and the newest: a placement's ID is one more than the
// largest there is, so keeping the largest means an ID is never given to another placement, and a
// feed page on the primary (whose statements are not one snapshot) never reads another placement
// under an ID an event it read names. Such a page finds its placement gone only when that event
// was pruned under it (feedFilter.inside answers it as a position below the floor).
const prunePlacesSQL = `DELETE FROM places WHERE id != 0 AND id < (SELECT max(id) FROM places)
    AND id NOT IN (SELECT place_id FROM feed_places)
    AND id NOT IN (SELECT placed_before FROM changes WHERE placed_before IS NOT NULL)
    AND id NOT IN (SELECT placed_after FROM changes WHERE placed_after IS NOT NULL)`

// feedStatements are the statements the feed and its pruning run, with arguments, by name.
func feedStatements() map[string]sqlCond {
	return map[string]sqlCond{
		"floor": {floorSQL, nil}, "change rows": {changeRowsSQL, []any{10, 500}}, "more changes": {moreChangesSQL, []any{10}},
		"placement": {placeSQL, []any{1}}, "prune": {pruneSQL, []any{0, 1000}},
		"feed placement of a record": {feedPlaceSQL, []any{"svc_gp"}}, "origin of a record": {originSQL, []any{"svc_gp"}},
		"views": {expandSQL(3), []any{"svc_gp", "loc_harbour", "org_harbour", int64(1)}},
	}
}

// changeRow is a change-log row.
type changeRow struct {
	dirsvc.Change
	audiences     int64
	before, after sql.NullInt64
	placement     bool
}

func isNoRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }

// Changes returns the reader's events after q.After (from the oldest retained with q.Oldest), in
// log order: each event whose audiences hold the reader's tier, of a kind the reader may receive
// in bulk, and, for a reader narrowed to areas or categories, as the record's placements before and
// after it place it (feedEvent). It reads at most maxFeedScan rows, by the log's primary key.
func (d *Directory) Changes(ctx context.Context, fr dirsvc.FeedReader, q dirsvc.ChangeQuery) (dirsvc.ChangePage, error) {
	limit := min(max(q.Limit, 1), dirsvc.MaxFeedLimit)
	var page dirsvc.ChangePage
	err := d.longRead(ctx, func(ctx context.Context) error {
		page = dirsvc.ChangePage{}
		var floor int64
		if err := d.readers.QueryRowContext(ctx, floorSQL).Scan(&floor); err != nil {
			return err
		}
		after := q.After
		if q.Oldest {
			after = floor
		} else if after < floor {
			return dirsvc.Errorf(dirsvc.EGone, "The cursor is older than the oldest change kept: read the feed again from its start.")
		}
		page.Next = after
		f := &feedFilter{d: d, fr: fr, kinds: q.Kinds, places: map[int64]map[string]int64{}}
		for scanned, chunk := 0, limit+1; scanned < maxFeedScan; chunk = min(2*chunk, maxFeedScan-scanned) {
			rows, err := d.changeRows(ctx, page.Next, chunk)
			if err != nil {
				return err
			}
			scanned += len(rows)
			for i, r := range rows {
				if len(page.Changes) == limit {
					page.More = true
					return nil
				}
				c, ok, err := f.event(ctx, r)
				if err != nil {
					return err
				}
				if ok {
					page.Changes = append(page.Changes, c)
				}
				page.Next = r.Seq
				if i == len(rows)-1 && len(rows) < chunk {
					return nil // the end of the log
				}
			}
			if len(rows) == 0 {
				return nil
			}
		}
		// The scan's bound: more rows may follow.
		var one int
		err := d.readers.QueryRowContext(ctx, moreChangesSQL, page.Next).Scan(&one)
		if err != nil && !isNoRows(err) {
			return err
		}
		page.More = err == nil
		return nil
	})
	if err == nil {
		err = d.survivors(ctx, fr.Viewer, page.Changes)
	}
	if err == nil && q.Expand {
		err = d.expand(ctx, fr.Viewer, page.Changes)
	}
	if err != nil {
		if dirsvc.ErrorCode(err) == dirsvc.EGone {
			return dirsvc.ChangePage{}, err
		}
		return dirsvc.ChangePage{}, fmt.Errorf("read the change feed: %w", err)
	}
	return page, nil
}

// survivors leaves out of merged tombstones a survivor the viewer cannot see now.
func (d *Directory) survivors(ctx context.Context, v dirsvc.Viewer, cs []dirsvc.Change) error {
	for i := range cs {
		if cs[i].EventType != dirsvc.EventMerged || cs[i].Survivor == "" {
			continue
		}
		seen, err := d.sees(ctx, cs[i].Survivor, v)
		if err != nil {
			return err
		}
		if !seen {
			cs[i].Survivor = ""
		}
	}
	return nil
}

// maxExpandBatch bounds the public IDs one statement of expand binds.
const maxExpandBatch = 500

// expand gives each change but a tombstone its record's view for the viewer now, if it has one:
// for a viewer narrowed to areas or categories each is read as a single read is (Record, which
// checks the narrowing); for any other, the views are read maxExpandBatch at a time by the
// projections' primary key (a narrowing to record kinds has already left out the other kinds).
func (d *Directory) expand(ctx context.Context, v dirsvc.Viewer, cs []dirsvc.Change) error {
	if len(v.Narrowing.Areas)+len(v.Narrowing.Categories) > 0 {
		for i := range cs {
			if dirsvc.Tombstone(cs[i].EventType) {
				continue
			}
			st, err := d.Record(ctx, cs[i].PublicID, v)
			if errors.Is(err, dirsvc.ErrNotFound) {
				continue
			} else if err != nil {
				return err
			}
			if st.View != nil {
				cs[i].View = st.View.Body
			}
		}
		return nil
	}
	at := map[string][]int{}
	var ids []any
	for i := range cs {
		if !dirsvc.Tombstone(cs[i].EventType) {
			if _, ok := at[cs[i].PublicID]; !ok {
				ids = append(ids, cs[i].PublicID)
			}
			at[cs[i].PublicID] = append(at[cs[i].PublicID], i)
		}
	}
	for batch := range slices.Chunk(ids, maxExpandBatch) {
		err := d.longRead(ctx, func(ctx context.Context) error {
			// One statement, prepared once: a short batch binds "" (no record) in the rest.
			args := make([]any, maxExpandBatch+1)
			for i := range maxExpandBatch {
				args[i] = ""
			}
			copy(args, batch)
			args[maxExpandBatch] = audienceBit(v.Audience)
			rows, err := d.lists.query(ctx, d.readers, expandViewsSQL, args...)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var id string
				var body []byte
				if err := rows.Scan(&id, &body); err != nil {
					return err
				}
				for _, i := range at[id] {
					cs[i].View = body
				}
			}
			return rows.Err()
		})
		if err != nil {
			return fmt.Errorf("read the views of the feed: %w", err)
		}
	}
	return nil
}

// expandViewsSQL reads the views of maxExpandBatch records for an audience bit.
var expandViewsSQL = expandSQL(maxExpandBatch)

// expandSQL is the statement that reads the views of n records for an audience bit.
func expandSQL(n int) string {
	return "SELECT public_id, body FROM projections WHERE public_id IN (" + placeholders(n) + ") AND audiences & ? != 0"
}

// changeRows reads up to n change-log rows after the sequence after. It reads through the driver
// itself: a harvest reads hundreds of thousands of rows, and database/sql's conversions of each
// column cost as much as SQLite's step.
func (d *Directory) changeRows(ctx context.Context, after int64, n int) ([]changeRow, error) {
	conn, err := d.readers.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	out := make([]changeRow, 0, n)
	err = conn.Raw(func(dc any) error {
		pc, ok := dc.(driver.ConnPrepareContext)
		if !ok {
			return errors.New("the driver cannot prepare with a context")
		}
		st, err := pc.PrepareContext(ctx, changeRowsSQL)
		if err != nil {
			return err
		}
		defer st.Close()
		rows, err := st.(driver.StmtQueryContext).QueryContext(ctx, []driver.NamedValue{{Ordinal: 1, Value: after}, {Ordinal: 2, Value: int64(n)}})
		if err != nil {
			return err
		}
		defer rows.Close()
		v := make([]driver.Value, 1)
		for {
			switch err := rows.Next(v); {
			case errors.Is(err, io.EOF):
				return nil
			case err != nil:
				return err
			}
			text, _ := v[0].(string)
			r, err := changeRowOf(text)
			if err != nil {
				return err
			}
			out = append(out, r)
		}
	})
	return out, err
}

// changeRowOf reads a row of changeColumns.
func changeRowOf(text string) (changeRow, error) {
	var r changeRow
	rest, bad := text, false
	field := func() string {
		f, after, ok := strings.Cut(rest, " ")
		bad = bad || !ok
		rest = after
		return f
	}
	num := func() sql.NullInt64 {
		f := field()
		if f == "" {
			return sql.NullInt64{}
		}
		n, err := strconv.ParseInt(f, 10, 64)
		bad = bad || err != nil
		return sql.NullInt64{Int64: n, Valid: true}
	}
	r.Seq, r.Version, r.LocalRevision, r.audiences = num().Int64, num().Int64, num().Int64, num().Int64
	r.placement = num().Int64 != 0
	r.before, r.after = num(), num()
	r.Kind, r.PublicID, r.EventType = dirsvc.Kind(field()), field(), field()
	at := field()
	r.Survivor, r.Origin = field(), rest
	if bad {
		return r, fmt.Errorf("change %d: a row not of the log's form: %q", r.Seq, text)
	}
	var err error
	if r.At, err = time.Parse(time.RFC3339Nano, at); err != nil {
		return r, fmt.Errorf("change %d: bad time %q: %w", r.Seq, at, err)
	}
	return r, nil
}

// feedFilter decides what one reader receives of each change-log row.
type feedFilter struct {
	d      *Directory
	fr     dirsvc.FeedReader
	kinds  []dirsvc.Kind
	places map[int64]map[string]int64 // the placements read so far, parsed
}

// event returns what the reader receives of a row, if anything:
//   - nothing when the row is not for its tier, or of a kind it does not receive (outside its
//     narrowing's record types or the query's kinds; practitioners without practitioners in bulk);
//   - for a reader without areas or categories, the event itself (placement rows are not for it);
//   - for one with them, the record's sight before and after the row decides: a record that comes
//     into sight is created or updated, one that leaves it (by a tombstone, a reduced visibility, or
//     a move) a visibility_reduced tombstone, and one that was never in sight nothing.
//
// A move is an event of its own, with a version of its own (moveRecord), so each reaches a narrowed
// reader under a tuple of its own. Files written before that hold placement rows instead, which
// repeat the record's version and reach only narrowed readers; they are read as they were.
func (f *feedFilter) event(ctx context.Context, r changeRow) (dirsvc.Change, bool, error) {
	v := f.fr.Viewer
	bit := audienceBit(v.Audience)
	c := r.Change
	switch {
	case r.audiences&bit == 0,
		!v.Narrowing.AllowsKind(c.Kind),
		len(f.kinds) > 0 && !slices.Contains(f.kinds, c.Kind),
		c.Kind == dirsvc.KindPractitioner && !f.fr.Practitioners:
		return c, false, nil
	}
	if len(v.Narrowing.Areas)+len(v.Narrowing.Categories) == 0 {
		if r.placement {
			return c, false, nil
		}
		return c, true, nil
	}
	was, err := f.inside(ctx, r, r.before)
	if err != nil {
		return c, false, err
	}
	is, err := f.inside(ctx, r, r.after)
	if err != nil {
		return c, false, err
	}
	reduced := c
	reduced.EventType, reduced.Survivor = dirsvc.EventVisibilityReduced, ""
	switch {
	case r.placement && !was && is:
		c.EventType = dirsvc.EventUpdated
		return c, true, nil
	case r.placement && was && !is:
		return reduced, true, nil
	case r.placement:
		return c, false, nil
	case dirsvc.Tombstone(c.EventType):
		// What a record out of sight now covered is not kept, so a narrowed reader learns no more of
		// its end than that it left (as its reads answer 404, never 410 or 301).
		return reduced, was, nil
	case is:
		return c, true, nil
	}
	return reduced, was, nil
}

// inside reports whether the placement p of row r's record puts it inside the reader's narrowing.
// An event logged before placements were kept has none: its record is placed as it is now.
func (f *feedFilter) inside(ctx context.Context, r changeRow, p sql.NullInt64) (bool, error) {
	v := f.fr.Viewer
	if !p.Valid {
		if dirsvc.Tombstone(r.EventType) {
			return false, nil
		}
		return f.d.insideNarrowingLocked(ctx, r.PublicID, v) // Changes holds the gate
	}
	facts, ok := f.places[p.Int64]
	if !ok {
		var placed string
		err := f.d.readers.QueryRowContext(ctx, placeSQL, p.Int64).Scan(&placed)
		if isNoRows(err) {
			// Pruned with the event that named it after the page read it (prunePlacesSQL).
			return false, dirsvc.Errorf(dirsvc.EGone, "The cursor is older than the oldest change kept: read the feed again from its start.")
		} else if err != nil {
			return false, fmt.Errorf("read placement %d: %w", p.Int64, err)
		}
		facts = parsePlacement(placed)
		f.places[p.Int64] = facts
	}
	return placedIn(r.Kind, facts, v.Narrowing, audienceBit(v.Audience)), nil
}

// parsePlacement reads an encoded placement (encodePlacement).
func parsePlacement(placed string) map[string]int64 {
	facts := map[string]int64{}
	for line := range strings.SplitSeq(placed, "\n") {
		if fact, aud, ok := strings.Cut(line, "="); ok {
			facts[fact], _ = strconv.ParseInt(aud, 10, 64)
		}
	}
	return facts
}

// placedIn reports whether a record of kind with the facts lies inside the narrowing's areas and
// categories for the audience bit, as inside (lists.go) decides for a record read: a service, site
// or role in one of the areas and of one of the categories; an organisation or practitioner with
// one service in both.
func placedIn(kind dirsvc.Kind, facts map[string]int64, n dirsvc.Narrowing, bit int64) bool {
	anyOf := func(prefix string, values []string) bool {
		for _, v := range values {
			if facts[prefix+v]&bit != 0 {
				return true
			}
		}
		return false
	}
	areas, cats := len(n.Areas) > 0, len(n.Categories) > 0
	switch kind {
	case dirsvc.KindOrganisation, dirsvc.KindPractitioner:
		if areas && cats {
			for _, a := range n.Areas {
				if anyOf("ac:"+a+"|", n.Categories) {
					return true
				}
			}
			return false
		}
	}
	return (!areas || anyOf("a:", n.Areas)) && (!cats || anyOf("c:", n.Categories))
}

// sees reports whether the viewer may read a record now.
func (d *Directory) sees(ctx context.Context, id string, v dirsvc.Viewer) (bool, error) {
	st, err := d.Record(ctx, id, v)
	if errors.Is(err, dirsvc.ErrNotFound) {
		return false, nil
	}
	return err == nil && st.View != nil, err
}

// PruneChanges removes up to maxEvents events logged before the time before, oldest first, and raises
// the floor below which a cursor answers 410 to the last one removed. It returns how many it
// removed: the primary calls it again while that is maxEvents. Each call is one write of bounded size,
// and never waits for another write: while one is under way (an import) it answers ErrWriteBusy.
// The call that removes the last events due (fewer than maxEvents) also removes the placements
// that neither a retained event nor a record's kept placement names (prunePlacesSQL).
func (d *Directory) PruneChanges(ctx context.Context, before time.Time, maxEvents int) (int, error) {
	var n int
	var pruned int64
	_, err := d.tryWrite(ctx, func(w *writeTx) error {
		n, pruned = 0, 0
		var floor int64
		if err := w.pub.QueryRowContext(w.ctx, floorSQL).Scan(&floor); err != nil {
			return fmt.Errorf("read the change floor: %w", err)
		}
		last, stopped := floor, false
		err := w.eachRow(w.pub, pruneSQL, []any{floor, maxEvents}, func(sc scanner) error {
			var seq int64
			var at string
			if err := sc.Scan(&seq, &at); err != nil {
				return err
			}
			t, err := time.Parse(time.RFC3339Nano, at)
			if err != nil {
				return fmt.Errorf("change %d: bad time %q: %w", seq, at, err)
			}
			if stopped = stopped || !t.Before(before); !stopped {
				last, n = seq, n+1
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("find the changes to prune: %w", err)
		}
		if n > 0 {
			if err := w.exec(w.pub, "DELETE FROM changes WHERE seq > ? AND seq <= ?", floor, last); err != nil {
				return fmt.Errorf("prune changes: %w", err)
			}
			if err := w.exec(w.pub, "UPDATE change_floor SET seq = max(seq, ?) WHERE id = 1", last); err != nil {
				return fmt.Errorf("raise the change floor: %w", err)
			}
		}
		if n < maxEvents && last > d.placesFloor {
			// The last batch of what is due: the placements no retained event and no record
			// needs go too, once for all the batches (it reads the whole log).
			if err := w.exec(w.pub, prunePlacesSQL); err != nil {
				return fmt.Errorf("prune placements: %w", err)
			}
			pruned = last
		}
		return nil
	})
	if err == nil && pruned != 0 {
		d.placesFloor = pruned
	}
	if err != nil {
		return 0, err
	}
	return n, nil
}
