package dirdb

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dirsvc/dirsvc"
)

// The change log records, with each event, where the record lay for narrowed clients before and
// after it (schema/directory/0011_feed_places.sql), so the feed tells a client narrowed to areas or
// categories of a record entering or leaving its sight exactly as its reads would: the facts are
// those inside (lists.go) checks, taken when the event is logged. A record can move without an
// event of its own (an organisation whose service moved, a service whose site's areas changed): the
// write logs a placement row for each audience whose facts changed and that had no event.

// Statements of the write side (feedStatements).
const (
	feedPlaceSQL = "SELECT place_id FROM feed_places WHERE public_id = ?"
	originSQL    = `SELECT COALESCE(origin, '') FROM changes INDEXED BY changes_dedupe
WHERE public_id = ? AND placement = 0 ORDER BY public_id DESC, version DESC LIMIT 1`
)

// loggedEvent is a change-log row the write logs: its audiences.
type loggedEvent struct {
	audiences dirsvc.Audiences
}

// loggedChange is a change-log row the write logs, all but its placements, which logFeed adds when
// it inserts it.
type loggedChange struct {
	kind, id, event        string
	version, localRevision int64
	survivor, origin       any // NULL or text
	audiences              dirsvc.Audiences
}

// changesPerStatement bounds the change-log rows one statement inserts (11 parameters each).
const changesPerStatement = 256

// insertChanges returns the statement that inserts n change-log rows with their placements.
func insertChanges(n int) string {
	return `INSERT INTO changes (kind, public_id, version, local_revision, event_type, survivor_id, origin, audiences, at,
    placed_before, placed_after) VALUES ` + strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?), ", n), ", ")
}

// insertChangeRows inserts the change-log rows of the write, in the order it made them, each with
// its record's placements before (nil: not known) and after the write.
func (w *writeTx) insertChangeRows(before func(id string) any, after map[string]int64, at string) error {
	for chunk := range slices.Chunk(w.changes, changesPerStatement) {
		args := make([]any, 0, 11*len(chunk))
		for _, c := range chunk {
			args = append(args, c.kind, c.id, c.version, c.localRevision, c.event, c.survivor, c.origin,
				int64(c.audiences), at, before(c.id), after[c.id])
		}
		if err := w.exec(w.pub, insertChanges(len(chunk)), args...); err != nil {
			return fmt.Errorf("log the changes of %s to %s: %w", chunk[0].id, chunk[len(chunk)-1].id, err)
		}
	}
	return nil
}

// placeRec is what a placement needs of a record's row.
type placeRec struct {
	kind             dirsvc.Kind
	visible          int64 // visible_to & 7
	site, service    string
	exists, complete bool
}

// placeSource holds the rows and keys placements are made from: those of the records a write
// touched (and the sites and services they lie at), or, for a whole refresh, every record's.
type placeSource struct {
	recs  map[string]placeRec
	keys  map[string][]listKey // area: and cat: list keys
	nkeys map[string][]listKey // narrowing keys
}

func newPlaceSource() *placeSource {
	return &placeSource{recs: map[string]placeRec{}, keys: map[string][]listKey{}, nkeys: map[string][]listKey{}}
}

