package dirsvc

import (
	"slices"
	"sort"
	"strings"
)

// ProjectionVersion is the version of the projection rules. It goes up with every change that shows
// some audience less than before (version 2: an address's audiences hold whether or not it is
// withheld); a primary publishes again, before it serves, every directory whose stored views an
// older version made, so the change reaches every copy without anyone importing again. Version 3
// publishes the taxonomy as each audience sees it (ProjectTaxonomy), which files of earlier versions
// lack. Version 4 publishes the collections each audience may see (ProjectCollection) and keys
// services by their local types (lt:), so categories count them. Version 5 moves the specialties of
// practitioners' roles into the search documents' practitioners' column, so that a client that may
// not read practitioners finds no service by them. Version 6 lists in each audience's taxonomy only
// the entries the services it sees use (ProjectTaxonomy).
const ProjectionVersion = 6

// TaxonomyUse is what of a taxonomy the services one audience sees use: the codes of the platform
// types, local types, programs and target groups that its views of the services carry. (A
// practitioner role's specialties do not count: a tier may hold callers that may not read
// practitioners, and its taxonomy would tell them what the roles it cannot read hold.)
type TaxonomyUse struct {
	PlatformTypes, LocalTypes, Programs, TargetGroups map[string]bool
}

// ProjectTaxonomy returns the taxonomy as audience a may see it, without any entry's audiences. An
// entry is listed only when a service a sees uses it (used), so that a tier's taxonomy is made of
// what the tier sees and nothing else: an entry only hidden services use (a refuge's type, say)
// would tell that they exist. It lists the platform types, programs and target groups in use; the
// local types a may see that are in use, each refining only listed platform types; and the
// categories a may see that keep a listed platform type or local type, each with only those (a
// category of hidden or unused types is left out, not shown empty, which would tell that they
// exist).
func ProjectTaxonomy(t *Taxonomy, a Audience, used TaxonomyUse) *TaxonomyView {
	out := &TaxonomyView{Categories: []CategoryView{}, PlatformTypes: []PlatformType{}, LocalTypes: []LocalTypeView{},
		Programs: []Term{}, TargetGroups: []Term{}}
	types, locals := map[string]bool{}, map[string]bool{}
	for _, pt := range t.PlatformTypes {
		if used.PlatformTypes[pt.Code] {
			types[pt.Code] = true
			out.PlatformTypes = append(out.PlatformTypes, pt)
		}
	}
	notIn := func(set map[string]bool) func(string) bool {
		return func(code string) bool { return !set[code] }
	}
	for _, lt := range t.LocalTypes {
		if lt.VisibleTo.Has(a) && used.LocalTypes[lt.Code] {
			locals[lt.Code] = true
			out.LocalTypes = append(out.LocalTypes, LocalTypeView{Code: lt.Code, Slug: lt.Slug, Label: lt.Label, Icon: lt.Icon,
				Refines: slices.DeleteFunc(slices.Clone(lt.Refines), notIn(types))})
		}
	}
	for _, c := range t.Categories {
		ts := slices.DeleteFunc(slices.Clone(c.Types), notIn(types))
		local := slices.DeleteFunc(slices.Clone(c.LocalTypes), notIn(locals))
		if !c.VisibleTo.Has(a) || len(ts) == 0 && len(local) == 0 {
			continue
		}
		out.Categories = append(out.Categories, CategoryView{Code: c.Code, Name: c.Name, Icon: c.Icon, Order: c.Order,
			Types: ts, LocalTypes: local})
	}
	for _, p := range t.Programs {
		if used.Programs[p.Code] {
			out.Programs = append(out.Programs, p)
		}
	}
	for _, g := range t.TargetGroups {
		if used.TargetGroups[g.Code] {
			out.TargetGroups = append(out.TargetGroups, g)
		}
	}
	return out
}

// Lookup gives the projection gate the records a record's view depends on. Implementations return nil
// for a record they do not hold.
type Lookup interface {
	Taxonomy() *Taxonomy
	Organisation(publicID string) *Organisation
	Location(publicID string) *Location
	Service(publicID string) *Service
	Practitioner(publicID string) *Practitioner
	// LocationsOf returns the locations of an organisation, in public-ID order.
	LocationsOf(orgID string) []*Location
}

