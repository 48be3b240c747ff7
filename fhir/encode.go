package fhir

import (
	"strconv"

	"github.com/dirsvc/dirsvc"
)

// The resources' JSON is written by hand, member by member in the order and with the omissions of
// their struct tags, byte for byte as encoding/json writes the same values
// (TestResourceJSONAgreesWithEncodingJSON): exports map every resource of a directory, and
// encoding/json's reflection was half the cost of mapping one.

// member appends a member's name (plain ASCII), after a comma unless it is the object's first.
func member(b []byte, name string) []byte {
	if b[len(b)-1] != '{' {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, name...)
	return append(b, '"', ':')
}

// text appends a string member; textOpt omits it when empty.
func text(b []byte, name, v string) []byte { return dirsvc.AppendJSONString(member(b, name), v) }

func textOpt(b []byte, name, v string) []byte {
	if v == "" {
		return b
	}
	return text(b, name, v)
}

func boolean(b []byte, name string, v bool) []byte {
	if v {
		return append(member(b, name), "true"...)
	}
	return append(member(b, name), "false"...)
}

// texts appends a list of strings, omitted when empty.
func texts(b []byte, name string, vs []string) []byte {
	if len(vs) == 0 {
		return b
	}
	b = append(member(b, name), '[')
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = dirsvc.AppendJSONString(b, v)
	}
	return append(b, ']')
}

// appender is a data type that appends its JSON.
type appender[T any] interface {
	*T
	appendJSON(b []byte) []byte
}

// list appends a list of values, omitted when empty.
func list[T any, P appender[T]](b []byte, name string, vs []T) []byte {
	if len(vs) == 0 {
		return b
	}
	return listAlways[T, P](b, name, vs)
}

// listAlways appends a list of values, null when nil (a member without omitempty).
func listAlways[T any, P appender[T]](b []byte, name string, vs []T) []byte {
	b = member(b, name)
	if vs == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = P(&vs[i]).appendJSON(b)
	}
	return append(b, ']')
}

// object appends a value given by pointer, omitted when nil.
func object[T any, P appender[T]](b []byte, name string, v *T) []byte {
	if v == nil {
		return b
	}
	return P(v).appendJSON(member(b, name))
}

func (m *Meta) appendJSON(b []byte) []byte {
	b = append(b, '{')
	b = textOpt(b, "versionId", m.VersionID)
	b = textOpt(b, "lastUpdated", m.LastUpdated)
	b = texts(b, "profile", m.Profile)
	b = list(b, "tag", m.Tag)
	return append(b, '}')
}

func (c *Coding) appendJSON(b []byte) []byte {
	b = append(b, '{')
	b = textOpt(b, "system", c.System)
	b = textOpt(b, "code", c.Code)
	b = textOpt(b, "display", c.Display)
	return append(b, '}')
}

func (c *CodeableConcept) appendJSON(b []byte) []byte {
	b = append(b, '{')
	b = list(b, "coding", c.Coding)
	b = textOpt(b, "text", c.Text)
	return append(b, '}')
}

func (i *Identifier) appendJSON(b []byte) []byte {
	b = append(b, '{')
	b = textOpt(b, "use", i.Use)
	b = object(b, "type", i.Type)
	b = textOpt(b, "system", i.System)
	b = textOpt(b, "value", i.Value)
	return append(b, '}')
}

func (c *ContactPoint) appendJSON(b []byte) []byte {
	b = append(b, '{')
	b = textOpt(b, "system", c.System)
	b = textOpt(b, "value", c.Value)
	b = textOpt(b, "use", c.Use)
	if c.Rank != 0 {
		b = strconv.AppendInt(member(b, "rank"), int64(c.Rank), 10)
	}
	return append(b, '}')
}

func (a *Address) appendJSON(b []byte) []byte {
	b = append(b, '{')
	b = textOpt(b, "use", a.Use)
	b = textOpt(b, "type", a.Type)
	b = textOpt(b, "text", a.Text)
	b = texts(b, "line", a.Line)
	b = textOpt(b, "city", a.City)
	b = textOpt(b, "state", a.State)
	b = textOpt(b, "postalCode", a.PostalCode)
	b = textOpt(b, "country", a.Country)
	return append(b, '}')
}

