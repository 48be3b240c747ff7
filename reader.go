package dirsvc

import "context"

// Published is one projected view of a record as stored: the JSON body an audience receives and its
// entity tag.
type Published struct {
	PublicID string
	Body     []byte
	ETag     string
}

// RecordStatus is what a read of one record needs to answer 200, 301, 404 or 410 for one audience.
type RecordStatus struct {
	Kind     Kind
	State    State
	Survivor string
	// SeenBy are the audiences that could see the record while it was last visible; only they learn
	// that it closed or merged. Everyone else gets the not-found answer.
	SeenBy Audiences
	// View is the record as the audience sees it, or nil when hidden from the audience.
	View *Published
}

// DirectoryReader is the published, read-only side of one directory: what edges serve.
type DirectoryReader interface {
	// Info returns the directory's public description and settings.
	Info(ctx context.Context) (*Directory, error)
	// Record returns the status of a record and its view for audience a; ErrNotFound when the
	// directory has no record with that public ID.
	Record(ctx context.Context, publicID string, a Audience) (RecordStatus, error)
	// Related returns the views, for audience a, of the records of kind whose reference of kind ref
	// is refID (for example the services of a location), in public-ID order, leaving out hidden ones.
	Related(ctx context.Context, a Audience, kind, ref Kind, refID string) ([]Published, error)
}

// Catalog finds directories by slug.
type Catalog interface {
	// Reader returns the directory's reader; ErrNotFound for an unknown slug.
	Reader(ctx context.Context, slug string) (DirectoryReader, error)
}
