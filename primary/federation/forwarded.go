package federation

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/edge"
)

// Limits of forwarded items.
const (
	// MaxBody caps a forwarded item's request body.
	MaxBody = 64 << 10
	// MaxMessage is the most characters of an item's message.
	MaxMessage = 4000
	// MaxReference is the most characters of the aggregator's own reference.
	MaxReference = 200
	maxReporter  = 200 // each of the reporter's details
)

// Config configures a Service.
type Config struct {
	Directories dirsvc.DirectoryStore
	Store       dirsvc.ForwardedStore
	// Update writes a record's new canonical form through the record write path (the one of
	// `dirsvc record update` and the admin API's PUT), so that it gets a new version and a change
	// feed event.
	Update func(ctx context.Context, dir string, rec dirsvc.Record) error
	// Replicate, when set, makes a client's acknowledged change of its items (a new item, a
	// withdrawal) durable in every replica of the directory's ops file before it is answered. An
	// error matching dirsvc.ErrStorageUnconfirmed makes the answer say Replication-Pending; any
	// other (no replica holds the change) is answered as an error (dirsvc.NotReplicated), as
	// webhooks' are.
	Replicate func(ctx context.Context, dir string) error
	Log       *slog.Logger
	Now       func() time.Time
}

// Service takes forwarded items in and moderates them.
type Service struct {
	cfg Config
	// publishing serialises the approvals and withdrawals of this process, so that two approvals
	// of one proposal do not both write the record, nor a withdrawal come between the check and
	// the write of an approval.
	publishing sync.Mutex
}

// New returns a Service.
func New(cfg Config) *Service {
	if cfg.Now == nil {
		cfg.Now = dirsvc.Now
	}
	return &Service{cfg: cfg}
}

// Proposal is the body of a forwarded proposal: new text for text fields of one record (Changes, a
// JSON object of field name to text, kept raw so that a value that is not text is named), and a
// message for anything else.
type Proposal struct {
	PublicID  string                     `json:"publicId"`
	Changes   map[string]json.RawMessage `json:"changes,omitempty"`
	Message   string                     `json:"message,omitempty"`
	Reference string                     `json:"reference,omitempty"`
}

// Issue is the body of a forwarded issue: a report about one listing.
type Issue struct {
	PublicID  string         `json:"publicId"`
	Category  string         `json:"category"`
	Message   string         `json:"message,omitempty"`
	Reference string         `json:"reference,omitempty"`
	Reporter  *IssueReporter `json:"reporter,omitempty"`
}

// IssueReporter is who reported an issue. The details are kept only when ConsentToContact is true.
type IssueReporter struct {
	Name             string `json:"name,omitempty"`
	Email            string `json:"email,omitempty"`
	Phone            string `json:"phone,omitempty"`
	ConsentToContact bool   `json:"consentToContact"`
}

// Receipt is what the forwarding client reads of its item.
type Receipt struct {
	ID        string `json:"id"`
	Kind      string `json:"kind"`
	Status    string `json:"status"`
	PublicID  string `json:"publicId"`
	Reference string `json:"reference,omitempty"`
	// Reason is set when the directory closed a proposal itself: stale (the record's text changed
	// before the proposal was approved).
	Reason string `json:"reason,omitempty"`
	// PublishedVersion is the record's version that published an accepted proposal.
	PublishedVersion int64     `json:"publishedVersion,omitempty"`
	CreatedAt        time.Time `json:"createdAt"`
	UpdatedAt        time.Time `json:"updatedAt"`
}

// ReceiptOf returns the receipt of an item.
func ReceiptOf(it *dirsvc.ForwardedItem) Receipt {
	return Receipt{ID: it.ID, Kind: it.Kind, Status: dirsvc.ReceiptStatus(it.Status), PublicID: it.PublicID,
		Reference: it.Reference, Reason: it.Reason, PublishedVersion: it.PublishedVersion,
		CreatedAt: it.CreatedAt, UpdatedAt: it.UpdatedAt}
}

// checkText refuses text that breaks the text rule (dirsvc.CheckText), or longer than max
// characters. The routes' bodies were checked by the rule as they were read; this is the check of
// every other way in (the command line's moderation).
func checkText(param, s string, max int) error {
	if err := dirsvc.CheckText(param, s); err != nil {
		return err
	}
	if n := utf8.RuneCountInString(s); n > max {
		return dirsvc.InvalidParam(param, "at most %d characters, not %d", max, n)
	}
	return nil
}

