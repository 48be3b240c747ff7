package edge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"

	"github.com/dirsvc/dirsvc"
)

// The page representations are composed at read time from the stored views of the same audience, so
// a page never shows more than its parts do.

func decodeView[T any](p *dirsvc.Published) (*T, error) {
	v := new(T)
	if err := json.Unmarshal(p.Body, v); err != nil {
		return nil, fmt.Errorf("decode view of %s: %w", p.PublicID, err)
	}
	return v, nil
}

// viewOf returns the audience's view of a related record, or nil when it is hidden from them.
func viewOf[T any](ctx context.Context, rd *reading, id string) (*T, error) {
	if id == "" {
		return nil, nil
	}
	st, err := rd.dir.Record(ctx, id, rd.viewer)
	if errors.Is(err, dirsvc.ErrNotFound) || err == nil && st.View == nil {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	return decodeView[T](st.View)
}

// relatedViews returns the audience's views of the records of kind that refer to id.
func relatedViews[T any](ctx context.Context, rd *reading, kind, ref dirsvc.Kind, id string) ([]*T, error) {
	ps, err := rd.dir.Related(ctx, rd.viewer, kind, ref, id)
	if err != nil {
		return nil, err
	}
	out := make([]*T, 0, len(ps))
	for i := range ps {
		v, err := decodeView[T](&ps[i])
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		if len(out)%yieldViews == 0 {
			runtime.Gosched() // see yieldViews
		}
	}
	return out, nil
}

// yieldViews is how many related views a page decodes between yields of the CPU (relatedViews), and
// how many views a FHIR search page maps (mapAll): an organisation's page may have hundreds, and Go
// preempts a running goroutine only after 10 ms, so the cheap reads queued behind a page wait for a
// part of it, not all of it.
const yieldViews = 16

func (s *Server) servicePage(ctx context.Context, rd *reading) (*dirsvc.ServicePage, error) {
	sv, err := decodeView[dirsvc.ServiceView](rd.status.View)
	if err != nil {
		return nil, err
	}
	page := &dirsvc.ServicePage{ServiceView: *sv, Roles: []dirsvc.RoleView{}}
	if page.Organisation, err = viewOf[dirsvc.OrganisationView](ctx, rd, sv.Organisation.PublicID); err != nil {
		return nil, err
	}
	if sv.Location != nil {
		if page.Location, err = viewOf[dirsvc.LocationView](ctx, rd, sv.Location.PublicID); err != nil {
			return nil, err
		}
	}
	roles, err := relatedViews[dirsvc.RoleView](ctx, rd, dirsvc.KindRole, dirsvc.KindService, sv.PublicID)
	if err != nil {
		return nil, err
	}
	for _, r := range roles {
		if r.Active {
			page.Roles = append(page.Roles, *r)
		}
	}
	page.OpenStatus = dirsvc.StatusAt(sv.Hours, rd.now, holidaysIn(rd.info.Country, sv.Areas))
	return page, nil
}

func (s *Server) locationPage(ctx context.Context, rd *reading) (*dirsvc.LocationPage, error) {
	lv, err := decodeView[dirsvc.LocationView](rd.status.View)
	if err != nil {
		return nil, err
	}
	page := &dirsvc.LocationPage{LocationView: *lv, Services: []dirsvc.ServiceCard{}}
	if page.Organisation, err = viewOf[dirsvc.OrganisationView](ctx, rd, lv.Organisation.PublicID); err != nil {
		return nil, err
	}
	services, err := relatedViews[dirsvc.ServiceView](ctx, rd, dirsvc.KindService, dirsvc.KindLocation, lv.PublicID)
	if err != nil {
		return nil, err
	}
	now, holidays := rd.now, holidaysIn(rd.info.Country, lv.Areas)
	page.OpenStatus = dirsvc.StatusAt(lv.Hours, now, holidays)
	for _, sv := range services {
		page.Services = append(page.Services, dirsvc.CardOf(sv))
		page.OpenStatus = page.OpenStatus.Best(dirsvc.StatusAt(sv.Hours, now, holidays))
	}
	return page, nil
}

func (s *Server) organisationPage(ctx context.Context, rd *reading) (*dirsvc.OrganisationPage, error) {
	ov, err := decodeView[dirsvc.OrganisationView](rd.status.View)
	if err != nil {
		return nil, err
	}
	page := &dirsvc.OrganisationPage{OrganisationView: *ov, Locations: []dirsvc.OrganisationLocation{},
		Services: []dirsvc.ServiceCard{}}
	locations, err := relatedViews[dirsvc.LocationView](ctx, rd, dirsvc.KindLocation, dirsvc.KindOrganisation, ov.PublicID)
	if err != nil {
		return nil, err
	}
	services, err := relatedViews[dirsvc.ServiceView](ctx, rd, dirsvc.KindService, dirsvc.KindOrganisation, ov.PublicID)
	if err != nil {
		return nil, err
	}
	now := rd.now
	byLocation := map[string][]*dirsvc.ServiceView{}
	for _, sv := range services {
		page.Services = append(page.Services, dirsvc.CardOf(sv))
		if sv.Location != nil {
			byLocation[sv.Location.PublicID] = append(byLocation[sv.Location.PublicID], sv)
		}
	}
	for _, lv := range locations {
		holidays := holidaysIn(rd.info.Country, lv.Areas)
		item := dirsvc.OrganisationLocation{PublicID: lv.PublicID, Name: lv.Name, Area: lv.Area,
			Address: dirsvc.AddressLines(lv.Address), AddressWithheld: lv.AddressWithheld, Point: lv.Point,
			OpenStatus: dirsvc.StatusAt(lv.Hours, now, holidays), Services: []dirsvc.ServiceCard{}}
		for _, sv := range byLocation[lv.PublicID] {
			item.Services = append(item.Services, dirsvc.CardOf(sv))
			item.OpenStatus = item.OpenStatus.Best(dirsvc.StatusAt(sv.Hours, now, holidays))
		}
		page.Locations = append(page.Locations, item)
	}
	return page, nil
}

func (s *Server) practitionerPage(ctx context.Context, rd *reading) (*dirsvc.PractitionerPage, error) {
	pv, err := decodeView[dirsvc.PractitionerView](rd.status.View)
	if err != nil {
		return nil, err
	}
	page := &dirsvc.PractitionerPage{PractitionerView: *pv, Roles: []dirsvc.RoleView{}, Services: []dirsvc.ServiceCard{}}
	roles, err := relatedViews[dirsvc.RoleView](ctx, rd, dirsvc.KindRole, dirsvc.KindPractitioner, pv.PublicID)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, r := range roles {
		if !r.Active {
			continue
		}
		page.Roles = append(page.Roles, *r)
		if seen[r.Service.PublicID] {
			continue
		}
		seen[r.Service.PublicID] = true
		sv, err := viewOf[dirsvc.ServiceView](ctx, rd, r.Service.PublicID)
		if err != nil {
			return nil, err
		}
		if sv != nil {
			page.Services = append(page.Services, dirsvc.CardOf(sv))
		}
	}
	return page, nil
}