func (n *HumanName) appendJSON(b []byte) []byte {
	b = append(b, '{')
	b = textOpt(b, "use", n.Use)
	b = textOpt(b, "text", n.Text)
	b = textOpt(b, "family", n.Family)
	b = texts(b, "given", n.Given)
	b = texts(b, "prefix", n.Prefix)
	return append(b, '}')
}

func (r *Reference) appendJSON(b []byte) []byte {
	b = append(b, '{')
	b = textOpt(b, "reference", r.Reference)
	b = textOpt(b, "display", r.Display)
	return append(b, '}')
}

func (e *Extension) appendJSON(b []byte) []byte {
	b = append(b, '{')
	b = text(b, "url", e.URL)
	b = textOpt(b, "valueCode", e.ValueCode)
	b = textOpt(b, "valueString", e.ValueString)
	b = object(b, "valueCodeableConcept", e.ValueCodeableConcept)
	return append(b, '}')
}

func (e *Element) appendJSON(b []byte) []byte {
	b = append(b, '{')
	b = list(b, "extension", e.Extension)
	return append(b, '}')
}

func (p *Position) appendJSON(b []byte) ([]byte, error) {
	b, err := dirsvc.AppendJSONFloat(append(b, `{"longitude":`...), p.Longitude)
	if err != nil {
		return nil, err
	}
	if b, err = dirsvc.AppendJSONFloat(append(b, `,"latitude":`...), p.Latitude); err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

func (p *Period) appendJSON(b []byte) []byte {
	b = append(b, '{')
	b = textOpt(b, "start", p.Start)
	b = textOpt(b, "end", p.End)
	return append(b, '}')
}

func (t *AvailableTime) appendJSON(b []byte) []byte {
	b = append(b, '{')
	b = texts(b, "daysOfWeek", t.DaysOfWeek)
	if t.AllDay {
		b = boolean(b, "allDay", true)
	}
	b = textOpt(b, "availableStartTime", t.AvailableStartTime)
	b = object(b, "_availableStartTime", t.XAvailableStartTime)
	b = textOpt(b, "availableEndTime", t.AvailableEndTime)
	b = object(b, "_availableEndTime", t.XAvailableEndTime)
	return append(b, '}')
}

func (n *NotAvailable) appendJSON(b []byte) []byte {
	b = append(b, '{')
	b = text(b, "description", n.Description)
	b = object(b, "during", n.During)
	return append(b, '}')
}

func (h *HoursOfOperation) appendJSON(b []byte) []byte {
	b = append(b, '{')
	b = texts(b, "daysOfWeek", h.DaysOfWeek)
	if h.AllDay {
		b = boolean(b, "allDay", true)
	}
	b = textOpt(b, "openingTime", h.OpeningTime)
	b = object(b, "_openingTime", h.XOpeningTime)
	b = textOpt(b, "closingTime", h.ClosingTime)
	b = object(b, "_closingTime", h.XClosingTime)
	return append(b, '}')
}

func (c *OrganizationContact) appendJSON(b []byte) []byte {
	b = append(b, '{')
	b = object(b, "purpose", c.Purpose)
	b = object(b, "name", c.Name)
	b = list(b, "telecom", c.Telecom)
	return append(b, '}')
}

func (a *Attachment) appendJSON(b []byte) []byte {
	b = append(b, '{')
	b = textOpt(b, "url", a.URL)
	return append(b, '}')
}

func (q *Qualification) appendJSON(b []byte) []byte {
	return append(q.Code.appendJSON(append(b, `{"code":`...)), '}')
}

// head appends the start of a resource: its type, id and meta.
func head(b []byte, resourceType, id string, meta *Meta) []byte {
	b = text(append(b, '{'), "resourceType", resourceType)
	b = text(b, "id", id)
	return object(b, "meta", meta)
}

func (o *Organization) appendJSON(b []byte) ([]byte, error) {
	b = head(b, o.ResourceType, o.ID, o.Meta)
	b = list(b, "extension", o.Extension)
	b = list(b, "identifier", o.Identifier)
	b = boolean(b, "active", o.Active)
	b = textOpt(b, "name", o.Name)
	b = list(b, "telecom", o.Telecom)
	b = list(b, "address", o.Address)
	b = list(b, "contact", o.Contact)
	return append(b, '}'), nil
}

func (l *Location) appendJSON(b []byte) ([]byte, error) {
	b = head(b, l.ResourceType, l.ID, l.Meta)
	b = list(b, "extension", l.Extension)
	b = list(b, "identifier", l.Identifier)
	b = text(b, "status", l.Status)
	b = textOpt(b, "name", l.Name)
	b = textOpt(b, "description", l.Description)
	b = textOpt(b, "mode", l.Mode)
	b = list(b, "telecom", l.Telecom)
	b = object(b, "address", l.Address)
	if l.Position != nil {
		var err error
		if b, err = l.Position.appendJSON(member(b, "position")); err != nil {
			return nil, err
		}
	}
	b = object(b, "managingOrganization", l.ManagingOrganization)
	b = list(b, "hoursOfOperation", l.HoursOfOperation)
	b = textOpt(b, "availabilityExceptions", l.AvailabilityExcept)
	return append(b, '}'), nil
}

func (h *HealthcareService) appendJSON(b []byte) ([]byte, error) {
	b = head(b, h.ResourceType, h.ID, h.Meta)
	b = list(b, "extension", h.Extension)
	b = list(b, "identifier", h.Identifier)
	b = boolean(b, "active", h.Active)
	b = object(b, "providedBy", h.ProvidedBy)
	b = list(b, "category", h.Category)
	b = list(b, "type", h.Type)
	b = list(b, "specialty", h.Specialty)
	b = list(b, "location", h.Location)
	b = textOpt(b, "name", h.Name)
	b = textOpt(b, "comment", h.Comment)
	b = list(b, "telecom", h.Telecom)
	b = list(b, "program", h.Program)
	b = list(b, "characteristic", h.Characteristic)
	b = list(b, "communication", h.Communication)
	b = list(b, "referralMethod", h.ReferralMethod)
	if h.AppointmentReq != nil {
		b = boolean(b, "appointmentRequired", *h.AppointmentReq)
	}
	b = list(b, "availableTime", h.AvailableTime)
	b = list(b, "notAvailable", h.NotAvailable)
	b = textOpt(b, "availabilityExceptions", h.AvailabilityExcept)
	b = list(b, "endpoint", h.Endpoint)
	return append(b, '}'), nil
}

func (p *Practitioner) appendJSON(b []byte) ([]byte, error) {
	b = head(b, p.ResourceType, p.ID, p.Meta)
	b = list(b, "extension", p.Extension)
	b = list(b, "identifier", p.Identifier)
	b = boolean(b, "active", p.Active)
	b = list(b, "name", p.Name)
	b = list(b, "telecom", p.Telecom)
	b = textOpt(b, "gender", p.Gender)
	b = list(b, "photo", p.Photo)
	b = list(b, "qualification", p.Qualification)
	b = list(b, "communication", p.Communication)
	return append(b, '}'), nil
}

func (r *PractitionerRole) appendJSON(b []byte) ([]byte, error) {
	b = head(b, r.ResourceType, r.ID, r.Meta)
	b = boolean(b, "active", r.Active)
	b = object(b, "period", r.Period)
	b = object(b, "practitioner", r.Practitioner)
	b = object(b, "organization", r.Organization)
	b = list(b, "code", r.Code)
	b = list(b, "specialty", r.Specialty)
	b = list(b, "location", r.Location)
	b = list(b, "healthcareService", r.HealthcareService)
	b = list(b, "telecom", r.Telecom)
	return append(b, '}'), nil
}

func (e *Endpoint) appendJSON(b []byte) ([]byte, error) {
	b = head(b, e.ResourceType, e.ID, e.Meta)
	b = text(b, "status", e.Status)
	b = e.ConnectionType.appendJSON(member(b, "connectionType"))
	b = textOpt(b, "name", e.Name)
	b = object(b, "managingOrganization", e.ManagingOrganization)
	b = listAlways(b, "payloadType", e.PayloadType)
	b = texts(b, "payloadMimeType", e.PayloadMimeType)
	b = text(b, "address", e.Address)
	return append(b, '}'), nil
}
