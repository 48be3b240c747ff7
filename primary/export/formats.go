package export

import (
	"context"
	"encoding/json"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/fhir"
	jsonv2 "github.com/go-json-experiment/json"
)

// record is one record of the snapshot as the caller receives it.
type record struct {
	kind dirsvc.Kind
	id   string
	// body is the view (for an organisation given with leadership, with its leadership member).
	body []byte
	// leaders, for an organisation, are its current leaders when the caller receives them.
	leaders []dirsvc.LeaderView
	view    any                // decoded on first use
	rhead   *dirsvc.RecordHead // the view's head, decoded alone (head)
	// fhir holds the record's FHIR resources once a worker mapped them (prepared is then set).
	fhir     []fhirOut
	prepared bool
	// csv is the record's CSV row, and hsds its HSDS objects, once a worker made them.
	csv  []byte
	hsds []hsdsOut
	// out, when set, is the block of the record's batch: the worker that prepares the record writes
	// its FHIR resources' bodies into it (fhir.Mapper.Bodies), and they are valid until the batch
	// is written.
	out *[]byte
}

// fhirOut is a resource of a record and the type of the file it goes to.
type fhirOut struct {
	t   string
	res *fhir.Resource
}

// decoded returns the record's view decoded by the FHIR mapper m (which may leave out what its
// mapping does not read).
func (r *record) decoded(m *fhir.Mapper) (any, error) {
	if r.view != nil {
		return r.view, nil
	}
	v, err := m.DecodeView(r.kind, r.body)
	if err != nil {
		return nil, err
	}
	r.view = v
	return v, nil
}

// head returns the head of the record's view: of the decoded view, else decoded alone (the rest of
// the view skipped).
func (r *record) head() (*dirsvc.RecordHead, error) {
	if r.view != nil {
		if h, _ := r.view.(interface{ Head() *dirsvc.RecordHead }); h != nil {
			return h.Head(), nil
		}
		return &dirsvc.RecordHead{}, nil
	}
	if r.rhead == nil {
		var h dirsvc.RecordHead
		if err := jsonv2.Unmarshal(r.body, &h); err != nil {
			return nil, err
		}
		r.rhead = &h
	}
	return r.rhead, nil
}

// formatWriter writes the records of one format into its files.
type formatWriter interface {
	// begin starts the records of a kind (the kinds come in ExportKinds order).
	begin(kind dirsvc.Kind) error
	write(ctx context.Context, r *record) error
	// end ends the records of a kind.
	end(kind dirsvc.Kind) error
	// commit completes the files and names them; abort removes them.
	commit() ([]File, error)
	abort()
}

// plural names the records of a kind in file names and JSON members.
var plural = map[dirsvc.Kind]string{
	dirsvc.KindOrganisation: "organisations", dirsvc.KindLocation: "locations", dirsvc.KindService: "services",
	dirsvc.KindPractitioner: "practitioners", dirsvc.KindRole: "roles",
}

// run is what the writers of one export share.
type run struct {
	dir     string // the export's folder
	opts    *Options
	info    *dirsvc.Directory
	at      time.Time
	parts   int
	baseURL string
	files   []*partFile // every file the writers made (create)
}

// create creates a file of the export, written in parts.
func (r *run) create(name string) (*partFile, error) {
	f, err := createPart(r.dir, name, r.parts)
	if err == nil {
		r.files = append(r.files, f)
	}
	return f, err
}

// settle writes out what the files hold and begins a background sync of each file written since its
// last one began: called when a kind's records are written, so that the files of the kinds before
// the last are on the disk by the end of the export, and its commit waits only for the last kind's.
func (r *run) settle() error {
	for _, f := range r.files {
		if err := f.settle(); err != nil {
			return err
		}
	}
	return nil
}

// jsonWriter writes the JSON export: one file, one line of JSON, an object with the directory's
// description and an array of each kind's views.
type jsonWriter struct {
	run   *run
	f     *partFile
	first bool
}

func newJSONWriter(r *run) (*jsonWriter, error) {
	f, err := r.create("directory.json")
	if err != nil {
		return nil, err
	}
	head, err := json.Marshal(struct {
		Directory   string `json:"directory"`
		Name        string `json:"name"`
		Audience    string `json:"audience"`
		ExportedAt  string `json:"exportedAt"`
		Licence     string `json:"licence"`
		Attribution string `json:"attribution,omitempty"`
	}{r.info.Slug, r.info.Name, r.opts.Viewer.Audience.String(), r.at.Format(time.RFC3339Nano), r.info.Licence, r.info.Attribution})
	if err != nil {
		f.abort()
		return nil, err
	}
	f.Write(head[:len(head)-1]) // the object stays open for the kinds' arrays
	return &jsonWriter{run: r, f: f}, nil
}

func (w *jsonWriter) begin(kind dirsvc.Kind) error {
	w.first = true
	_, err := w.f.WriteString(`,"` + plural[kind] + `":[`)
	return err
}

func (w *jsonWriter) write(_ context.Context, r *record) error {
	if !w.first {
		w.f.Write([]byte{','})
	}
	w.first = false
	if _, err := w.f.Write(r.body); err != nil {
		return err
	}
	return w.f.recorded()
}

