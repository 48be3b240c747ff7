package export

import (
	"context"
	"crypto/sha1"
	"strconv"
	"strings"
	"time"

	"github.com/dirsvc/dirsvc"
	jsonv2 "github.com/go-json-experiment/json"
)

// The HSDS export: the directory as an Open Referral Human Services Data Specification 3.0 data
// package, a JSON file per table (an array of its objects): organizations, locations (with their
// addresses and phones), services (with their phones) and service_at_locations. HSDS identifiers
// are UUIDs: each record's is made from its public ID (name-based, SHA-1, as UUID version 5 does),
// so the same record has the same identifier in every export and references need no lookup. Only
// what the caller's views hold is written (practitioners and roles have no HSDS table, and
// leadership is left out); a reference to a record the caller may not read is left out, as in FHIR.

// HSDSFiles are the files of the HSDS export, by the kind whose records fill them; services fill
// service_at_locations too.
var HSDSFiles = map[dirsvc.Kind]string{
	dirsvc.KindOrganisation: "hsds_organizations.json", dirsvc.KindLocation: "hsds_locations.json",
	dirsvc.KindService: "hsds_services.json",
}

// HSDSServiceAtLocations is the file of the service_at_location table.
const HSDSServiceAtLocations = "hsds_service_at_locations.json"

// hsdsNamespace is the namespace of the name-based identifiers.
const hsdsNamespace = "dirsvc hsds 3.0\x00"

// HSDSID returns the HSDS identifier of a record (or of a named part of it: "svc_x/phone/1").
func HSDSID(name string) string { return hsdsID(name) }

// appendHSDSID appends the HSDS identifier of the name its parts make together.
func appendHSDSID(dst []byte, parts ...string) []byte {
	var buf [256]byte
	name := append(buf[:0], hsdsNamespace...)
	for _, p := range parts {
		name = append(name, p...)
	}
	u := sha1.Sum(name)
	u[6] = u[6]&0x0f | 0x50
	u[8] = u[8]&0x3f | 0x80
	for i, b := range u[:16] {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			dst = append(dst, '-')
		}
		dst = append(dst, hexDigits[b>>4], hexDigits[b&0x0f])
	}
	return dst
}

// hsdsID returns the HSDS identifier of the name its parts make together.
func hsdsID(parts ...string) string { return string(appendHSDSID(make([]byte, 0, 36), parts...)) }

const hexDigits = "0123456789abcdef"

type hsdsWriter struct {
	run      *run
	readable func(id string) bool
	files    map[string]*partFile
	first    map[string]bool
	order    []string
	types    map[string]string
}

func newHSDSWriter(r *run, readable func(string) bool) *hsdsWriter {
	return &hsdsWriter{run: r, readable: readable, files: map[string]*partFile{}, first: map[string]bool{}, types: map[string]string{}}
}

// open starts a table's file.
func (w *hsdsWriter) open(name, table string) error {
	f, err := w.run.create(name)
	if err != nil {
		return err
	}
	w.files[name], w.first[name], w.types[name] = f, true, table
	w.order = append(w.order, name)
	_, err = f.WriteString("[")
	return err
}

func (w *hsdsWriter) begin(kind dirsvc.Kind) error {
	name, ok := HSDSFiles[kind]
	if !ok {
		return nil
	}
	if err := w.open(name, strings.TrimSuffix(strings.TrimPrefix(name, "hsds_"), ".json")); err != nil {
		return err
	}
	if kind == dirsvc.KindService {
		return w.open(HSDSServiceAtLocations, "service_at_locations")
	}
	return nil
}

// out writes one object's JSON into a table's file.
func (w *hsdsWriter) out(name string, b []byte) error {
	f := w.files[name]
	if !w.first[name] {
		f.Write([]byte{','})
	}
	w.first[name] = false
	if _, err := f.Write(b); err != nil {
		return err
	}
	return f.recorded()
}

func (w *hsdsWriter) end(kind dirsvc.Kind) error {
	names := []string{HSDSFiles[kind]}
	if kind == dirsvc.KindService {
		names = append(names, HSDSServiceAtLocations)
	}
	for _, n := range names {
		if f := w.files[n]; f != nil {
			if _, err := f.WriteString("]\n"); err != nil {
				return err
			}
		}
	}
	return nil
}

