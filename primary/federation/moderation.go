package federation

import (
	"context"
	"slices"
	"strings"

	"github.com/dirsvc/dirsvc"
)

// Moderation: operators act on the queue by name. A name is a moderator of the directory (see
// dirsvc.Moderator): a curator acts on every item; a steward on the items of the records of its
// organisation. The admin token (or access to the data folder) is the authority; the name says who
// acted, in the item's history.

// maxNote bounds an operator's note.
const maxNote = 2000

// errNotModerator answers an action by a name that may not take it on the item.
func errNotModerator(name, why string) error {
	return dirsvc.Errorf(dirsvc.EForbiddenScope, "%s %s.", name, why)
}

// roles returns the roles a name holds for an item: curator, and steward when it is a steward of the
// item's organisation; and whether the organisation has any steward.
func roles(mods []dirsvc.Moderator, name, org string) (curator, steward, stewarded bool) {
	for _, m := range mods {
		switch {
		case m.Role == dirsvc.RoleCurator && m.Name == name:
			curator = true
		case m.Role == dirsvc.RoleSteward && org != "" && m.Organisation == org:
			stewarded = true
			steward = steward || m.Name == name
		}
	}
	return curator, steward, stewarded
}

// routedTo reports whether an item is routed to a moderator name: every item to curators, an item to
// the stewards of its record's organisation.
func routedTo(mods []dirsvc.Moderator, name string, it *dirsvc.ForwardedItem) bool {
	curator, steward, _ := roles(mods, name, it.Organisation)
	return curator || steward
}

// Queue returns the items of the statuses given (all when none), oldest first; with a name, only
// those routed to it.
func (s *Service) Queue(ctx context.Context, dir, name string, statuses ...string) ([]dirsvc.ForwardedItem, error) {
	for _, st := range statuses {
		if !slices.Contains(dirsvc.ForwardedStatuses, st) {
			return nil, dirsvc.InvalidParam("status", "one of %s", strings.Join(dirsvc.ForwardedStatuses, ", "))
		}
	}
	items, err := s.cfg.Store.ForwardedItems(ctx, dir, statuses...)
	if err != nil || name == "" {
		return items, err
	}
	mods, err := s.cfg.Store.Moderators(ctx, dir)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(items, func(it dirsvc.ForwardedItem) bool { return !routedTo(mods, name, &it) }), nil
}

// Item returns one item with its history.
func (s *Service) Item(ctx context.Context, dir, id string) (*dirsvc.ForwardedItem, error) {
	if !dirsvc.ValidUUID(id) {
		return nil, dirsvc.ErrNotFound
	}
	return s.cfg.Store.Forwarded(ctx, dir, id)
}

// Actions operators take (withdraw is the client's).
var Actions = []string{dirsvc.ActionAccept, dirsvc.ActionApprove, dirsvc.ActionReject, dirsvc.ActionResolve, dirsvc.ActionNoAction}

// transitions are the status changes of each operator action, by item kind: from which statuses,
// to which.
var transitions = map[string]map[string]struct {
	from []string
	to   string
}{
	dirsvc.ForwardedProposal: {
		dirsvc.ActionAccept:  {[]string{dirsvc.ForwardedPending}, dirsvc.ForwardedApproving},
		dirsvc.ActionApprove: {[]string{dirsvc.ForwardedApproving}, dirsvc.ForwardedAccepted},
		dirsvc.ActionReject:  {[]string{dirsvc.ForwardedPending, dirsvc.ForwardedApproving}, dirsvc.ForwardedRejected},
	},
	dirsvc.ForwardedIssue: {
		dirsvc.ActionResolve:  {[]string{dirsvc.ForwardedPending}, dirsvc.ForwardedResolved},
		dirsvc.ActionNoAction: {[]string{dirsvc.ForwardedPending}, dirsvc.ForwardedNoAction},
	},
}

// Act takes an operator's action on an item and returns the item after it. Approving a proposal
// publishes it: see approve.
func (s *Service) Act(ctx context.Context, dir, id, action, name, note string) (*dirsvc.ForwardedItem, error) {
	if !slices.Contains(Actions, action) {
		return nil, dirsvc.InvalidParam("action", "one of %s", strings.Join(Actions, ", "))
	}
	if name = strings.TrimSpace(name); name == "" {
		return nil, dirsvc.InvalidParam("operator", "say who acts: a moderator's name")
	}
	if err := dirsvc.CheckText("operator", name); err != nil {
		return nil, err
	}
	if err := checkText("note", note, maxNote); err != nil {
		return nil, err
	}
	it, err := s.Item(ctx, dir, id)
	if err != nil {
		return nil, err
	}
	tr, ok := transitions[it.Kind][action]
	if !ok {
		return nil, dirsvc.Errorf(dirsvc.EConflict, "The action %s is not one for a forwarded %s.", action, it.Kind)
	}
	mods, err := s.cfg.Store.Moderators(ctx, dir)
	if err != nil {
		return nil, err
	}
	curator, steward, stewarded := roles(mods, name, it.Organisation)
	if !curator && !steward {
		return nil, errNotModerator(name, "is neither a curator of the directory nor a steward of the record")
	}
	role := dirsvc.RoleSteward
	if curator {
		role = dirsvc.RoleCurator
	}
	act := dirsvc.ModerationAction{At: s.cfg.Now(), Action: action, Operator: name, Role: role, Note: strings.TrimSpace(note)}
	if action == dirsvc.ActionApprove {
		// Who approves: a curator for a gated field; for the rest a steward of the record, or a
		// curator when its organisation has no steward.
		switch {
		case it.Gated && !curator:
			return nil, errNotModerator(name, "is not a curator: a change of a gated field (a name) needs a curator's approval")
		case !it.Gated && !steward && stewarded:
			return nil, errNotModerator(name, "is not a steward of the record: its stewards approve the change")
		}
		if it.Gated {
			act.Role = dirsvc.RoleCurator
		} else if steward {
			act.Role = dirsvc.RoleSteward
		}
		return s.approve(ctx, dir, it, act)
	}
	if err := s.cfg.Store.ActOnForwarded(ctx, dir, id, tr.from, tr.to, "", 0, act); err != nil {
		return nil, err
	}
	return s.cfg.Store.Forwarded(ctx, dir, id)
}

