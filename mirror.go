package dirsvc

import (
	"context"
	"time"
)

// Mirror is a directory's harvest of another directory that speaks this API (the upstream): its
// records are read from the upstream's change feed with client credentials the upstream gave this
// directory, and published here as read-only records that carry their origin (MirrorOrigin).
type Mirror struct {
	Name        string `json:"name"`
	Upstream    string `json:"upstream"`          // base URL of the upstream service
	UpstreamDir string `json:"upstreamDirectory"` // the upstream directory's slug
	ClientID    string `json:"clientId"`
	// Secret is the client secret; it is sent to the upstream's token endpoint only, never shown.
	Secret string `json:"-"`
	// Audiences are who may see mirrored records here; zero means MirrorAudiences of the upstream
	// tier. A set wider than that is refused when the harvest learns the tier.
	Audiences Audiences `json:"audiences,omitzero"`
	CreatedAt time.Time `json:"createdAt"`
	MirrorState
}

// MirrorState is where a mirror's harvest stands.
type MirrorState struct {
	Cursor string `json:"-"` // the upstream's feed cursor; "" reads from its oldest event
	// Tier is the tier the upstream gave the client, as its last feed page said.
	Tier string `json:"tier,omitempty"`
	// Generation counts full harvests; FullHarvest is true while one runs.
	Generation  int64     `json:"generation"`
	FullHarvest bool      `json:"fullHarvest"`
	Harvested   int64     `json:"harvested"` // records and tombstones written, in all
	LastSuccess time.Time `json:"lastSuccess,omitzero"`
	LastError   string    `json:"lastError,omitempty"`
}

// MirrorOrigin is the origin mirrored records carry: the upstream directory's federation manifest
// address, its identity across federations (edge.ManifestDirectory.Manifest).
func MirrorOrigin(upstream, dir string) string {
	return upstream + "/v1/d/" + dir + "/federation/manifest"
}

// MirrorAudiences returns who may see, here, what the upstream showed a client of tier t: that tier
// alone, and every tier when t is public. A detail the upstream gave a partner is never shown here
// to the public or to professionals.
func MirrorAudiences(t Audience) Audiences {
	if t == Public {
		return Everyone
	}
	return AudiencesOf(t)
}

// MirrorOp is one change a harvest writes: a record as the upstream shows it now (Record), or a
// tombstone (an event type for which Tombstone is true) of the record PublicID.
type MirrorOp struct {
	Record    Record
	PublicID  string
	Tombstone string
	Survivor  string // merged tombstones
}

// MirrorBatch is what a harvest writes in one transaction: ops in order, and the state after them.
type MirrorBatch struct {
	Mirror string
	Ops    []MirrorOp
	// Bulk writes the batch as an import of the whole directory would: for tens of thousands of
	// records, whose upkeep one by one costs more than making everything anew.
	Bulk bool
	// Cursor, Tier and FullHarvest are the mirror's state once the batch is written.
	Cursor      string
	Tier        string
	FullHarvest bool
}

// MirrorStats counts what a batch did.
type MirrorStats struct {
	Written int `json:"written"` // records written or tombstoned
	// Refused counts records the batch left alone because this directory holds a record of the same
	// public ID of its own or of another mirror, or because a record it refers to is not here (a role
	// whose practitioner the upstream does not give the client in bulk).
	Refused int `json:"refused"`
	// Steps are how long the write's steps took, in order, for logs and benchmarks: no answer holds
	// them.
	Steps []Step `json:"-"`
}

// MirrorStore keeps directories' mirrors and writes their harvests (on the primary).
type MirrorStore interface {
	// Mirrors returns a directory's mirrors.
	Mirrors(ctx context.Context, dir string) ([]Mirror, error)
	// ApplyMirror writes a batch of a mirror's harvest and its state after it, in one transaction.
	ApplyMirror(ctx context.Context, dir string, b MirrorBatch) (MirrorStats, error)
	// RestartMirror begins a new full harvest of a mirror (after a 410, or a changed tier): the
	// cursor is cleared and the generation advanced.
	RestartMirror(ctx context.Context, dir, name, tier string) error
	// UnseenMirrored returns up to limit records of the mirror that its current full harvest has not
	// seen, from after the public ID after.
	UnseenMirrored(ctx context.Context, dir, name, after string, limit int) ([]string, error)
	// MirrorFailed records a harvest's failure (a message for the operator).
	MirrorFailed(ctx context.Context, dir, name, msg string) error
	// SetMirrorSecret replaces the client secret stored for a mirror (as given: the harvester stores
	// it sealed).
	SetMirrorSecret(ctx context.Context, dir, name, secret string) error
}