// HSDS objects, with the fields this export fills; each writes its JSON as encoding/json would
// (appendJSON).
type (
	hsdsPhone struct {
		ID          string `json:"id"`
		Number      string `json:"number"`
		Type        string `json:"type,omitempty"`
		Description string `json:"description,omitempty"`
	}
	hsdsAddress struct {
		ID            string `json:"id"`
		LocationID    string `json:"location_id"`
		Address1      string `json:"address_1"`
		Address2      string `json:"address_2,omitempty"`
		City          string `json:"city"`
		StateProvince string `json:"state_province"`
		PostalCode    string `json:"postal_code"`
		Country       string `json:"country"`
		AddressType   string `json:"address_type"`
	}
	hsdsOrganization struct {
		ID          string      `json:"id"`
		Name        string      `json:"name"`
		Description string      `json:"description"`
		Email       string      `json:"email,omitempty"`
		Website     string      `json:"website,omitempty"`
		Logo        string      `json:"logo,omitempty"`
		Phones      []hsdsPhone `json:"phones,omitempty"`
	}
	hsdsLocation struct {
		ID             string        `json:"id"`
		LocationType   string        `json:"location_type"`
		OrganizationID string        `json:"organization_id,omitempty"`
		Name           string        `json:"name,omitempty"`
		Description    string        `json:"description,omitempty"`
		Latitude       *float64      `json:"latitude,omitempty"`
		Longitude      *float64      `json:"longitude,omitempty"`
		Addresses      []hsdsAddress `json:"addresses,omitempty"`
		Phones         []hsdsPhone   `json:"phones,omitempty"`
	}
	hsdsService struct {
		ID             string      `json:"id"`
		OrganizationID string      `json:"organization_id,omitempty"`
		Name           string      `json:"name"`
		Description    string      `json:"description,omitempty"`
		URL            string      `json:"url,omitempty"`
		Email          string      `json:"email,omitempty"`
		Status         string      `json:"status"`
		LastModified   string      `json:"last_modified,omitempty"`
		Phones         []hsdsPhone `json:"phones,omitempty"`
	}
	hsdsServiceAtLocation struct {
		ID         string `json:"id"`
		ServiceID  string `json:"service_id"`
		LocationID string `json:"location_id"`
	}
)

// jsonMember appends a member's name (plain ASCII) after a comma; jsonText one with its string, and
// jsonTextOmitEmpty that unless the string is empty.
func jsonMember(b []byte, name string) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	return append(b, '"', ':')
}

func jsonText(b []byte, name, v string) []byte {
	return dirsvc.AppendJSONString(jsonMember(b, name), v)
}

func jsonTextOmitEmpty(b []byte, name, v string) []byte {
	if v == "" {
		return b
	}
	return jsonText(b, name, v)
}

func (p *hsdsPhone) appendJSON(b []byte) []byte {
	b = dirsvc.AppendJSONString(append(b, `{"id":`...), p.ID)
	b = jsonText(b, "number", p.Number)
	b = jsonTextOmitEmpty(b, "type", p.Type)
	b = jsonTextOmitEmpty(b, "description", p.Description)
	return append(b, '}')
}

func appendPhones(b []byte, phones []hsdsPhone) []byte {
	if len(phones) == 0 {
		return b
	}
	b = append(jsonMember(b, "phones"), '[')
	for i := range phones {
		if i > 0 {
			b = append(b, ',')
		}
		b = phones[i].appendJSON(b)
	}
	return append(b, ']')
}

func (a *hsdsAddress) appendJSON(b []byte) []byte {
	b = dirsvc.AppendJSONString(append(b, `{"id":`...), a.ID)
	b = jsonText(b, "location_id", a.LocationID)
	b = jsonText(b, "address_1", a.Address1)
	b = jsonTextOmitEmpty(b, "address_2", a.Address2)
	b = jsonText(b, "city", a.City)
	b = jsonText(b, "state_province", a.StateProvince)
	b = jsonText(b, "postal_code", a.PostalCode)
	b = jsonText(b, "country", a.Country)
	b = jsonText(b, "address_type", a.AddressType)
	return append(b, '}')
}

func (o *hsdsOrganization) appendJSON(b []byte) ([]byte, error) {
	b = dirsvc.AppendJSONString(append(b, `{"id":`...), o.ID)
	b = jsonText(b, "name", o.Name)
	b = jsonText(b, "description", o.Description)
	b = jsonTextOmitEmpty(b, "email", o.Email)
	b = jsonTextOmitEmpty(b, "website", o.Website)
	b = jsonTextOmitEmpty(b, "logo", o.Logo)
	b = appendPhones(b, o.Phones)
	return append(b, '}'), nil
}

