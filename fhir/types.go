package fhir

import "encoding/json"

// The R4 data types the resources use, with only the elements this service fills. Every element is
// omitted when empty, as FHIR JSON requires.

// Meta is a resource's metadata.
type Meta struct {
	VersionID   string   `json:"versionId,omitempty"`
	LastUpdated string   `json:"lastUpdated,omitempty"`
	Profile     []string `json:"profile,omitempty"`
	Tag         []Coding `json:"tag,omitempty"`
}

// Coding is a code of a code system.
type Coding struct {
	System  string `json:"system,omitempty"`
	Code    string `json:"code,omitempty"`
	Display string `json:"display,omitempty"`
}

// CodeableConcept is a concept given by codings and text.
type CodeableConcept struct {
	Coding []Coding `json:"coding,omitempty"`
	Text   string   `json:"text,omitempty"`
}

// Identifier is a business identifier.
type Identifier struct {
	Use    string           `json:"use,omitempty"`
	Type   *CodeableConcept `json:"type,omitempty"`
	System string           `json:"system,omitempty"`
	Value  string           `json:"value,omitempty"`
}

// ContactPoint is a telecom of a resource.
type ContactPoint struct {
	System string `json:"system,omitempty"`
	Value  string `json:"value,omitempty"`
	Use    string `json:"use,omitempty"`
	Rank   int    `json:"rank,omitempty"`
}

// Address is a postal or physical address.
type Address struct {
	Use        string   `json:"use,omitempty"`
	Type       string   `json:"type,omitempty"`
	Text       string   `json:"text,omitempty"`
	Line       []string `json:"line,omitempty"`
	City       string   `json:"city,omitempty"`
	State      string   `json:"state,omitempty"`
	PostalCode string   `json:"postalCode,omitempty"`
	Country    string   `json:"country,omitempty"`
}

// HumanName is a person's name.
type HumanName struct {
	Use    string   `json:"use,omitempty"`
	Text   string   `json:"text,omitempty"`
	Family string   `json:"family,omitempty"`
	Given  []string `json:"given,omitempty"`
	Prefix []string `json:"prefix,omitempty"`
}

// Reference refers to another resource of the same server.
type Reference struct {
	Reference string `json:"reference,omitempty"`
	Display   string `json:"display,omitempty"`
}

// Extension is an extension with a code, a string or a CodeableConcept value.
type Extension struct {
	URL                  string           `json:"url"`
	ValueCode            string           `json:"valueCode,omitempty"`
	ValueString          string           `json:"valueString,omitempty"`
	ValueCodeableConcept *CodeableConcept `json:"valueCodeableConcept,omitempty"`
}

// Element carries the extensions of a primitive value (the _name member of FHIR JSON).
type Element struct {
	Extension []Extension `json:"extension,omitempty"`
}

// Position is a WGS 84 position.
type Position struct {
	Longitude float64 `json:"longitude"`
	Latitude  float64 `json:"latitude"`
}

// Period is a span of dates.
type Period struct {
	Start string `json:"start,omitempty"`
	End   string `json:"end,omitempty"`
}

// AvailableTime is a weekly opening period of a HealthcareService or PractitionerRole. The
// timezone extension sits on the start and end times.
type AvailableTime struct {
	DaysOfWeek          []string `json:"daysOfWeek,omitempty"`
	AllDay              bool     `json:"allDay,omitempty"`
	AvailableStartTime  string   `json:"availableStartTime,omitempty"`
	XAvailableStartTime *Element `json:"_availableStartTime,omitempty"`
	AvailableEndTime    string   `json:"availableEndTime,omitempty"`
	XAvailableEndTime   *Element `json:"_availableEndTime,omitempty"`
}

// NotAvailable is a period a service is not available.
type NotAvailable struct {
	Description string  `json:"description"`
	During      *Period `json:"during,omitempty"`
}

// HoursOfOperation is a weekly opening period of a Location.
type HoursOfOperation struct {
	DaysOfWeek   []string `json:"daysOfWeek,omitempty"`
	AllDay       bool     `json:"allDay,omitempty"`
	OpeningTime  string   `json:"openingTime,omitempty"`
	XOpeningTime *Element `json:"_openingTime,omitempty"`
	ClosingTime  string   `json:"closingTime,omitempty"`
	XClosingTime *Element `json:"_closingTime,omitempty"`
}

// OrganizationContact is a contact person of an Organization (its leadership).
type OrganizationContact struct {
	Purpose *CodeableConcept `json:"purpose,omitempty"`
	Name    *HumanName       `json:"name,omitempty"`
	Telecom []ContactPoint   `json:"telecom,omitempty"`
}

// Organization is an R4 Organization.
type Organization struct {
	ResourceType string                `json:"resourceType"`
	ID           string                `json:"id"`
	Meta         *Meta                 `json:"meta,omitempty"`
	Extension    []Extension           `json:"extension,omitempty"`
	Identifier   []Identifier          `json:"identifier,omitempty"`
	Active       bool                  `json:"active"`
	Name         string                `json:"name,omitempty"`
	Telecom      []ContactPoint        `json:"telecom,omitempty"`
	Address      []Address             `json:"address,omitempty"`
	Contact      []OrganizationContact `json:"contact,omitempty"`
}

