package primary

import (
	"bufio"
	"bytes"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/primary/demo"
)

// lineValues makes, for each kind of import line, the zero value its line is decoded into (as
// lineKinds declares them).
var lineValues = map[string]func() any{
	"directory": func() any {
		return &struct {
			kindField
			dirsvc.Directory
		}{}
	},
	"category": func() any {
		return &struct {
			kindField
			dirsvc.Category
		}{}
	},
	"platformType": func() any {
		return &struct {
			kindField
			dirsvc.PlatformType
		}{}
	},
	"localType": func() any {
		return &struct {
			kindField
			dirsvc.LocalType
		}{}
	},
	"program": func() any {
		return &struct {
			kindField
			dirsvc.Term
		}{}
	},
	"collection": func() any {
		return &struct {
			kindField
			dirsvc.Collection
		}{}
	},
	"organisation": func() any {
		return &struct {
			kindField
			dirsvc.Organisation
		}{}
	},
	"location": func() any {
		return &struct {
			kindField
			dirsvc.Location
		}{}
	},
	"service": func() any {
		return &struct {
			kindField
			dirsvc.Service
		}{}
	},
	"practitioner": func() any {
		return &struct {
			kindField
			dirsvc.Practitioner
		}{}
	},
	"role": func() any {
		return &struct {
			kindField
			dirsvc.PractitionerRole
		}{}
	},
}

// decodeSeeds are import lines of every kind (the test files and a small generated directory) and,
// made from them, lines that the two JSON implementations are known to read differently: names in
// another case, a name twice, invalid UTF-8 and lone surrogates, nulls where values belong, numbers
// in other forms, values of the wrong JSON kind, unknown fields and a second value on the line.
func decodeSeeds(t testing.TB) [][]byte {
	var lines [][]byte
	for _, name := range []string{"../testdata/small.ndjson", "../testdata/browse.ndjson"} {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, bytes.Split(bytes.TrimSpace(b), []byte("\n"))...)
	}
	var gen bytes.Buffer
	if err := demo.Generate(&gen, demo.Options{Slug: "seeds", Country: "AU", Services: 40, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(&gen)
	sc.Buffer(nil, MaxImportLine)
	for sc.Scan() {
		lines = append(lines, bytes.Clone(sc.Bytes()))
	}
	edits := [][2]string{
		{`"name":`, `"Name":`},
		{`"publicId":`, `"PUBLICID":`},
		{`{"kind":`, `{"name":"first","kind":`},
		{`{"kind":`, `{"kind":"service","kind":`},
		{`"name":"`, "\"name\":\"\xff"},
		{`"name":"`, `"name":"\ud800 `},
		{`"name":"`, `"name":"\u00e9\n\/`},
		{`"audiences":[`, `"audiences":null,"x":[`},
		{`"audiences":["professional","partner"]`, `"audiences":null`},
		{`"audiences":["staff"]`, `"audiences":"staff"`},
		{`"audiences":[`, `"audiences":[null,`},
		{`"catchment":[`, `"catchment":null,"y":[`},
		{`"catchment":["postcode:2007","lga:17200"]`, `"catchment":null`},
		{`"referral":{`, `"referral":null,"z":{`},
		{`"referral":{"required":true`, `"referral":{"required":null`},
		{`"required":true`, `"required":1`},
		{`"ownershipType":{`, `"ownershipType":[{`},
		{`"name":"`, `"name":null,"n":"`},
		{`,"name":"`, `,"name":7,"n":"`},
		{`"latitude":`, `"latitude":1e1,"l":`},
		{`"latitude":`, `"latitude":"-33.8","l":`},
		{`"order":`, `"order":1.0,"o":`},
		{`"order":`, `"order":1e2,"o":`},
		{`"order":`, `"order":-0,"o":`},
		{`"order":`, `"order":99999999999999999999,"o":`},
		{`"contacts":[`, `"contacts":[{},`},
		{`"contacts":[`, `"contacts":{"a":`},
		{`"kind":"phone"`, `"kind":"Phone"`},
		{`"appointment":"required"`, `"appointment":"required","Appointment":"none"`},
		{`"appointment":"required"`, `"appointment":"required","unknownField":1`},
	}
	// What the store assigns (version, revision, time) may come back in a line, as FormatRecord
	// shows it; both must read it alike, time formats included.
	for _, v := range []string{`"version":3`, `"version":1.5`, `"version":"3"`, `"version":-1`, `"localRevision":null`,
		`"updatedAt":"2026-01-02T03:04:05.678Z"`, `"updatedAt":"2026-01-02T03:04:05+10:00"`,
		`"updatedAt":"2026-01-02t03:04:05z"`, `"updatedAt":"2026-01-02T03:04:05+1000"`,
		`"updatedAt":"2026-01-02 03:04:05Z"`, `"updatedAt":"2026-01-02T24:00:00Z"`, `"updatedAt":"2026-01-02T03:04:05.Z"`,
		`"updatedAt":"2026-01-02T03:04:05,5Z"`, `"updatedAt":"2026-1-2T03:04:05Z"`, `"updatedAt":"0000-01-01T00:00:00Z"`,
		`"updatedAt":"2026-01-02T03:04:05.123456789123Z"`, `"updatedAt":"2026-01-02T03:04:05+24:00"`,
		`"updatedAt":1767322800`, `"updatedAt":null`, `"updatedAt":""`} {
		edits = append(edits, [2]string{`"publicId":`, v + `,"publicId":`})
	}
	var out [][]byte
	for _, line := range lines {
		out = append(out, line, append(bytes.Clone(line), ` {}`...), append(bytes.Clone(line), " \t"...))
		for _, e := range edits {
			if bytes.Contains(line, []byte(e[0])) {
				out = append(out, bytes.Replace(line, []byte(e[0]), []byte(e[1]), 1))
			}
		}
	}
	return out
}

// checkDecodeAgrees holds decodeStrict (JSON v2 first) to decodeStrictV1 (encoding/json alone) on
// one line: the same value, or the same error.
func checkDecodeAgrees(t *testing.T, line []byte) {
	kind, err := kindOf(line)
	if err != nil {
		return
	}
	newValue, ok := lineValues[kind]
	if !ok {
		return
	}
	got, want := newValue(), newValue()
	gotErr, wantErr := decodeStrict(line, got), decodeStrictV1(line, want)
	if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
		t.Fatalf("line %q: error %v, encoding/json's %v", line, gotErr, wantErr)
	}
	if gotErr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("line %q: decoded\n%+v\nencoding/json decodes\n%+v", line, got, want)
	}
}

