package export

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/dirsvc/dirsvc"
	"github.com/go-json-experiment/json/jsontext"
)

// CSV files: one per record kind, a column per field of the kind's view (the view's JSON names, in
// the view's order), the ownership columns ownershipType and ownershipSource last. A cell holds a
// text, number or boolean as it is; a reference its public ID; a coded value its code; a time in
// UTC (RFC 3339); an empty list nothing; any other structure its compact JSON; a field absent or null
// from the view holds what its Go zero value would. Cells are made from the view the caller receives,
// so a CSV holds nothing the caller's REST answers do not.
//
// The cells are read from the view's JSON in one pass (no decoding into the view type): a
// structure's compact JSON is its bytes in the view, which the publisher wrote with encoding/json
// from the same type.

// cellKind says how a column's cell is read from the view's JSON value.
type cellKind uint8

const (
	cellText  cellKind = iota // a string, or a pointer to one: the text
	cellBool                  // true or false
	cellInt                   // an integer
	cellFloat                 // a floating-point number, without exponent
	cellRef                   // a reference: its publicId
	cellCode                  // a coded value (ownership, code and label): its code
	cellTime                  // a time: RFC 3339 in UTC, empty when zero
	cellJSON                  // any other structure: its JSON; a list or map empty when it has no entries
)

// csvColumn is one column: the JSON name of its field in the view, how its cell is read, and the
// cell of a field absent or null.
type csvColumn struct {
	name string
	kind cellKind
	// blankEmpty: the field is a list or map, whose cell is empty when it has no entries.
	blankEmpty bool
	zero       string
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
	for _, c := range csvColumnsOf[kind].cols {
		out = append(out, c.name)
	}
	return out
}

// csvTable is the columns of a kind's CSV file, and the column of each JSON name.
type csvTable struct {
	cols   []csvColumn
	byName map[string]int
	header []byte // the header row
}

// csvColumnsOf are the columns of each kind's CSV file.
var csvColumnsOf = func() map[dirsvc.Kind]*csvTable {
	m := map[dirsvc.Kind]*csvTable{}
	for kind, t := range csvViews {
		tb := &csvTable{cols: columnsOf(t), byName: map[string]int{}}
		for i, c := range tb.cols {
			tb.byName[c.name] = i
			if i > 0 {
				tb.header = append(tb.header, ',')
			}
			tb.header = appendCSVField(tb.header, []byte(c.name))
		}
		tb.header = append(tb.header, '\n')
		m[kind] = tb
	}
	return m
}()

var (
	refType       = reflect.TypeFor[dirsvc.Ref]()
	ownershipType = reflect.TypeFor[dirsvc.Ownership]()
	codeLabelType = reflect.TypeFor[dirsvc.CodeLabel]()
	timeType      = reflect.TypeFor[time.Time]()
)

func columnsOf(view reflect.Type) []csvColumn {
	var cols, last []csvColumn
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Anonymous {
				walk(f.Type)
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" || !f.IsExported() {
				continue
			}
			c := columnOf(name, f.Type)
			if name == ownershipColumns[0] || name == ownershipColumns[1] {
				last = append(last, c)
			} else {
				cols = append(cols, c)
			}
		}
	}
	walk(view)
	for _, n := range ownershipColumns {
		for _, c := range last {
			if c.name == n {
				cols = append(cols, c)
			}
		}
	}
	return cols
}

// columnOf returns the column of a field of type t.
func columnOf(name string, t reflect.Type) csvColumn {
	c := csvColumn{name: name}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	} else {
		// A field that is not a pointer holds its zero value when absent or null.
		c.zero = zeroCell(t)
	}
	switch t {
	case refType:
		c.kind = cellRef
		return c
	case ownershipType, codeLabelType:
		c.kind = cellCode
		return c
	case timeType:
		c.kind = cellTime
		return c
	}
	switch t.Kind() {
	case reflect.String:
		c.kind = cellText
	case reflect.Bool:
		c.kind = cellBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		c.kind = cellInt
	case reflect.Float32, reflect.Float64:
		c.kind = cellFloat
	default:
		c.kind = cellJSON
		c.blankEmpty = t.Kind() == reflect.Slice || t.Kind() == reflect.Map
	}
	return c
}