// visible returns the canonical form of a record the client sees as live; a record that is missing,
// hidden from it (its tier, narrowing or harvest scope), closed or otherwise not live for it answers
// dirsvc.ErrNotFound alike. A record this directory mirrors from another answers mirrored-record.
func (s *Service) visible(ctx context.Context, dir, publicID string, v dirsvc.Viewer) (dirsvc.Record, error) {
	kind := dirsvc.KindOfID(publicID)
	if kind == "" || !dirsvc.ValidPublicID(kind, publicID) {
		return nil, dirsvc.ErrNotFound
	}
	r, err := s.cfg.Directories.Reader(ctx, dir)
	if err != nil {
		return nil, err
	}
	st, err := r.Record(ctx, publicID, v)
	if err != nil {
		return nil, err
	}
	if st.View == nil || st.State != dirsvc.StateLive && st.State != dirsvc.StateVisibilityReduced {
		return nil, dirsvc.ErrNotFound
	}
	w, err := s.cfg.Directories.Writer(ctx, dir)
	if err != nil {
		return nil, err
	}
	rec, err := w.Source(ctx, publicID)
	if err != nil {
		return nil, err
	}
	if rec.Base().Origin != "" {
		return nil, dirsvc.Errorf(dirsvc.EMirrored,
			"This directory mirrors the record from %s: forward the proposal or issue there.", rec.Base().Origin)
	}
	return rec, nil
}

// organisationOf returns the organisation whose stewards a record's items are routed to ("" for a
// practitioner: curators only).
func (s *Service) organisationOf(ctx context.Context, dir string, rec dirsvc.Record) string {
	switch r := rec.(type) {
	case *dirsvc.Organisation:
		return r.PublicID
	case *dirsvc.Location:
		return r.Organisation
	case *dirsvc.Service:
		return r.Organisation
	case *dirsvc.PractitionerRole:
		if w, err := s.cfg.Directories.Writer(ctx, dir); err == nil {
			if svc, err := w.Source(ctx, r.Service); err == nil {
				if svc, ok := svc.(*dirsvc.Service); ok {
					return svc.Organisation
				}
			}
		}
	}
	return ""
}

// Propose checks a client's proposal and queues it.
func (s *Service) Propose(ctx context.Context, dir string, t *dirsvc.AccessToken, p Proposal) (*dirsvc.ForwardedItem, error) {
	if p.PublicID == "" {
		return nil, dirsvc.InvalidParam("publicId", "name the record (its public ID)")
	}
	if err := checkText("message", p.Message, MaxMessage); err != nil {
		return nil, err
	}
	if err := checkText("reference", p.Reference, MaxReference); err != nil {
		return nil, err
	}
	rec, err := s.visible(ctx, dir, p.PublicID, t.Viewer())
	if err != nil {
		return nil, err
	}
	changes, gated, err := proposedChanges(rec, p.Changes)
	if err != nil {
		return nil, err
	}
	if len(changes) == 0 && strings.TrimSpace(p.Message) == "" {
		return nil, &dirsvc.Error{Code: dirsvc.EUnprocessable, Param: "changes",
			Message: "The proposal changes nothing: give changes of text fields, or a message."}
	}
	return s.create(ctx, dir, &dirsvc.ForwardedItem{Kind: dirsvc.ForwardedProposal, ClientID: t.ClientID, PublicID: p.PublicID,
		RecordKind: rec.Kind(), Organisation: s.organisationOf(ctx, dir, rec), Changes: changes, Gated: gated,
		Message: strings.TrimSpace(p.Message), Reference: strings.TrimSpace(p.Reference)})
}

