package dirsvc

// Organisation is an organisation that runs locations and services.
type Organisation struct {
	Meta
	Name          string       `json:"name"`
	Description   string       `json:"description,omitempty"`
	Logo          string       `json:"logo,omitempty"`
	Website       string       `json:"website,omitempty"`
	OwnershipType *Ownership   `json:"ownershipType,omitempty"`
	Identifiers   []Identifier `json:"identifiers,omitempty"`
	Contacts      []Contact    `json:"contacts,omitempty"`
	PostalAddress *Address     `json:"postalAddress,omitempty"`
	// MetroRural is metro or rural when set by hand; otherwise it is derived from the remoteness of
	// the organisation's locations.
	MetroRural string   `json:"metroRural,omitempty"`
	Leadership []Leader `json:"leadership,omitempty"`
}

// Leadership groups, in the order they are shown.
const (
	LeaderExecutive = "executive"
	LeaderBoard     = "board"
)

// Leader is a member of an organisation's senior management: an executive or a board member. Each
// detail carries who may see it; only what the person shows to health professionals ever leaves the
// service, and then only to holders of leadership:read.
type Leader struct {
	Name          string    `json:"name"`
	NameVisibleTo Audiences `json:"nameAudiences,omitempty"`
	Group         string    `json:"group"` // executive or board
	Title         string    `json:"title"`
	Order         int       `json:"order,omitempty"`
	StartDate     string    `json:"startDate,omitempty"`
	EndDate       string    `json:"endDate,omitempty"` // set for a past appointment
	Contacts      []Contact `json:"contacts,omitempty"`
	Bio           string    `json:"bio,omitempty"`
	BioVisibleTo  Audiences `json:"bioAudiences,omitempty"`
	// StaffNotes are staff-only details; they never leave the write side.
	StaffNotes string `json:"staffNotes,omitempty"`
}

// Current reports whether the appointment is current on the date today (YYYY-MM-DD, see Today).
func (l *Leader) Current(today string) bool { return currentOn(l.EndDate, today) }

// currentOn is the one rule of a current appointment: it has no end date, or ends today or later.
func currentOn(endDate, today string) bool { return endDate == "" || endDate >= today }

// Kind returns KindOrganisation.
func (*Organisation) Kind() Kind { return KindOrganisation }

// Base returns the record's Meta.
func (o *Organisation) Base() *Meta { return &o.Meta }

// Refs returns nothing: an organisation refers to no other record.
func (*Organisation) Refs() map[Kind][]string { return nil }

// Location is a site of an organisation.
type Location struct {
	Meta
	Organisation  string        `json:"organisation"`
	Name          string        `json:"name"`
	Description   string        `json:"description,omitempty"`
	Address       Address       `json:"address"`
	Areas         []string      `json:"areas,omitempty"`      // type:code, most specific first
	Remoteness    *int          `json:"remoteness,omitempty"` // 0 major city to 4 very remote; nil unknown
	OwnershipType *Ownership    `json:"ownershipType,omitempty"`
	Hours         *OpeningHours `json:"hours,omitempty"`
	Contacts      []Contact     `json:"contacts,omitempty"`
	Identifiers   []Identifier  `json:"identifiers,omitempty"`
	Facilities    []string      `json:"facilities,omitempty"`
}

// Kind returns KindLocation.
func (*Location) Kind() Kind { return KindLocation }

// Base returns the record's Meta.
func (l *Location) Base() *Meta { return &l.Meta }

// Refs returns the organisation.
func (l *Location) Refs() map[Kind][]string {
	return map[Kind][]string{KindOrganisation: {l.Organisation}}
}

// Service is a service offered at a location by an organisation.
type Service struct {
	Meta
	Organisation string `json:"organisation"`
	Location     string `json:"location"`
	Name         string `json:"name"`
	Slug         string `json:"slug,omitempty"`
	Description  string `json:"description,omitempty"`
	// Type is the platform type code; LocalTypes are the directory's specialties in tagging order.
	Type          string        `json:"type"`
	LocalTypes    []string      `json:"localTypes,omitempty"`
	Programs      []string      `json:"programs,omitempty"`
	TargetGroups  []string      `json:"targetGroups,omitempty"`
	OwnershipType *Ownership    `json:"ownershipType,omitempty"`
	Catchment     []string      `json:"catchment,omitempty"` // areas served beyond the location
	Hours         *OpeningHours `json:"hours,omitempty"`     // when absent, the location's
	Contacts      []Contact     `json:"contacts,omitempty"`
	Identifiers   []Identifier  `json:"identifiers,omitempty"`
	Website       string        `json:"website,omitempty"`
	Referral      *Referral     `json:"referral,omitempty"`
	Appointment   string        `json:"appointment,omitempty"`
	Cost          *Cost         `json:"cost,omitempty"`
	Delivery      []string      `json:"delivery,omitempty"`
	Languages     []string      `json:"languages,omitempty"`
}