// zeroCell is the cell of a field of type t (not a pointer) absent from the view or null.
func zeroCell(t reflect.Type) string {
	switch t {
	case refType, ownershipType, codeLabelType, timeType:
		return ""
	}
	switch t.Kind() {
	case reflect.String, reflect.Slice, reflect.Map:
		return ""
	case reflect.Bool:
		return "false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Float32, reflect.Float64:
		return "0"
	}
	b, err := json.Marshal(reflect.Zero(t).Interface())
	if err != nil {
		panic(err)
	}
	return string(b)
}

// CSVFileName is the name of the CSV file of a kind.
func CSVFileName(kind dirsvc.Kind) string { return plural[kind] + ".csv" }

// csvWriter writes a CSV file per kind.
type csvWriter struct {
	run   *run
	f     *partFile
	kind  dirsvc.Kind
	done  []*partFile
	kinds []dirsvc.Kind // of done's files
}

func (w *csvWriter) begin(kind dirsvc.Kind) error {
	f, err := w.run.create(CSVFileName(kind))
	if err != nil {
		return err
	}
	w.f, w.kind = f, kind
	_, err = f.Write(csvColumnsOf[kind].header)
	return err
}

func (w *csvWriter) write(_ context.Context, r *record) error {
	if r.csv == nil {
		if err := w.prepare(r); err != nil {
			return err
		}
	}
	if _, err := w.f.Write(r.csv); err != nil {
		return err
	}
	r.csv = nil
	return w.f.recorded()
}

// prepare makes a record's row, ahead of the writing.
func (w *csvWriter) prepare(r *record) error {
	row, err := csvRow(r.kind, r.body)
	if err != nil {
		return fmt.Errorf("the CSV row of %s: %w", r.id, err)
	}
	r.csv = row
	return nil
}

