package dirsvc

import "time"

// The views below are what an audience may see of each record: the output of the projection gate and
// the only shapes that reach the wire, the feed, webhooks, exports and FHIR. Fields documented as
// "null when private" are pointers without omitempty so a client can tell private from absent.

// Ref names a related record; Name is present only when the caller may see it.
type Ref struct {
	PublicID string `json:"publicId"`
	Name     string `json:"name,omitempty"`
}

// CodeLabel is a coded value with its label in the directory's words.
type CodeLabel struct {
	Code  string `json:"code"`
	Label string `json:"label"`
}

// LocalTypeRef names a local type.
type LocalTypeRef struct {
	ID    string `json:"id"`
	Slug  string `json:"slug"`
	Label string `json:"label"`
	Icon  string `json:"icon"`
}

// ContactView is a contact the audience may see. Restricted marks one that some audiences may not see
// (given on practitioner contacts).
type ContactView struct {
	Kind       ContactKind `json:"kind"`
	Value      string      `json:"value"`
	Label      string      `json:"label,omitempty"`
	Restricted bool        `json:"restricted,omitempty"`
}

// IdentifierView is an identifier the audience may see.
type IdentifierView struct {
	Type   string `json:"type"`
	System string `json:"system"`
	Value  string `json:"value"`
}

// AddressView is an address as shown.
type AddressView struct {
	Lines    []string `json:"lines"`
	Locality string   `json:"locality"`
	State    string   `json:"state,omitempty"`
	Postcode string   `json:"postcode,omitempty"`
	Country  string   `json:"country"`
}

// OwnershipCard is the ownership of a search card or listing.
type OwnershipCard struct {
	Code   string `json:"code"`
	Label  string `json:"label"`
	Source string `json:"source"`
}

// RecordHead is what every view starts with.
type RecordHead struct {
	PublicID      string    `json:"publicId"`
	Version       int64     `json:"version"`
	LocalRevision int64     `json:"localRevision"`
	LastUpdated   time.Time `json:"lastUpdated"`
	Origin        string    `json:"origin,omitempty"`
}

// Head returns the head, so a writer can set versions on a view it has already projected.
func (h *RecordHead) Head() *RecordHead { return h }

// OrganisationView is the canonical (brief) representation of an organisation.
type OrganisationView struct {
	RecordHead
	Name            string           `json:"name"`
	Description     string           `json:"description,omitempty"`
	Logo            string           `json:"logo,omitempty"`
	Website         string           `json:"website,omitempty"`
	OwnershipType   *Ownership       `json:"ownershipType,omitempty"`
	OwnershipSource string           `json:"ownershipSource,omitempty"`
	Identifiers     []IdentifierView `json:"identifiers,omitempty"`
	Contacts        []ContactView    `json:"contacts,omitempty"`
	PostalAddress   *AddressView     `json:"postalAddress,omitempty"`
	MetroRural      string           `json:"metroRural,omitempty"`
}

// LocationView is the canonical (brief) representation of a location.
type LocationView struct {
	RecordHead
	Name            string           `json:"name"`
	Description     string           `json:"description,omitempty"`
	Organisation    Ref              `json:"organisation"`
	Address         *AddressView     `json:"address"`
	AddressWithheld bool             `json:"addressWithheld"`
	Point           *Point           `json:"point"`
	Area            string           `json:"area"`
	Areas           []string         `json:"areas,omitempty"`
	MetroRural      string           `json:"metroRural,omitempty"`
	OwnershipType   *Ownership       `json:"ownershipType,omitempty"`
	OwnershipSource string           `json:"ownershipSource,omitempty"`
	Hours           *OpeningHours    `json:"hours,omitempty"`
	Contacts        []ContactView    `json:"contacts,omitempty"`
	Identifiers     []IdentifierView `json:"identifiers,omitempty"`
	Facilities      []string         `json:"facilities,omitempty"`
}

