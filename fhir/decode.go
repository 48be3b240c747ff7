package fhir

import (
	jsonv2 "github.com/go-json-experiment/json"

	"github.com/dirsvc/dirsvc"
)

// mappedService and mappedLocation hold the members of a service's and a location's view that the
// mapping reads when it makes bodies only (Mapper.DecodeView): the largest views, whose other
// members (areas, catchment, referral, cost, target groups and more) a FHIR body never shows.
// Every member keeps the view's name and Go type (TestMapperDecodesWhatTheMappingReads).
type mappedService struct {
	dirsvc.RecordHead
	Name          string                  `json:"name"`
	Description   string                  `json:"description,omitempty"`
	Organisation  dirsvc.Ref              `json:"organisation"`
	Location      *dirsvc.Ref             `json:"location,omitempty"`
	Type          dirsvc.CodeLabel        `json:"type"`
	TypeDisplay   string                  `json:"typeDisplay"`
	Specialties   []dirsvc.LocalTypeRef   `json:"specialties,omitempty"`
	CategoryCode  *string                 `json:"categoryCode"`
	OwnershipType *dirsvc.Ownership       `json:"ownershipType,omitempty"`
	Programs      []dirsvc.CodeLabel      `json:"programs,omitempty"`
	Hours         *dirsvc.OpeningHours    `json:"hours,omitempty"`
	Contacts      []dirsvc.ContactView    `json:"contacts,omitempty"`
	Identifiers   []dirsvc.IdentifierView `json:"identifiers,omitempty"`
	Website       string                  `json:"website,omitempty"`
	Appointment   string                  `json:"appointment,omitempty"`
	Languages     []string                `json:"languages,omitempty"`
}

type mappedLocation struct {
	dirsvc.RecordHead
	Name          string                  `json:"name"`
	Description   string                  `json:"description,omitempty"`
	Organisation  dirsvc.Ref              `json:"organisation"`
	Address       *dirsvc.AddressView     `json:"address"`
	Point         *dirsvc.Point           `json:"point"`
	OwnershipType *dirsvc.Ownership       `json:"ownershipType,omitempty"`
	Hours         *dirsvc.OpeningHours    `json:"hours,omitempty"`
	Contacts      []dirsvc.ContactView    `json:"contacts,omitempty"`
	Identifiers   []dirsvc.IdentifierView `json:"identifiers,omitempty"`
}

// DecodeView decodes a stored brief view of a record of kind for this mapper, as DecodeView does;
// a mapper that makes bodies only leaves out of a service's or a location's view the members its
// mapping does not read.
func (m *Mapper) DecodeView(kind dirsvc.Kind, body []byte) (any, error) {
	if !m.BodiesOnly {
		return DecodeView(kind, body)
	}
	switch kind {
	case dirsvc.KindService:
		var s mappedService
		if err := jsonv2.Unmarshal(body, &s); err != nil {
			return nil, err
		}
		return &dirsvc.ServiceView{RecordHead: s.RecordHead, Name: s.Name, Description: s.Description,
			Organisation: s.Organisation, Location: s.Location, Type: s.Type, TypeDisplay: s.TypeDisplay,
			Specialties: s.Specialties, CategoryCode: s.CategoryCode, OwnershipType: s.OwnershipType, Programs: s.Programs,
			Hours: s.Hours, Contacts: s.Contacts, Identifiers: s.Identifiers, Website: s.Website,
			Appointment: s.Appointment, Languages: s.Languages}, nil
	case dirsvc.KindLocation:
		var l mappedLocation
		if err := jsonv2.Unmarshal(body, &l); err != nil {
			return nil, err
		}
		return &dirsvc.LocationView{RecordHead: l.RecordHead, Name: l.Name, Description: l.Description,
			Organisation: l.Organisation, Address: l.Address, Point: l.Point, OwnershipType: l.OwnershipType,
			Hours: l.Hours, Contacts: l.Contacts, Identifiers: l.Identifiers}, nil
	}
	return DecodeView(kind, body)
}