func (w *csvWriter) end(dirsvc.Kind) error {
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

// csvReader is the reused space of one reading of a view into its row.
type csvReader struct {
	buf   bytes.Buffer // the view, which the decoder reads in place
	dec   jsontext.Decoder
	cells []byte     // the cells read, one after another
	spans []cellSpan // each column's cell in cells
}

// cellSpan is where a column's cell is in csvReader.cells; a column not set holds its zero cell.
type cellSpan struct {
	start, end int
	set        bool
}

var csvReaders = sync.Pool{New: func() any { return new(csvReader) }}

var errNotObject = errors.New("the view is not a JSON object")

// csvRow returns the CSV row (with its line end) of a view of kind.
func csvRow(kind dirsvc.Kind, body []byte) ([]byte, error) {
	tb := csvColumnsOf[kind]
	rd := csvReaders.Get().(*csvReader)
	defer func() {
		rd.buf = bytes.Buffer{} // the view is not kept
		csvReaders.Put(rd)
	}()
	rd.buf = *bytes.NewBuffer(body)
	rd.dec.Reset(&rd.buf, jsontext.AllowDuplicateNames(true)) // names are not checked for repeats: the publisher wrote the view
	rd.cells = rd.cells[:0]
	if cap(rd.spans) < len(tb.cols) {
		rd.spans = make([]cellSpan, len(tb.cols))
	}
	rd.spans = rd.spans[:len(tb.cols)]
	clear(rd.spans)
	if err := rd.read(tb); err != nil {
		return nil, err
	}
	row := make([]byte, 0, len(rd.cells)+2*len(tb.cols)+16)
	for i, c := range tb.cols {
		if i > 0 {
			row = append(row, ',')
		}
		if sp := rd.spans[i]; sp.set {
			row = appendCSVField(row, rd.cells[sp.start:sp.end])
		} else {
			row = appendCSVField(row, []byte(c.zero))
		}
	}
	return append(row, '\n'), nil
}

// read reads the cells of the view's members that are columns.
func (rd *csvReader) read(tb *csvTable) error {
	d := &rd.dec
	if tok, err := d.ReadToken(); err != nil {
		return err
	} else if tok.Kind() != '{' {
		return errNotObject
	}
	for d.PeekKind() != '}' {
		name, err := d.ReadValue()
		if err != nil {
			return err
		}
		i, ok := tb.byName[string(memberName(name))]
		if !ok {
			if err := d.SkipValue(); err != nil {
				return err
			}
			continue
		}
		start := len(rd.cells)
		set, err := rd.cell(&tb.cols[i])
		if err != nil {
			return fmt.Errorf("%s: %w", tb.cols[i].name, err)
		}
		rd.spans[i] = cellSpan{start, len(rd.cells), set}
	}
	_, err := d.ReadToken()
	return err
}

// memberName returns a member name as read (quoted) without its quotes, unescaped.
func memberName(v jsontext.Value) []byte {
	if bytes.IndexByte(v, '\\') < 0 {
		return v[1 : len(v)-1]
	}
	b, err := jsontext.AppendUnquote(nil, v)
	if err != nil {
		return nil
	}
	return b
}

var errCellType = errors.New("a value of another type than the view's field")

// cell reads the next value as column c's cell into rd.cells; it reports false for a null (the
// column's zero cell).
func (rd *csvReader) cell(c *csvColumn) (bool, error) {
	d := &rd.dec
	if d.PeekKind() == 'n' {
		return false, d.SkipValue()
	}
	switch c.kind {
	case cellRef:
		return true, rd.member("publicId")
	case cellCode:
		return true, rd.member("code")
	}
	v, err := d.ReadValue()
	if err != nil {
		return false, err
	}
	switch c.kind {
	case cellText:
		if v.Kind() != '"' {
			return false, errCellType
		}
		rd.cells, err = jsontext.AppendUnquote(rd.cells, v)
	case cellBool:
		switch v.Kind() {
		case 't':
			rd.cells = append(rd.cells, "true"...)
		case 'f':
			rd.cells = append(rd.cells, "false"...)
		default:
			return false, errCellType
		}
	case cellInt:
		var n int64
		if v.Kind() != '0' {
			return false, errCellType
		}
		if n, err = strconv.ParseInt(string(v), 10, 64); err == nil {
			rd.cells = strconv.AppendInt(rd.cells, n, 10)
		}
	case cellFloat:
		var f float64
		if v.Kind() != '0' {
			return false, errCellType
		}
		if f, err = strconv.ParseFloat(string(v), 64); err == nil {
			rd.cells = strconv.AppendFloat(rd.cells, f, 'f', -1, 64)
		}
	case cellTime:
		var s []byte
		var t time.Time
		if v.Kind() != '"' {
			return false, errCellType
		}
		if s, err = jsontext.AppendUnquote(rd.cells[len(rd.cells):], v); err != nil {
			return false, err
		}
		if t, err = time.Parse(time.RFC3339, string(s)); err == nil && !t.IsZero() {
			rd.cells = t.UTC().AppendFormat(rd.cells, time.RFC3339Nano)
		}
	case cellJSON:
		if !c.blankEmpty || len(bytes.TrimSpace(v[1:len(v)-1])) > 0 {
			rd.cells = append(rd.cells, v...)
		}
	}
	return true, err
}

// member reads the next value, an object, and puts the text of its member name in rd.cells.
func (rd *csvReader) member(name string) error {
	d, start := &rd.dec, len(rd.cells)
	if tok, err := d.ReadToken(); err != nil {
		return err
	} else if tok.Kind() != '{' {
		return errCellType
	}
	for d.PeekKind() != '}' {
		n, err := d.ReadValue()
		if err != nil {
			return err
		}
		if string(memberName(n)) != name || d.PeekKind() != '"' {
			if err := d.SkipValue(); err != nil {
				return err
			}
			continue
		}
		v, err := d.ReadValue()
		if err != nil {
			return err
		}
		// The last one counts, as in decoding.
		if rd.cells, err = jsontext.AppendUnquote(rd.cells[:start], v); err != nil {
			return err
		}
	}
	_, err := d.ReadToken()
	return err
}

// appendCSVField appends a field of a CSV row as encoding/csv writes it (quoted when it holds a
// comma, quote or line break, or starts with a space; quotes doubled).
func appendCSVField(dst, f []byte) []byte {
	if !csvNeedsQuotes(f) {
		return append(dst, f...)
	}
	dst = append(dst, '"')
	for {
		i := bytes.IndexByte(f, '"')
		if i < 0 {
			dst = append(dst, f...)
			break
		}
		dst = append(dst, f[:i+1]...)
		dst = append(dst, '"')
		f = f[i+1:]
	}
	return append(dst, '"')
}

func csvNeedsQuotes(f []byte) bool {
	if len(f) == 0 {
		return false
	}
	if string(f) == `\.` {
		return true
	}
	for _, c := range f {
		if c == '\n' || c == '\r' || c == '"' || c == ',' {
			return true
		}
	}
	r, _ := utf8.DecodeRune(f)
	return unicode.IsSpace(r)
}