func (w *jsonWriter) end(dirsvc.Kind) error {
	_, err := w.f.WriteString("]")
	return err
}

func (w *jsonWriter) commit() ([]File, error) {
	if _, err := w.f.WriteString("}\n"); err != nil {
		w.f.abort()
		return nil, err
	}
	n, err := w.f.commit()
	if err != nil {
		return nil, err
	}
	return []File{{Name: w.f.name, Format: dirsvc.ExportJSON, Count: w.f.count, Bytes: n}}, nil
}

func (w *jsonWriter) abort() { w.f.abort() }

// fhirWriter writes FHIR NDJSON: a file per resource type, one resource per line, made by the fhir
// package's mapping from the views the caller receives (as the FHIR server makes them).
type fhirWriter struct {
	run    *run
	mapper *fhir.Mapper
	types  map[string]bool // the resource types asked for
	files  map[string]*partFile
	order  []string
}

func newFHIRWriter(r *run, readable func(id string) bool) *fhirWriter {
	types := map[string]bool{}
	for _, t := range fhir.Types {
		types[t] = len(r.opts.FHIRTypes) == 0
	}
	for _, t := range r.opts.FHIRTypes {
		types[t] = true
	}
	return &fhirWriter{run: r, types: types, files: map[string]*partFile{},
		mapper: &fhir.Mapper{Country: r.info.Country, Canonical: fhir.Canonical(r.baseURL), Readable: readable, BodiesOnly: true}}
}

// FHIRFileName is the name of the NDJSON file of a resource type.
func FHIRFileName(t string) string { return t + ".ndjson" }

func (w *fhirWriter) out(t string, res *fhir.Resource) error {
	f := w.files[t]
	if f == nil {
		var err error
		if f, err = w.run.create(FHIRFileName(t)); err != nil {
			return err
		}
		w.files[t] = f
		w.order = append(w.order, t)
	}
	f.Write(res.Body)
	if _, err := f.Write([]byte{'\n'}); err != nil {
		return err
	}
	return f.recorded()
}

func (w *fhirWriter) begin(dirsvc.Kind) error { return nil }
func (w *fhirWriter) end(dirsvc.Kind) error   { return nil }

func (w *fhirWriter) write(_ context.Context, r *record) error {
	if !r.prepared {
		if err := w.prepare(r); err != nil {
			return err
		}
	}
	for _, o := range r.fhir {
		if err := w.out(o.t, o.res); err != nil {
			return err
		}
	}
	r.fhir = nil
	return nil
}

// prepare maps a record to the resources asked for: its own, and a service's endpoints. The
// mapper's only state is the readability it asks, which is safe for the workers to share.
func (w *fhirWriter) prepare(r *record) error {
	r.prepared = true
	t := fhir.TypeOf(r.kind)
	wantEndpoints := r.kind == dirsvc.KindService && w.types[fhir.TypeEndpoint]
	if !w.types[t] && !wantEndpoints {
		return nil
	}
	v, err := r.decoded(w.mapper)
	if err != nil {
		return err
	}
	m := w.mapper
	if r.out != nil {
		mb := *w.mapper
		mb.Bodies = r.out
		m = &mb
	}
	if w.types[t] {
		var res *fhir.Resource
		if ov, ok := v.(*dirsvc.OrganisationView); ok {
			res, err = m.Organization(ov, r.leaders)
		} else {
			res, err = m.Map(v)
		}
		if err != nil {
			return err
		}
		r.fhir = append(r.fhir, fhirOut{t, res})
	}
	if wantEndpoints {
		eps, err := m.Endpoints(v.(*dirsvc.ServiceView))
		if err != nil {
			return err
		}
		for _, ep := range eps {
			r.fhir = append(r.fhir, fhirOut{fhir.TypeEndpoint, ep})
		}
	}
	return nil
}

func (w *fhirWriter) commit() ([]File, error) {
	var out []File
	for i, t := range w.order {
		f := w.files[t]
		n, err := f.commit()
		if err != nil {
			for _, rest := range w.order[i+1:] {
				w.files[rest].abort()
			}
			return nil, err
		}
		out = append(out, File{Name: f.name, Format: dirsvc.ExportFHIR, Type: t, Count: f.count, Bytes: n})
	}
	return out, nil
}

func (w *fhirWriter) abort() {
	for _, f := range w.files {
		f.abort()
	}
}

// attributionText is ATTRIBUTION.txt: the directory's data licence and its address attribution
// (section 1, items 8 and 9).
func attributionText(info *dirsvc.Directory, a dirsvc.Audience, at time.Time) string {
	s := info.Name + " (" + info.Slug + ")\nExported " + at.Format(time.RFC3339) + " for the " + a.String() + " tier.\n\n" +
		"Data licence\n" + info.Licence + "\n"
	if info.Attribution != "" {
		s += "\nAddress attribution\n" + info.Attribution + "\nWhoever shows or passes on these addresses keeps this attribution.\n"
	}
	return s
}
