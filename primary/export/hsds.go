package export

import (
	"context"
	"crypto/sha1"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dirsvc/dirsvc"
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
func HSDSID(name string) string {
	h := sha1.Sum([]byte(hsdsNamespace + name))
	h[6] = h[6]&0x0f | 0x50
	h[8] = h[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

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
	f, err := createPart(w.run.dir, name, w.run.parts)
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

// HSDS objects, with the fields this export fills.
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

// hsdsContacts returns a record's phones and first email.
func hsdsContacts(owner string, cs []dirsvc.ContactView) (phones []hsdsPhone, email string) {
	for i, c := range cs {
		switch {
		case c.Kind.PhoneLike():
			phones = append(phones, hsdsPhone{ID: HSDSID(fmt.Sprintf("%s/contact/%d", owner, i)), Number: c.Value,
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

// add appends an object of the table to the record's.
func (r *record) addHSDS(table string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	r.hsds = append(r.hsds, hsdsOut{table, b})
	return nil
}

// prepare makes a record's HSDS objects, ahead of the writing (r.hsds is then non-nil).
func (w *hsdsWriter) prepare(r *record) error {
	r.hsds = []hsdsOut{}
	name, ok := HSDSFiles[r.kind]
	if !ok {
		return nil
	}
	v, err := r.decoded()
	if err != nil {
		return err
	}
	switch v := v.(type) {
	case *dirsvc.OrganisationView:
		phones, email := hsdsContacts(v.PublicID, v.Contacts)
		return r.addHSDS(name, hsdsOrganization{ID: HSDSID(v.PublicID), Name: v.Name, Description: v.Description, Email: email,
			Website: v.Website, Logo: v.Logo, Phones: phones})
	case *dirsvc.LocationView:
		phones, _ := hsdsContacts(v.PublicID, v.Contacts)
		l := hsdsLocation{ID: HSDSID(v.PublicID), LocationType: "physical", OrganizationID: w.ref(v.Organisation.PublicID),
			Name: v.Name, Description: v.Description, Phones: phones}
		if v.Point != nil {
			l.Latitude, l.Longitude = &v.Point.Lat, &v.Point.Lon
		}
		if a := v.Address; a != nil {
			ad := hsdsAddress{ID: HSDSID(v.PublicID + "/address"), LocationID: l.ID, City: a.Locality, StateProvince: a.State,
				PostalCode: a.Postcode, Country: a.Country, AddressType: "physical"}
			if len(a.Lines) > 0 {
				ad.Address1 = a.Lines[0]
				ad.Address2 = strings.Join(a.Lines[1:], ", ")
			}
			l.Addresses = []hsdsAddress{ad}
		}
		return r.addHSDS(name, l)
	case *dirsvc.ServiceView:
		phones, email := hsdsContacts(v.PublicID, v.Contacts)
		s := hsdsService{ID: HSDSID(v.PublicID), OrganizationID: w.ref(v.Organisation.PublicID), Name: v.Name,
			Description: v.Description, URL: v.Website, Email: email, Status: "active", Phones: phones}
		if !v.LastUpdated.IsZero() {
			s.LastModified = v.LastUpdated.UTC().Format("2006-01-02T15:04:05Z07:00")
		}
		if err := r.addHSDS(name, s); err != nil {
			return err
		}
		if v.Location != nil {
			if loc := w.ref(v.Location.PublicID); loc != "" {
				return r.addHSDS(HSDSServiceAtLocations, hsdsServiceAtLocation{ID: HSDSID(v.PublicID + "@" + v.Location.PublicID),
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