// proposedChanges checks the changes of a proposal against the record: each names a proposable
// text field of its kind, holds text, and changes it.
func proposedChanges(rec dirsvc.Record, in map[string]json.RawMessage) ([]dirsvc.ProposedChange, bool, error) {
	names := make([]string, 0, len(in))
	for name := range in {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []dirsvc.ProposedChange
	gated := false
	for _, name := range names {
		param := "changes." + name
		f, ok := dirsvc.ProposableFieldOf(rec.Kind(), name)
		if !ok {
			return nil, false, &dirsvc.Error{Code: dirsvc.EUnprocessable, Param: edge.ClipName(param),
				Message: "This field of a " + string(rec.Kind()) + " cannot be proposed (" + fieldList(rec.Kind()) + "): put the correction in the message."}
		}
		var text string
		if err := json.Unmarshal(in[name], &text); err != nil {
			return nil, false, &dirsvc.Error{Code: dirsvc.EUnprocessable, Param: param, Message: "A proposed change is text: a JSON string."}
		}
		text = strings.TrimSpace(text)
		if err := checkText(param, text, f.Max); err != nil {
			return nil, false, err
		}
		if text == "" && f.Required {
			return nil, false, &dirsvc.Error{Code: dirsvc.EUnprocessable, Param: param, Message: "This field cannot be empty."}
		}
		base := *f.Text(rec)
		if text == base {
			return nil, false, &dirsvc.Error{Code: dirsvc.EUnprocessable, Param: param, Message: "The proposed text is the text the record holds: nothing to change."}
		}
		gated = gated || f.Gated
		out = append(out, dirsvc.ProposedChange{Field: name, Base: base, Text: text})
	}
	return out, gated, nil
}

// fieldList names the proposable fields of a kind, for a message.
func fieldList(k dirsvc.Kind) string {
	var names []string
	for _, f := range dirsvc.ProposableFields(k) {
		names = append(names, f.Name)
	}
	if len(names) == 0 {
		return "none can"
	}
	return "these can: " + strings.Join(names, ", ")
}

// Report checks a client's issue and queues it. The reporter's details are dropped here, before
// anything is stored, unless the reporter agreed to be contacted.
func (s *Service) Report(ctx context.Context, dir string, t *dirsvc.AccessToken, is Issue) (*dirsvc.ForwardedItem, error) {
	if is.PublicID == "" {
		return nil, dirsvc.InvalidParam("publicId", "name the record (its public ID)")
	}
	if !slices.Contains(dirsvc.IssueCategories, is.Category) {
		return nil, dirsvc.InvalidParam("category", "one of %s", strings.Join(dirsvc.IssueCategories, ", "))
	}
	if err := checkText("message", is.Message, MaxMessage); err != nil {
		return nil, err
	}
	if err := checkText("reference", is.Reference, MaxReference); err != nil {
		return nil, err
	}
	var reporter *dirsvc.Reporter
	if r := is.Reporter; r != nil && r.ConsentToContact {
		for _, d := range []struct{ param, v string }{{"reporter.name", r.Name}, {"reporter.email", r.Email}, {"reporter.phone", r.Phone}} {
			if err := checkText(d.param, d.v, maxReporter); err != nil {
				return nil, err
			}
		}
		reporter = &dirsvc.Reporter{Name: strings.TrimSpace(r.Name), Email: strings.TrimSpace(r.Email), Phone: strings.TrimSpace(r.Phone)}
		if *reporter == (dirsvc.Reporter{}) {
			reporter = nil
		}
	}
	rec, err := s.visible(ctx, dir, is.PublicID, t.Viewer())
	if err != nil {
		return nil, err
	}
	return s.create(ctx, dir, &dirsvc.ForwardedItem{Kind: dirsvc.ForwardedIssue, ClientID: t.ClientID, PublicID: is.PublicID,
		RecordKind: rec.Kind(), Organisation: s.organisationOf(ctx, dir, rec), Category: is.Category,
		Message: strings.TrimSpace(is.Message), Reference: strings.TrimSpace(is.Reference), Reporter: reporter})
}

func (s *Service) create(ctx context.Context, dir string, it *dirsvc.ForwardedItem) (*dirsvc.ForwardedItem, error) {
	now := s.cfg.Now()
	it.ID, it.Status, it.CreatedAt, it.UpdatedAt = dirsvc.NewUUID(), dirsvc.ForwardedPending, now, now
	it.History = []dirsvc.ModerationAction{{At: now, Action: dirsvc.ActionForward}}
	if err := s.cfg.Store.CreateForwarded(ctx, dir, it); err != nil {
		return nil, err
	}
	return it, nil
}

// Receipt returns a client's own item; another client's, or an unknown or malformed ID, answers
// dirsvc.ErrNotFound alike.
func (s *Service) Receipt(ctx context.Context, dir, clientID, id string) (*dirsvc.ForwardedItem, error) {
	if !dirsvc.ValidUUID(id) {
		return nil, dirsvc.ErrNotFound
	}
	it, err := s.cfg.Store.Forwarded(ctx, dir, id)
	if err != nil {
		return nil, err
	}
	if it.ClientID != clientID {
		return nil, dirsvc.ErrNotFound
	}
	return it, nil
}

// Withdraw withdraws a client's own item while nothing is decided (pending, or accepted and waiting
// for approval); a conflict once it is.
func (s *Service) Withdraw(ctx context.Context, dir, clientID, id string) (*dirsvc.ForwardedItem, error) {
	if _, err := s.Receipt(ctx, dir, clientID, id); err != nil {
		return nil, err
	}
	// Not while this process publishes an approval: the record would change under a withdrawn item.
	s.publishing.Lock()
	defer s.publishing.Unlock()
	act := dirsvc.ModerationAction{At: s.cfg.Now(), Action: dirsvc.ActionWithdraw}
	if err := s.cfg.Store.ActOnForwarded(ctx, dir, id, []string{dirsvc.ForwardedPending, dirsvc.ForwardedApproving},
		dirsvc.ForwardedWithdrawn, "", 0, act); err != nil {
		return nil, err
	}
	return s.cfg.Store.Forwarded(ctx, dir, id)
}