func (l *hsdsLocation) appendJSON(b []byte) ([]byte, error) {
	b = dirsvc.AppendJSONString(append(b, `{"id":`...), l.ID)
	b = jsonText(b, "location_type", l.LocationType)
	b = jsonTextOmitEmpty(b, "organization_id", l.OrganizationID)
	b = jsonTextOmitEmpty(b, "name", l.Name)
	b = jsonTextOmitEmpty(b, "description", l.Description)
	for _, c := range []struct {
		name string
		v    *float64
	}{{"latitude", l.Latitude}, {"longitude", l.Longitude}} {
		if c.v == nil {
			continue
		}
		var err error
		if b, err = dirsvc.AppendJSONFloat(jsonMember(b, c.name), *c.v); err != nil {
			return nil, err
		}
	}
	if len(l.Addresses) > 0 {
		b = append(jsonMember(b, "addresses"), '[')
		for i := range l.Addresses {
			if i > 0 {
				b = append(b, ',')
			}
			b = l.Addresses[i].appendJSON(b)
		}
		b = append(b, ']')
	}
	b = appendPhones(b, l.Phones)
	return append(b, '}'), nil
}

func (s *hsdsService) appendJSON(b []byte) ([]byte, error) {
	b = dirsvc.AppendJSONString(append(b, `{"id":`...), s.ID)
	b = jsonTextOmitEmpty(b, "organization_id", s.OrganizationID)
	b = jsonText(b, "name", s.Name)
	b = jsonTextOmitEmpty(b, "description", s.Description)
	b = jsonTextOmitEmpty(b, "url", s.URL)
	b = jsonTextOmitEmpty(b, "email", s.Email)
	b = jsonText(b, "status", s.Status)
	b = jsonTextOmitEmpty(b, "last_modified", s.LastModified)
	b = appendPhones(b, s.Phones)
	return append(b, '}'), nil
}

func (s *hsdsServiceAtLocation) appendJSON(b []byte) ([]byte, error) {
	b = dirsvc.AppendJSONString(append(b, `{"id":`...), s.ID)
	b = jsonText(b, "service_id", s.ServiceID)
	b = jsonText(b, "location_id", s.LocationID)
	return append(b, '}'), nil
}

// hsdsContacts returns a record's phones and first email.
func hsdsContacts(owner string, cs []dirsvc.ContactView) (phones []hsdsPhone, email string) {
	for i, c := range cs {
		switch {
		case c.Kind.PhoneLike():
			phones = append(phones, hsdsPhone{ID: hsdsID(owner, "/contact/", strconv.Itoa(i)), Number: c.Value,
				Type: string(c.Kind), Description: c.Label})
		case c.Kind == dirsvc.ContactEmail && email == "":
			email = c.Value
		}
	}
	return phones, email
}

// ref returns the HSDS identifier of a record the caller may read, else "".
func (w *hsdsWriter) ref(id string) string {
	if id == "" || !w.readable(id) {
		return ""
	}
	return HSDSID(id)
}

func (w *hsdsWriter) write(_ context.Context, r *record) error {
	if r.hsds == nil {
		if err := w.prepare(r); err != nil {
			return err
		}
	}
	for _, o := range r.hsds {
		if err := w.out(o.table, o.json); err != nil {
			return err
		}
	}
	r.hsds = nil
	return nil
}

// hsdsOut is an HSDS object of a record, as JSON, and the file of the table it goes to.
type hsdsOut struct {
	table string
	json  []byte
}

// addHSDS appends an object of the table to the record's.
func (r *record) addHSDS(table string, o interface{ appendJSON([]byte) ([]byte, error) }) error {
	b, err := o.appendJSON(make([]byte, 0, 1024))
	if err != nil {
		return err
	}
	r.hsds = append(r.hsds, hsdsOut{table, b})
	return nil
}

// hsdsView is what the HSDS objects take from the view of an organisation, location or service:
// decoding it skips the rest of the view. Its fields have the types of the views' fields.
type hsdsView struct {
	PublicID     string               `json:"publicId"`
	LastUpdated  time.Time            `json:"lastUpdated"`
	Name         string               `json:"name"`
	Description  string               `json:"description"`
	Website      string               `json:"website"`
	Logo         string               `json:"logo"`
	Contacts     []dirsvc.ContactView `json:"contacts"`
	Organisation dirsvc.Ref           `json:"organisation"`
	Location     *dirsvc.Ref          `json:"location"`
	Point        *dirsvc.Point        `json:"point"`
	Address      *dirsvc.AddressView  `json:"address"`
}

