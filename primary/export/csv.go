package export

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/dirsvc/dirsvc"
)

// CSV files: one per record kind, a column per field of the kind's view (the view's JSON names, in
// the view's order), the ownership columns ownershipType and ownershipSource last. A cell holds a
// text, number or boolean as it is; a reference its public ID; a coded value its code; any other
// structure its compact JSON; a field absent or null from the view is empty. Cells are made from the
// view the caller receives, so a CSV holds nothing the caller's REST answers do not.

// csvColumn is one column: the JSON name and the index path of its field in the view.
type csvColumn struct {
	name  string
	index []int
}

// csvViews are the view types of each kind.
var csvViews = map[dirsvc.Kind]reflect.Type{
	dirsvc.KindOrganisation: reflect.TypeFor[dirsvc.OrganisationView](),
	dirsvc.KindLocation:     reflect.TypeFor[dirsvc.LocationView](),
	dirsvc.KindService:      reflect.TypeFor[dirsvc.ServiceView](),
	dirsvc.KindPractitioner: reflect.TypeFor[dirsvc.PractitionerView](),
	dirsvc.KindRole:         reflect.TypeFor[dirsvc.RoleView](),
}

// ownershipColumns end every CSV that has them, in this order.
var ownershipColumns = []string{"ownershipType", "ownershipSource"}

// CSVColumns returns the columns of the CSV file of a kind.
func CSVColumns(kind dirsvc.Kind) []string {
	var out []string
	for _, c := range csvColumnsOf[kind] {
		out = append(out, c.name)
	}
	return out
}

// csvColumnsOf are the columns of each kind's CSV file.
var csvColumnsOf = func() map[dirsvc.Kind][]csvColumn {
	m := map[dirsvc.Kind][]csvColumn{}
	for kind := range csvViews {
		m[kind] = columnsOf(kind)
	}
	return m
}()

func columnsOf(kind dirsvc.Kind) []csvColumn {
	var cols, last []csvColumn
	var walk func(t reflect.Type, index []int)
	walk = func(t reflect.Type, index []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			idx := append(append([]int{}, index...), i)
			if f.Anonymous {
				walk(f.Type, idx)
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" || !f.IsExported() {
				continue
			}
			c := csvColumn{name, idx}
			if name == ownershipColumns[0] || name == ownershipColumns[1] {
				last = append(last, c)
			} else {
				cols = append(cols, c)
			}
		}
	}
	walk(csvViews[kind], nil)
	for _, n := range ownershipColumns {
		for _, c := range last {
			if c.name == n {
				cols = append(cols, c)
			}
		}
	}
	return cols
}

// CSVFileName is the name of the CSV file of a kind.
func CSVFileName(kind dirsvc.Kind) string { return plural[kind] + ".csv" }

// csvWriter writes a CSV file per kind.
type csvWriter struct {
	run   *run
	f     *partFile
	w     *csv.Writer
	kind  dirsvc.Kind
	done  []*partFile
	kinds []dirsvc.Kind // of done's files
}

func (w *csvWriter) begin(kind dirsvc.Kind) error {
	f, err := createPart(w.run.dir, CSVFileName(kind), w.run.parts)
	if err != nil {
		return err
	}
	w.f, w.kind = f, kind
	w.w = csv.NewWriter(f)
	return w.w.Write(CSVColumns(kind))
}

func (w *csvWriter) write(_ context.Context, r *record) error {
	if r.csv == nil {
		if err := w.prepare(r); err != nil {
			return err
		}
	}
	if err := w.w.Write(r.csv); err != nil {
		return err
	}
	r.csv = nil
	if w.f.sinceFlush+1 >= w.f.partRecords {
		w.w.Flush()
	}
	return w.f.recorded()
}

// prepare makes a record's row (the cells of its view's fields: reflection, and JSON for the
// structured ones), ahead of the writing.
func (w *csvWriter) prepare(r *record) error {
	v, err := r.decoded()
	if err != nil {
		return err
	}
	cols := csvColumnsOf[r.kind]
	rv := reflect.ValueOf(v).Elem()
	r.csv = make([]string, len(cols))
	for i, c := range cols {
		r.csv[i] = cell(rv.FieldByIndex(c.index))
	}
	return nil
}

func (w *csvWriter) end(dirsvc.Kind) error {
	w.w.Flush()
	if err := w.w.Error(); err != nil {
		w.f.abort()
		w.f = nil
		return err
	}
	w.done = append(w.done, w.f)
	w.kinds = append(w.kinds, w.kind)
	w.f = nil
	return nil
}

func (w *csvWriter) commit() ([]File, error) {
	var out []File
	for i, f := range w.done {
		n, err := f.commit()
		if err != nil {
			for _, rest := range w.done[i+1:] {
				rest.abort()
			}
			return nil, err
		}
		out = append(out, File{Name: f.name, Format: dirsvc.ExportCSV, Type: string(w.kinds[i]), Count: f.count, Bytes: n})
	}
	return out, nil
}

func (w *csvWriter) abort() {
	if w.f != nil {
		w.f.abort()
	}
	for _, f := range w.done {
		f.abort()
	}
}

var (
	refType       = reflect.TypeFor[dirsvc.Ref]()
	ownershipType = reflect.TypeFor[dirsvc.Ownership]()
	codeLabelType = reflect.TypeFor[dirsvc.CodeLabel]()
	timeType      = reflect.TypeFor[time.Time]()
)

// cell writes a field's value as a CSV cell.
func cell(v reflect.Value) string {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return ""
		}
		v = v.Elem()
	}
	switch v.Type() {
	case refType:
		return v.Interface().(dirsvc.Ref).PublicID
	case ownershipType:
		return v.Interface().(dirsvc.Ownership).Code
	case codeLabelType:
		return v.Interface().(dirsvc.CodeLabel).Code
	case timeType:
		t := v.Interface().(time.Time)
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339Nano)
	}
	switch v.Kind() {
	case reflect.String:
		return v.String()
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return itoa(v.Int())
	case reflect.Float32, reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'f', -1, 64)
	case reflect.Slice, reflect.Map:
		if v.Len() == 0 {
			return ""
		}
	}
	b, err := json.Marshal(v.Interface())
	if err != nil {
		return ""
	}
	return string(b)
}