// placement returns the encoded placement of a record: its facts, one a line, sorted, each with the
// audiences that see both the record and the fact.
func (ps *placeSource) placement(id string) string {
	r := ps.recs[id]
	if !r.exists || r.visible == 0 {
		return ""
	}
	facts := map[string]int64{}
	add := func(key string, aud int64) {
		if aud &= r.visible; aud != 0 {
			facts[key] |= aud
		}
	}
	serviceFacts := func(s string) {
		for _, k := range ps.keys[s] {
			if a, ok := strings.CutPrefix(k.key, keyArea); ok {
				add("a:"+a, k.audiences)
			} else if c, ok := strings.CutPrefix(k.key, keyCat); ok {
				add("c:"+c, k.audiences)
			}
		}
		for _, k := range ps.keys[ps.recs[s].site] {
			if a, ok := strings.CutPrefix(k.key, keyArea); ok {
				add("a:"+a, k.audiences)
			}
		}
	}
	switch r.kind {
	case dirsvc.KindService:
		serviceFacts(id)
	case dirsvc.KindRole:
		if r.service != "" {
			serviceFacts(r.service)
		}
	case dirsvc.KindLocation:
		for _, k := range ps.keys[id] {
			if a, ok := strings.CutPrefix(k.key, keyArea); ok {
				add("a:"+a, k.audiences)
			}
		}
		for _, k := range ps.nkeys[id] {
			if c, ok := strings.CutPrefix(k.key, keyInCat); ok {
				add("c:"+c, k.audiences)
			}
		}
	case dirsvc.KindOrganisation, dirsvc.KindPractitioner:
		for _, k := range ps.nkeys[id] {
			for _, p := range [...][2]string{{keyInAreaCat, "ac:"}, {keyInArea, "a:"}, {keyInCat, "c:"}} {
				if v, ok := strings.CutPrefix(k.key, p[0]); ok {
					add(p[1]+v, k.audiences)
					break
				}
			}
		}
	}
	return encodePlacement(facts)
}

// encodePlacement writes facts as a placement: "fact=audiences" lines in fact order.
func encodePlacement(facts map[string]int64) string {
	var b strings.Builder
	for i, k := range slices.Sorted(maps.Keys(facts)) {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(strconv.FormatInt(facts[k], 10))
	}
	return b.String()
}

