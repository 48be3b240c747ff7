package federation

import (
	"fmt"

	"github.com/dirsvc/dirsvc"
	jsonv2 "github.com/go-json-experiment/json"
)

// The entities of an upstream's feed, and its pages, are decoded with the JSON v2 implementation
// (github.com/go-json-experiment/json), in about half the time of encoding/json: reading them is most
// of a harvest's own work. An upstream that speaks this API writes them with encoding/json from the
// same types, so the two read them alike (exact-case names, valid UTF-8, no duplicate names); an
// entity that does not decode is left out with a warning, as before.

// recordFromView makes the canonical record a mirror stores from the view the upstream gave its
// client (refusing one whose text breaks the text rule, dirsvc.CheckJSONText): every detail the view holds is given to the audiences aud, and nothing the view does not
// hold exists here (details kept from the client are absent, not hidden). Taxonomy codes (types,
// specialties, programs, target groups) are kept as codes and labelled by this directory's taxonomy.
func recordFromView(kind dirsvc.Kind, entity []byte, aud dirsvc.Audiences, origin string) (dirsvc.Record, error) {
	// The upstream's text keeps the text rule, as every text this directory publishes does (JSON v2,
	// which reads the entity, refuses a member given twice).
	if err := dirsvc.CheckJSONText(entity); err != nil {
		return nil, fmt.Errorf("read the %s: %w", kind, err)
	}
	var rec dirsvc.Record
	var err error
	switch kind {
	case dirsvc.KindOrganisation:
		rec, err = organisationFromView(entity, aud)
	case dirsvc.KindLocation:
		rec, err = locationFromView(entity, aud)
	case dirsvc.KindService:
		rec, err = serviceFromView(entity, aud)
	case dirsvc.KindPractitioner:
		rec, err = practitionerFromView(entity, aud)
	case dirsvc.KindRole:
		rec, err = roleFromView(entity, aud)
	default:
		return nil, fmt.Errorf("unknown record kind %q", kind)
	}
	if err != nil {
		return nil, fmt.Errorf("read the %s: %w", kind, err)
	}
	m := rec.Base()
	if !dirsvc.ValidPublicID(kind, m.PublicID) {
		return nil, fmt.Errorf("%q is not a valid %s public ID", m.PublicID, kind)
	}
	for k, ids := range rec.Refs() {
		for _, id := range ids {
			if id != "" && !dirsvc.ValidPublicID(k, id) {
				return nil, fmt.Errorf("%s refers to %q, not a valid %s public ID", m.PublicID, id, k)
			}
		}
	}
	m.State, m.VisibleTo, m.Origin = dirsvc.StateLive, aud, origin
	m.Version, m.LocalRevision = 0, 0
	return rec, nil
}

func contactsOf(vs []dirsvc.ContactView, aud dirsvc.Audiences) []dirsvc.Contact {
	var out []dirsvc.Contact
	for _, v := range vs {
		out = append(out, dirsvc.Contact{Kind: v.Kind, Value: v.Value, Label: v.Label, VisibleTo: aud})
	}
	return out
}

func identifiersOf(vs []dirsvc.IdentifierView, aud dirsvc.Audiences) []dirsvc.Identifier {
	var out []dirsvc.Identifier
	for _, v := range vs {
		out = append(out, dirsvc.Identifier{Type: v.Type, System: v.System, Value: v.Value, VisibleTo: aud})
	}
	return out
}

func addressOf(v *dirsvc.AddressView, point *dirsvc.Point, aud dirsvc.Audiences) *dirsvc.Address {
	if v == nil {
		return nil
	}
	return &dirsvc.Address{Lines: v.Lines, Locality: v.Locality, State: v.State, Postcode: v.Postcode,
		Country: v.Country, Point: point, VisibleTo: aud}
}

// ownOwnership returns the ownership type a view shows when the record set it itself (not inherited).
func ownOwnership(o *dirsvc.Ownership, source string, self string) *dirsvc.Ownership {
	if source == self {
		return o
	}
	return nil
}

func organisationFromView(b []byte, aud dirsvc.Audiences) (*dirsvc.Organisation, error) {
	var v dirsvc.OrganisationView
	if err := jsonv2.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	return &dirsvc.Organisation{Meta: dirsvc.Meta{PublicID: v.PublicID}, Name: v.Name, Description: v.Description,
		Logo: v.Logo, Website: v.Website, OwnershipType: ownOwnership(v.OwnershipType, v.OwnershipSource, dirsvc.SourceOrganisation),
		Identifiers: identifiersOf(v.Identifiers, aud), Contacts: contactsOf(v.Contacts, aud),
		PostalAddress: addressOf(v.PostalAddress, nil, aud), MetroRural: v.MetroRural}, nil
}