// Project is the projection gate: it returns the view of rec that audience a may see, or nil when the
// record is hidden from a (or not live). Every output of the service is made from what it returns.
func Project(rec Record, rel Lookup, a Audience) any {
	switch r := rec.(type) {
	case *Organisation:
		if v := ProjectOrganisation(r, rel, a); v != nil {
			return v
		}
	case *Location:
		if v := ProjectLocation(r, rel, a); v != nil {
			return v
		}
	case *Service:
		if v := ProjectService(r, rel, a); v != nil {
			return v
		}
	case *Practitioner:
		if v := ProjectPractitioner(r, a); v != nil {
			return v
		}
	case *PractitionerRole:
		if v := ProjectRole(r, rel, a); v != nil {
			return v
		}
	}
	return nil
}

func head(m *Meta) RecordHead {
	return RecordHead{PublicID: m.PublicID, Version: m.Version, LocalRevision: m.LocalRevision,
		LastUpdated: m.UpdatedAt, Origin: m.Origin}
}

func contactsFor(cs []Contact, a Audience, markRestricted bool) []ContactView {
	var out []ContactView
	for _, c := range cs {
		if c.VisibleTo.Has(a) {
			out = append(out, ContactView{Kind: c.Kind, Value: c.Value, Label: c.Label,
				Restricted: markRestricted && c.VisibleTo.Restricted()})
		}
	}
	return out
}

func identifiersFor(ids []Identifier, a Audience) []IdentifierView {
	var out []IdentifierView
	for _, id := range ids {
		if id.VisibleTo.Has(a) {
			out = append(out, IdentifierView{Type: id.Type, System: id.System, Value: id.Value})
		}
	}
	return out
}

// addressFor returns the address as audience a may see it, or nil when its audiences leave a out.
// Withheld only changes who may see the address when the import names nobody (staff only rather
// than everyone); a withheld address and one restricted by its audiences are hidden alike, so a
// caller learns only its area (AreaText) and never its lines or point.
func addressFor(ad *Address, a Audience) *AddressView {
	if ad == nil || !ad.VisibleTo.Has(a) {
		return nil
	}
	return &AddressView{Lines: append([]string{}, ad.Lines...), Locality: ad.Locality, State: ad.State,
		Postcode: ad.Postcode, Country: ad.Country}
}

// AreaText is the area an address lies in, as shown even when the address is withheld.
func AreaText(ad *Address) string {
	return strings.Join(slices.DeleteFunc([]string{ad.Locality, ad.State, ad.Postcode},
		func(s string) bool { return s == "" }), " ")
}

func metroRural(remoteness *int) string {
	switch {
	case remoteness == nil:
		return ""
	case *remoteness == 0:
		return "metro"
	}
	return "rural"
}

// ProjectOrganisation returns what audience a may see of an organisation, or nil.
func ProjectOrganisation(o *Organisation, rel Lookup, a Audience) *OrganisationView {
	if !o.VisibleFor(a) {
		return nil
	}
	v := &OrganisationView{RecordHead: head(&o.Meta), Name: o.Name, Description: o.Description,
		Logo: o.Logo, Website: o.Website, OwnershipType: o.OwnershipType,
		Identifiers: identifiersFor(o.Identifiers, a), Contacts: contactsFor(o.Contacts, a, false),
		PostalAddress: addressFor(o.PostalAddress, a), MetroRural: o.MetroRural}
	if o.OwnershipType != nil {
		v.OwnershipSource = SourceOrganisation
	}
	if v.MetroRural == "" {
		// Derived from the remoteness of the sites the audience may see: metro when any is in a major
		// city, rural when all known ones are outside.
		var best *int
		for _, l := range rel.LocationsOf(o.PublicID) {
			if l.VisibleFor(a) && l.Remoteness != nil && (best == nil || *l.Remoteness < *best) {
				best = l.Remoteness
			}
		}
		v.MetroRural = metroRural(best)
	}
	return v
}

// ProjectLeadership returns the organisation's current executives, then its board, each with only
// what they show to health professionals; never a past appointment or a staff-only detail.
func ProjectLeadership(o *Organisation, today string) []LeaderView {
	var ls []Leader
	for _, l := range o.Leadership {
		if l.Current(today) && l.NameVisibleTo.Has(Professional) {
			ls = append(ls, l)
		}
	}
	rank := map[string]int{LeaderExecutive: 0, LeaderBoard: 1}
	sort.SliceStable(ls, func(i, j int) bool {
		if rank[ls[i].Group] != rank[ls[j].Group] {
			return rank[ls[i].Group] < rank[ls[j].Group]
		}
		return ls[i].Order < ls[j].Order
	})
	out := []LeaderView{}
	for _, l := range ls {
		v := LeaderView{Name: l.Name, Group: l.Group, Title: l.Title, StartDate: l.StartDate, EndDate: l.EndDate,
			Contacts: contactsFor(l.Contacts, Professional, false)}
		if l.BioVisibleTo.Has(Professional) {
			v.Bio = l.Bio
		}
		out = append(out, v)
	}
	return out
}

