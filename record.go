package dirsvc

import (
	"strings"
	"time"
)

// Kind is the kind of a record.
type Kind string

// The record kinds. The prefix of a public ID names its kind (for example svc_ for a service).
const (
	KindOrganisation Kind = "organisation"
	KindLocation     Kind = "location"
	KindService      Kind = "service"
	KindPractitioner Kind = "practitioner"
	KindRole         Kind = "role"
)

// Kinds lists the record kinds in dependency order: a record only refers to kinds before it.
var Kinds = []Kind{KindOrganisation, KindLocation, KindService, KindPractitioner, KindRole}

var kindPrefix = map[Kind]string{
	KindOrganisation: "org_", KindLocation: "loc_", KindService: "svc_",
	KindPractitioner: "prac_", KindRole: "role_",
}

// IDPrefix returns the public-ID prefix of the kind.
func (k Kind) IDPrefix() string { return kindPrefix[k] }

// KindOfID returns the kind a public ID names by its prefix, or "" when it names none.
func KindOfID(id string) Kind {
	for k, p := range kindPrefix {
		if strings.HasPrefix(id, p) {
			return k
		}
	}
	return ""
}

// ValidPublicID reports whether id is a well-formed public ID of kind k: the kind's prefix followed by
// 1 to 64 letters, digits, hyphens or underscores.
func ValidPublicID(k Kind, id string) bool {
	rest, ok := strings.CutPrefix(id, k.IDPrefix())
	if !ok || len(rest) == 0 || len(rest) > 64 {
		return false
	}
	for _, c := range rest {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// State is a record's lifecycle and visibility state.
type State string

// The lifecycle states of section 3 of the specification.
const (
	StateLive              State = "live"
	StateClosed            State = "closed"             // reads answer 410
	StateRemoved           State = "removed"            // deleted; reads answer 410
	StateMerged            State = "merged"             // reads answer 301 naming the survivor
	StateVisibilityReduced State = "visibility_reduced" // seen only by the audiences left in VisibleTo
	StateTakedown          State = "takedown"           // left out of everything at once; reads answer 404
)

// Valid reports whether s is a known state.
func (s State) Valid() bool {
	switch s {
	case StateLive, StateClosed, StateRemoved, StateMerged, StateVisibilityReduced, StateTakedown:
		return true
	}
	return false
}

// Meta holds what every record has: identity, lifecycle and versions.
type Meta struct {
	PublicID string `json:"publicId"`
	// State is the lifecycle state; empty in an import means live.
	State State `json:"state,omitempty"`
	// Survivor names the record a merged record was merged into.
	Survivor string `json:"survivorPublicId,omitempty"`
	// VisibleTo is who may see the record at all (an unlisted site is not visible to public).
	VisibleTo Audiences `json:"audiences,omitempty"`
	// Origin names where a mirrored record comes from; empty for the directory's own records.
	Origin string `json:"origin,omitempty"`
	// Version increases on every change of any projection of the record; LocalRevision when the
	// directory's own information on it changes. Both are assigned by the store, never imported.
	Version       int64     `json:"version,omitempty"`
	LocalRevision int64     `json:"localRevision,omitempty"`
	UpdatedAt     time.Time `json:"updatedAt,omitzero"`
	// StaffNotes are the directory's internal notes on the record (verification calls, safety notes,
	// why a listing is unlisted). They are for staff only: kept with the canonical record on the
	// primary, never projected, so they reach no view, no directory file an edge copies, no answer.
	StaffNotes string `json:"staffNotes,omitempty"`
}

// VisibleFor reports whether audience a may see the record in its current state. Records that are
// closed, removed, merged or taken down are visible to nobody as records; their tombstone answers
// (410, 301) are given only to audiences that could see the record before (see Tombstone).
func (m *Meta) VisibleFor(a Audience) bool {
	switch m.State {
	case StateLive, StateVisibilityReduced:
		return m.VisibleTo.Has(a)
	}
	return false
}

// Record is any of the five record kinds.
type Record interface {
	Kind() Kind
	Base() *Meta
	// Refs returns the public IDs of the records this one refers to, by kind.
	Refs() map[Kind][]string
}

// Now is the clock of the domain; tests do not change it, they compare with times they read from it.
func Now() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }
