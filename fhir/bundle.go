package fhir

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/dirsvc/dirsvc"
)

// elementsOf are the top-level elements of each type a client may ask for with _elements.
var elementsOf = map[string][]string{
	TypeOrganization:      {"extension", "identifier", "active", "name", "telecom", "address", "contact"},
	TypeLocation:          {"extension", "identifier", "status", "name", "description", "mode", "telecom", "address", "position", "managingOrganization", "hoursOfOperation", "availabilityExceptions"},
	TypeHealthcareService: {"extension", "identifier", "active", "providedBy", "category", "type", "specialty", "location", "name", "comment", "telecom", "program", "communication", "appointmentRequired", "availableTime", "notAvailable", "availabilityExceptions", "endpoint"},
	TypePractitioner:      {"identifier", "active", "name", "telecom", "gender", "photo", "qualification", "communication"},
	TypePractitionerRole:  {"active", "period", "practitioner", "organization", "code", "specialty", "location", "healthcareService", "telecom"},
	TypeEndpoint:          {"status", "connectionType", "name", "managingOrganization", "payloadType", "payloadMimeType", "address"},
}

// mandatory are the elements a resource keeps whatever _elements asks: the type's required ones.
var mandatory = map[string][]string{TypeEndpoint: {"status", "connectionType", "payloadType", "address"}}

func validElement(t, e string) bool {
	return slices.Contains(elementsOf[t], e) || e == "id" || e == "meta"
}

// subsetted is the tag of a resource that _elements left elements out of.
var subsetted = Coding{System: "http://terminology.hl7.org/CodeSystem/v3-ObservationValue", Code: "SUBSETTED", Display: "subsetted"}

// Subset returns the resource's JSON with only the elements asked for (and resourceType, id, meta
// and the type's mandatory elements), its meta tagged SUBSETTED. With no elements it returns the
// body as it is.
func Subset(r *Resource, elements []string) (json.RawMessage, error) {
	if len(elements) == 0 {
		return r.Body, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(r.Body, &m); err != nil {
		return nil, err
	}
	keep := map[string]bool{"resourceType": true, "id": true, "meta": true}
	for _, e := range append(slices.Clone(elements), mandatory[r.Type]...) {
		keep[e], keep["_"+e] = true, true
	}
	for k := range m {
		if !keep[k] {
			delete(m, k)
		}
	}
	var meta Meta
	if err := json.Unmarshal(m["meta"], &meta); err != nil {
		return nil, err
	}
	meta.Tag = append(meta.Tag, subsetted)
	b, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	m["meta"] = b
	return json.Marshal(m)
}

// Issue is an issue of an OperationOutcome.
type Issue struct {
	Severity    string           `json:"severity"`
	Code        string           `json:"code"`
	Details     *CodeableConcept `json:"details,omitempty"`
	Diagnostics string           `json:"diagnostics,omitempty"`
	Expression  []string         `json:"expression,omitempty"`
}

// OperationOutcome is an R4 OperationOutcome: every error of the FHIR routes, and the warnings of a
// search.
type OperationOutcome struct {
	ResourceType string  `json:"resourceType"`
	ID           string  `json:"id,omitempty"`
	Issue        []Issue `json:"issue"`
}

// Outcome returns an OperationOutcome of one issue.
func Outcome(severity, code, diagnostics string, expression ...string) *OperationOutcome {
	return &OperationOutcome{ResourceType: "OperationOutcome", Issue: []Issue{{Severity: severity, Code: code,
		Diagnostics: diagnostics, Expression: expression}}}
}

// Link is a link of a Bundle.
type Link struct {
	Relation string `json:"relation"`
	URL      string `json:"url"`
}

// Entry is an entry of a searchset Bundle.
type Entry struct {
	FullURL  string          `json:"fullUrl,omitempty"`
	Resource json.RawMessage `json:"resource"`
	Search   *EntrySearch    `json:"search,omitempty"`
}

// EntrySearch says why an entry is in a searchset: match, include or outcome.
type EntrySearch struct {
	Mode string `json:"mode"`
}

// Bundle is a searchset Bundle.
type Bundle struct {
	ResourceType string  `json:"resourceType"`
	ID           string  `json:"id,omitempty"`
	Meta         *Meta   `json:"meta,omitempty"`
	Type         string  `json:"type"`
	Total        *int    `json:"total,omitempty"`
	Link         []Link  `json:"link,omitempty"`
	Entry        []Entry `json:"entry,omitempty"`
}

// WriteBundle writes a searchset Bundle without decoding its entries' resources again: the
// entries' JSON is copied as it is.
func WriteBundle(b *Bundle) ([]byte, error) {
	// Sized once for the entries: growing the buffer as it filled was a quarter of what a page of
	// 100 resources allocated.
	return AppendBundle(make([]byte, 0, BundleSize(b)), b)
}

// BundleSize returns room enough for the JSON of a searchset Bundle (WriteBundle), but for its
// links' and strings' escapes: its resources and URLs and the text around them.
func BundleSize(b *Bundle) int {
	size := 512
	for _, l := range b.Link {
		size += len(l.URL) + 32
	}
	for _, e := range b.Entry {
		// An entry's own text is 55 bytes besides its URL and resource (with the longest mode).
		size += len(e.Resource) + len(e.FullURL) + 64
	}
	return size
}

// AppendBundle appends the JSON of a searchset Bundle (WriteBundle) to dst, in dst's capacity when
// it has room.
func AppendBundle(dst []byte, b *Bundle) ([]byte, error) {
	buf := bytes.NewBuffer(dst)
	buf.WriteString(`{"resourceType":"Bundle"`)
	if b.ID != "" {
		buf.WriteString(`,"id":`)
		buf.Write(dirsvc.AppendJSONString(buf.AvailableBuffer(), b.ID))
	}
	if b.Meta != nil {
		m, err := json.Marshal(b.Meta)
		if err != nil {
			return nil, err
		}
		buf.WriteString(`,"meta":`)
		buf.Write(m)
	}
	buf.WriteString(`,"type":"searchset"`)
	if b.Total != nil {
		buf.WriteString(`,"total":` + strconv.Itoa(*b.Total))
	}
	if len(b.Link) > 0 {
		l, err := json.Marshal(b.Link)
		if err != nil {
			return nil, err
		}
		buf.WriteString(`,"link":`)
		buf.Write(l)
	}
	if len(b.Entry) > 0 {
		buf.WriteString(`,"entry":[`)
		for i, e := range b.Entry {
			if i > 0 {
				buf.WriteByte(',')
			}
			buf.WriteByte('{')
			if e.FullURL != "" {
				buf.WriteString(`"fullUrl":`)
				buf.Write(dirsvc.AppendJSONString(buf.AvailableBuffer(), e.FullURL))
				buf.WriteByte(',')
			}
			buf.WriteString(`"resource":`)
			buf.Write(e.Resource)
			if e.Search != nil {
				buf.WriteString(`,"search":{"mode":`)
				buf.Write(dirsvc.AppendJSONString(buf.AvailableBuffer(), e.Search.Mode))
				buf.WriteByte('}')
			}
			buf.WriteByte('}')
		}
		buf.WriteByte(']')
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}