// ServiceView is the canonical (brief) representation of a service.
type ServiceView struct {
	RecordHead
	Name                       string           `json:"name"`
	Slug                       string           `json:"slug"`
	Description                string           `json:"description,omitempty"`
	Organisation               Ref              `json:"organisation"`
	Location                   *Ref             `json:"location,omitempty"`
	Area                       string           `json:"area,omitempty"`
	Areas                      []string         `json:"areas,omitempty"`
	Type                       CodeLabel        `json:"type"`
	TypeDisplay                string           `json:"typeDisplay"`
	PlatformTypeDisplay        string           `json:"platformTypeDisplay"`
	LocalType                  *LocalTypeRef    `json:"localType,omitempty"`
	Specialties                []LocalTypeRef   `json:"specialties,omitempty"`
	CategoryCode               *string          `json:"categoryCode"`
	CategoryIcon               string           `json:"categoryIcon"`
	OwnershipType              *Ownership       `json:"ownershipType,omitempty"`
	OwnershipSource            string           `json:"ownershipSource,omitempty"`
	Ownership                  *OwnershipCard   `json:"ownership,omitempty"`
	Programs                   []CodeLabel      `json:"programs,omitempty"`
	TargetGroups               []CodeLabel      `json:"targetGroups,omitempty"`
	Catchment                  []string         `json:"catchment,omitempty"`
	Hours                      *OpeningHours    `json:"hours,omitempty"`
	Contacts                   []ContactView    `json:"contacts,omitempty"`
	Identifiers                []IdentifierView `json:"identifiers,omitempty"`
	Website                    string           `json:"website,omitempty"`
	Referral                   *Referral        `json:"referral,omitempty"`
	ReferralRequiredFromLabels []string         `json:"referralRequiredFromLabels"`
	Appointment                string           `json:"appointment,omitempty"`
	Cost                       *Cost            `json:"cost,omitempty"`
	Delivery                   []string         `json:"delivery,omitempty"`
	Languages                  []string         `json:"languages,omitempty"`
}

// PersonName is a practitioner's name as shown.
type PersonName struct {
	Prefix string `json:"prefix,omitempty"`
	Given  string `json:"given"`
	Family string `json:"family"`
	Text   string `json:"text"`
}

// PractitionerView is the canonical (brief) representation of a practitioner. Fields the
// practitioner keeps private from the audience are null.
type PractitionerView struct {
	RecordHead
	Name           PersonName       `json:"name"`
	Gender         *string          `json:"gender"`
	GenderOwnTerm  string           `json:"genderOwnTerm,omitempty"`
	Qualifications []string         `json:"qualifications"`
	Languages      []string         `json:"languages"`
	Bio            *string          `json:"bio"`
	Photo          *string          `json:"photo"`
	Identifiers    []IdentifierView `json:"identifiers"`
	Contacts       []ContactView    `json:"contacts,omitempty"`
}

// RoleView is the canonical representation of a practitioner role. The practitioner is named by
// public ID, with the name only when the audience may see it.
type RoleView struct {
	RecordHead
	Practitioner Ref            `json:"practitioner"`
	Service      Ref            `json:"service"`
	Location     *Ref           `json:"location,omitempty"`
	Organisation Ref            `json:"organisation"`
	Title        string         `json:"title"`
	Specialties  []LocalTypeRef `json:"specialties,omitempty"`
	Contacts     []ContactView  `json:"contacts,omitempty"`
	Active       bool           `json:"active"`
	StartDate    string         `json:"startDate,omitempty"`
	EndDate      string         `json:"endDate,omitempty"`
}

// LeaderView is a current executive or board member as shown to holders of leadership:read: only
// what the person shows to health professionals.
type LeaderView struct {
	Name      string        `json:"name"`
	Group     string        `json:"group"`
	Title     string        `json:"title"`
	StartDate string        `json:"startDate,omitempty"`
	EndDate   string        `json:"endDate,omitempty"` // a current appointment's planned end
	Bio       string        `json:"bio,omitempty"`
	Contacts  []ContactView `json:"contacts,omitempty"`
}

// Current reports whether the appointment is current on the date today (YYYY-MM-DD, see Today).
func (v LeaderView) Current(today string) bool { return currentOn(v.EndDate, today) }

// TaxonomyView is a directory's taxonomy as one audience sees it (ProjectTaxonomy); no entry says
// whom it is for.
type TaxonomyView struct {
	Categories    []CategoryView  `json:"categories"`
	PlatformTypes []PlatformType  `json:"platformTypes"`
	LocalTypes    []LocalTypeView `json:"localTypes"`
	Programs      []Term          `json:"programs"`
	TargetGroups  []Term          `json:"targetGroups"`
}

// CategoryView is a category as an audience sees it: its platform types, and the local types the
// audience may see.
type CategoryView struct {
	Code       string   `json:"code"`
	Name       string   `json:"name"`
	Icon       string   `json:"icon,omitempty"`
	Order      int      `json:"order,omitempty"`
	Types      []string `json:"types,omitempty"`
	LocalTypes []string `json:"localTypes,omitempty"`
}

// LocalTypeView is a local type (a specialty) as an audience that may see it sees it.
type LocalTypeView struct {
	Code    string   `json:"code"`
	Slug    string   `json:"slug"`
	Label   string   `json:"label"`
	Icon    string   `json:"icon,omitempty"`
	Refines []string `json:"refines,omitempty"`
}
