package dirdb

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/dirsvc/dirsvc"
)

// row is a record's row in directory.db.
type row struct {
	exists        bool
	kind          dirsvc.Kind
	state         dirsvc.State
	survivor      string
	visibleTo     dirsvc.Audiences
	seenBy        dirsvc.Audiences
	version       int64
	localRevision int64
	viewHash      []byte
	updatedAt     time.Time
	refs          [4]string // organisation, location, service, practitioner
	heads         heads     // the head of each served audience's view
}

// publication is what a record publishes after a write: its new row, its views and its events.
type publication struct {
	row      row
	prevRefs [4]string // the references the record's row held before
	views    []viewRow
	keys     []listKey // what lists find the record by, per audience
	changed  bool      // something published changed: the row, views and events are written
	events   []event
	isNew    bool // the record was not published before
}

// event is a change-log row of a publication: its type, the audiences it is for (each of which sees
// the version and local revision it names), and those.
type event struct {
	kind          string
	audiences     dirsvc.Audiences
	version       int64
	localRevision int64
}

// viewRow is one distinct body of a record, the audiences that receive it, and the time of its head.
type viewRow struct {
	audiences int64
	body      []byte
	etag      string // of body, when made (prepare makes it, on every CPU)
	updatedMs int64
}

// leadershipBit marks the stored leadership view of an organisation in a projection's audience set.
const leadershipBit = 1 << 7

// audienceBit returns the bit of audience a in a projection's audience set.
func audienceBit(a dirsvc.Audience) int64 { return 1 << a }

// projected is one view of a record: for an audience's bit (or leadershipBit), the view, and its
// JSON without versions.
type projected struct {
	bit  int64
	v    any
	body []byte
}

// publish runs the projection gate on rec for every served audience and compares the result with
// what is published (prev). It decides the new version and local revision, and the event, if any.
// ownChanged says whether the directory's own information on the record changed.
//
// It reads rec and the records rel returns but never writes them, so publications of many records
// can be made at once; the versions it decides go into the views and the row only.
func publish(rec dirsvc.Record, rel dirsvc.Lookup, prev row, ownChanged bool, now time.Time) (publication, error) {
	m := rec.Base()
	views, visible := project(rec, rel, now)
	hash, err := encodeViews(m, views)
	if err != nil {
		return publication{}, err
	}
	p := publication{row: prev, prevRefs: prev.refs, isNew: !prev.exists}
	p.row.exists, p.row.kind, p.row.state, p.row.survivor = true, rec.Kind(), m.State, m.Survivor
	p.row.refs = refsOf(rec, rel)
	if prev.exists && bytes.Equal(hash, prev.viewHash) && prev.state == m.State && prev.survivor == m.Survivor {
		return p, nil
	}
	p.changed = true
	p.row.viewHash, p.row.visibleTo = hash, visible
	p.row.version, p.row.localRevision, p.row.updatedAt = prev.version+1, prev.localRevision, now
	if ownChanged || !prev.exists {
		p.row.localRevision++
	}
	p.row.seenBy = seenBy(m.State, prev, visible)
	changed := p.row.assignHeads(prev, views, ownChanged, now)
	if err := p.addViews(m, views, now); err != nil {
		return publication{}, err
	}
	p.events = eventsOf(prev, &p.row, visible, changed)
	return p, nil
}

// project returns the views of rec: each served audience's that may see it, and an organisation's
// leadership; and the audiences that see it.
func project(rec dirsvc.Record, rel dirsvc.Lookup, now time.Time) ([]projected, dirsvc.Audiences) {
	var views []projected
	var visible dirsvc.Audiences
	for _, a := range dirsvc.ServedAudiences {
		if v := dirsvc.Project(rec, rel, a); v != nil {
			views = append(views, projected{bit: audienceBit(a), v: v})
			visible |= dirsvc.AudiencesOf(a)
		}
	}
	if o, ok := rec.(*dirsvc.Organisation); ok && len(views) > 0 && len(o.Leadership) > 0 {
		// Stored with every appointment current in some time zone; reads keep those current in the
		// directory's (edge/leadership.go).
		views = append(views, projected{bit: leadershipBit, v: dirsvc.ProjectLeadership(o, dirsvc.EarliestToday(now))})
	}
	return views, visible
}

// encodeViews encodes each view without versions (into its body) and returns the hash of them all
// with the record's state: what decides whether anything published changed.
func encodeViews(m *dirsvc.Meta, views []projected) ([]byte, error) {
	noVersions := dirsvc.RecordHead{PublicID: m.PublicID, Origin: m.Origin}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00", m.State, m.Survivor)
	for i := range views {
		v := &views[i]
		if x, ok := v.v.(interface{ Head() *dirsvc.RecordHead }); ok {
			*x.Head() = noVersions
		}
		b, err := json.Marshal(v.v)
		if err != nil {
			return nil, fmt.Errorf("encode view %d of %s: %w", v.bit, m.PublicID, err)
		}
		v.body = b
		fmt.Fprintf(h, "%d\x00%d\x00", v.bit, len(b))
		h.Write(b)
	}
	return h.Sum(nil), nil
}

