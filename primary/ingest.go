// Package primary holds the write side of the service: ingest and lifecycle operations on directories,
// and (in later parts) the token endpoint, webhooks, exports and federation writes.
package primary

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"runtime"
	"strings"
	"sync"

	"github.com/dirsvc/dirsvc"
	jsonv2 "github.com/go-json-experiment/json"
)

// MaxImportLine is the longest line an import file may hold.
const MaxImportLine = 4 << 20

// ImportError is an invalid import: it names the line, the record and the field.
type ImportError struct {
	Line   int
	Record string
	Field  string
	Msg    string
}

func (e *ImportError) Error() string {
	var b strings.Builder
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d", e.Line)
	}
	if e.Record != "" {
		fmt.Fprintf(&b, " (%s)", e.Record)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, " %s", e.Field)
	}
	if b.Len() == 0 { // about the whole file, not a line of it
		return e.Msg
	}
	return strings.TrimSpace(b.String()) + ": " + e.Msg
}

// ParseImport reads a whole directory in the import format (docs/import-format.md), applies the
// documented defaults, normalises phone numbers to E.164 and checks everything, including that every
// reference resolves inside the file. It returns the first error found, naming line, record and field.
func ParseImport(r io.Reader) (*dirsvc.Snapshot, error) {
	return parseImport(r, dirsvc.ProgressOf(context.Background()))
}

// parseImport is ParseImport, reporting its two steps to prog: "parse" (each line read and
// checked on its own) with the records read so far, then "check" (every reference resolved).
func parseImport(r io.Reader, prog dirsvc.Progress) (*dirsvc.Snapshot, error) {
	prog.Step("parse", 0)
	p := newParser(nil)
	p.progress = prog
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxImportLine)
	// The directory line comes first: every other line is read in its country.
	for !p.haveDir && sc.Scan() {
		p.line++
		if b := bytes.TrimSpace(sc.Bytes()); len(b) > 0 {
			if err := p.parseLine(b); err != nil {
				return nil, err
			}
		}
	}
	if err := p.parseBatches(sc); err != nil {
		return nil, err
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, &ImportError{Line: p.line + 1, Msg: fmt.Sprintf("line longer than %d bytes", MaxImportLine)}
		}
		return nil, fmt.Errorf("read import: %w", err)
	}
	if !p.haveDir {
		return nil, &ImportError{Msg: "the file holds no directory line"}
	}
	prog.StepDone(len(p.snap.Records))
	prog.Step("check", len(p.snap.Records))
	if err := p.check(); err != nil {
		return nil, err
	}
	prog.StepDone(len(p.snap.Records))
	return p.snap, nil
}

// batchLines is how many lines one worker parses at a time.
const batchLines = 512

// batch is a run of lines parsed by a parser of its own.
type batch struct {
	first int      // line number of lines[0]
	lines [][]byte // copies: the scanner reuses its buffer
	p     *parser
	err   error
	done  chan struct{}
}

// parseBatches parses the remaining lines on every core, in batches, and merges them in file order,
// so the first error in the file is the one reported.
func (p *parser) parseBatches(sc *bufio.Scanner) error {
	work := make(chan *batch)
	pending := make(chan *batch, 2*runtime.GOMAXPROCS(0))
	for range runtime.GOMAXPROCS(0) {
		go func() {
			for b := range work {
				b.p = newParser(&p.snap.Directory)
				b.p.phones = p.phones
				for i, line := range b.lines {
					b.p.line = b.first + i
					if len(line) > 0 {
						if b.err = b.p.parseLine(line); b.err != nil {
							break
						}
					}
				}
				close(b.done)
			}
		}()
	}
	go func() {
		defer close(work)
		defer close(pending)
		for {
			b := &batch{first: p.line + 1, done: make(chan struct{})}
			for len(b.lines) < batchLines && sc.Scan() {
				p.line++
				b.lines = append(b.lines, bytes.Clone(bytes.TrimSpace(sc.Bytes())))
			}
			if len(b.lines) == 0 {
				return
			}
			pending <- b
			work <- b
		}
	}()
	var err error
	for b := range pending {
		<-b.done
		if err == nil {
			err = b.err
			if err == nil {
				err = p.merge(b.p)
			}
			if err == nil && p.progress != nil {
				p.progress.Records(len(p.snap.Records))
			}
		}
	}
	return err
}

// merge appends what a batch parser read, checking its public IDs against those read before.
func (p *parser) merge(b *parser) error {
	for _, rec := range b.snap.Records {
		id := rec.Base().PublicID
		if first, dup := p.lines[id]; dup {
			p.line = b.lines[id]
			return p.fail(id, "publicId", "already used on line %d", first)
		}
		p.lines[id] = b.lines[id]
	}
	p.snap.Records = append(p.snap.Records, b.snap.Records...)
	p.snap.Collections = append(p.snap.Collections, b.snap.Collections...)
	t, bt := &p.snap.Taxonomy, &b.snap.Taxonomy
	t.Categories = append(t.Categories, bt.Categories...)
	t.PlatformTypes = append(t.PlatformTypes, bt.PlatformTypes...)
	t.LocalTypes = append(t.LocalTypes, bt.LocalTypes...)
	t.Programs = append(t.Programs, bt.Programs...)
	t.TargetGroups = append(t.TargetGroups, bt.TargetGroups...)
	return nil
}

