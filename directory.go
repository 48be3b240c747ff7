package dirsvc

import (
	"net/url"
	"regexp"
	"strings"
)

// DefaultIcon is the icon of a category or type that names none.
const DefaultIcon = "briefcase-medical"

// Directory is one published directory and its settings.
type Directory struct {
	Slug        string `json:"slug"`
	Name        string `json:"name"`
	Country     string `json:"country"`  // ISO 3166-1 alpha-2, e.g. AU or NZ
	TimeZone    string `json:"timeZone"` // IANA zone of the directory's default
	Licence     string `json:"licence"`
	Attribution string `json:"attribution"`
	// Region is the region or network the directory covers, in words (e.g. "Northern Sydney"), as
	// its federation manifest names it to aggregate directories; at most MaxRegionLength characters.
	Region string `json:"region,omitempty"`
	// DataIssueContact is where reports of wrong data go, for people and aggregate directories: an
	// email address or an https URL (see ValidDataIssueContact).
	DataIssueContact string            `json:"dataIssueContact,omitempty"`
	Settings         DirectorySettings `json:"settings"`
	// SeniorManagementAvailable is the platform operator's switch for leadership; it is not part of
	// the directory's own description, and the store sets it when it reads one.
	SeniorManagementAvailable bool `json:"-"`
}

// LeadershipOn reports whether senior management is shown: the platform made it available and the
// directory switched it on.
func (d *Directory) LeadershipOn() bool {
	return d.SeniorManagementAvailable && d.Settings.SeniorManagement
}

// DirectorySettings are the switches a directory controls.
type DirectorySettings struct {
	// AnyoneMayListPractitioners lets callers without practitioners:read list practitioners.
	AnyoneMayListPractitioners bool `json:"anyoneMayListPractitioners,omitempty"`
	// PublicFeed opens the public tier's change feed to callers without a client (off by default:
	// the feed needs a client with feed:read). Practitioners stay out of it unless anyone may list
	// them.
	PublicFeed bool `json:"publicFeed,omitempty"`
	// SeniorManagement is the directory's switch for leadership; it takes effect only when the
	// platform has also made senior management available to the directory.
	SeniorManagement bool `json:"seniorManagement,omitempty"`
	// Tiers are the partner tiers the directory offers.
	Tiers []string `json:"tiers,omitempty"`
}

// MaxRegionLength bounds a directory's Region, in characters.
const MaxRegionLength = 200

var contactEmailRE = regexp.MustCompile(`^[^@\s<>()\[\],;:"]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$`)

// ValidDataIssueContact reports whether s is a usable data-issue contact: an email address
// (name@example.org) or an absolute https URL with a host, at most 320 characters, with no spaces.
func ValidDataIssueContact(s string) bool {
	if len(s) > 320 || strings.ContainsAny(s, " \t\r\n") {
		return false
	}
	if strings.HasPrefix(s, "https://") {
		u, err := url.Parse(s)
		return err == nil && u.Host != "" && u.User == nil
	}
	return contactEmailRE.MatchString(s)
}

// ValidSlug reports whether s is a well-formed directory slug: 1 to 40 lower-case letters, digits and
// inner hyphens. (Every request names one: it is checked by hand, not with a regular expression.)
func ValidSlug(s string) bool {
	if len(s) == 0 || len(s) > 40 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}

var areaRE = regexp.MustCompile(`^[a-z]{2,12}:[A-Za-z0-9_.\-]{1,40}$`)

// ValidArea reports whether s is an area ID of the form type:code (for example state:nsw,
// postcode:2000, lga:17200, country:au).
func ValidArea(s string) bool { return areaRE.MatchString(s) }

// Category is a directory's grouping of types, shown with an icon.
type Category struct {
	Code  string `json:"code"`
	Name  string `json:"name"`
	Icon  string `json:"icon,omitempty"`
	Order int    `json:"order,omitempty"`
	// Types are platform type codes; LocalTypes are the directory's local type codes. A category made
	// of local types finds exactly the services tagged with them.
	Types      []string  `json:"types,omitempty"`
	LocalTypes []string  `json:"localTypes,omitempty"`
	VisibleTo  Audiences `json:"audiences,omitempty"`
}

// PlatformType is a service type of the platform, labelled in the directory's words.
type PlatformType struct {
	Code     string `json:"code"`
	Label    string `json:"label"`
	Icon     string `json:"icon,omitempty"`
	Category string `json:"category,omitempty"` // platform category code
}

// LocalType is a directory's own type (a specialty). Refines names the platform types it refines.
type LocalType struct {
	Code      string    `json:"code"`
	Slug      string    `json:"slug"`
	Label     string    `json:"label"`
	Icon      string    `json:"icon,omitempty"`
	Refines   []string  `json:"refines,omitempty"`
	VisibleTo Audiences `json:"audiences,omitempty"`
}

// Term is a coded entry of a simple list: a program services belong to, or a target group of people
// a service is for.
type Term struct {
	Code string `json:"code"`
	Name string `json:"name"`
}

// Collection is a curated set of services named by the directory.
type Collection struct {
	Slug        string    `json:"slug"`
	Title       string    `json:"title"`
	Description string    `json:"description,omitempty"`
	VisibleTo   Audiences `json:"audiences,omitempty"`
	Draft       bool      `json:"draft,omitempty"`
	StartDate   string    `json:"startDate,omitempty"`
	EndDate     string    `json:"endDate,omitempty"`
	Home        bool      `json:"home,omitempty"`
	Services    []string  `json:"services,omitempty"`
	Search      string    `json:"search,omitempty"` // a saved query string for search/services
}

// Taxonomy is everything a directory uses to classify services.
type Taxonomy struct {
	Categories    []Category     `json:"categories"`
	PlatformTypes []PlatformType `json:"platformTypes"`
	LocalTypes    []LocalType    `json:"localTypes"`
	Programs      []Term         `json:"programs"`
	TargetGroups  []Term         `json:"targetGroups"`
}

// PlatformType returns the platform type with the code, or nil.
func (t *Taxonomy) PlatformType(code string) *PlatformType {
	for i := range t.PlatformTypes {
		if t.PlatformTypes[i].Code == code {
			return &t.PlatformTypes[i]
		}
	}
	return nil
}

// LocalType returns the local type with the code, or nil.
func (t *Taxonomy) LocalType(code string) *LocalType {
	for i := range t.LocalTypes {
		if t.LocalTypes[i].Code == code {
			return &t.LocalTypes[i]
		}
	}
	return nil
}
