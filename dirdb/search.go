package dirdb

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/dirsvc/dirsvc"
)

// A search document is what search finds, filters, facets and sorts one service by, as one audience
// sees it. It is made from that audience's published views only (the service's view, which already
// carries its organisation's name, its site's areas and its hours; the site's view for the address
// and position; the roles' views for the practitioners who show their name), so a word, a filter
// value or a position hidden from the audience is never in its documents.
type searchDoc struct {
	Name         string               `json:"n"`
	Organisation string               `json:"o"`
	OrgName      string               `json:"on,omitempty"`
	Type         string               `json:"t"`
	Category     string               `json:"c,omitempty"`
	LocalTypes   []string             `json:"lt,omitempty"`
	Ownership    string               `json:"ow,omitempty"`
	Cost         string               `json:"co,omitempty"`
	Delivery     []string             `json:"d,omitempty"`
	Languages    []string             `json:"la,omitempty"`
	TargetGroups []string             `json:"tg,omitempty"`
	Programs     []string             `json:"p,omitempty"`
	Facilities   []string             `json:"f,omitempty"`
	Appointment  string               `json:"ap,omitempty"`
	SelfReferral bool                 `json:"sr,omitempty"`
	Areas        []string             `json:"a,omitempty"`  // the site's, when the audience sees the site
	Catchment    []string             `json:"ca,omitempty"` // areas served beyond the site
	Point        *dirsvc.Point        `json:"pt,omitempty"` // nil when the audience may not see the address
	Hours        *dirsvc.OpeningHours `json:"h,omitempty"`
	State        string               `json:"st,omitempty"` // the site's state, for public holidays
	Locality     string               `json:"lo,omitempty"`
	Postcode     string               `json:"pc,omitempty"`
}

// searchText is a document's words, by full-text column (see the search_text tables): what an
// audience may see of the service's name, its types and specialties, its organisation, its place,
// the practitioners who show it their name (with their roles' specialties), and its description,
// programs and target groups.
type searchText struct {
	name, specialties, organisation, place, practitioners, description string
}

// docOf makes the search document and words of a service for one audience, from that audience's
// views of the service, its site (nil when hidden) and the service's roles.
func docOf(s *dirsvc.ServiceView, site *dirsvc.LocationView, roles []*dirsvc.RoleView) (searchDoc, searchText) {
	d := searchDoc{Name: s.Name, Organisation: s.Organisation.PublicID, OrgName: s.Organisation.Name,
		Type: s.Type.Code, Delivery: s.Delivery, Languages: s.Languages, Appointment: s.Appointment,
		Areas: s.Areas, Catchment: s.Catchment, Hours: s.Hours}
	if s.CategoryCode != nil {
		d.Category = *s.CategoryCode
	}
	specialties := []string{s.Type.Label, s.TypeDisplay}
	for _, lt := range s.Specialties {
		d.LocalTypes = append(d.LocalTypes, lt.ID)
		specialties = append(specialties, lt.Label)
	}
	if s.Ownership != nil {
		d.Ownership = s.Ownership.Code
	}
	if s.Cost != nil {
		d.Cost = s.Cost.Kind
	}
	d.SelfReferral = s.Referral == nil || !s.Referral.Required || slices.Contains(s.Referral.From, "self")
	described := []string{s.Description}
	for _, p := range s.Programs {
		d.Programs = append(d.Programs, p.Code)
		described = append(described, p.Label)
	}
	for _, g := range s.TargetGroups {
		d.TargetGroups = append(d.TargetGroups, g.Code)
		described = append(described, g.Label)
	}
	place := []string{s.Area}
	if site != nil {
		place = append(place, site.Name)
		d.Facilities = site.Facilities
		if site.Address != nil {
			d.State, d.Locality, d.Postcode = site.Address.State, site.Address.Locality, site.Address.Postcode
			place = append(place, site.Address.Locality, site.Address.Postcode, site.Address.State)
		} else {
			d.Locality, d.State, d.Postcode = areaParts(site.Area, site.Areas)
		}
		if !site.AddressWithheld && site.Point != nil {
			p := *site.Point
			d.Point = &p
		}
	}
	// What the practitioners bring (their names, and their roles' specialties) has a column of its
	// own: a viewer that may not read practitioners finds nothing by it (peopleSearchable).
	var people []string
	for _, r := range roles {
		if r.Active && r.Practitioner.Name != "" {
			people = append(people, r.Practitioner.Name)
			for _, lt := range r.Specialties {
				people = append(people, lt.Label)
			}
		}
	}
	return d, searchText{
		name:          s.Name,
		specialties:   joinWords(specialties),
		organisation:  s.Organisation.Name,
		place:         joinWords(place),
		practitioners: joinWords(people),
		description:   joinWords(described),
	}
}

// areaParts reads the locality, state and postcode of a site whose address the audience may not
// see from what it is shown instead: its area text ("Locality STATE postcode", dirsvc.AreaText)
// and its areas (postcode:<code>, state:<code>).
func areaParts(area string, areas []string) (locality, state, postcode string) {
	for _, a := range areas {
		if v, ok := strings.CutPrefix(a, "postcode:"); ok && postcode == "" {
			postcode = v
		}
		if v, ok := strings.CutPrefix(a, "state:"); ok && state == "" {
			state = strings.ToUpper(v)
		}
	}
	locality = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(area), postcode))
	if state != "" {
		locality = strings.TrimSpace(strings.TrimSuffix(locality, " "+state))
	}
	return locality, state, postcode
}

// joinWords joins the distinct non-empty texts of ws with a separator the tokenizer splits on.
func joinWords(ws []string) string {
	var out []string
	for _, w := range ws {
		if w != "" && !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return strings.Join(out, " \u2022 ")
}

// docRow is one stored search document: its encoding, its words and the audiences that share it.
type docRow struct {
	audiences int64
	doc       []byte
	text      searchText
}

// serviceDocs makes the search documents of a service from its views: views maps each served
// audience's bit to its view of the service, sites to its view of the service's site, and roles to
// its views of the service's roles. Audiences that get the same document and words share one row.
func serviceDocs(views map[int64]*dirsvc.ServiceView, sites map[int64]*dirsvc.LocationView, roles map[int64][]*dirsvc.RoleView) ([]docRow, error) {
	var out []docRow
	for _, a := range dirsvc.ServedAudiences {
		bit := audienceBit(a)
		s := views[bit]
		if s == nil {
			continue
		}
		d, text := docOf(s, sites[bit], roles[bit])
		b, err := json.Marshal(d)
		if err != nil {
			return nil, fmt.Errorf("encode the search document of %s: %w", s.PublicID, err)
		}
		i := slices.IndexFunc(out, func(r docRow) bool { return r.text == text && bytes.Equal(r.doc, b) })
		if i >= 0 {
			out[i].audiences |= bit
		} else {
			out = append(out, docRow{bit, b, text})
		}
	}
	return out, nil
}
