// Package primary holds the write side of the service: ingest and lifecycle operations on directories,
// and (in later parts) the token endpoint, webhooks, exports and federation writes.
package primary

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/dirsvc/dirsvc"
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
	return strings.TrimSpace(b.String()) + ": " + e.Msg
}

// ParseImport reads a whole directory in the import format (docs/import-format.md), applies the
// documented defaults, normalises phone numbers to E.164 and checks everything, including that every
// reference resolves inside the file. It returns the first error found, naming line, record and field.
func ParseImport(r io.Reader) (*dirsvc.Snapshot, error) {
	p := &parser{snap: &dirsvc.Snapshot{}, lines: map[string]int{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxImportLine)
	for sc.Scan() {
		p.line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		if err := p.parseLine(b); err != nil {
			return nil, err
		}
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
	if err := p.check(); err != nil {
		return nil, err
	}
	return p.snap, nil
}

type parser struct {
	snap    *dirsvc.Snapshot
	line    int
	haveDir bool
	lines   map[string]int // public ID -> line
}

func (p *parser) fail(record, field, format string, args ...any) error {
	return &ImportError{Line: p.line, Record: record, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// decodeStrict decodes b into v, refusing unknown fields so a misspelt field is an error, not a
// silently dropped detail.
func decodeStrict(b []byte, v any) error {
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

func (p *parser) parseLine(b []byte) error {
	var head kindField
	if err := json.Unmarshal(b, &head); err != nil {
		return p.fail("", "", "not a JSON object: %v", err)
	}
	if !p.haveDir && head.Kind != "directory" {
		return p.fail("", "kind", "the first line must be the directory, not %q", head.Kind)
	}
	decode := func(v any) error {
		if err := decodeStrict(b, v); err != nil {
			return p.fail("", "", "invalid %s: %v", head.Kind, err)
		}
		return nil
	}
	t := &p.snap.Taxonomy
	var rec dirsvc.Record
	switch head.Kind {
	case "directory":
		if p.haveDir {
			return p.fail("", "kind", "a second directory line")
		}
		p.haveDir = true
		var v struct {
			kindField
			dirsvc.Directory
		}
		if err := decode(&v); err != nil {
			return err
		}
		p.snap.Directory = v.Directory
		return nil
	case "category":
		var v struct {
			kindField
			dirsvc.Category
		}
		if err := decode(&v); err != nil {
			return err
		}
		t.Categories = append(t.Categories, v.Category)
		return nil
	case "platformType":
		var v struct {
			kindField
			dirsvc.PlatformType
		}
		if err := decode(&v); err != nil {
			return err
		}
		t.PlatformTypes = append(t.PlatformTypes, v.PlatformType)
		return nil
	case "localType":
		var v struct {
			kindField
			dirsvc.LocalType
		}
		if err := decode(&v); err != nil {
			return err
		}
		t.LocalTypes = append(t.LocalTypes, v.LocalType)
		return nil
	case "program", "targetGroup":
		var v struct {
			kindField
			dirsvc.Term
		}
		list := &t.Programs
		if head.Kind == "targetGroup" {
			list = &t.TargetGroups
		}
		if err := decode(&v); err != nil {
			return err
		}
		*list = append(*list, v.Term)
		return nil
	case "collection":
		var v struct {
			kindField
			dirsvc.Collection
		}
		if err := decode(&v); err != nil {
			return err
		}
		p.snap.Collections = append(p.snap.Collections, v.Collection)
		return nil
	case "organisation":
		var v struct {
			kindField
			dirsvc.Organisation
		}
		rec = &v.Organisation
		if err := decode(&v); err != nil {
			return err
		}
	case "location":
		var v struct {
			kindField
			dirsvc.Location
		}
		rec = &v.Location
		if err := decode(&v); err != nil {
			return err
		}
	case "service":
		var v struct {
			kindField
			dirsvc.Service
		}
		rec = &v.Service
		if err := decode(&v); err != nil {
			return err
		}
	case "practitioner":
		var v struct {
			kindField
			dirsvc.Practitioner
		}
		rec = &v.Practitioner
		if err := decode(&v); err != nil {
			return err
		}
	case "role":
		var v struct {
			kindField
			dirsvc.PractitionerRole
		}
		rec = &v.PractitionerRole
		if err := decode(&v); err != nil {
			return err
		}
	default:
		return p.fail("", "kind", "unknown kind %q", head.Kind)
	}
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
