package dirsvc

// ContactKind is the kind of a contact point.
type ContactKind string

// Contact kinds. The first seven are phone-like: their values are E.164 numbers.
const (
	ContactPhone     ContactKind = "phone"
	ContactMobile    ContactKind = "mobile"
	ContactFreecall  ContactKind = "freecall"
	ContactLocalRate ContactKind = "local_rate"
	ContactFax       ContactKind = "fax"
	ContactSMS       ContactKind = "sms"
	ContactTTY       ContactKind = "tty"
	ContactEmail     ContactKind = "email"
	ContactWebsite   ContactKind = "website"
	ContactOther     ContactKind = "other"
)

// PhoneLike reports whether values of the kind are telephone numbers.
func (k ContactKind) PhoneLike() bool {
	switch k {
	case ContactPhone, ContactMobile, ContactFreecall, ContactLocalRate, ContactFax, ContactSMS, ContactTTY:
		return true
	}
	return false
}

// Valid reports whether k is a known contact kind.
func (k ContactKind) Valid() bool {
	return k.PhoneLike() || k == ContactEmail || k == ContactWebsite || k == ContactOther
}

// Contact is a contact point. VisibleTo says who may see it.
type Contact struct {
	Kind      ContactKind `json:"kind"`
	Value     string      `json:"value"`
	Label     string      `json:"label,omitempty"`
	VisibleTo Audiences   `json:"audiences,omitempty"`
}

// Identifier types the service knows by name; others are carried with their system URI.
const (
	IdentHPIO  = "hpio"  // Healthcare Provider Identifier, Organisation
	IdentHPII  = "hpii"  // Healthcare Provider Identifier, Individual
	IdentABN   = "abn"   // Australian Business Number
	IdentACN   = "acn"   // Australian Company Number
	IdentAhpra = "ahpra" // Ahpra registration number
	IdentNPIO  = "npio"  // national provider identifier of an organisation
	IdentNZBN  = "nzbn"  // New Zealand Business Number
)

// IdentifierSystems maps identifier types to their system URIs.
var IdentifierSystems = map[string]string{
	IdentHPIO:  "http://ns.electronichealth.net.au/id/hi/hpio/1.0",
	IdentHPII:  "http://ns.electronichealth.net.au/id/hi/hpii/1.0",
	IdentABN:   "http://hl7.org.au/id/abn",
	IdentACN:   "http://hl7.org.au/id/acn",
	IdentAhpra: "http://hl7.org.au/id/ahpra-registration-number",
	IdentNPIO:  "http://hl7.org.au/id/npio",
	IdentNZBN:  "https://www.nzbn.govt.nz/id",
}

// Identifier is an external identifier of a record.
type Identifier struct {
	Type      string    `json:"type"`
	System    string    `json:"system"`
	Value     string    `json:"value"`
	VisibleTo Audiences `json:"audiences,omitempty"`
}

// Point is a WGS 84 coordinate.
type Point struct {
	Lat float64 `json:"lat"`
	Lon float64 `json:"lon"`
}

// Address is a street or postal address. It shows only its area to audiences outside VisibleTo: a
// withheld address (for example a refuge) is one whose VisibleTo defaults to staff only instead of
// everyone. A location's point is part of its address and follows it.
type Address struct {
	Lines     []string  `json:"lines"`
	Locality  string    `json:"locality"`
	State     string    `json:"state,omitempty"`
	Postcode  string    `json:"postcode,omitempty"`
	Country   string    `json:"country"`
	Point     *Point    `json:"point,omitempty"`
	Withheld  bool      `json:"withheld,omitempty"`
	VisibleTo Audiences `json:"audiences,omitempty"`
}

// Ownership is an ownership type: public, private, not_for_profit, another platform code, or a
// directory's own code of the form {directory}:{code}.
type Ownership struct {
	Code    string `json:"code"`
	Display string `json:"display"`
}

// Ownership sources: which record set the type a record shows.
const (
	SourceService      = "service"
	SourceLocation     = "location"
	SourceOrganisation = "organisation"
)

// Interval is a daily opening period in local time, "HH:MM" to "HH:MM"; Close "24:00" means midnight.
type Interval struct {
	Open  string `json:"open"`
	Close string `json:"close"`
}

// WeeklyHours are the opening periods of one day of the week (mon to sun).
type WeeklyHours struct {
	Day       string     `json:"day"`
	Intervals []Interval `json:"intervals"`
}

// DateHours are the hours on one date, overriding the week: closed, or open for the intervals given.
type DateHours struct {
	Date      string     `json:"date"` // YYYY-MM-DD
	Closed    bool       `json:"closed,omitempty"`
	Intervals []Interval `json:"intervals,omitempty"`
	Note      string     `json:"note,omitempty"`
}

// OpeningHours are weekly times in the location's IANA time zone, public-holiday behaviour,
// specific-date exceptions and an after-hours arrangement.
type OpeningHours struct {
	TimeZone string        `json:"timeZone"`
	Weekly   []WeeklyHours `json:"weekly"`
	// PublicHolidays: "closed", "open" (usual hours) or "hours" (the intervals in HolidayIntervals).
	PublicHolidays   string      `json:"publicHolidays,omitempty"`
	HolidayIntervals []Interval  `json:"holidayIntervals,omitempty"`
	Exceptions       []DateHours `json:"exceptions,omitempty"`
	AfterHours       string      `json:"afterHours,omitempty"` // how to get help outside the hours
	Always           bool        `json:"always,omitempty"`     // open 24 hours, every day
}

// Referral says whether a referral is needed and from whom (codes such as gp, specialist, self).
type Referral struct {
	Required bool     `json:"required"`
	From     []string `json:"from,omitempty"`
	Notes    string   `json:"notes,omitempty"`
}

// Cost describes what a service costs: free, bulk_billed, fees, fees_concession or varies.
type Cost struct {
	Kind  string `json:"kind"`
	Notes string `json:"notes,omitempty"`
}

// Appointment values.
const (
	AppointmentRequired    = "required"
	AppointmentNotRequired = "not_required"
)