// ProjectLocation returns what audience a may see of a location, or nil. A location is hidden when
// its organisation is.
func ProjectLocation(l *Location, rel Lookup, a Audience) *LocationView {
	if !l.VisibleFor(a) {
		return nil
	}
	org := rel.Organisation(l.Organisation)
	if org == nil || !org.VisibleFor(a) {
		return nil
	}
	v := &LocationView{RecordHead: head(&l.Meta), Name: l.Name, Description: l.Description,
		Organisation: Ref{PublicID: org.PublicID, Name: org.Name},
		Address:      addressFor(&l.Address, a), Area: AreaText(&l.Address), Areas: l.Areas,
		MetroRural: metroRural(l.Remoteness), Hours: l.Hours,
		Contacts: contactsFor(l.Contacts, a, false), Identifiers: identifiersFor(l.Identifiers, a),
		Facilities: l.Facilities}
	v.AddressWithheld = v.Address == nil
	if v.Address != nil {
		v.Point = l.Address.Point
	}
	v.OwnershipType, v.OwnershipSource = inheritOwnership(nil, l, org)
	return v
}

func inheritOwnership(s *Service, l *Location, o *Organisation) (*Ownership, string) {
	switch {
	case s != nil && s.OwnershipType != nil:
		return s.OwnershipType, SourceService
	case l != nil && l.OwnershipType != nil:
		return l.OwnershipType, SourceLocation
	case o != nil && o.OwnershipType != nil:
		return o.OwnershipType, SourceOrganisation
	}
	return nil, ""
}

// localTypesFor returns the service's local types the audience may see, in tagging order.
func localTypesFor(codes []string, tax *Taxonomy, a Audience) []*LocalType {
	var out []*LocalType
	for _, c := range codes {
		if lt := tax.LocalType(c); lt != nil && lt.VisibleTo.Has(a) {
			out = append(out, lt)
		}
	}
	return out
}

func localTypeRef(lt *LocalType, fallbackIcon string) LocalTypeRef {
	icon := lt.Icon
	if icon == "" {
		icon = fallbackIcon
	}
	return LocalTypeRef{ID: lt.Code, Slug: lt.Slug, Label: lt.Label, Icon: icon}
}

// ProjectService returns what audience a may see of a service, or nil. A service is hidden when its
// organisation is; a location the audience may not see is left out of the service's view.
func ProjectService(s *Service, rel Lookup, a Audience) *ServiceView {
	if !s.VisibleFor(a) {
		return nil
	}
	org := rel.Organisation(s.Organisation)
	if org == nil || !org.VisibleFor(a) {
		return nil
	}
	tax := rel.Taxonomy()
	v := &ServiceView{RecordHead: head(&s.Meta), Name: s.Name, Slug: s.Slug, Description: s.Description,
		Organisation: Ref{PublicID: org.PublicID, Name: org.Name}, Catchment: s.Catchment,
		Contacts: contactsFor(s.Contacts, a, false), Identifiers: identifiersFor(s.Identifiers, a),
		Website: s.Website, Referral: s.Referral, Appointment: s.Appointment, Cost: s.Cost,
		Delivery: s.Delivery, Languages: s.Languages, ReferralRequiredFromLabels: []string{}}
	loc := rel.Location(s.Location)
	if loc != nil && loc.VisibleFor(a) {
		v.Location = &Ref{PublicID: loc.PublicID, Name: loc.Name}
		v.Area, v.Areas = AreaText(&loc.Address), loc.Areas
	}
	v.Hours = s.Hours
	if v.Hours == nil && loc != nil {
		v.Hours = loc.Hours
	}

	// Types: the platform type, then the local types (specialties) in tagging order.
	pt := tax.PlatformType(s.Type)
	v.Type = CodeLabel{Code: s.Type, Label: s.Type}
	platformIcon := DefaultIcon
	if pt != nil {
		v.Type.Label = pt.Label
		if pt.Icon != "" {
			platformIcon = pt.Icon
		}
		if pt.Category != "" {
			v.CategoryCode = &pt.Category
		}
	}
	v.PlatformTypeDisplay, v.TypeDisplay, v.CategoryIcon = v.Type.Label, v.Type.Label, platformIcon
	lts := localTypesFor(s.LocalTypes, tax, a)
	for _, lt := range lts {
		v.Specialties = append(v.Specialties, localTypeRef(lt, platformIcon))
	}
	if len(lts) > 0 {
		shown := lts[0]
		for _, lt := range lts {
			if slices.Contains(lt.Refines, s.Type) {
				shown = lt
				v.TypeDisplay = lt.Label
				if lt.Icon != "" {
					v.CategoryIcon = lt.Icon
				}
				break
			}
		}
		ref := localTypeRef(shown, platformIcon)
		v.LocalType = &ref
	}

	v.OwnershipType, v.OwnershipSource = inheritOwnership(s, loc, org)
	if v.OwnershipType != nil {
		v.Ownership = &OwnershipCard{Code: v.OwnershipType.Code, Label: v.OwnershipType.Display,
			Source: v.OwnershipSource}
	}
	for _, c := range s.Programs {
		v.Programs = append(v.Programs, CodeLabel{Code: c, Label: labelOf(tax.Programs, c)})
	}
	for _, c := range s.TargetGroups {
		v.TargetGroups = append(v.TargetGroups, CodeLabel{Code: c, Label: labelOf(tax.TargetGroups, c)})
	}
	if s.Referral != nil && s.Referral.Required {
		for _, f := range s.Referral.From {
			l, ok := ReferralSourceLabels[f]
			if !ok {
				l = f
			}
			v.ReferralRequiredFromLabels = append(v.ReferralRequiredFromLabels, l)
		}
	}
	return v
}

