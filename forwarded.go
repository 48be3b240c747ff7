package dirsvc

import (
	"context"
	"slices"
	"time"
)

// Forwarded proposals and issues (sections 4.8, 2.6 and 3): an aggregator (any client with
// graph:propose) forwards a correction of a record's text, or a report about a listing, to the
// directory that keeps the record. Each becomes an item of the directory's moderation queue on the
// primary; the forwarding client follows it through its receipt, and sees a published correction in
// the change feed.

// Forwarded item kinds.
const (
	ForwardedProposal = "proposal"
	ForwardedIssue    = "issue"
)

// Forwarded item statuses. The receipt statuses are those of section 2.6; ForwardedApproving is the
// queue's own: a proposal an operator accepted, waiting for the approval that publishes it. Its
// receipt says pending, since nothing is published yet.
const (
	ForwardedPending   = "pending"
	ForwardedApproving = "approving"
	ForwardedAccepted  = "accepted" // published
	ForwardedRejected  = "rejected"
	ForwardedWithdrawn = "withdrawn"
	ForwardedResolved  = "resolved"
	ForwardedNoAction  = "no_action"
)

// ForwardedStatuses lists every status of the queue.
var ForwardedStatuses = []string{ForwardedPending, ForwardedApproving, ForwardedAccepted, ForwardedRejected,
	ForwardedWithdrawn, ForwardedResolved, ForwardedNoAction}

// ReceiptStatus is the status the forwarding client reads for a queue status.
func ReceiptStatus(status string) string {
	if status == ForwardedApproving {
		return ForwardedPending
	}
	return status
}

// Moderation actions: what operators (and the forwarding client: forward, withdraw) do to an item,
// as its history records them.
const (
	ActionForward  = "forward"
	ActionAccept   = "accept"
	ActionApprove  = "approve"
	ActionReject   = "reject"
	ActionResolve  = "resolve"
	ActionNoAction = "no-action"
	ActionWithdraw = "withdraw"
)

// Issue categories of a forwarded issue.
var IssueCategories = []string{"incorrect", "closed", "duplicate", "unsafe", "other"}

// Moderator roles: a curator moderates every record of the directory and alone approves gated
// fields; a steward moderates the records of one organisation (the organisation, its locations and
// services, and the roles at its services).
const (
	RoleCurator = "curator"
	RoleSteward = "steward"
)

// Moderator is a named operator of a directory's moderation queue.
type Moderator struct {
	Name         string `json:"name"`
	Role         string `json:"role"`
	Organisation string `json:"organisation,omitempty"` // a steward's organisation
}

// ProposedChange is one field of a proposal: the text stored when it was proposed (Base) and the
// text proposed.
type ProposedChange struct {
	Field string `json:"field"`
	Base  string `json:"base"`
	Text  string `json:"text"`
}

// Reporter is who reported an issue; kept only when they agreed to be contacted.
type Reporter struct {
	Name  string `json:"name,omitempty"`
	Email string `json:"email,omitempty"`
	Phone string `json:"phone,omitempty"`
}

// ModerationAction is one step in an item's history.
type ModerationAction struct {
	At       time.Time `json:"at"`
	Action   string    `json:"action"`
	Operator string    `json:"operator,omitempty"`
	Role     string    `json:"role,omitempty"`
	Note     string    `json:"note,omitempty"`
}

// ForwardedItem is a forwarded proposal or issue as the queue keeps it.
type ForwardedItem struct {
	ID         string `json:"id"` // a UUID
	Kind       string `json:"kind"`
	Status     string `json:"status"`
	ClientID   string `json:"clientId"`
	PublicID   string `json:"publicId"`
	RecordKind Kind   `json:"recordKind"`
	// Organisation is the organisation of the record, whose stewards the item is routed to.
	Organisation string `json:"organisation,omitempty"`
	// Reason says why the queue itself closed an item (stale: the record changed before approval).
	Reason    string           `json:"reason,omitempty"`
	Changes   []ProposedChange `json:"changes,omitempty"`
	Gated     bool             `json:"gated,omitempty"` // a change of a gated field: a curator approves it
	Message   string           `json:"message,omitempty"`
	Reference string           `json:"reference,omitempty"`
	Category  string           `json:"category,omitempty"`
	Reporter  *Reporter        `json:"reporter,omitempty"`
	// PublishedVersion is the record's version that published the proposal.
	PublishedVersion int64              `json:"publishedVersion,omitempty"`
	CreatedAt        time.Time          `json:"createdAt"`
	UpdatedAt        time.Time          `json:"updatedAt"`
	History          []ModerationAction `json:"history,omitempty"`
}

