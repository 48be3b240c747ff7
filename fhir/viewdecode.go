package fhir

import (
	"errors"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/dirsvc/dirsvc"
)

// A mapper that makes bodies only (an export, which decodes every view of a directory) decodes the
// views itself, member by member from the JSON tokens, instead of through the reflection of the
// JSON v2 implementation, which was a third of an export's work; and it decodes only the members
// its mapping reads (and those the HSDS export reads from the same decoding), skipping the rest
// (areas, catchment, referral, cost, target groups, a practitioner's biography and more). What it
// decodes is what DecodeView decodes for those members (TestMapperDecodesWhatTheMappingReads).

// viewReader reads a view from its JSON, a value at a time. The views are written by encoding/json
// (compact, valid); the reader does not check the commas and colons between values (it skips them
// as it skips spaces), and checks the rest: strings, numbers, literals and nesting.
type viewReader struct {
	b   string // the view: every string decoded without escapes is a piece of it, made without a copy
	i   int
	err error
	// searched: the members search values read are decoded too (decodeMapped).
	searched bool
}

var (
	errViewJSON = errors.New("fhir: a view member of an unexpected JSON kind")
	errViewEnd  = errors.New("fhir: a view cut short")
)

// decodeMapped decodes the members of a view of kind that the mapping reads, and with searched
// those the resource's search values read too (a service's areas). The view's strings are pieces of
// body itself, not of a copy (an export decodes every view of a directory, and copying each was the
// largest allocation of its mapping): body must not change while the view is used.
func decodeMapped(kind dirsvc.Kind, body []byte, searched bool) (any, error) {
	r := &viewReader{b: unsafe.String(unsafe.SliceData(body), len(body)), searched: searched}
	var v any
	switch kind {
	case dirsvc.KindOrganisation:
		v = r.organisation()
	case dirsvc.KindLocation:
		v = r.location()
	case dirsvc.KindService:
		v = r.service()
	case dirsvc.KindPractitioner:
		v = r.practitioner()
	case dirsvc.KindRole:
		v = r.role()
	default:
		return nil, errUnknownView
	}
	if r.err == nil && r.peek() != 0 {
		r.fail(errors.New("fhir: a view followed by more JSON"))
	}
	if r.err != nil {
		return nil, r.err
	}
	return v, nil
}

func (r *viewReader) fail(err error) {
	if r.err == nil && err != nil {
		r.err = err
	}
}

// peek skips spaces and separators and returns the next byte, 0 at the end.
func (r *viewReader) peek() byte {
	for ; r.i < len(r.b); r.i++ {
		switch c := r.b[r.i]; c {
		case ' ', '\t', '\n', '\r', ',', ':':
		default:
			return c
		}
	}
	return 0
}

// value reads the next string, number or literal, as it is written (a string with its quotes).
func (r *viewReader) value() string {
	c := r.peek()
	start := r.i
	switch {
	case c == '"':
		for r.i++; ; {
			q := strings.IndexByte(r.b[r.i:], '"')
			if q < 0 {
				r.fail(errViewEnd)
				return ""
			}
			r.i += q + 1
			escapes := 0 // the backslashes before the quote: an odd number escapes it
			for j := r.i - 2; j > start && r.b[j] == '\\'; j-- {
				escapes++
			}
			if escapes%2 == 0 {
				return r.b[start:r.i]
			}
		}
	case c == 0:
		r.fail(errViewEnd)
		return ""
	case c == '{' || c == '[' || c == '}' || c == ']':
		r.fail(errViewJSON)
		return ""
	}
	for r.i < len(r.b) {
		switch r.b[r.i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return r.b[start:r.i]
		}
		r.i++
	}
	return r.b[start:r.i]
}

// literal reads true, false or null: 't', 'f' or 'n'.
func (r *viewReader) literal() byte {
	v := r.value()
	switch v {
	case "true", "false", "null":
		return v[0]
	}
	r.fail(errViewJSON)
	return 0
}

// null consumes a null and reports whether there was one.
func (r *viewReader) null() bool {
	if r.err != nil || r.peek() != 'n' {
		return false
	}
	return r.literal() == 'n'
}

