package edge

import (
	"context"

	"github.com/dirsvc/dirsvc"
)

// Result cards (dirsvc.ResultCard) show services in collections, and will in search results. A card
// is composed at read time from the published views of the caller's tier only, read one record at a
// time through DirectoryReader.Record (so the view cache serves them): the service's view, its
// site's, its organisation's, and the views of its active roles and their practitioners. It shows
// nothing the caller could not read on the records themselves.

// cards returns the result cards of the services ids, in the order given, as viewer v sees them.
// A service the viewer does not see is left out silently, whatever the reason: missing, hidden from
// its tier, closed, removed, merged or outside its narrowing, so a list of cards never tells one
// from another. A failed read is an error, never taken for a hidden service.
func (s *Server) cards(ctx context.Context, dir dirsvc.DirectoryReader, v dirsvc.Viewer, ids []string) ([]dirsvc.ResultCard, error) {
	rd := &reading{dir: dir, viewer: v}
	out := make([]dirsvc.ResultCard, 0, len(ids))
	for _, id := range ids {
		c, err := card(ctx, rd, id)
		if err != nil {
			return nil, err
		}
		if c != nil {
			out = append(out, *c)
		}
	}
	return out, nil
}

// card returns the result card of one service as the reader's viewer sees it, or nil when the
// viewer does not see the service.
func card(ctx context.Context, rd *reading, id string) (*dirsvc.ResultCard, error) {
	if !dirsvc.ValidPublicID(dirsvc.KindService, id) || !rd.viewer.Narrowing.AllowsKind(dirsvc.KindService) {
		return nil, nil
	}
	sv, err := viewOf[dirsvc.ServiceView](ctx, rd, id)
	if err != nil || sv == nil {
		return nil, err
	}
	var lv *dirsvc.LocationView
	if sv.Location != nil {
		if lv, err = viewOf[dirsvc.LocationView](ctx, rd, sv.Location.PublicID); err != nil {
			return nil, err
		}
	}
	links, err := practitionerLinks(ctx, rd, id)
	if err != nil {
		return nil, err
	}
	c := dirsvc.NewResultCard(sv, lv, links)
	// The organisation is named as the caller sees it: by its own view, or by public ID alone.
	ov, err := viewOf[dirsvc.OrganisationView](ctx, rd, sv.Organisation.PublicID)
	if err != nil {
		return nil, err
	}
	c.Organisation = dirsvc.Ref{PublicID: sv.Organisation.PublicID}
	if ov != nil {
		c.Organisation.Name = ov.Name
	}
	return &c, nil
}

// practitionerLinks returns the practitioners with an active role at the service whose name the
// viewer may see, in the order of their roles' public IDs: a practitioner whose name is hidden from
// the viewer's tier has no view, and is never linked, nor is one outside the viewer's narrowing.
func practitionerLinks(ctx context.Context, rd *reading, serviceID string) ([]dirsvc.PractitionerLink, error) {
	if !rd.viewer.Narrowing.AllowsKind(dirsvc.KindRole) || !rd.viewer.Narrowing.AllowsKind(dirsvc.KindPractitioner) {
		return []dirsvc.PractitionerLink{}, nil
	}
	roles, err := relatedViews[dirsvc.RoleView](ctx, rd, dirsvc.KindRole, dirsvc.KindService, serviceID)
	if err != nil {
		return nil, err
	}
	links := []dirsvc.PractitionerLink{}
	for _, r := range roles {
		if !r.Active {
			continue
		}
		pv, err := viewOf[dirsvc.PractitionerView](ctx, rd, r.Practitioner.PublicID)
		if err != nil {
			return nil, err
		}
		if pv == nil || pv.Name.Text == "" {
			continue
		}
		links = append(links, dirsvc.PractitionerLink{PublicID: pv.PublicID, Name: pv.Name.Text, Role: r.Title})
	}
	return links, nil
}
