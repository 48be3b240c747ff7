package dirdb

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
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
	areas         []string
}

// publication is what a record publishes after a write: its new row, its views and its event.
type publication struct {
	row   row
	views map[string][]byte // view name -> body
	event string            // empty when nothing published changed
	isNew bool              // the record was not published before
	// eventAudiences are who the event is for: those who see the record now or saw it before.
	eventAudiences dirsvc.Audiences
}

// leadershipView is the name of the stored leadership view of an organisation.
const leadershipView = "leadership"

// publish runs the projection gate on rec for every served audience and compares the result with
// what is published (prev). It decides the new version and local revision, and the event, if any.
// ownChanged says whether the directory's own information on the record changed.
func publish(rec dirsvc.Record, rel dirsvc.Lookup, prev row, ownChanged bool, now time.Time) (publication, error) {
	m := rec.Base()
	m.Version, m.LocalRevision, m.UpdatedAt = 0, 0, time.Time{}
	type view struct {
		name string
		v    any
	}
	var views []view
	var visible dirsvc.Audiences
	for _, a := range dirsvc.ServedAudiences {
		if v := dirsvc.Project(rec, rel, a); v != nil {
			views = append(views, view{a.String(), v})
			visible |= dirsvc.AudiencesOf(a)
		}
	}
	if o, ok := rec.(*dirsvc.Organisation); ok && len(views) > 0 && len(o.Leadership) > 0 {
		views = append(views, view{leadershipView, dirsvc.ProjectLeadership(o, now.Format(time.DateOnly))})
	}

	// The views without versions decide whether anything published changed.
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00", m.State, m.Survivor)
	for _, v := range views {
		b, err := json.Marshal(v.v)
		if err != nil {
			return publication{}, fmt.Errorf("encode %s view of %s: %w", v.name, m.PublicID, err)
		}
		fmt.Fprintf(h, "%s\x00%d\x00", v.name, len(b))
		h.Write(b)
	}
	hash := h.Sum(nil)

	p := publication{row: prev}
	p.row.exists, p.row.kind, p.row.state, p.row.survivor = true, rec.Kind(), m.State, m.Survivor
	p.row.refs, p.row.areas = refsOf(rec, rel), areasOf(rec, rel)
	if prev.exists && bytes.Equal(hash, prev.viewHash) && prev.state == m.State && prev.survivor == m.Survivor {
		m.Version, m.LocalRevision, m.UpdatedAt = prev.version, prev.localRevision, prev.updatedAt
		return p, nil
	}

	p.row.viewHash, p.row.visibleTo = hash, visible
	p.row.version, p.row.localRevision, p.row.updatedAt = prev.version+1, prev.localRevision, now
	if ownChanged || !prev.exists {
		p.row.localRevision++
	}
	m.Version, m.LocalRevision, m.UpdatedAt = p.row.version, p.row.localRevision, now
	p.row.seenBy = seenBy(rec, rel, visible)
	p.views = make(map[string][]byte, len(views))
	for _, v := range views {
		if h, ok := v.v.(interface{ Head() *dirsvc.RecordHead }); ok {
			*h.Head() = dirsvc.RecordHead{PublicID: m.PublicID, Version: m.Version,
				LocalRevision: m.LocalRevision, LastUpdated: now, Origin: m.Origin}
		}
		b, err := json.Marshal(v.v)
		if err != nil {
			return publication{}, fmt.Errorf("encode %s view of %s: %w", v.name, m.PublicID, err)
		}
		p.views[v.name] = b
	}
	p.event, p.eventAudiences = eventOf(prev, m.State, visible), prev.visibleTo|prev.seenBy|visible
	p.isNew = !prev.exists
	return p, nil
}

// seenBy returns who may learn that a record closed, was removed or merged: the audiences that would
// see it were it live. For a live record that is who sees it now.
func seenBy(rec dirsvc.Record, rel dirsvc.Lookup, visible dirsvc.Audiences) dirsvc.Audiences {
	m := rec.Base()
	switch m.State {
	case dirsvc.StateLive, dirsvc.StateVisibilityReduced:
		return visible
	case dirsvc.StateTakedown:
		return 0
	}
	state := m.State
	m.State = dirsvc.StateLive
	defer func() { m.State = state }()
	var seen dirsvc.Audiences
	for _, a := range dirsvc.ServedAudiences {
		if dirsvc.Project(rec, rel, a) != nil {
			seen |= dirsvc.AudiencesOf(a)
		}
	}
	return seen
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

// areasOf returns the areas a location lies in, or that a service is at or serves.
func areasOf(rec dirsvc.Record, rel dirsvc.Lookup) []string {
	switch r := rec.(type) {
	case *dirsvc.Location:
		return r.Areas
	case *dirsvc.Service:
		var out []string
		if l := rel.Location(r.Location); l != nil {
			out = append(out, l.Areas...)
		}
		return append(out, r.Catchment...)
	}
	return nil
}

// ownHash hashes the directory's own information on a record: its canonical form without the
// versions the store assigns.
func ownHash(rec dirsvc.Record) ([]byte, []byte, error) {
	m := rec.Base()
	m.Version, m.LocalRevision, m.UpdatedAt = 0, 0, time.Time{}
	doc, err := json.Marshal(rec)
	if err != nil {
		return nil, nil, fmt.Errorf("encode %s: %w", m.PublicID, err)
	}
	sum := sha256.Sum256(doc)
	return sum[:], doc, nil
}

// etag returns the entity tag of a body.
func etag(body []byte) string {
	sum := sha256.Sum256(body)
	return `"` + hex.EncodeToString(sum[:12]) + `"`
}

func sha256Of(parts ...[]byte) []byte {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d\x00", len(p))
		h.Write(p)
	}
	return h.Sum(nil)
}