// hsdsView returns what the HSDS objects take from the record's view: from the view when another
// format decoded it (FHIR's decoding keeps every member read here:
// TestHSDSReadsWholeViewsFromTheFHIRDecoding), else decoded alone.
func (r *record) hsdsView() (hsdsView, error) {
	switch v := r.view.(type) {
	case *dirsvc.OrganisationView:
		return hsdsView{PublicID: v.PublicID, LastUpdated: v.LastUpdated, Name: v.Name, Description: v.Description,
			Website: v.Website, Logo: v.Logo, Contacts: v.Contacts}, nil
	case *dirsvc.LocationView:
		return hsdsView{PublicID: v.PublicID, LastUpdated: v.LastUpdated, Name: v.Name, Description: v.Description,
			Contacts: v.Contacts, Organisation: v.Organisation, Point: v.Point, Address: v.Address}, nil
	case *dirsvc.ServiceView:
		return hsdsView{PublicID: v.PublicID, LastUpdated: v.LastUpdated, Name: v.Name, Description: v.Description,
			Website: v.Website, Contacts: v.Contacts, Organisation: v.Organisation, Location: v.Location}, nil
	}
	var v hsdsView
	err := jsonv2.Unmarshal(r.body, &v)
	return v, err
}

// prepare makes a record's HSDS objects, ahead of the writing (r.hsds is then non-nil).
func (w *hsdsWriter) prepare(r *record) error {
	r.hsds = []hsdsOut{}
	name, ok := HSDSFiles[r.kind]
	if !ok {
		return nil
	}
	v, err := r.hsdsView()
	if err != nil {
		return err
	}
	switch r.kind {
	case dirsvc.KindOrganisation:
		phones, email := hsdsContacts(v.PublicID, v.Contacts)
		return r.addHSDS(name, &hsdsOrganization{ID: HSDSID(v.PublicID), Name: v.Name, Description: v.Description, Email: email,
			Website: v.Website, Logo: v.Logo, Phones: phones})
	case dirsvc.KindLocation:
		phones, _ := hsdsContacts(v.PublicID, v.Contacts)
		l := hsdsLocation{ID: HSDSID(v.PublicID), LocationType: "physical", OrganizationID: w.ref(v.Organisation.PublicID),
			Name: v.Name, Description: v.Description, Phones: phones}
		if v.Point != nil {
			l.Latitude, l.Longitude = &v.Point.Lat, &v.Point.Lon
		}
		if a := v.Address; a != nil {
			ad := hsdsAddress{ID: hsdsID(v.PublicID, "/address"), LocationID: l.ID, City: a.Locality, StateProvince: a.State,
				PostalCode: a.Postcode, Country: a.Country, AddressType: "physical"}
			if len(a.Lines) > 0 {
				ad.Address1 = a.Lines[0]
				ad.Address2 = strings.Join(a.Lines[1:], ", ")
			}
			l.Addresses = []hsdsAddress{ad}
		}
		return r.addHSDS(name, &l)
	case dirsvc.KindService:
		phones, email := hsdsContacts(v.PublicID, v.Contacts)
		s := hsdsService{ID: HSDSID(v.PublicID), OrganizationID: w.ref(v.Organisation.PublicID), Name: v.Name,
			Description: v.Description, URL: v.Website, Email: email, Status: "active", Phones: phones}
		if !v.LastUpdated.IsZero() {
			s.LastModified = v.LastUpdated.UTC().Format("2006-01-02T15:04:05Z07:00")
		}
		if err := r.addHSDS(name, &s); err != nil {
			return err
		}
		if v.Location != nil {
			if loc := w.ref(v.Location.PublicID); loc != "" {
				return r.addHSDS(HSDSServiceAtLocations, &hsdsServiceAtLocation{ID: hsdsID(v.PublicID, "@", v.Location.PublicID),
					ServiceID: s.ID, LocationID: loc})
			}
		}
	}
	return nil
}

func (w *hsdsWriter) commit() ([]File, error) {
	var out []File
	for i, name := range w.order {
		f := w.files[name]
		n, err := f.commit()
		if err != nil {
			for _, rest := range w.order[i+1:] {
				w.files[rest].abort()
			}
			return nil, err
		}
		out = append(out, File{Name: name, Format: dirsvc.ExportHSDS, Type: w.types[name], Count: f.count, Bytes: n})
	}
	return out, nil
}

func (w *hsdsWriter) abort() {
	for _, f := range w.files {
		f.abort()
	}
}