// Kind returns KindService.
func (*Service) Kind() Kind { return KindService }

// Base returns the record's Meta.
func (s *Service) Base() *Meta { return &s.Meta }

// Refs returns the organisation and location.
func (s *Service) Refs() map[Kind][]string {
	return map[Kind][]string{KindOrganisation: {s.Organisation}, KindLocation: {s.Location}}
}

// Genders of practitioners.
const (
	GenderWoman          = "woman"
	GenderMan            = "man"
	GenderNonBinary      = "non_binary"
	GenderDifferentTerm  = "different_term"
	GenderPreferNotToSay = "prefer_not_to_say"
)

// ValidGender reports whether g is one of the gender values (or empty).
func ValidGender(g string) bool {
	switch g {
	case "", GenderWoman, GenderMan, GenderNonBinary, GenderDifferentTerm, GenderPreferNotToSay:
		return true
	}
	return false
}

// Practitioner fields a practitioner may keep private from some audiences (see Practitioner.Shows).
const (
	FieldGender         = "gender"
	FieldQualifications = "qualifications"
	FieldLanguages      = "languages"
	FieldBio            = "bio"
	FieldPhoto          = "photo"
	FieldIdentifiers    = "identifiers"
)

// PrivateFields lists the practitioner fields that Shows may restrict.
var PrivateFields = []string{FieldGender, FieldQualifications, FieldLanguages, FieldBio, FieldPhoto, FieldIdentifiers}

// Practitioner is a person who practises at services. A practitioner may hide their name from some
// audiences (then they have no page for them), keep fields private, and carry their own contacts.
type Practitioner struct {
	Meta
	Prefix        string    `json:"prefix,omitempty"`
	Given         string    `json:"given"`
	Family        string    `json:"family"`
	NameVisibleTo Audiences `json:"nameAudiences,omitempty"`
	Gender        string    `json:"gender,omitempty"`
	GenderOwnTerm string    `json:"genderOwnTerm,omitempty"`
	// Qualifications, languages, bio, photo and identifiers may each be kept private: Shows maps a
	// field name to the audiences that see it; a field not named is seen by whoever sees the name.
	Qualifications []string             `json:"qualifications,omitempty"`
	Languages      []string             `json:"languages,omitempty"`
	Bio            string               `json:"bio,omitempty"`
	Photo          string               `json:"photo,omitempty"`
	Identifiers    []Identifier         `json:"identifiers,omitempty"`
	Shows          map[string]Audiences `json:"shows,omitempty"`
	// Contacts are the practitioner's own contacts (mobile, email or phone), staff only by default.
	Contacts []Contact `json:"contacts,omitempty"`
}

// Kind returns KindPractitioner.
func (*Practitioner) Kind() Kind { return KindPractitioner }

// Base returns the record's Meta.
func (p *Practitioner) Base() *Meta { return &p.Meta }

// Refs returns nothing: roles refer to practitioners, not the other way.
func (*Practitioner) Refs() map[Kind][]string { return nil }

// FieldVisibleTo returns who may see the named private field.
func (p *Practitioner) FieldVisibleTo(field string) Audiences {
	if s, ok := p.Shows[field]; ok {
		return s & p.NameVisibleTo
	}
	return p.NameVisibleTo
}

// PractitionerRole is a practitioner's role at a service.
type PractitionerRole struct {
	Meta
	Practitioner string    `json:"practitioner"`
	Service      string    `json:"service"`
	Title        string    `json:"title"`
	Specialties  []string  `json:"specialties,omitempty"` // local type codes
	Contacts     []Contact `json:"contacts,omitempty"`    // workplace contacts
	Active       bool      `json:"active"`
	StartDate    string    `json:"startDate,omitempty"`
	EndDate      string    `json:"endDate,omitempty"`
}

// Kind returns KindRole.
func (*PractitionerRole) Kind() Kind { return KindRole }

// Base returns the record's Meta.
func (r *PractitionerRole) Base() *Meta { return &r.Meta }

// Refs returns the practitioner and the service.
func (r *PractitionerRole) Refs() map[Kind][]string {
	return map[Kind][]string{KindPractitioner: {r.Practitioner}, KindService: {r.Service}}
}

// NewRecord returns an empty record of kind k, or nil for an unknown kind.
func NewRecord(k Kind) Record {
	switch k {
	case KindOrganisation:
		return &Organisation{}
	case KindLocation:
		return &Location{}
	case KindService:
		return &Service{}
	case KindPractitioner:
		return &Practitioner{}
	case KindRole:
		return &PractitionerRole{}
	}
	return nil
}
