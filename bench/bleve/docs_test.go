package blevebench

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/dirdb"
)

// service is what a search document holds of one service, as the anonymous viewer sees it: its
// words by field, in the order of the project's full-text columns, and the values it is filtered,
// faceted and placed by. It mirrors the project's search document, made here from the directory's
// public views rather than from its unexported types.
type service struct {
	id string
	// The words, by field.
	name, specialties, organisation, place, practitioners, description string
	// The organisation, for answers grouped by organisation.
	orgID, orgName string
	// Filter and facet values.
	typ, category, ownership, cost, appointment       string
	localTypes, delivery, languages, groups, programs []string
	selfReferral                                      bool
	// The position (nil when the address is withheld), the hours and the site's areas.
	point *dirsvc.Point
	hours *dirsvc.OpeningHours
	areas []string
}

// servicePage is how many services each read of the service list asks for.
const servicePage = 1000

// readServices reads every service the viewer may see through the directory's exported reads: the
// service list a page at a time, each service's site (read once a site) and its roles.
func readServices(ctx context.Context, d *dirdb.Directory, v dirsvc.Viewer) ([]*service, error) {
	sites := map[string]*dirsvc.LocationView{}
	var out []*service
	after := ""
	for {
		page, err := d.Services(ctx, v, dirsvc.ServiceQuery{After: after, Limit: servicePage})
		if err != nil {
			return nil, err
		}
		for _, p := range page.Items {
			var s dirsvc.ServiceView
			if err := json.Unmarshal(p.Body, &s); err != nil {
				return nil, fmt.Errorf("decode service %s: %w", p.PublicID, err)
			}
			var site *dirsvc.LocationView
			if s.Location != nil {
				if site, err = readSite(ctx, d, v, sites, s.Location.PublicID); err != nil {
					return nil, err
				}
			}
			related, err := d.Related(ctx, v, dirsvc.KindRole, dirsvc.KindService, s.PublicID)
			if err != nil {
				return nil, err
			}
			roles := make([]*dirsvc.RoleView, 0, len(related))
			for _, r := range related {
				var rv dirsvc.RoleView
				if err := json.Unmarshal(r.Body, &rv); err != nil {
					return nil, fmt.Errorf("decode role %s: %w", r.PublicID, err)
				}
				roles = append(roles, &rv)
			}
			out = append(out, serviceOf(&s, site, roles))
		}
		if !page.More || len(page.Items) == 0 {
			return out, nil
		}
		after = page.Items[len(page.Items)-1].PublicID
	}
}

// readSite returns the viewer's view of a site, reading it once; nil when the site is hidden.
func readSite(ctx context.Context, d *dirdb.Directory, v dirsvc.Viewer, sites map[string]*dirsvc.LocationView, id string) (*dirsvc.LocationView, error) {
	if site, ok := sites[id]; ok {
		return site, nil
	}
	st, err := d.Record(ctx, id, v)
	if err != nil {
		return nil, fmt.Errorf("read site %s: %w", id, err)
	}
	var site *dirsvc.LocationView
	if st.View != nil {
		site = new(dirsvc.LocationView)
		if err := json.Unmarshal(st.View.Body, site); err != nil {
			return nil, fmt.Errorf("decode site %s: %w", id, err)
		}
	}
	sites[id] = site
	return site, nil
}

// serviceOf composes a service's document from its view, its site's (nil when hidden) and its
// roles', with the same fields as the project's own search documents.
func serviceOf(s *dirsvc.ServiceView, site *dirsvc.LocationView, roles []*dirsvc.RoleView) *service {
	out := &service{id: s.PublicID, name: s.Name, organisation: s.Organisation.Name,
		orgID: s.Organisation.PublicID, orgName: s.Organisation.Name, typ: s.Type.Code,
		delivery: s.Delivery, languages: s.Languages, appointment: s.Appointment, hours: s.Hours, areas: s.Areas}
	if s.CategoryCode != nil {
		out.category = *s.CategoryCode
	}
	specialties := []string{s.Type.Label, s.TypeDisplay}
	for _, lt := range s.Specialties {
		out.localTypes = append(out.localTypes, lt.ID)
		specialties = append(specialties, lt.Label)
	}
	if s.Ownership != nil {
		out.ownership = s.Ownership.Code
	}
	if s.Cost != nil {
		out.cost = s.Cost.Kind
	}
	out.selfReferral = s.Referral == nil || !s.Referral.Required || slices.Contains(s.Referral.From, "self")
	described := []string{s.Description}
	for _, p := range s.Programs {
		out.programs = append(out.programs, p.Code)
		described = append(described, p.Label)
	}
	for _, g := range s.TargetGroups {
		out.groups = append(out.groups, g.Code)
		described = append(described, g.Label)
	}
	place := []string{s.Area}
	if site != nil {
		place = append(place, site.Name)
		if site.Address != nil {
			place = append(place, site.Address.Locality, site.Address.Postcode, site.Address.State)
		}
		if !site.AddressWithheld && site.Point != nil {
			p := *site.Point
			out.point = &p
		}
	}
	var people []string
	for _, r := range roles {
		if r.Active && r.Practitioner.Name != "" {
			people = append(people, r.Practitioner.Name)
			for _, lt := range r.Specialties {
				specialties = append(specialties, lt.Label)
			}
		}
	}
	out.specialties = joinWords(specialties)
	out.place = joinWords(place)
	out.practitioners = joinWords(people)
	out.description = joinWords(described)
	return out
}

// joinWords joins the distinct non-empty texts of ws with a separator that splits words.
func joinWords(ws []string) string {
	var out []string
	for _, w := range ws {
		if w != "" && !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return strings.Join(out, " \u2022 ")
}