// skip reads a value of any kind.
func (r *viewReader) skip() {
	switch r.peek() {
	case '{':
		r.object(func(string) { r.skip() })
	case '[':
		r.i++
		for r.err == nil && r.peek() != ']' {
			r.skip()
		}
		r.close(']')
	case '"':
		r.value()
	case 't', 'f', 'n':
		r.literal()
	default:
		r.number()
	}
}

// open consumes the delimiter c (an object's or array's start), false when it is not next.
func (r *viewReader) open(c byte) bool {
	if r.err != nil {
		return false
	}
	if r.peek() != c {
		r.fail(errViewJSON)
		return false
	}
	r.i++
	return true
}

// close consumes the delimiter c that ends an object or array.
func (r *viewReader) close(c byte) {
	if r.err == nil && r.peek() == c {
		r.i++
		return
	}
	r.fail(errViewEnd)
}

// object reads an object (or null), calling member with each member's name, which must read or
// skip its value.
func (r *viewReader) object(member func(name string)) {
	if r.null() || !r.open('{') {
		return
	}
	for r.err == nil {
		switch r.peek() {
		case '}':
			r.i++
			return
		case '"':
		default:
			r.fail(errViewJSON)
			return
		}
		name := r.value()
		if r.err != nil {
			return
		}
		if strings.IndexByte(name, '\\') >= 0 {
			r.fail(errViewJSON) // the names of views are plain
			return
		}
		member(name[1 : len(name)-1])
	}
}

// readList reads an array (or null) of values, each read by item into its place.
func readList[T any](r *viewReader, item func(*T)) []T {
	if r.null() || !r.open('[') {
		return nil
	}
	out := []T{}
	for r.err == nil && r.peek() != ']' {
		var zero T
		out = append(out, zero)
		item(&out[len(out)-1])
	}
	r.close(']')
	return out
}

// readPointer reads a value (or null) into a new T.
func readPointer[T any](r *viewReader, read func(*T)) *T {
	if r.err != nil || r.null() {
		return nil
	}
	v := new(T)
	read(v)
	return v
}

// str reads a string; null leaves it empty.
func (r *viewReader) str() string {
	if r.err != nil {
		return ""
	}
	switch r.peek() {
	case 'n':
		r.literal()
		return ""
	case '"':
	default:
		r.fail(errViewJSON)
		return ""
	}
	raw := r.value()
	if r.err != nil {
		return ""
	}
	if strings.IndexByte(raw, '\\') < 0 {
		return raw[1 : len(raw)-1]
	}
	s, err := jsontext.AppendUnquote(nil, raw)
	r.fail(err)
	return string(s)
}

func (r *viewReader) strPtr() *string {
	return readPointer(r, func(s *string) { *s = r.str() })
}

func (r *viewReader) strs() []string {
	return readList(r, func(s *string) { *s = r.str() })
}

func (r *viewReader) boolean() bool {
	if r.err != nil {
		return false
	}
	return r.literal() == 't'
}

// number reads a number as it is written, "" for null.
func (r *viewReader) number() string {
	if r.err != nil || r.null() {
		return ""
	}
	if c := r.peek(); c != '-' && (c < '0' || c > '9') {
		r.fail(errViewJSON)
		return ""
	}
	return r.value()
}