// assignHeads gives each audience's view its head: the new version only when the view changed for
// that audience, else the head it had. It returns the audiences whose view changed.
func (r *row) assignHeads(prev row, views []projected, ownChanged bool, now time.Time) dirsvc.Audiences {
	var leadership []byte
	for _, v := range views {
		if v.bit == leadershipBit {
			leadership = v.body
		}
	}
	var changed dirsvc.Audiences
	r.heads = heads{}
	// Most audiences see the same bytes, whose hash is taken once.
	type hashed struct {
		body []byte
		lead bool // with the leadership
		hash [16]byte
	}
	var done []hashed
	hashOf := func(a dirsvc.Audience, body []byte) [16]byte {
		lead := a != dirsvc.Public && len(leadership) > 0
		for _, d := range done {
			if d.lead == lead && bytes.Equal(d.body, body) {
				return d.hash
			}
		}
		h := viewHash(a, body, leadership)
		done = append(done, hashed{body, lead, h})
		return h
	}
	for _, v := range views {
		if v.bit == leadershipBit {
			continue
		}
		a := audienceOfBit(v.bit)
		ph, vh := prev.heads[a], hashOf(a, v.body)
		if ph.version != 0 && ph.hash == vh {
			r.heads[a] = ph
			continue
		}
		lrev := ph.localRevision
		if ownChanged || ph.version == 0 {
			lrev = r.localRevision
		}
		r.heads[a] = audienceHead{version: r.version, localRevision: lrev, updatedMs: now.UnixMilli(), hash: vh}
		changed |= served(a)
	}
	return changed
}

// addViews adds to the publication each view with its head, as the rows to store (audiences that
// see the same bytes share one), and the list keys of each audience's view.
func (p *publication) addViews(m *dirsvc.Meta, views []projected, now time.Time) error {
	oldHead, err := json.Marshal(dirsvc.RecordHead{PublicID: m.PublicID, Origin: m.Origin})
	if err != nil {
		return err
	}
	// Most views of a record share one head: each distinct head is encoded once.
	type encodedHead struct {
		head audienceHead
		json []byte
	}
	var encoded []encodedHead
	headJSON := func(hd audienceHead) ([]byte, error) {
		hd.hash = [16]byte{}
		for _, e := range encoded {
			if e.head == hd {
				return e.json, nil
			}
		}
		b, err := json.Marshal(dirsvc.RecordHead{PublicID: m.PublicID, Version: hd.version,
			LocalRevision: hd.localRevision, LastUpdated: time.UnixMilli(hd.updatedMs).UTC(), Origin: m.Origin})
		encoded = append(encoded, encodedHead{hd, b})
		return b, err
	}
	// The views already made, by what they were made of: most audiences of a record see the same
	// view under the same head, which is then made once.
	type source struct {
		body, head []byte
		row        int // in p.views
	}
	var made []source
next:
	for _, v := range views {
		hd := audienceHead{version: p.row.version, localRevision: p.row.localRevision, updatedMs: now.UnixMilli()}
		if v.bit != leadershipBit {
			p.keys = addKeys(p.keys, v.v, v.bit)
			hd = p.row.heads[audienceOfBit(v.bit)]
		}
		newHead, err := headJSON(hd)
		if err != nil {
			return err
		}
		for _, s := range made {
			if bytes.Equal(s.head, newHead) && bytes.Equal(s.body, v.body) {
				p.views[s.row].audiences |= v.bit
				continue next
			}
		}
		b, err := withHead(v.body, v.v, oldHead, newHead)
		if err != nil {
			return fmt.Errorf("encode view %d of %s: %w", v.bit, m.PublicID, err)
		}
		p.views = withView(p.views, viewRow{audiences: v.bit, body: b, updatedMs: hd.updatedMs})
		made = append(made, source{v.body, newHead, slices.IndexFunc(p.views, func(r viewRow) bool { return r.audiences&v.bit != 0 })})
	}
	return nil
}

// withView adds a view row to views: to the row of the same bytes, whose audiences it joins, if
// there is one (audiences that see the same bytes share one row), else as a row of its own.
func withView(views []viewRow, v viewRow) []viewRow {
	for i := range views {
		if bytes.Equal(views[i].body, v.body) {
			views[i].audiences |= v.audiences
			return views
		}
	}
	return append(views, v)
}

// audienceOfBit returns the served audience of a view's bit.
func audienceOfBit(bit int64) dirsvc.Audience {
	for _, a := range dirsvc.ServedAudiences {
		if audienceBit(a) == bit {
			return a
		}
	}
	panic(fmt.Sprintf("dirdb: no audience has bit %d", bit))
}

