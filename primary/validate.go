package primary

import (
	"fmt"
	"net/mail"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/nyaruka/phonenumbers"
)

var (
	platformCodeRE = regexp.MustCompile(`^[a-z][a-z0-9_]{1,39}$`)
	localCodeRE    = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,39}$`)
	hhmmRE         = regexp.MustCompile(`^([01][0-9]|2[0-3]):[0-5][0-9]$|^24:00$`)
	ahpraRE        = regexp.MustCompile(`^[A-Z]{3}[0-9]{10}$`)
	digitsRE       = regexp.MustCompile(`^[0-9]+$`)
	days           = []string{"mon", "tue", "wed", "thu", "fri", "sat", "sun"}
)

// normalise applies the documented defaults to a record and checks what can be checked on its own.
func (p *parser) normalise(rec dirsvc.Record) error {
	m := rec.Base()
	id := m.PublicID
	m.Version, m.LocalRevision, m.UpdatedAt = 0, 0, time.Time{}
	if m.State == "" {
		m.State = dirsvc.StateLive
	}
	if !m.State.Valid() {
		return p.fail(id, "state", "%q is not a lifecycle state", m.State)
	}
	if (m.State == dirsvc.StateMerged) != (m.Survivor != "") {
		return p.fail(id, "survivorPublicId", "a merged record names its survivor, and only a merged record does")
	}
	m.VisibleTo = m.VisibleTo.Or(dirsvc.Everyone)
	switch r := rec.(type) {
	case *dirsvc.Organisation:
		return p.normaliseOrganisation(r)
	case *dirsvc.Location:
		if err := p.need(id, "name", r.Name); err != nil {
			return err
		}
		if err := p.address(id, "address", &r.Address); err != nil {
			return err
		}
		if r.Remoteness != nil && (*r.Remoteness < 0 || *r.Remoteness > 4) {
			return p.fail(id, "remoteness", "must be 0 (major city) to 4 (very remote)")
		}
		if err := p.areas(id, "areas", r.Areas); err != nil {
			return err
		}
		if err := p.hours(id, "hours", r.Hours); err != nil {
			return err
		}
		if err := p.ownership(id, r.OwnershipType); err != nil {
			return err
		}
		if err := p.identifiers(id, r.Identifiers); err != nil {
			return err
		}
		return p.contacts(id, "contacts", r.Contacts, dirsvc.Everyone, nil)
	case *dirsvc.Service:
		return p.normaliseService(r)
	case *dirsvc.Practitioner:
		return p.normalisePractitioner(r)
	case *dirsvc.PractitionerRole:
		if r.Practitioner == "" || r.Service == "" {
			return p.fail(id, "practitioner", "a role names its practitioner and service")
		}
		return p.contacts(id, "contacts", r.Contacts, dirsvc.Everyone, nil)
	}
	return nil
}

func (p *parser) need(id, field, v string) error {
	if strings.TrimSpace(v) == "" {
		return p.fail(id, field, "is required")
	}
	return nil
}

func (p *parser) normaliseOrganisation(o *dirsvc.Organisation) error {
	id := o.PublicID
	if err := p.need(id, "name", o.Name); err != nil {
		return err
	}
	if o.MetroRural != "" && o.MetroRural != "metro" && o.MetroRural != "rural" {
		return p.fail(id, "metroRural", "must be metro or rural")
	}
	if o.PostalAddress != nil {
		if err := p.address(id, "postalAddress", o.PostalAddress); err != nil {
			return err
		}
	}
	if err := p.ownership(id, o.OwnershipType); err != nil {
		return err
	}
	if err := p.identifiers(id, o.Identifiers); err != nil {
		return err
	}
	if err := p.contacts(id, "contacts", o.Contacts, dirsvc.Everyone, nil); err != nil {
		return err
	}
	for i := range o.Leadership {
		l := &o.Leadership[i]
		f := fmt.Sprintf("leadership[%d]", i)
		if l.Group != dirsvc.LeaderExecutive && l.Group != dirsvc.LeaderBoard {
			return p.fail(id, f+".group", "must be executive or board")
		}
		if err := p.need(id, f+".name", l.Name); err != nil {
			return err
		}
		if err := p.dates(id, f, l.StartDate, l.EndDate); err != nil {
			return err
		}
		l.NameVisibleTo = l.NameVisibleTo.Or(dirsvc.Everyone)
		l.BioVisibleTo = l.BioVisibleTo.Or(dirsvc.Everyone)
		if err := p.contacts(id, f+".contacts", l.Contacts, dirsvc.StaffOnly, nil); err != nil {
			return err
		}
	}
	return nil
}

func (p *parser) normaliseService(s *dirsvc.Service) error {
	id := s.PublicID
	if err := p.need(id, "name", s.Name); err != nil {
		return err
	}
	if err := p.need(id, "type", s.Type); err != nil {
		return err
	}
	if s.Organisation == "" || s.Location == "" {
		return p.fail(id, "organisation", "a service names its organisation and location")
	}
	if s.Slug == "" {
		s.Slug = Slugify(s.Name)
	}
	if s.Appointment != "" && s.Appointment != dirsvc.AppointmentRequired && s.Appointment != dirsvc.AppointmentNotRequired {
		return p.fail(id, "appointment", "must be required or not_required")
	}
	if err := p.areas(id, "catchment", s.Catchment); err != nil {
		return err
	}
	if err := p.hours(id, "hours", s.Hours); err != nil {
		return err
	}
	if err := p.ownership(id, s.OwnershipType); err != nil {
		return err
	}
	if err := p.identifiers(id, s.Identifiers); err != nil {
		return err
	}
	if s.Website != "" && !validURL(s.Website) {
		return p.fail(id, "website", "%q is not an http or https address", s.Website)
	}
	return p.contacts(id, "contacts", s.Contacts, dirsvc.Everyone, nil)
}

var practitionerContactKinds = []dirsvc.ContactKind{dirsvc.ContactMobile, dirsvc.ContactEmail, dirsvc.ContactPhone}

func (p *parser) normalisePractitioner(r *dirsvc.Practitioner) error {
	id := r.PublicID
	if err := p.need(id, "family", r.Family); err != nil {
		return err
	}
	r.NameVisibleTo = r.NameVisibleTo.Or(dirsvc.Everyone)
	if !dirsvc.ValidGender(r.Gender) {
		return p.fail(id, "gender", "%q is not one of woman, man, non_binary, different_term, prefer_not_to_say", r.Gender)
	}
	if r.GenderOwnTerm != "" && r.Gender != dirsvc.GenderDifferentTerm {
		return p.fail(id, "genderOwnTerm", "is given only with gender different_term")
	}
	for f, aud := range r.Shows {
		if !slices.Contains(dirsvc.PrivateFields, f) {
			return p.fail(id, "shows."+f, "is not a field a practitioner may keep private (%s)", strings.Join(dirsvc.PrivateFields, ", "))
		}
		if aud == 0 {
			return p.fail(id, "shows."+f, "must list who may see the field")
		}
	}
	if err := p.identifiers(id, r.Identifiers); err != nil {
		return err
	}
	return p.contacts(id, "contacts", r.Contacts, dirsvc.StaffOnly, practitionerContactKinds)
}

// contacts checks contacts, fills in their default audiences and normalises phone numbers to E.164.
func (p *parser) contacts(id, field string, cs []dirsvc.Contact, def dirsvc.Audiences, kinds []dirsvc.ContactKind) error {
	for i := range cs {
		c := &cs[i]
		f := fmt.Sprintf("%s[%d]", field, i)
		if !c.Kind.Valid() || kinds != nil && !slices.Contains(kinds, c.Kind) {
			return p.fail(id, f+".kind", "%q is not an allowed contact kind here", c.Kind)
		}
		c.VisibleTo = c.VisibleTo.Or(def)
		switch {
		case c.Kind.PhoneLike():
			e164, ok := p.phones.Load(c.Value)
			if !ok {
				var err error
				if e164, err = E164(c.Value, p.snap.Directory.Country); err != nil {
					return p.fail(id, f+".value", "%v", err)
				}
				p.phones.Store(c.Value, e164)
			}
			c.Value = e164.(string)
		case c.Kind == dirsvc.ContactEmail:
			if a, err := mail.ParseAddress(c.Value); err != nil || a.Address != c.Value {
				return p.fail(id, f+".value", "%q is not an email address", c.Value)
			}
		case c.Kind == dirsvc.ContactWebsite:
			if !validURL(c.Value) {
				return p.fail(id, f+".value", "%q is not an http or https address", c.Value)
			}
		default:
			if err := p.need(id, f+".value", c.Value); err != nil {
				return err
			}
		}
	}
	return nil
}

// E164 returns the E.164 form of a telephone number written in any common form, read in the
// directory's country unless it carries its own country code. Australian 13, 1300 and 1800 numbers
// become +61 followed by their digits.
func E164(value, country string) (string, error) {
	n, err := phonenumbers.Parse(value, country)
	if err != nil || !validNumber(n, country) {
		return "", fmt.Errorf("%q is not a valid telephone number", value)
	}
	return phonenumbers.Format(n, phonenumbers.E164), nil
}

// validNumber is phonenumbers.IsValidNumber(n), sooner for most numbers of a directory. That first
// finds the number's region, trying the regions of its calling code in turn, the main one first (by
// its number patterns), and then tries the patterns of the region it found again. A number valid in
// the main region of its calling code is found there, so it is valid; only for the others does the
// whole search run.
func validNumber(n *phonenumbers.PhoneNumber, country string) bool {
	if phonenumbers.GetRegionCodeForCountryCode(int(n.GetCountryCode())) == country && phonenumbers.IsValidNumberForRegion(n, country) {
		return true
	}
	return phonenumbers.IsValidNumber(n)
}

func validURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != ""
}

func (p *parser) identifiers(id string, ids []dirsvc.Identifier) error {
	for i := range ids {
		x := &ids[i]
		f := fmt.Sprintf("identifiers[%d]", i)
		x.VisibleTo = x.VisibleTo.Or(dirsvc.Everyone)
		if sys, ok := dirsvc.IdentifierSystems[x.Type]; ok {
			x.System = sys
		} else if !validURI(x.System) {
			return p.fail(id, f+".system", "an identifier of an unknown type needs a system URI")
		}
		if err := checkIdentifier(x.Type, x.Value); err != nil {
			return p.fail(id, f+".value", "%v", err)
		}
	}
	return nil
}

func validURI(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Scheme != "" && (u.Host != "" || u.Opaque != "")
}

// checkIdentifier checks the value of an identifier of a known type.
func checkIdentifier(typ, v string) error {
	switch typ {
	case dirsvc.IdentHPIO, dirsvc.IdentHPII:
		prefix := map[string]string{dirsvc.IdentHPIO: "800362", dirsvc.IdentHPII: "800361"}[typ]
		if len(v) != 16 || !digitsRE.MatchString(v) || !strings.HasPrefix(v, prefix) || !luhn(v) {
			return fmt.Errorf("%q is not an %s: 16 digits starting %s with a Luhn check digit", v, strings.ToUpper(typ), prefix)
		}
	case dirsvc.IdentABN:
		if !validABN(v) {
			return fmt.Errorf("%q is not an ABN: 11 digits with a valid checksum", v)
		}
	case dirsvc.IdentACN:
		if !validACN(v) {
			return fmt.Errorf("%q is not an ACN: 9 digits with a valid check digit", v)
		}
	case dirsvc.IdentAhpra:
		if !ahpraRE.MatchString(v) {
			return fmt.Errorf("%q is not an Ahpra registration number: three letters and ten digits", v)
		}
	default:
		if strings.TrimSpace(v) == "" {
			return fmt.Errorf("is required")
		}
	}
	return nil
}

func luhn(digits string) bool {
	sum := 0
	for i := range len(digits) {
		d := int(digits[len(digits)-1-i] - '0')
		if i%2 == 1 {
			if d *= 2; d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	return sum%10 == 0
}

func validABN(v string) bool {
	if len(v) != 11 || !digitsRE.MatchString(v) {
		return false
	}
	weights := [11]int{10, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19}
	sum := 0
	for i := range 11 {
		d := int(v[i] - '0')
		if i == 0 {
			d--
		}
		sum += d * weights[i]
	}
	return sum%89 == 0
}

func validACN(v string) bool {
	if len(v) != 9 || !digitsRE.MatchString(v) {
		return false
	}
	sum := 0
	for i := range 8 {
		sum += int(v[i]-'0') * (8 - i)
	}
	return (10-sum%10)%10 == int(v[8]-'0')
}

func (p *parser) address(id, field string, a *dirsvc.Address) error {
	if a.Country == "" {
		a.Country = p.snap.Directory.Country
	}
	if err := p.need(id, field+".locality", a.Locality); err != nil {
		return err
	}
	if a.Country == "AU" && a.Postcode != "" && (len(a.Postcode) != 4 || !digitsRE.MatchString(a.Postcode)) {
		return p.fail(id, field+".postcode", "%q is not a four-digit postcode", a.Postcode)
	}
	if a.Point != nil && (a.Point.Lat < -90 || a.Point.Lat > 90 || a.Point.Lon < -180 || a.Point.Lon > 180) {
		return p.fail(id, field+".point", "is not a coordinate")
	}
	if a.Withheld {
		a.VisibleTo = a.VisibleTo.Or(dirsvc.StaffOnly)
	} else {
		a.VisibleTo = a.VisibleTo.Or(dirsvc.Everyone)
	}
	return nil
}

func (p *parser) areas(id, field string, areas []string) error {
	for i, a := range areas {
		if !dirsvc.ValidArea(a) {
			return p.fail(id, fmt.Sprintf("%s[%d]", field, i), "%q is not an area (type:code)", a)
		}
	}
	return nil
}

func (p *parser) ownership(id string, o *dirsvc.Ownership) error {
	if o == nil {
		return nil
	}
	if own, code, ok := strings.Cut(o.Code, ":"); ok {
		if own != p.snap.Directory.Slug || !localCodeRE.MatchString(code) {
			return p.fail(id, "ownershipType.code", "%q is neither a platform code nor this directory's own ({slug}:{code})", o.Code)
		}
	} else if !platformCodeRE.MatchString(o.Code) {
		return p.fail(id, "ownershipType.code", "%q is not an ownership code", o.Code)
	}
	return p.need(id, "ownershipType.display", o.Display)
}

func (p *parser) dates(id, field string, ds ...string) error {
	for _, d := range ds {
		if d == "" {
			continue
		}
		if _, err := time.Parse(time.DateOnly, d); err != nil {
			return p.fail(id, field, "%q is not a date (YYYY-MM-DD)", d)
		}
	}
	return nil
}

func (p *parser) hours(id, field string, h *dirsvc.OpeningHours) error {
	if h == nil {
		return nil
	}
	if h.TimeZone == "" {
		h.TimeZone = p.snap.Directory.TimeZone
	}
	if !validZone(h.TimeZone) {
		return p.fail(id, field+".timeZone", "%q is not an IANA time zone", h.TimeZone)
	}
	intervals := func(f string, is []dirsvc.Interval) error {
		for i, iv := range is {
			if !hhmmRE.MatchString(iv.Open) || !hhmmRE.MatchString(iv.Close) || iv.Open >= iv.Close {
				return p.fail(id, fmt.Sprintf("%s[%d]", f, i), "want HH:MM times with open before close, got %s-%s", iv.Open, iv.Close)
			}
		}
		return nil
	}
	for i, w := range h.Weekly {
		if !slices.Contains(days, w.Day) {
			return p.fail(id, fmt.Sprintf("%s.weekly[%d].day", field, i), "%q is not a day (mon to sun)", w.Day)
		}
		if err := intervals(fmt.Sprintf("%s.weekly[%d].intervals", field, i), w.Intervals); err != nil {
			return err
		}
	}
	switch h.PublicHolidays {
	case "", "closed", "open", "hours":
	default:
		return p.fail(id, field+".publicHolidays", "must be closed, open or hours")
	}
	if err := intervals(field+".holidayIntervals", h.HolidayIntervals); err != nil {
		return err
	}
	for i, x := range h.Exceptions {
		f := fmt.Sprintf("%s.exceptions[%d]", field, i)
		if err := p.dates(id, f+".date", x.Date); err != nil || x.Date == "" {
			return p.fail(id, f+".date", "%q is not a date (YYYY-MM-DD)", x.Date)
		}
		if err := intervals(f+".intervals", x.Intervals); err != nil {
			return err
		}
	}
	return nil
}

// validZone reports whether name is an IANA time zone. "" and "Local" load too (as UTC and the
// host's zone) but name none.
func validZone(name string) bool {
	if name == "" || name == "Local" {
		return false
	}
	_, err := dirsvc.LoadZone(name)
	return err == nil
}

// Slugify returns a URL slug of a name: lower-case letters and digits joined by hyphens.
func Slugify(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
	}
	s := strings.TrimSuffix(b.String(), "-")
	if len(s) > 80 {
		s = strings.TrimSuffix(s[:80], "-")
	}
	return s
}