// placementFor returns the facts of a placement that audience bit sees, as one string.
func placementFor(placed string, bit int64) string {
	var b strings.Builder
	for line := range strings.SplitSeq(placed, "\n") {
		fact, aud, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		if a, _ := strconv.ParseInt(aud, 10, 64); a&bit != 0 {
			b.WriteString(fact)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// load reads, for each record of ids not yet read, its row and keys, and those of the sites and
// services it lies at.
func (ps *placeSource) load(w *writeTx, ids []string) error {
	for len(ids) > 0 {
		var next []string
		for _, id := range ids {
			if _, ok := ps.recs[id]; ok || id == "" {
				continue
			}
			var r placeRec
			var vis int64
			err := w.pub.QueryRowContext(w.ctx, `SELECT kind, visible_to & 7, COALESCE(location_id, ''), COALESCE(service_id, '')
FROM records WHERE public_id = ?`, id).Scan(&r.kind, &vis, &r.site, &r.service)
			if err != nil && !isNoRows(err) {
				return fmt.Errorf("read the placement of %s: %w", id, err)
			}
			r.exists, r.visible = err == nil, vis
			ps.recs[id] = r
			if !r.exists {
				continue
			}
			for into, query := range map[*map[string][]listKey]string{
				&ps.keys: `SELECT public_id, key, audiences FROM list_keys INDEXED BY sqlite_autoindex_list_keys_1
WHERE public_id = ? AND (key >= 'area:' AND key < 'area;' OR key >= 'cat:' AND key < 'cat;')`,
				&ps.nkeys: "SELECT public_id, key, audiences FROM narrowing_keys WHERE public_id = ?",
			} {
				if err := ps.readKeys(w, *into, query, id); err != nil {
					return fmt.Errorf("read the keys of %s: %w", id, err)
				}
			}
			next = append(next, r.site, r.service)
		}
		ids = next
	}
	return nil
}

// readKeys adds to into the keys (public_id, key, audiences) query reads.
func (ps *placeSource) readKeys(w *writeTx, into map[string][]listKey, query string, args ...any) error {
	return w.eachRow(w.pub, query, args, func(sc scanner) error {
		var id string
		var k listKey
		err := sc.Scan(&id, &k.key, &k.audiences)
		into[id] = append(into[id], k)
		return err
	})
}

// loadAll reads every record's row and keys. With keys true, the keys are in ps already (those
// of every record, as a whole refresh of the narrowing keys read and made them) and only the rows
// are read.
func (ps *placeSource) loadAll(w *writeTx, keys bool) error {
	err := w.eachRow(w.pub, `SELECT public_id, kind, visible_to & 7, COALESCE(location_id, ''), COALESCE(service_id, '') FROM records`, nil, func(sc scanner) error {
		var id string
		r := placeRec{exists: true}
		err := sc.Scan(&id, &r.kind, &r.visible, &r.site, &r.service)
		ps.recs[id] = r
		return err
	})
	for _, prefix := range []string{keyArea, keyCat} {
		if err != nil || keys {
			break
		}
		kr := prefixRange("key", prefix)
		err = ps.readKeys(w, ps.keys, "SELECT public_id, key, audiences FROM list_keys INDEXED BY list_keys_key WHERE "+kr.sql, kr.args...)
	}
	if err == nil && !keys {
		err = ps.readKeys(w, ps.nkeys, "SELECT public_id, key, audiences FROM narrowing_keys")
	}
	if err != nil {
		return fmt.Errorf("read the placements of every record: %w", err)
	}
	return nil
}

// feedCandidates returns the records whose placement the write may have changed: those it logged
// events of, those whose narrowing keys it made anew, the services at sites among them and the
// roles at services among them. all is true when every record is one.
func (w *writeTx) feedCandidates() (ids []string, all bool, err error) {
	if w.feedAll {
		return nil, true, nil
	}
	set := map[string]bool{}
	for id := range w.logged {
		set[id] = true
	}
	for id := range w.feedPlaced {
		set[id] = true
	}
	var services []string
	for id := range set {
		switch dirsvc.KindOfID(id) {
		case dirsvc.KindLocation:
			at, err := queryStrings(w.ctx, w.pub, "SELECT public_id FROM records INDEXED BY records_location WHERE location_id = ? AND kind = 'service'", id)
			if err != nil {
				return nil, false, fmt.Errorf("find the services of %s: %w", id, err)
			}
			services = append(services, at...)
		case dirsvc.KindService:
			services = append(services, id)
		}
		if len(set)+len(services) >= wholeRefresh {
			return nil, true, nil
		}
	}
	for _, s := range services {
		set[s] = true
		roles, err := queryStrings(w.ctx, w.pub, "SELECT public_id FROM records INDEXED BY records_service WHERE service_id = ? AND kind = 'role'", s)
		if err != nil {
			return nil, false, fmt.Errorf("find the roles of %s: %w", s, err)
		}
		for _, r := range roles {
			set[r] = true
		}
		if len(set) >= wholeRefresh {
			return nil, true, nil
		}
	}
	return slices.Sorted(maps.Keys(set)), false, nil
}

// logFeed logs the write's events with their placements, publishes the move of each record whose
// placement changed for audiences without an event for it (moveRecord), and keeps each record's
// placement. A file whose placements were never kept (one of a build before them) gets them all,
// without moves: its earlier events have none to compare with.
func (w *writeTx) logFeed() error {
	var filled int
	if err := w.pub.QueryRowContext(w.ctx, "SELECT feed_filled FROM projection WHERE id = 1").Scan(&filled); err != nil {
		return fmt.Errorf("read the feed's state: %w", err)
	}
	defer func() { w.logged, w.changes, w.feedPlaced, w.feedAll, w.placeSeed = nil, nil, nil, false, nil }()
	if filled != 0 && len(w.logged) == 0 && len(w.feedPlaced) == 0 && !w.feedAll {
		return nil
	}
	w.feedAll = w.feedAll || filled == 0
	ids, all, err := w.feedCandidates()
	if err != nil {
		return err
	}
	ps := newPlaceSource()
	before := map[string]int64{}
	if all {
		seeded := w.placeSeed != nil
		if seeded {
			ps = w.placeSeed
		}
		if err := ps.loadAll(w, seeded); err != nil {
			return err
		}
		ids = slices.Sorted(maps.Keys(ps.recs))
		if err := w.eachRow(w.pub, "SELECT public_id, place_id FROM feed_places", nil, func(sc scanner) error {
			var id string
			var p int64
			err := sc.Scan(&id, &p)
			before[id] = p
			return err
		}); err != nil {
			return fmt.Errorf("read the feed's placements: %w", err)
		}
	} else {
		if err := ps.load(w, ids); err != nil {
			return err
		}
		for _, id := range ids {
			var p int64
			err := keptReader{w, w.pub}.QueryRowContext(w.ctx, feedPlaceSQL, id).Scan(&p)
			if err != nil && !isNoRows(err) {
				return fmt.Errorf("read the feed's placement of %s: %w", id, err)
			}
			before[id] = p // 0, the empty placement, for a record never placed
		}
	}
	at := w.now.Format(time.RFC3339Nano)
	afters, err := w.placements(ps, ids)
	if err != nil {
		return err
	}
	if filled != 0 {
		for _, id := range ids {
			if prev, after := before[id], afters[id]; prev != after {
				var had dirsvc.Audiences
				for _, e := range w.logged[id] {
					had |= e.audiences
				}
				if err := w.moveRecord(id, prev, after, had); err != nil {
					return err
				}
			}
		}
	}
	err = w.insertChangeRows(func(id string) any {
		if filled == 0 {
			return nil // not known
		}
		return before[id]
	}, afters, at)
	if err != nil {
		return err
	}
	kept := make([]any, 0, 2*placesPerStatement)
	keep := func() error {
		if len(kept) == 0 {
			return nil
		}
		err := w.exec(w.pub, keepPlaces(len(kept)/2), kept...)
		kept = kept[:0]
		if err != nil {
			return fmt.Errorf("keep the placements of records: %w", err)
		}
		return nil
	}
	for _, id := range ids {
		prev, after := before[id], afters[id]
		if prev == after {
			continue
		}
		if kept = append(kept, id, after); len(kept) == cap(kept) {
			if err := keep(); err != nil {
				return err
			}
		}
	}
	if err := keep(); err != nil {
		return err
	}
	if filled == 0 {
		if err := w.exec(w.pub, "UPDATE projection SET feed_filled = 1 WHERE id = 1"); err != nil {
			return fmt.Errorf("record the feed's state: %w", err)
		}
	}
	return nil
}

// placesPerStatement bounds the placements of records one statement keeps.
const placesPerStatement = 500

// keepPlaces returns the statement that keeps the placements of n records.
func keepPlaces(n int) string {
	return "INSERT INTO feed_places (public_id, place_id) VALUES " + strings.TrimSuffix(strings.Repeat("(?, ?), ", n), ", ") +
		" ON CONFLICT (public_id) DO UPDATE SET place_id = excluded.place_id"
}

// placements returns the ID of the placement of each record of ids, storing those new in the order
// of ids. The placements are made on every CPU, a chunk at a time, the next chunk's while this
// one's are stored.
func (w *writeTx) placements(ps *placeSource, ids []string) (map[string]int64, error) {
	out := make(map[string]int64, len(ids))
	chunks := slices.Collect(slices.Chunk(ids, placementChunk))
	start := func(i int) <-chan []string {
		ch := make(chan []string, 1) // never blocks: a write that fails need not wait for it
		go func() {
			texts, _ := decodeAll(chunks[i], func(id string) (string, error) { return ps.placement(id), nil })
			ch <- texts
		}()
		return ch
	}
	var next <-chan []string
	if len(chunks) > 0 {
		next = start(0)
	}
	for i, chunk := range chunks {
		texts := <-next
		if i+1 < len(chunks) {
			next = start(i + 1)
		}
		for j, id := range chunk {
			p, err := w.placeID(texts[j])
			if err != nil {
				return nil, err
			}
			out[id] = p
		}
	}
	return out, nil
}

// placementChunk is how many placements are made together.
const placementChunk = 4096

// moveRecord publishes the move of a record whose placement changed, between the placements prev
// and after, for served audiences that no event of the write was for (had): an organisation whose
// service came to serve another area, a role whose service moved. For a narrowed client such a move
// brings the record into its sight or takes it out, so it is a change of the record like any other:
// the record takes a new version, the views of the audiences it moved for take it as their head
// (with the time of the write; the local revision stays, as the directory's own information on the
// record did not change), and the write logs an updated event of that version for them. Every
// reader of those audiences receives it (their reads show the new version), and a narrowed one
// receives it as the record entering or leaving its sight, each time under a tuple of its own.
//
// Placement rows (changes.placement = 1) repeated the head of the record instead, so a record
// that left a client's sight and came back reached it twice under the same dedupe tuple; they are
// no longer logged, and the feed reads those of older files as it did.
func (w *writeTx) moveRecord(id string, prev, after int64, had dirsvc.Audiences) error {
	texts := [2]string{}
	for i, p := range [2]int64{prev, after} {
		var err error
		if texts[i], err = w.placeText(p); err != nil {
			return err
		}
	}
	var r row
	var moved dirsvc.Audiences
	for _, a := range dirsvc.ServedAudiences {
		bit := audienceBit(a)
		if had&served(a) != 0 || placementFor(texts[0], bit) == placementFor(texts[1], bit) {
			continue
		}
		if !r.exists {
			var err error
			if r, err = loadRow(w.ctx, keptReader{w, w.pub}, id); err != nil {
				return fmt.Errorf("read %s: %w", id, err)
			}
		}
		if r.heads[a].version != 0 { // an audience that sees the record (else its placement is empty)
			moved |= served(a)
		}
	}
	if moved == 0 {
		return nil
	}
	r.version++
	r.updatedAt = w.now
	type moveEvent struct {
		localRevision int64
		audiences     dirsvc.Audiences
	}
	var events []moveEvent // audiences whose heads share a local revision share an event
	for _, a := range dirsvc.ServedAudiences {
		if !moved.Has(a) {
			continue
		}
		h := &r.heads[a]
		h.version, h.updatedMs = r.version, w.now.UnixMilli()
		if i := slices.IndexFunc(events, func(e moveEvent) bool { return e.localRevision == h.localRevision }); i >= 0 {
			events[i].audiences |= served(a)
		} else {
			events = append(events, moveEvent{h.localRevision, served(a)})
		}
	}
	origin, err := w.moveViews(id, r.heads, moved)
	if err != nil {
		return err
	}
	if err := w.exec(w.pub, "UPDATE records SET version = ?, updated_at = ?, audience_heads = ? WHERE public_id = ?",
		r.version, r.updatedAt.Format(time.RFC3339Nano), r.heads.encode(), id); err != nil {
		return fmt.Errorf("publish the move of %s: %w", id, err)
	}
	var o, survivor any
	if origin != "" {
		o = origin
	}
	if r.survivor != "" {
		survivor = r.survivor
	}
	for _, e := range events {
		w.changes = append(w.changes, loggedChange{kind: string(r.kind), id: id, version: r.version, localRevision: e.localRevision,
			event: dirsvc.EventUpdated, survivor: survivor, origin: o, audiences: e.audiences})
	}
	w.stats.Events += len(events)
	return nil
}

// moveViews gives the stored views of record id that the audiences moved receive the heads hs of
// those audiences, and returns the record's origin, as its views carry it. A view that moved and
// unmoved audiences shared is split in two.
func (w *writeTx) moveViews(id string, hs heads, moved dirsvc.Audiences) (string, error) {
	var views []viewRow
	err := w.eachRow(w.pub, "SELECT audiences, body, COALESCE(updated_ms, 0) FROM projections WHERE public_id = ?", []any{id}, func(sc scanner) error {
		var v viewRow
		err := sc.Scan(&v.audiences, &v.body, &v.updatedMs)
		views = append(views, v)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("read the views of %s: %w", id, err)
	}
	var origin string
	var out []viewRow
	for _, v := range views {
		rest := v.audiences
		for _, a := range dirsvc.ServedAudiences {
			bit := audienceBit(a)
			if v.audiences&bit == 0 || !moved.Has(a) {
				continue
			}
			rest &^= bit
			h := hs[a]
			body, o, err := reheaded(v.body, h)
			if err != nil {
				return "", fmt.Errorf("move view %d of %s: %w", bit, id, err)
			}
			origin = o
			out = withView(out, viewRow{audiences: bit, body: body, updatedMs: h.updatedMs})
		}
		if rest != 0 {
			out = append(out, viewRow{audiences: rest, body: v.body, updatedMs: v.updatedMs})
		}
	}
	if err := w.exec(w.pub, "DELETE FROM projections WHERE public_id = ?", id); err != nil {
		return "", fmt.Errorf("move the views of %s: %w", id, err)
	}
	for _, v := range out {
		if err := w.exec(w.pub, "INSERT INTO projections (public_id, audiences, body, etag, updated_ms) VALUES (?, ?, ?, ?, ?)",
			id, v.audiences, v.body, dirsvc.ETag(v.body), v.updatedMs); err != nil {
			return "", fmt.Errorf("move the views of %s: %w", id, err)
		}
	}
	return origin, nil
}

// reheaded returns a stored view's body with the head h in place of the one it starts with (as
// publish writes a head: withHead), and the origin the head names.
func reheaded(body []byte, h audienceHead) ([]byte, string, error) {
	var old dirsvc.RecordHead
	if err := json.Unmarshal(body, &old); err != nil {
		return nil, "", err
	}
	oldHead, err := json.Marshal(old)
	if err != nil {
		return nil, "", err
	}
	newHead, err := json.Marshal(dirsvc.RecordHead{PublicID: old.PublicID, Version: h.version, LocalRevision: h.localRevision,
		LastUpdated: time.UnixMilli(h.updatedMs).UTC(), Origin: old.Origin})
	if err != nil {
		return nil, "", err
	}
	b, err := withHead(body, &old, oldHead, newHead)
	return b, old.Origin, err
}

// placeID returns the ID of a placement, storing it when new.
func (w *writeTx) placeID(placed string) (int64, error) {
	if placed == "" {
		return 0, nil
	}
	if id, ok := w.placeIDs[placed]; ok {
		return id, nil
	}
	var id int64
	err := keptReader{w, w.pub}.QueryRowContext(w.ctx, "SELECT id FROM places WHERE placed = ?", placed).Scan(&id)
	if isNoRows(err) {
		var res sql.Result
		if res, err = w.execResult(w.pub, "INSERT INTO places (placed) VALUES (?)", placed); err == nil {
			id, err = res.LastInsertId()
		}
	}
	if err != nil {
		return 0, fmt.Errorf("store a placement: %w", err)
	}
	w.keepPlace(id, placed)
	return id, nil
}

// keepPlace remembers a stored placement for the rest of the write.
func (w *writeTx) keepPlace(id int64, placed string) {
	if w.placeIDs == nil {
		w.placeIDs, w.placeTexts = map[string]int64{}, map[int64]string{}
	}
	w.placeIDs[placed], w.placeTexts[id] = id, placed
}

// placeText returns the text of the stored placement id.
func (w *writeTx) placeText(id int64) (string, error) {
	if t, ok := w.placeTexts[id]; ok {
		return t, nil
	}
	var t string
	kr := keptReader{w, w.pub}
	if err := kr.QueryRowContext(w.ctx, "SELECT placed FROM places WHERE id = ?", id).Scan(&t); err != nil {
		return "", fmt.Errorf("read placement %d: %w", id, err)
	}
	w.keepPlace(id, t)
	return t, nil
}