// ProposableField is a text field of a record kind that a forwarded proposal may change.
type ProposableField struct {
	Name string
	// Gated fields need a curator's approval; the rest a steward's.
	Gated bool
	// Required fields may not be proposed empty.
	Required bool
	// Max is the most characters the text holds.
	Max  int
	text func(Record) *string
}

// Text returns the field of rec (of the field's kind).
func (f ProposableField) Text(rec Record) *string { return f.text(rec) }

// proposable lists, by record kind, the fields a proposal may change.
var proposable = map[Kind][]ProposableField{
	KindOrganisation: {
		{Name: "name", Gated: true, Required: true, Max: 200, text: func(r Record) *string { return &r.(*Organisation).Name }},
		{Name: "description", Max: 4000, text: func(r Record) *string { return &r.(*Organisation).Description }},
	},
	KindLocation: {
		{Name: "name", Gated: true, Required: true, Max: 200, text: func(r Record) *string { return &r.(*Location).Name }},
		{Name: "description", Max: 4000, text: func(r Record) *string { return &r.(*Location).Description }},
	},
	KindService: {
		{Name: "name", Gated: true, Required: true, Max: 200, text: func(r Record) *string { return &r.(*Service).Name }},
		{Name: "description", Max: 4000, text: func(r Record) *string { return &r.(*Service).Description }},
		{Name: "appointment", Max: 1000, text: func(r Record) *string { return &r.(*Service).Appointment }},
	},
	KindRole: {
		{Name: "title", Required: true, Max: 200, text: func(r Record) *string { return &r.(*PractitionerRole).Title }},
	},
}

// ProposableFields returns the fields of kind k a proposal may change (none for practitioners,
// whose details are theirs to change).
func ProposableFields(k Kind) []ProposableField { return proposable[k] }

// ProposableFieldOf returns the named proposable field of kind k.
func ProposableFieldOf(k Kind, name string) (ProposableField, bool) {
	i := slices.IndexFunc(proposable[k], func(f ProposableField) bool { return f.Name == name })
	if i < 0 {
		return ProposableField{}, false
	}
	return proposable[k][i], true
}

// ForwardedStore keeps a directory's forwarded items, their history and its moderators (on the
// primary only).
type ForwardedStore interface {
	// CreateForwarded stores a new item (its ID set) with its first history step.
	CreateForwarded(ctx context.Context, dir string, it *ForwardedItem) error
	// Forwarded returns an item with its history; ErrNotFound for an unknown ID.
	Forwarded(ctx context.Context, dir, id string) (*ForwardedItem, error)
	// ForwardedItems returns the items of the statuses given (all when none), oldest first, without
	// their history.
	ForwardedItems(ctx context.Context, dir string, statuses ...string) ([]ForwardedItem, error)
	// ActOnForwarded records an action on an item whose status is one of from, and sets its status to
	// to (with reason, and with version as its published version when to is accepted); a conflict
	// when the item's status is not one of from.
	ActOnForwarded(ctx context.Context, dir, id string, from []string, to, reason string, version int64, act ModerationAction) error
	// Moderators returns the directory's moderators, by name.
	Moderators(ctx context.Context, dir string) ([]Moderator, error)
	// AddModerator adds a moderator (a name may hold several roles).
	AddModerator(ctx context.Context, dir string, m Moderator) error
	// RemoveModerator removes every role of a name; ErrNotFound when it holds none.
	RemoveModerator(ctx context.Context, dir, name string) error
}