func TestDecodeStrictAgrees(t *testing.T) {
	seeds := decodeSeeds(t)
	refused := 0
	for _, line := range seeds {
		checkDecodeAgrees(t, line)
		if kind, _ := kindOf(line); lineValues[kind] != nil && decodeStrictV1(line, lineValues[kind]()) != nil {
			refused++
		}
	}
	// The seeds hold both lines encoding/json accepts and lines it refuses, of every kind.
	if refused == 0 || refused == len(seeds) {
		t.Fatalf("%d of %d seeds refused", refused, len(seeds))
	}
	for kind := range lineValues {
		if !bytes.Contains(bytes.Join(seeds, nil), []byte(`{"kind":"`+kind+`"`)) {
			t.Errorf("no seed line of kind %s", kind)
		}
	}
}

// The fast path must not be a slow one: every line of a generated directory decodes with v2.
func TestDecodeStrictTakesV2(t *testing.T) {
	var gen bytes.Buffer
	if err := demo.Generate(&gen, demo.Options{Slug: "v2", Country: "AU", Services: 40, Seed: 4}); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(gen.String()), "\n") {
		kind, err := kindOf([]byte(line))
		if err != nil || lineValues[kind] == nil {
			continue
		}
		if err := decodeV2([]byte(line), lineValues[kind]()); err != nil {
			t.Fatalf("JSON v2 refuses %s: %v", line, err)
		}
	}
}

func FuzzDecodeStrictAgrees(f *testing.F) {
	for _, line := range decodeSeeds(f) {
		f.Add(line)
	}
	f.Fuzz(checkDecodeAgrees)
}
