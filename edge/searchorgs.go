package edge

import (
	"errors"
	"net/http"
	"regexp"
	"unicode/utf8"

	"github.com/dirsvc/dirsvc"
)

// organisationSearchParams are the query parameters of GET search/organisations.
var organisationSearchParams = []param{{name: "q"}, {name: "letter"}, categoryParam, typeParam, {name: "area"},
	{name: "postcode"}, limitParam, {name: "offset"}}

var letterRE = regexp.MustCompile(`^[A-Z#]$`)

// OrganisationResults is the answer of GET search/organisations: a page of organisations, A to Z,
// their total and their facets.
type OrganisationResults struct {
	Items  []OrganisationItem        `json:"items"`
	Total  int                       `json:"total"`
	Limit  int                       `json:"limit"`
	Offset int                       `json:"offset"`
	Facets dirsvc.OrganisationFacets `json:"facets"`
}

// OrganisationItem is an organisation found (section 2.1): its logo, how many of its services the
// caller finds, what they offer (specialties, else service types, each with its icon and the search
// that finds it), their places, and its ownership type.
type OrganisationItem struct {
	PublicID      string            `json:"publicId"`
	Name          string            `json:"name"`
	Logo          string            `json:"logo,omitempty"`
	OwnershipType *dirsvc.Ownership `json:"ownershipType,omitempty"`
	Services      int               `json:"services"`
	Offerings     []Offering        `json:"offerings"`
	Places        []string          `json:"places"`
}

// Offering is a specialty or service type an organisation offers.
type Offering struct {
	Label  string `json:"label"`
	Icon   string `json:"icon"`
	Search string `json:"search"`
}

// readOrganisationSearch reads the parameters of an organisation search; a bad one is a 400 naming it.
func readOrganisationSearch(q query) (dirsvc.OrganisationQuery, error) {
	var oq dirsvc.OrganisationQuery
	words, _ := q.get("q")
	if utf8.RuneCountInString(words) > maxSearchText {
		return oq, dirsvc.InvalidParam("q", "q is at most %d characters", maxSearchText)
	}
	oq.Words = words
	if v, ok := q.get("letter"); ok {
		if !letterRE.MatchString(v) {
			return oq, dirsvc.InvalidParam("letter", "letter is one capital letter A to Z, or # for names that start otherwise")
		}
		oq.Letter = v
	}
	var err error
	if oq.Categories, err = q.list("category", dirsvc.ValidCode); err != nil {
		return oq, err
	}
	if oq.Types, err = q.list("type", dirsvc.ValidCode); err != nil {
		return oq, err
	}
	if oq.Areas, err = areaParams(q); err != nil {
		return oq, err
	}
	if oq.Limit, err = q.limit(defaultSearchLimit, maxSearchLimit); err != nil {
		return oq, err
	}
	if oq.Offset, err = q.offset(maxSearchOffset); err != nil {
		return oq, err
	}
	return oq, nil
}

// handleSearchOrganisations answers GET search/organisations.
func (s *Server) handleSearchOrganisations(w http.ResponseWriter, r *http.Request) {
	b, err := s.startBrowse(r, organisationSearchParams...)
	var oq dirsvc.OrganisationQuery
	if err == nil {
		oq, err = readOrganisationSearch(b.q)
	}
	if err != nil {
		s.browseError(w, r, err)
		return
	}
	dir, info, viewer := b.dir, b.info, b.viewer
	res, err := dir.SearchOrganisations(r.Context(), viewer, oq)
	if err != nil {
		s.error(w, r, err)
		return
	}
	tax := &dirsvc.TaxonomyView{}
	if p, err := dir.Taxonomy(r.Context(), viewer.Audience); err == nil {
		tax, err = decodeView[dirsvc.TaxonomyView](p)
		if err != nil {
			s.error(w, r, err)
			return
		}
	} else if !errors.Is(err, dirsvc.ErrNotFound) {
		s.error(w, r, err)
		return
	}
	ans := OrganisationResults{Items: []OrganisationItem{}, Total: res.Total, Limit: oq.Limit, Offset: oq.Offset, Facets: res.Facets.Listed()}
	rd := &reading{dir: dir, info: info, viewer: viewer}
	for _, o := range res.Items {
		ov, err := viewOf[dirsvc.OrganisationView](r.Context(), rd, o.PublicID)
		if err != nil {
			s.error(w, r, err)
			return
		}
		if ov == nil {
			continue // changed since the search read it
		}
		item := OrganisationItem{PublicID: o.PublicID, Name: ov.Name, Logo: ov.Logo, OwnershipType: ov.OwnershipType,
			Services: o.Services, Offerings: offerings(tax, o), Places: append([]string{}, o.Places...)}
		ans.Items = append(ans.Items, item)
	}
	s.writeBrowse(w, r, viewer.Audience, ans, dirTag(r, "services"))
}

// offerings names what an organisation's services found offer: their specialties (local types),
// else their service types, each with its icon and the search that finds it.
func offerings(tax *dirsvc.TaxonomyView, o dirsvc.OrganisationFound) []Offering {
	out := []Offering{}
	icon := func(i string) string {
		if i == "" {
			return dirsvc.DefaultIcon
		}
		return i
	}
	for _, code := range o.LocalTypes {
		for _, lt := range tax.LocalTypes {
			if lt.Code == code {
				out = append(out, Offering{Label: lt.Label, Icon: icon(lt.Icon), Search: "category=" + lt.Slug})
			}
		}
	}
	if len(out) > 0 {
		return out
	}
	for _, code := range o.Types {
		label, ic := code, ""
		for _, pt := range tax.PlatformTypes {
			if pt.Code == code {
				label, ic = pt.Label, pt.Icon
			}
		}
		out = append(out, Offering{Label: label, Icon: icon(ic), Search: "type=" + code})
	}
	return out
}