func labelOf(terms []Term, code string) string {
	for _, t := range terms {
		if t.Code == code {
			return t.Name
		}
	}
	return code
}

// ProjectPractitioner returns what audience a may see of a practitioner, or nil when the practitioner
// (or their name) is hidden from a: a practitioner whose name the caller may not see has no page.
func ProjectPractitioner(p *Practitioner, a Audience) *PractitionerView {
	if !p.VisibleFor(a) || !p.NameVisibleTo.Has(a) {
		return nil
	}
	name := PersonName{Prefix: p.Prefix, Given: p.Given, Family: p.Family,
		Text: strings.TrimSpace(strings.Join([]string{p.Prefix, p.Given, p.Family}, " "))}
	v := &PractitionerView{RecordHead: head(&p.Meta), Name: name, Contacts: contactsFor(p.Contacts, a, true)}
	shows := func(f string) bool { return p.FieldVisibleTo(f).Has(a) }
	if g := p.Gender; g != "" && shows(FieldGender) && !(a == Public && g == GenderPreferNotToSay) {
		v.Gender = &g
		if g == GenderDifferentTerm {
			v.GenderOwnTerm = p.GenderOwnTerm
		}
	}
	if shows(FieldQualifications) {
		v.Qualifications = nonNil(p.Qualifications)
	}
	if shows(FieldLanguages) {
		v.Languages = nonNil(p.Languages)
	}
	if shows(FieldBio) && p.Bio != "" {
		v.Bio = &p.Bio
	}
	if shows(FieldPhoto) && p.Photo != "" {
		v.Photo = &p.Photo
	}
	if shows(FieldIdentifiers) {
		v.Identifiers = identifiersFor(p.Identifiers, a)
		if v.Identifiers == nil {
			v.Identifiers = []IdentifierView{}
		}
	}
	return v
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// ProjectRole returns what audience a may see of a practitioner role, or nil. A role is hidden when
// its service or practitioner record is; it names a practitioner whose name is hidden by ID only.
func ProjectRole(r *PractitionerRole, rel Lookup, a Audience) *RoleView {
	if !r.VisibleFor(a) {
		return nil
	}
	svc, prac := rel.Service(r.Service), rel.Practitioner(r.Practitioner)
	if svc == nil || prac == nil || !prac.VisibleFor(a) {
		return nil
	}
	sv := ProjectService(svc, rel, a)
	if sv == nil {
		return nil
	}
	v := &RoleView{RecordHead: head(&r.Meta), Practitioner: Ref{PublicID: prac.PublicID},
		Service: Ref{PublicID: sv.PublicID, Name: sv.Name}, Location: sv.Location,
		Organisation: sv.Organisation, Title: r.Title, Contacts: contactsFor(r.Contacts, a, false),
		Active: r.Active, StartDate: r.StartDate, EndDate: r.EndDate}
	if pv := ProjectPractitioner(prac, a); pv != nil {
		v.Practitioner.Name = pv.Name.Text
	}
	tax := rel.Taxonomy()
	for _, lt := range localTypesFor(r.Specialties, tax, a) {
		v.Specialties = append(v.Specialties, localTypeRef(lt, DefaultIcon))
	}
	return v
}