// newParser returns a parser; with dir, one that reads lines after the directory line.
func newParser(dir *dirsvc.Directory) *parser {
	p := &parser{snap: &dirsvc.Snapshot{}, lines: map[string]int{}, phones: &sync.Map{}}
	if dir != nil {
		p.snap.Directory, p.haveDir = *dir, true
	}
	return p
}

type parser struct {
	snap    *dirsvc.Snapshot
	line    int
	haveDir bool
	lines   map[string]int // public ID -> line
	// phones maps a number as written to its E.164 form: directories repeat their numbers, and
	// reading them was two fifths of a large import's parsing. The parsers of one file share it.
	phones *sync.Map
	// progress, on the file's own parser, is told of the records read as batches are merged.
	progress dirsvc.Progress
}

func (p *parser) fail(record, field, format string, args ...any) error {
	return &ImportError{Line: p.line, Record: record, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// decodeStrict decodes b into v (a pointer to a zero value), refusing unknown fields so a misspelt
// field is an error, not a silently dropped detail.
//
// A line is first decoded with the JSON v2 implementation (github.com/go-json-experiment/json),
// in less than half the time of encoding/json: decoding was two fifths of a large import's parsing.
// v2 is the stricter of the two (names matched exactly, no duplicate names, valid UTF-8 only), and
// where it accepts a line encoding/json reads the same value from it (FuzzDecodeStrictAgrees). Any
// line v2 refuses is decoded again with encoding/json, whose verdict and error stand: what an
// import accepts, and how it says what is wrong, is encoding/json's.
func decodeStrict(b []byte, v any) error {
	_, err := decodeLine(b, v)
	return err
}

// decodeLine is decodeStrict, saying whether JSON v2 read the line.
func decodeLine(b []byte, v any) (byV2 bool, err error) {
	if decodeV2(b, v) == nil {
		return true, nil
	}
	reflect.ValueOf(v).Elem().SetZero() // what v2 filled before it stopped
	return false, decodeStrictV1(b, v)
}

// decodeV2 is decodeStrict's first try, with JSON v2.
func decodeV2(b []byte, v any) error {
	return jsonv2.Unmarshal(b, v, jsonv2.RejectUnknownMembers(true))
}

// decodeStrictV1 is decodeStrict with encoding/json alone.
func decodeStrictV1(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("more than one JSON value on the line")
	}
	return nil
}

// kindField is the discriminator every line carries; wrappers embed it beside the domain type so
// strict decoding accepts it.
type kindField struct {
	Kind string `json:"kind"`
}

// kindOf returns the kind a line names. A line that starts with its kind (as the examples and the
// generator write them) is read without decoding it twice; strict decoding of the whole line follows
// in every case, so a malformed line is still refused.
func kindOf(b []byte) (string, error) {
	const prefix = `{"kind":"`
	if rest, ok := bytes.CutPrefix(b, []byte(prefix)); ok {
		if end := bytes.IndexByte(rest, '"'); end > 0 && bytes.IndexByte(rest[:end], '\\') < 0 {
			return string(rest[:end]), nil
		}
	}
	var head kindField
	err := json.Unmarshal(b, &head)
	return head.Kind, err
}

// parseLine reads one line of an import file into the snapshot. A CRLF line break inside its
// strings is read as a line feed, as the text rule reads it.
func (p *parser) parseLine(b []byte) error {
	b = dirsvc.NormaliseJSONLineBreaks(b)
	kind, err := kindOf(b)
	if err != nil {
		return p.fail("", "", "not a JSON object: %v", err)
	}
	if !p.haveDir && kind != "directory" {
		return p.fail("", "kind", "the first line must be the directory, not %q", kind)
	}
	parse, ok := lineKinds[kind]
	if !ok {
		return p.fail("", "kind", "unknown kind %q", kind)
	}
	rec, err := parse(p, b)
	if ie, ok := err.(*ImportError); ok && ie.Field != "" && rec != nil && ie.Record == "" {
		// A text of a record that breaks the rule: the record is named, once its ID is text.
		if id := rec.Base().PublicID; dirsvc.CheckText("publicId", id) == nil {
			ie.Record = id
		}
	}
	if err != nil || rec == nil {
		return err
	}
	return p.addRecord(rec)
}

// lineKinds reads each kind of line: into the directory, its taxonomy or its collections (and
// returns nil), or into a record, returned for addRecord.
var lineKinds = map[string]func(p *parser, b []byte) (dirsvc.Record, error){
	"directory": func(p *parser, b []byte) (dirsvc.Record, error) {
		if p.haveDir {
			return nil, p.fail("", "kind", "a second directory line")
		}
		p.haveDir = true
		var v struct {
			kindField
			dirsvc.Directory
		}
		if err := p.decode(b, "directory", &v); err != nil {
			return nil, err
		}
		p.snap.Directory = v.Directory
		return nil, nil
	},
	"category": func(p *parser, b []byte) (dirsvc.Record, error) {
		var v struct {
			kindField
			dirsvc.Category
		}
		if err := p.decode(b, "category", &v); err != nil {
			return nil, err
		}
		p.snap.Taxonomy.Categories = append(p.snap.Taxonomy.Categories, v.Category)
		return nil, nil
	},
	"platformType": func(p *parser, b []byte) (dirsvc.Record, error) {
		var v struct {
			kindField
			dirsvc.PlatformType
		}
		if err := p.decode(b, "platformType", &v); err != nil {
			return nil, err
		}
		p.snap.Taxonomy.PlatformTypes = append(p.snap.Taxonomy.PlatformTypes, v.PlatformType)
		return nil, nil
	},
	"localType": func(p *parser, b []byte) (dirsvc.Record, error) {
		var v struct {
			kindField
			dirsvc.LocalType
		}
		if err := p.decode(b, "localType", &v); err != nil {
			return nil, err
		}
		p.snap.Taxonomy.LocalTypes = append(p.snap.Taxonomy.LocalTypes, v.LocalType)
		return nil, nil
	},
	"program": func(p *parser, b []byte) (dirsvc.Record, error) {
		return nil, p.term(b, "program", &p.snap.Taxonomy.Programs)
	},
	"targetGroup": func(p *parser, b []byte) (dirsvc.Record, error) {
		return nil, p.term(b, "targetGroup", &p.snap.Taxonomy.TargetGroups)
	},
	"collection": func(p *parser, b []byte) (dirsvc.Record, error) {
		var v struct {
			kindField
			dirsvc.Collection
		}
		if err := p.decode(b, "collection", &v); err != nil {
			return nil, err
		}
		p.snap.Collections = append(p.snap.Collections, v.Collection)
		return nil, nil
	},
	"organisation": func(p *parser, b []byte) (dirsvc.Record, error) {
		var v struct {
			kindField
			dirsvc.Organisation
		}
		return &v.Organisation, p.decode(b, "organisation", &v)
	},
	"location": func(p *parser, b []byte) (dirsvc.Record, error) {
		var v struct {
			kindField
			dirsvc.Location
		}
		return &v.Location, p.decode(b, "location", &v)
	},
	"service": func(p *parser, b []byte) (dirsvc.Record, error) {
		var v struct {
			kindField
			dirsvc.Service
		}
		return &v.Service, p.decode(b, "service", &v)
	},
	"practitioner": func(p *parser, b []byte) (dirsvc.Record, error) {
		var v struct {
			kindField
			dirsvc.Practitioner
		}
		return &v.Practitioner, p.decode(b, "practitioner", &v)
	},
	"role": func(p *parser, b []byte) (dirsvc.Record, error) {
		var v struct {
			kindField
			dirsvc.PractitionerRole
		}
		return &v.PractitionerRole, p.decode(b, "role", &v)
	},
}

// decode reads a line of the kind strictly into v, and checks its text by the text rule, naming the
// field at fault. A line encoding/json read (one JSON v2 refused) may give a member twice, which v2
// refuses and encoding/json would take the last of: it is refused here too (dirsvc.CheckJSON). Most
// lines decode with v2 and hold nothing the rule could refuse, and for those one look at the bytes
// is the whole check (dirsvc.CheckJSONText).
func (p *parser) decode(b []byte, kind string, v any) error {
	byV2, err := decodeLine(b, v)
	if err != nil {
		return p.fail("", "", "invalid %s: %v", kind, err)
	}
	check := dirsvc.CheckJSON
	if byV2 {
		check = dirsvc.CheckJSONText
	}
	var e *dirsvc.Error
	if err := check(b); errors.As(err, &e) {
		return p.fail("", e.Param, "%s", e.Message)
	} else if err != nil {
		return err
	}
	return nil
}

// term reads a line of a simple list (programs, target groups) into list.
func (p *parser) term(b []byte, kind string, list *[]dirsvc.Term) error {
	var v struct {
		kindField
		dirsvc.Term
	}
	if err := p.decode(b, kind, &v); err != nil {
		return err
	}
	*list = append(*list, v.Term)
	return nil
}

// addRecord checks a record's public ID, normalises it and adds it to the snapshot.
func (p *parser) addRecord(rec dirsvc.Record) error {
	id := rec.Base().PublicID
	if !dirsvc.ValidPublicID(rec.Kind(), id) {
		return p.fail(id, "publicId", "%q is not a valid %s public ID (prefix %s, then 1 to 64 letters, digits, - or _)", id, rec.Kind(), rec.Kind().IDPrefix())
	}
	if first, dup := p.lines[id]; dup {
		return p.fail(id, "publicId", "already used on line %d", first)
	}
	p.lines[id] = p.line
	if err := p.normalise(rec); err != nil {
		return err
	}
	p.snap.Records = append(p.snap.Records, rec)
	return nil
}
