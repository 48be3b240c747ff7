package dirsvc

import (
	"context"
	"time"
)

// Export formats (section 4.5): a CSV file per record kind, the JSON export (one line), FHIR NDJSON
// (a file per resource type), and an HSDS 3.0 data package. Every export carries ATTRIBUTION.txt.
const (
	ExportCSV  = "csv"
	ExportJSON = "json"
	ExportFHIR = "fhir-ndjson"
	ExportHSDS = "hsds"
)

// ExportFormats are the formats an export request may name, in the order files are listed.
var ExportFormats = []string{ExportCSV, ExportJSON, ExportFHIR, ExportHSDS}

// ExportKinds are the record kinds an export holds, in the order they are written.
var ExportKinds = []Kind{KindOrganisation, KindLocation, KindService, KindPractitioner, KindRole}

// Export states. An export is queued, then running, and ends succeeded (its files can be
// downloaded), failed or cancelled.
const (
	ExportQueued    = "queued"
	ExportRunning   = "running"
	ExportSucceeded = "succeeded"
	ExportFailed    = "failed"
	ExportCancelled = "cancelled"
)

// ExportDone reports whether an export in state st has ended.
func ExportDone(st string) bool {
	return st == ExportSucceeded || st == ExportFailed || st == ExportCancelled
}

// ReadSnapshot is one consistent read of a directory as one viewer sees it: every call reads the
// directory as it was when the snapshot began, whatever commits meanwhile. Close ends it; a
// snapshot holds a reader of the directory until then.
type ReadSnapshot interface {
	// Walk calls fn with the view of every record of kind the viewer may list, in public-ID order:
	// exactly the records the REST lists give the viewer (the service list for services, the
	// practitioner list for practitioners, the records the FHIR searches walk for the other kinds).
	// The body passed to fn is valid only during the call. An error of fn ends the walk with it.
	Walk(ctx context.Context, kind Kind, fn func(p Published) error) error
	// Count returns how many records Walk would give for kind.
	Count(ctx context.Context, kind Kind) (int64, error)
	// Readable reports whether the viewer may read the record publicID (its read would answer 200).
	Readable(ctx context.Context, publicID string) (bool, error)
	// Leadership returns an organisation's stored leadership view; ErrNotFound when it has none.
	Leadership(ctx context.Context, orgID string) (*Published, error)
	// Close ends the snapshot.
	Close() error
}

// ReadSnapshotter is a directory reader that can take a ReadSnapshot for a viewer.
type ReadSnapshotter interface {
	ReadSnapshot(ctx context.Context, v Viewer) (ReadSnapshot, error)
}

// ExportRequest is the body of POST /v1/d/{dir}/exports: the formats and record kinds wanted (all of
// them when empty) and, optionally, Since: only records changed after it.
type ExportRequest struct {
	Formats []string   `json:"formats,omitempty"`
	Types   []Kind     `json:"types,omitempty"`
	Since   *time.Time `json:"since,omitempty"`
}