// Location is an R4 Location.
type Location struct {
	ResourceType         string             `json:"resourceType"`
	ID                   string             `json:"id"`
	Meta                 *Meta              `json:"meta,omitempty"`
	Extension            []Extension        `json:"extension,omitempty"`
	Identifier           []Identifier       `json:"identifier,omitempty"`
	Status               string             `json:"status"`
	Name                 string             `json:"name,omitempty"`
	Description          string             `json:"description,omitempty"`
	Mode                 string             `json:"mode,omitempty"`
	Telecom              []ContactPoint     `json:"telecom,omitempty"`
	Address              *Address           `json:"address,omitempty"`
	Position             *Position          `json:"position,omitempty"`
	ManagingOrganization *Reference         `json:"managingOrganization,omitempty"`
	HoursOfOperation     []HoursOfOperation `json:"hoursOfOperation,omitempty"`
	AvailabilityExcept   string             `json:"availabilityExceptions,omitempty"`
}

// HealthcareService is an R4 HealthcareService.
type HealthcareService struct {
	ResourceType       string            `json:"resourceType"`
	ID                 string            `json:"id"`
	Meta               *Meta             `json:"meta,omitempty"`
	Extension          []Extension       `json:"extension,omitempty"`
	Identifier         []Identifier      `json:"identifier,omitempty"`
	Active             bool              `json:"active"`
	ProvidedBy         *Reference        `json:"providedBy,omitempty"`
	Category           []CodeableConcept `json:"category,omitempty"`
	Type               []CodeableConcept `json:"type,omitempty"`
	Specialty          []CodeableConcept `json:"specialty,omitempty"`
	Location           []Reference       `json:"location,omitempty"`
	Name               string            `json:"name,omitempty"`
	Comment            string            `json:"comment,omitempty"`
	Telecom            []ContactPoint    `json:"telecom,omitempty"`
	Program            []CodeableConcept `json:"program,omitempty"`
	Characteristic     []CodeableConcept `json:"characteristic,omitempty"`
	Communication      []CodeableConcept `json:"communication,omitempty"`
	ReferralMethod     []CodeableConcept `json:"referralMethod,omitempty"`
	AppointmentReq     *bool             `json:"appointmentRequired,omitempty"`
	AvailableTime      []AvailableTime   `json:"availableTime,omitempty"`
	NotAvailable       []NotAvailable    `json:"notAvailable,omitempty"`
	AvailabilityExcept string            `json:"availabilityExceptions,omitempty"`
	Endpoint           []Reference       `json:"endpoint,omitempty"`
}

// Practitioner is an R4 Practitioner.
type Practitioner struct {
	ResourceType  string            `json:"resourceType"`
	ID            string            `json:"id"`
	Meta          *Meta             `json:"meta,omitempty"`
	Extension     []Extension       `json:"extension,omitempty"`
	Identifier    []Identifier      `json:"identifier,omitempty"`
	Active        bool              `json:"active"`
	Name          []HumanName       `json:"name,omitempty"`
	Telecom       []ContactPoint    `json:"telecom,omitempty"`
	Gender        string            `json:"gender,omitempty"`
	Photo         []Attachment      `json:"photo,omitempty"`
	Qualification []Qualification   `json:"qualification,omitempty"`
	Communication []CodeableConcept `json:"communication,omitempty"`
}

// Attachment is a photo by URL.
type Attachment struct {
	URL string `json:"url,omitempty"`
}

// Qualification is a practitioner's qualification.
type Qualification struct {
	Code CodeableConcept `json:"code"`
}

// PractitionerRole is an R4 PractitionerRole.
type PractitionerRole struct {
	ResourceType      string            `json:"resourceType"`
	ID                string            `json:"id"`
	Meta              *Meta             `json:"meta,omitempty"`
	Active            bool              `json:"active"`
	Period            *Period           `json:"period,omitempty"`
	Practitioner      *Reference        `json:"practitioner,omitempty"`
	Organization      *Reference        `json:"organization,omitempty"`
	Code              []CodeableConcept `json:"code,omitempty"`
	Specialty         []CodeableConcept `json:"specialty,omitempty"`
	Location          []Reference       `json:"location,omitempty"`
	HealthcareService []Reference       `json:"healthcareService,omitempty"`
	Telecom           []ContactPoint    `json:"telecom,omitempty"`
}

// Endpoint is an R4 Endpoint: a service's online address (see the package documentation).
type Endpoint struct {
	ResourceType         string            `json:"resourceType"`
	ID                   string            `json:"id"`
	Meta                 *Meta             `json:"meta,omitempty"`
	Status               string            `json:"status"`
	ConnectionType       Coding            `json:"connectionType"`
	Name                 string            `json:"name,omitempty"`
	ManagingOrganization *Reference        `json:"managingOrganization,omitempty"`
	PayloadType          []CodeableConcept `json:"payloadType"`
	PayloadMimeType      []string          `json:"payloadMimeType,omitempty"`
	Address              string            `json:"address"`
}

// Resource is one mapped resource: its type, id, the record it was made from, its references to
// other resources of the directory (for _include and for matching), the values its search
// parameters match, and its JSON.
type Resource struct {
	Type string
	ID   string
	// Source is the public ID of the record the resource was made from (for an Endpoint, its
	// service's).
	Source      string
	LastUpdated string
	VersionID   string
	// Refs are the resources it refers to, by search parameter name (organization, location,
	// practitioner, service, endpoint), as "Type/id".
	Refs Values
	// Body is the resource's JSON.
	Body json.RawMessage
	// Search holds the values each search parameter of the type matches on this resource.
	Search Values
}