func locationFromView(b []byte, aud dirsvc.Audiences) (*dirsvc.Location, error) {
	var v dirsvc.LocationView
	if err := jsonv2.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	l := &dirsvc.Location{Meta: dirsvc.Meta{PublicID: v.PublicID}, Organisation: v.Organisation.PublicID,
		Name: v.Name, Description: v.Description, Areas: v.Areas,
		OwnershipType: ownOwnership(v.OwnershipType, v.OwnershipSource, dirsvc.SourceLocation),
		Hours:         v.Hours, Contacts: contactsOf(v.Contacts, aud), Identifiers: identifiersOf(v.Identifiers, aud),
		Facilities: v.Facilities}
	if a := addressOf(v.Address, v.Point, aud); a != nil {
		l.Address = *a
	} else {
		// Withheld from the client: only its area is known, and shown, here too.
		l.Address = dirsvc.Address{Locality: v.Area, Withheld: true, VisibleTo: dirsvc.StaffOnly}
	}
	if v.MetroRural == "metro" {
		zero := 0 // a major city; "rural" names no one remoteness class, so it is not carried
		l.Remoteness = &zero
	}
	return l, nil
}

func serviceFromView(b []byte, aud dirsvc.Audiences) (*dirsvc.Service, error) {
	var v dirsvc.ServiceView
	if err := jsonv2.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	s := &dirsvc.Service{Meta: dirsvc.Meta{PublicID: v.PublicID}, Organisation: v.Organisation.PublicID,
		Name: v.Name, Slug: v.Slug, Description: v.Description, Type: v.Type.Code,
		OwnershipType: ownOwnership(v.OwnershipType, v.OwnershipSource, dirsvc.SourceService),
		Catchment:     v.Catchment, Hours: v.Hours, Contacts: contactsOf(v.Contacts, aud),
		Identifiers: identifiersOf(v.Identifiers, aud), Website: v.Website, Referral: v.Referral,
		Appointment: v.Appointment, Cost: v.Cost, Delivery: v.Delivery, Languages: v.Languages}
	if v.Location != nil {
		s.Location = v.Location.PublicID
	}
	for _, lt := range v.Specialties {
		s.LocalTypes = append(s.LocalTypes, lt.ID)
	}
	for _, p := range v.Programs {
		s.Programs = append(s.Programs, p.Code)
	}
	for _, t := range v.TargetGroups {
		s.TargetGroups = append(s.TargetGroups, t.Code)
	}
	return s, nil
}

func practitionerFromView(b []byte, aud dirsvc.Audiences) (*dirsvc.Practitioner, error) {
	var v dirsvc.PractitionerView
	if err := jsonv2.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	p := &dirsvc.Practitioner{Meta: dirsvc.Meta{PublicID: v.PublicID}, Prefix: v.Name.Prefix, Given: v.Name.Given,
		Family: v.Name.Family, NameVisibleTo: aud, GenderOwnTerm: v.GenderOwnTerm,
		Qualifications: v.Qualifications, Languages: v.Languages, Identifiers: identifiersOf(v.Identifiers, aud),
		Contacts: contactsOf(v.Contacts, aud)}
	if v.Gender != nil {
		p.Gender = *v.Gender
	}
	if v.Bio != nil {
		p.Bio = *v.Bio
	}
	if v.Photo != nil {
		p.Photo = *v.Photo
	}
	return p, nil
}

func roleFromView(b []byte, aud dirsvc.Audiences) (*dirsvc.PractitionerRole, error) {
	var v dirsvc.RoleView
	if err := jsonv2.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	r := &dirsvc.PractitionerRole{Meta: dirsvc.Meta{PublicID: v.PublicID}, Practitioner: v.Practitioner.PublicID,
		Service: v.Service.PublicID, Title: v.Title, Contacts: contactsOf(v.Contacts, aud), Active: v.Active,
		StartDate: v.StartDate, EndDate: v.EndDate}
	for _, lt := range v.Specialties {
		r.Specialties = append(r.Specialties, lt.ID)
	}
	return r, nil
}