// approve publishes an approved proposal through the record write path: the record gets a new
// version and a change feed event, and the proposal is accepted with that version. When a proposed
// field no longer holds the text the proposal was based on (the record changed since), nothing is
// written and the proposal is rejected as stale: the client proposes again on the current text.
func (s *Service) approve(ctx context.Context, dir string, it *dirsvc.ForwardedItem, act dirsvc.ModerationAction) (*dirsvc.ForwardedItem, error) {
	s.publishing.Lock()
	defer s.publishing.Unlock()
	if it.Status != dirsvc.ForwardedApproving {
		return nil, dirsvc.Errorf(dirsvc.EConflict, "The item is %s: approve is not possible now.", dirsvc.ReceiptStatus(it.Status))
	}
	w, err := s.cfg.Directories.Writer(ctx, dir)
	if err != nil {
		return nil, err
	}
	rec, err := w.Source(ctx, it.PublicID)
	if err != nil {
		return nil, err
	}
	from := []string{dirsvc.ForwardedApproving}
	if st := rec.Base().State; st != dirsvc.StateLive && st != dirsvc.StateVisibilityReduced || rec.Base().Origin != "" {
		// Closed, merged, taken down or mirrored since: there is nothing to publish the text on.
		act.Note = strings.TrimSpace(act.Note + " (the record is no longer the directory's live record)")
		return s.closeAs(ctx, dir, it.ID, from, dirsvc.ForwardedRejected, "stale", act)
	}
	changed := false
	for _, c := range it.Changes {
		f, ok := dirsvc.ProposableFieldOf(rec.Kind(), c.Field)
		if !ok {
			return nil, dirsvc.Errorf(dirsvc.EConflict, "The field %s can no longer be proposed.", c.Field)
		}
		cur := f.Text(rec)
		switch *cur {
		case c.Text: // published already (an approval that stopped after the write)
		case c.Base:
			*cur, changed = c.Text, true
		default:
			return s.closeAs(ctx, dir, it.ID, from, dirsvc.ForwardedRejected, "stale", act)
		}
	}
	if changed {
		if err := s.cfg.Update(ctx, dir, rec); err != nil {
			return nil, err
		}
		if rec, err = w.Source(ctx, it.PublicID); err != nil {
			return nil, err
		}
	}
	version := rec.Base().Version
	if len(it.Changes) == 0 {
		version = 0 // a message only: nothing is published; the operator acts on it by hand
	}
	if err := s.cfg.Store.ActOnForwarded(ctx, dir, it.ID, from, dirsvc.ForwardedAccepted, "", version, act); err != nil {
		return nil, err
	}
	return s.cfg.Store.Forwarded(ctx, dir, it.ID)
}

func (s *Service) closeAs(ctx context.Context, dir, id string, from []string, to, reason string, act dirsvc.ModerationAction) (*dirsvc.ForwardedItem, error) {
	if err := s.cfg.Store.ActOnForwarded(ctx, dir, id, from, to, reason, 0, act); err != nil {
		return nil, err
	}
	return s.cfg.Store.Forwarded(ctx, dir, id)
}

// AddModerator names a moderator of a directory: a curator, or a steward of an organisation the
// directory holds.
func (s *Service) AddModerator(ctx context.Context, dir string, m dirsvc.Moderator) error {
	m.Name = strings.TrimSpace(m.Name)
	if m.Name == "" || len(m.Name) > 100 {
		return dirsvc.InvalidParam("name", "a moderator's name: 1 to 100 characters")
	}
	if err := dirsvc.CheckText("name", m.Name); err != nil {
		return err
	}
	switch m.Role {
	case dirsvc.RoleCurator:
		if m.Organisation != "" {
			return dirsvc.InvalidParam("organisation", "a curator moderates the whole directory: name no organisation")
		}
	case dirsvc.RoleSteward:
		if !dirsvc.ValidPublicID(dirsvc.KindOrganisation, m.Organisation) {
			return dirsvc.InvalidParam("organisation", "a steward is named for an organisation (its public ID)")
		}
		w, err := s.cfg.Directories.Writer(ctx, dir)
		if err != nil {
			return err
		}
		if _, err := w.Source(ctx, m.Organisation); err != nil {
			return err
		}
	default:
		return dirsvc.InvalidParam("role", "curator or steward")
	}
	return s.cfg.Store.AddModerator(ctx, dir, m)
}