func (r *viewReader) int64() int64 {
	raw := r.number()
	if raw == "" {
		return 0
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	r.fail(err)
	return n
}

func (r *viewReader) float() float64 {
	raw := r.number()
	if raw == "" {
		return 0
	}
	f, err := strconv.ParseFloat(raw, 64)
	r.fail(err)
	return f
}

func (r *viewReader) time() time.Time {
	s := r.str()
	if r.err != nil || s == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	r.fail(err)
	return t
}

// head reads a member of the record head; false when name is not one.
func (r *viewReader) head(h *dirsvc.RecordHead, name string) bool {
	switch name {
	case "publicId":
		h.PublicID = r.str()
	case "version":
		h.Version = r.int64()
	case "localRevision":
		h.LocalRevision = r.int64()
	case "lastUpdated":
		h.LastUpdated = r.time()
	case "origin":
		h.Origin = r.str()
	default:
		return false
	}
	return true
}

func (r *viewReader) ref(v *dirsvc.Ref) {
	r.object(func(name string) {
		switch name {
		case "publicId":
			v.PublicID = r.str()
		case "name":
			v.Name = r.str()
		default:
			r.skip()
		}
	})
}

func (r *viewReader) codeLabel(v *dirsvc.CodeLabel) {
	r.object(func(name string) {
		switch name {
		case "code":
			v.Code = r.str()
		case "label":
			v.Label = r.str()
		default:
			r.skip()
		}
	})
}

func (r *viewReader) localType(v *dirsvc.LocalTypeRef) {
	r.object(func(name string) {
		switch name {
		case "id":
			v.ID = r.str()
		case "slug":
			v.Slug = r.str()
		case "label":
			v.Label = r.str()
		case "icon":
			v.Icon = r.str()
		default:
			r.skip()
		}
	})
}

func (r *viewReader) ownership(v *dirsvc.Ownership) {
	r.object(func(name string) {
		switch name {
		case "code":
			v.Code = r.str()
		case "display":
			v.Display = r.str()
		default:
			r.skip()
		}
	})
}

func (r *viewReader) identifiers() []dirsvc.IdentifierView {
	return readList(r, func(v *dirsvc.IdentifierView) {
		r.object(func(name string) {
			switch name {
			case "type":
				v.Type = r.str()
			case "system":
				v.System = r.str()
			case "value":
				v.Value = r.str()
			default:
				r.skip()
			}
		})
	})
}

func (r *viewReader) contacts() []dirsvc.ContactView {
	return readList(r, func(v *dirsvc.ContactView) {
		r.object(func(name string) {
			switch name {
			case "kind":
				v.Kind = dirsvc.ContactKind(r.str())
			case "value":
				v.Value = r.str()
			case "label":
				v.Label = r.str()
			case "restricted":
				v.Restricted = r.boolean()
			default:
				r.skip()
			}
		})
	})
}

func (r *viewReader) address() *dirsvc.AddressView {
	return readPointer(r, func(v *dirsvc.AddressView) {
		r.object(func(name string) {
			switch name {
			case "lines":
				v.Lines = r.strs()
			case "locality":
				v.Locality = r.str()
			case "state":
				v.State = r.str()
			case "postcode":
				v.Postcode = r.str()
			case "country":
				v.Country = r.str()
			default:
				r.skip()
			}
		})
	})
}

func (r *viewReader) intervals() []dirsvc.Interval {
	return readList(r, func(v *dirsvc.Interval) {
		r.object(func(name string) {
			switch name {
			case "open":
				v.Open = r.str()
			case "close":
				v.Close = r.str()
			default:
				r.skip()
			}
		})
	})
}

func (r *viewReader) hours() *dirsvc.OpeningHours {
	return readPointer(r, func(h *dirsvc.OpeningHours) {
		r.object(func(name string) {
			switch name {
			case "timeZone":
				h.TimeZone = r.str()
			case "weekly":
				h.Weekly = readList(r, func(w *dirsvc.WeeklyHours) {
					r.object(func(name string) {
						switch name {
						case "day":
							w.Day = r.str()
						case "intervals":
							w.Intervals = r.intervals()
						default:
							r.skip()
						}
					})
				})
			case "publicHolidays":
				h.PublicHolidays = r.str()
			case "holidayIntervals":
				h.HolidayIntervals = r.intervals()
			case "exceptions":
				h.Exceptions = readList(r, func(d *dirsvc.DateHours) {
					r.object(func(name string) {
						switch name {
						case "date":
							d.Date = r.str()
						case "closed":
							d.Closed = r.boolean()
						case "intervals":
							d.Intervals = r.intervals()
						case "note":
							d.Note = r.str()
						default:
							r.skip()
						}
					})
				})
			case "afterHours":
				h.AfterHours = r.str()
			case "always":
				h.Always = r.boolean()
			default:
				r.skip()
			}
		})
	})
}

func (r *viewReader) organisation() *dirsvc.OrganisationView {
	v := new(dirsvc.OrganisationView)
	r.object(func(name string) {
		if r.head(&v.RecordHead, name) {
			return
		}
		switch name {
		case "name":
			v.Name = r.str()
		case "description":
			v.Description = r.str()
		case "logo":
			v.Logo = r.str()
		case "website":
			v.Website = r.str()
		case "ownershipType":
			v.OwnershipType = readPointer(r, r.ownership)
		case "identifiers":
			v.Identifiers = r.identifiers()
		case "contacts":
			v.Contacts = r.contacts()
		case "postalAddress":
			v.PostalAddress = r.address()
		default:
			r.skip()
		}
	})
	return v
}

func (r *viewReader) location() *dirsvc.LocationView {
	v := new(dirsvc.LocationView)
	r.object(func(name string) {
		if r.head(&v.RecordHead, name) {
			return
		}
		switch name {
		case "name":
			v.Name = r.str()
		case "description":
			v.Description = r.str()
		case "organisation":
			r.ref(&v.Organisation)
		case "address":
			v.Address = r.address()
		case "point":
			v.Point = readPointer(r, func(p *dirsvc.Point) {
				r.object(func(name string) {
					switch name {
					case "lat":
						p.Lat = r.float()
					case "lon":
						p.Lon = r.float()
					default:
						r.skip()
					}
				})
			})
		case "ownershipType":
			v.OwnershipType = readPointer(r, r.ownership)
		case "hours":
			v.Hours = r.hours()
		case "contacts":
			v.Contacts = r.contacts()
		case "identifiers":
			v.Identifiers = r.identifiers()
		default:
			r.skip()
		}
	})
	return v
}

func (r *viewReader) service() *dirsvc.ServiceView {
	v := new(dirsvc.ServiceView)
	r.object(func(name string) {
		if r.head(&v.RecordHead, name) {
			return
		}
		switch name {
		case "name":
			v.Name = r.str()
		case "description":
			v.Description = r.str()
		case "organisation":
			r.ref(&v.Organisation)
		case "location":
			v.Location = readPointer(r, r.ref)
		case "type":
			r.codeLabel(&v.Type)
		case "typeDisplay":
			v.TypeDisplay = r.str()
		case "specialties":
			v.Specialties = readList(r, r.localType)
		case "categoryCode":
			v.CategoryCode = r.strPtr()
		case "ownershipType":
			v.OwnershipType = readPointer(r, r.ownership)
		case "programs":
			v.Programs = readList(r, r.codeLabel)
		case "hours":
			v.Hours = r.hours()
		case "contacts":
			v.Contacts = r.contacts()
		case "identifiers":
			v.Identifiers = r.identifiers()
		case "website":
			v.Website = r.str()
		case "appointment":
			v.Appointment = r.str()
		case "languages":
			v.Languages = r.strs()
		case "areas":
			if r.searched {
				v.Areas = r.strs()
			} else {
				r.skip()
			}
		default:
			r.skip()
		}
	})
	return v
}

func (r *viewReader) practitioner() *dirsvc.PractitionerView {
	v := new(dirsvc.PractitionerView)
	r.object(func(name string) {
		if r.head(&v.RecordHead, name) {
			return
		}
		switch name {
		case "name":
			r.object(func(name string) {
				switch name {
				case "prefix":
					v.Name.Prefix = r.str()
				case "given":
					v.Name.Given = r.str()
				case "family":
					v.Name.Family = r.str()
				case "text":
					v.Name.Text = r.str()
				default:
					r.skip()
				}
			})
		case "gender":
			v.Gender = r.strPtr()
		case "qualifications":
			v.Qualifications = r.strs()
		case "languages":
			v.Languages = r.strs()
		case "photo":
			v.Photo = r.strPtr()
		case "identifiers":
			v.Identifiers = r.identifiers()
		case "contacts":
			v.Contacts = r.contacts()
		default:
			r.skip()
		}
	})
	return v
}

func (r *viewReader) role() *dirsvc.RoleView {
	v := new(dirsvc.RoleView)
	r.object(func(name string) {
		if r.head(&v.RecordHead, name) {
			return
		}
		switch name {
		case "practitioner":
			r.ref(&v.Practitioner)
		case "service":
			r.ref(&v.Service)
		case "location":
			v.Location = readPointer(r, r.ref)
		case "organisation":
			r.ref(&v.Organisation)
		case "title":
			v.Title = r.str()
		case "specialties":
			v.Specialties = readList(r, r.localType)
		case "contacts":
			v.Contacts = r.contacts()
		case "active":
			v.Active = r.boolean()
		case "startDate":
			v.StartDate = r.str()
		case "endDate":
			v.EndDate = r.str()
		default:
			r.skip()
		}
	})
	return v
}