// served returns the set of the one audience a, without the staff bit every stated set carries.
func served(a dirsvc.Audience) dirsvc.Audiences { return dirsvc.Audiences(1) << a }

// eventsOf returns the change-log events of a publication (the record's new row r): a tombstone for
// everyone who saw the record; otherwise visibility_reduced for the audiences that no longer see it,
// and created or updated for those whose view changed, one event for each head they now see.
func eventsOf(prev row, r *row, visible, changed dirsvc.Audiences) []event {
	saw := (prev.visibleTo | prev.seenBy) &^ dirsvc.StaffOnly
	switch r.state {
	case dirsvc.StateClosed, dirsvc.StateRemoved, dirsvc.StateMerged, dirsvc.StateTakedown:
		if saw == 0 {
			return nil
		}
		return []event{{eventOf(prev, r.state, visible), saw, r.version, r.localRevision}}
	}
	var out []event
	if lost := saw &^ visible; lost != 0 {
		out = append(out, event{dirsvc.EventVisibilityReduced, lost, r.version, r.localRevision})
	}
	kind := dirsvc.EventUpdated
	if !prev.exists {
		kind = dirsvc.EventCreated
	}
	for _, a := range dirsvc.ServedAudiences {
		if !changed.Has(a) {
			continue
		}
		h := r.heads[a]
		if i := slices.IndexFunc(out, func(e event) bool {
			return e.kind == kind && e.version == h.version && e.localRevision == h.localRevision
		}); i >= 0 {
			out[i].audiences |= served(a)
		} else {
			out = append(out, event{kind, served(a), h.version, h.localRevision})
		}
	}
	return out
}

// withHead returns the body of view v with the encoded head newHead in place of oldHead, which body
// was encoded with. Every view embeds its head first, so its JSON starts with the head's members and
// the rest need not be encoded again; a view without a head is returned as it is.
func withHead(body []byte, v any, oldHead, newHead []byte) ([]byte, error) {
	if _, ok := v.(interface{ Head() *dirsvc.RecordHead }); !ok {
		return body, nil
	}
	prefix := oldHead[:len(oldHead)-1] // without its closing brace
	if !bytes.HasPrefix(body, prefix) {
		return nil, fmt.Errorf("view %T does not start with its head", v)
	}
	out := make([]byte, 0, len(body)+len(newHead)-len(oldHead))
	out = append(out, newHead[:len(newHead)-1]...)
	return append(out, body[len(prefix):]...), nil
}

// seenBy returns who may learn that a record closed, was removed or merged: the audiences that saw
// it the last time it was visible. A live record is seen by whoever sees it now; a record in a
// tombstone state keeps who saw it before, so one that was never published (imported already
// closed, removed or merged) is seen by nobody and answers as a missing record to every audience.
func seenBy(state dirsvc.State, prev row, visible dirsvc.Audiences) dirsvc.Audiences {
	switch state {
	case dirsvc.StateLive, dirsvc.StateVisibilityReduced:
		return visible
	case dirsvc.StateTakedown:
		return 0
	}
	return prev.seenBy
}

// eventOf names the change-log event of a published change.
func eventOf(prev row, state dirsvc.State, visible dirsvc.Audiences) string {
	switch state {
	case dirsvc.StateClosed:
		return dirsvc.EventClosed
	case dirsvc.StateRemoved:
		return dirsvc.EventDeleted
	case dirsvc.StateMerged:
		return dirsvc.EventMerged
	case dirsvc.StateTakedown:
		return dirsvc.EventVisibilityReduced
	}
	switch {
	case !prev.exists:
		return dirsvc.EventCreated
	case prev.visibleTo&^visible&^dirsvc.StaffOnly != 0:
		return dirsvc.EventVisibilityReduced
	}
	return dirsvc.EventUpdated
}

// refsOf returns the references a record's row keeps for lists and cascades.
func refsOf(rec dirsvc.Record, rel dirsvc.Lookup) [4]string {
	switch r := rec.(type) {
	case *dirsvc.Location:
		return [4]string{r.Organisation, "", "", ""}
	case *dirsvc.Service:
		return [4]string{r.Organisation, r.Location, "", ""}
	case *dirsvc.PractitionerRole:
		return [4]string{"", "", r.Service, r.Practitioner}
	}
	return [4]string{}
}

// ownHash hashes the directory's own information on a record: its canonical form. Records reach the
// store without versions (ingest clears them and ops.db keeps none), so the form holds none either.
func ownHash(rec dirsvc.Record) ([]byte, []byte, error) {
	m := rec.Base()
	doc, err := json.Marshal(rec)
	if err != nil {
		return nil, nil, fmt.Errorf("encode %s: %w", m.PublicID, err)
	}
	sum := sha256.Sum256(doc)
	return sum[:], doc, nil
}

func sha256Of(parts ...[]byte) []byte {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d\x00", len(p))
		h.Write(p)
	}
	return h.Sum(nil)
}
