package dirsvc

import (
	"context"
	"time"
)

// Published is one projected view of a record as stored: the JSON body an audience receives and its
// entity tag.
type Published struct {
	PublicID string
	Body     []byte
	ETag     string
	// Encoded keeps the body's coded forms beside it where a cache keeps the view; nil otherwise.
	Encoded *Encoded
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
	// Record returns the status of a record and its view for the viewer (nil when the record is
	// hidden from the viewer's audience or outside its narrowing); ErrNotFound when the directory has
	// no record with that public ID. Whichever of these it finds, it makes the same lookups, so that
	// a caller cannot time the difference between a hidden record and a missing one.
	Record(ctx context.Context, publicID string, v Viewer) (RecordStatus, error)
	// Related returns the views, for the viewer, of the records of kind whose reference of kind ref
	// is refID (for example the services of a location), in public-ID order, leaving out hidden ones
	// and those outside the viewer's narrowing.
	Related(ctx context.Context, v Viewer, kind, ref Kind, refID string) ([]Published, error)
	// Readable reports which of the records ids the viewer may read (Record would give it their
	// view): read all at once, for the records many references name; the absent ones are not.
	Readable(ctx context.Context, v Viewer, ids []string) (map[string]bool, error)
	// Services returns a page of the service list as the viewer sees it.
	Services(ctx context.Context, v Viewer, q ServiceQuery) (Page, error)
	// Practitioners returns a page of the practitioners with an active role at a service the viewer
	// can see, as the viewer sees them.
	Practitioners(ctx context.Context, v Viewer, after string, limit int) (Page, error)
	// Records returns a page of the records of kind the viewer may read, as the viewer sees them,
	// in public-ID order after the public ID after (the FHIR searches of organisations, locations
	// and roles walk them).
	Records(ctx context.Context, v Viewer, kind Kind, after string, limit int) (Page, error)
	// Identified returns the public IDs of the records visible to the viewer that carry, as the viewer
	// sees them, the identifier value of system (a system URI or a type code).
	Identified(ctx context.Context, v Viewer, system, value string) ([]string, error)
	// Leadership returns an organisation's stored leadership view; ErrNotFound when it has none.
	Leadership(ctx context.Context, orgID string) (*Published, error)
	// SearchServices finds the services visible to the viewer and inside its narrowing that match
	// the query: a page of them, their total and their facets. A word, value or position hidden from
	// the viewer's audience finds, counts and ranks nothing.
	SearchServices(ctx context.Context, v Viewer, q SearchQuery) (SearchResult, error)
	// SearchOrganisations finds the organisations with at least one service the viewer may find
	// that meets the query, A to Z.
	SearchOrganisations(ctx context.Context, v Viewer, q OrganisationQuery) (OrganisationResult, error)
	// Suggest returns up to limit suggestions of each kind (service types, places, organisations)
	// whose words start with the text's, among the services the viewer may find, most services first.
	Suggest(ctx context.Context, v Viewer, text string, limit int) ([]Suggestion, error)
	// Taxonomy returns the directory's taxonomy as audience a sees it (ProjectTaxonomy); ErrNotFound
	// when the directory was never imported.
	Taxonomy(ctx context.Context, a Audience) (*Published, error)
	// Browser counts the services of categories and reads the published collections.
	Browser
	// ChangeLog reads the change feed.
	ChangeLog
	// PublicPageLister lists the records whose page anyone may read (the sitemap).
	PublicPageLister
	// Image returns a published image (image.go) for the viewer: ErrNotFound when the directory
	// holds none with that hash, or when no record the viewer may read names it in the viewer's
	// view of it; both make the same lookups.
	Image(ctx context.Context, v Viewer, sha256 string) (*Image, error)
	// Generation returns a number that moves whenever what the reader answers may have changed: a
	// commit to the directory's file, by any process, or replicated changes applied to it. Whatever
	// is composed from its answers after Generation returned g stays current while it returns g.
	Generation() uint64
}

// PublicPage is a record whose page the public tier may read: an entry of the directory's sitemap.
type PublicPage struct {
	PublicID string
	// Updated is the time of the public view's last change; zero when unknown.
	Updated time.Time
}

// PublicPageLister lists the services, locations and organisations the public tier may read,
// whoever asks: a record hidden from the public tier is never among them.
type PublicPageLister interface {
	// PublicPageCount returns how many there are.
	PublicPageCount(ctx context.Context) (int, error)
	// PublicPages returns up to limit of them in public-ID order, after the public ID after and
	// skipping offset more.
	PublicPages(ctx context.Context, after string, offset, limit int) ([]PublicPage, error)
}

// ServiceQuery asks for a page of the service list. Each list filter matches any of its values; the
// filters together must all match.
type ServiceQuery struct {
	// UpdatedSince keeps services whose service, location or organisation changed at or after it.
	UpdatedSince  time.Time
	Areas         []string // area IDs the service is located in or serves
	Types         []string // platform type codes
	Categories    []string // platform category codes
	Organisations []string // organisation public IDs
	After         string   // the public ID the page starts after
	Limit         int
	// Held, when set, is asked about each view of the page (its public ID and entity tag) before
	// its body is read: the page leaves out the bodies of the views it reports held (Body nil),
	// for a caller that keeps what it makes of them by entity tag.
	Held func(publicID, etag string) bool
}

// Page is a page of a list: views in public-ID order, and whether more follow the last.
type Page struct {
	Items []Published
	More  bool
}

// Catalog finds directories by slug.
type Catalog interface {
	// Reader returns the directory's reader; ErrNotFound for an unknown slug.
	Reader(ctx context.Context, slug string) (DirectoryReader, error)
}
