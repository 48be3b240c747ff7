package fhir

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
)

// domainTexts are values the mapping gives a meaning to (codes, kinds, times, areas, countries).
var domainTexts = []string{
	dirsvc.AppointmentRequired, dirsvc.AppointmentNotRequired, string(dirsvc.ContactPhone), string(dirsvc.ContactMobile),
	string(dirsvc.ContactFax), string(dirsvc.ContactSMS), string(dirsvc.ContactEmail), string(dirsvc.ContactWebsite),
	dirsvc.IdentHPIO, dirsvc.IdentHPII, dirsvc.IdentAhpra, dirsvc.IdentABN, "09:00", "24:00", "closed", "open", "hours",
	"postcode:2000", "state:nsw", "AU", "NZ", "Qld", "4000", "woman", "man", "mon", "sun", "private",
}

// randomize fills v (settable) with random values: every exported member, texts among awkward
// ones, lists of up to three, pointers nil or not, times at random milliseconds.
func randomize(rnd *rand.Rand, v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		switch rnd.Intn(3) {
		case 0:
			v.SetString(awkwardTexts[rnd.Intn(len(awkwardTexts))])
		case 1:
			v.SetString(domainTexts[rnd.Intn(len(domainTexts))])
		default:
			v.SetString(string(rune('a'+rnd.Intn(26))) + "x")
		}
	case reflect.Bool:
		v.SetBool(rnd.Intn(2) == 0)
	case reflect.Int, reflect.Int64:
		v.SetInt(rnd.Int63n(1000))
	case reflect.Float64:
		v.SetFloat(rnd.Float64()*360 - 180)
	case reflect.Pointer:
		if rnd.Intn(4) > 0 {
			v.Set(reflect.New(v.Type().Elem()))
			randomize(rnd, v.Elem())
		}
	case reflect.Slice:
		if n := rnd.Intn(4); n > 0 {
			v.Set(reflect.MakeSlice(v.Type(), n, n))
			for i := range n {
				randomize(rnd, v.Index(i))
			}
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.UnixMilli(rnd.Int63n(1 << 42)).UTC()))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				randomize(rnd, v.Field(i))
			}
		}
	}
}

// TestMapperDecodesWhatTheMappingReads maps random views of every kind decoded in full and decoded
// by a mapper, one that makes bodies only and one that gathers search values: the bodies (and the
// second's references and search values) must be the same, so the members such a mapper leaves
// out are none that the mapping reads. A mapper that writes the bodies into a buffer of the
// caller's (Mapper.Bodies) makes them the same too, one after another in the buffer, each left as
// it was by the bodies written after it. Every record the mapping asks Readable about is one of
// the view's References.
func TestMapperDecodesWhatTheMappingReads(t *testing.T) {
	rnd := rand.New(rand.NewSource(1))
	var asked []string
	full := &Mapper{Country: "AU", Canonical: "https://d.example/fhir", Readable: func(id string) bool {
		asked = append(asked, id)
		return len(id)%2 == 0
	}}
	searching := &Mapper{Country: "AU", Canonical: "https://d.example/fhir", Readable: full.Readable}
	bodies := &Mapper{Country: "AU", Canonical: "https://d.example/fhir", BodiesOnly: true, Readable: full.Readable}
	var buf []byte
	inBuffer := &Mapper{Country: "AU", Canonical: "https://d.example/fhir", BodiesOnly: true, Bodies: &buf, Readable: full.Readable}
	var written [][]byte // the bodies written into buf, and copies of them as they were made
	var copies [][]byte
	kinds := map[dirsvc.Kind]reflect.Type{
		dirsvc.KindOrganisation: reflect.TypeFor[dirsvc.OrganisationView](), dirsvc.KindLocation: reflect.TypeFor[dirsvc.LocationView](),
		dirsvc.KindService: reflect.TypeFor[dirsvc.ServiceView](), dirsvc.KindPractitioner: reflect.TypeFor[dirsvc.PractitionerView](),
		dirsvc.KindRole: reflect.TypeFor[dirsvc.RoleView](),
	}
	// mapAll maps a view decoded in full (m == full) or by m, and gives its bodies, one a line, and
	// (a mapper that gathers them) the resource's references and search values.
	mapAll := func(m *Mapper, kind dirsvc.Kind, body []byte) (bodies, values string) {
		decode := m.DecodeView
		if m == full {
			decode = DecodeView
		}
		v, err := decode(kind, body)
		if err != nil {
			t.Fatal(err)
		}
		asked = asked[:0]
		res, err := m.Map(v)
		if err != nil {
			t.Fatal(err)
		}
		out := bytes.Clone(res.Body)
		if !m.BodiesOnly {
			values = fmt.Sprintf("%q\n%q", res.Refs, res.Search)
		}
		if sv, ok := v.(*dirsvc.ServiceView); ok {
			eps, err := m.Endpoints(sv)
			if err != nil {
				t.Fatal(err)
			}
			for _, ep := range eps {
				out = append(append(out, '\n'), ep.Body...)
			}
		}
		refs := References(v)
		for _, id := range asked {
			if !slices.Contains(refs, id) {
				t.Fatalf("%s view %s: the mapping asked about %s, not one of its References %q", kind, body, id, refs)
			}
		}
		return string(out), values
	}
	for range 2000 {
		for kind, typ := range kinds {
			v := reflect.New(typ)
			randomize(rnd, v.Elem())
			body, err := json.Marshal(v.Interface())
			if err != nil {
				t.Fatal(err)
			}
			want, wantValues := mapAll(full, kind, body)
			if got, values := mapAll(searching, kind, body); got != want || values != wantValues {
				t.Fatalf("%s view %s\nmapped from the full view:\n%s\n%s\nfrom the searching mapper's decoding:\n%s\n%s", kind, body, want, wantValues, got, values)
			}
			if got, _ := mapAll(bodies, kind, body); got != want {
				t.Fatalf("%s view %s\nmapped from the full view:\n%s\nfrom the mapper's decoding:\n%s", kind, body, want, got)
			}
			start := len(buf)
			if got, _ := mapAll(inBuffer, kind, body); got != want {
				t.Fatalf("%s view %s\nmapped from the full view:\n%s\ninto a buffer:\n%s", kind, body, want, got)
			}
			if joined := strings.ReplaceAll(want, "\n", ""); string(buf[start:]) != joined {
				t.Fatalf("%s view %s: the buffer gained\n%s\nnot the bodies\n%s", kind, body, buf[start:], joined)
			}
			view, err := inBuffer.DecodeView(kind, body)
			if err != nil {
				t.Fatal(err)
			}
			res, err := inBuffer.Map(view)
			if err != nil {
				t.Fatal(err)
			}
			written, copies = append(written, res.Body), append(copies, bytes.Clone(res.Body))
		}
		if len(buf) > 1<<20 {
			for i := range written {
				if !bytes.Equal(written[i], copies[i]) {
					t.Fatalf("a body written into the buffer changed:\n%s\nmade as\n%s", written[i], copies[i])
				}
			}
			buf, written, copies = buf[:0], nil, nil
		}
	}
}

// TestMapperDecodingRefusesBrokenViews: a view cut anywhere, or with a byte changed, is refused or
// decoded, never a panic; cut short it is always refused.
func TestMapperDecodingRefusesBrokenViews(t *testing.T) {
	rnd := rand.New(rand.NewSource(2))
	m := &Mapper{BodiesOnly: true}
	for _, kind := range []dirsvc.Kind{dirsvc.KindOrganisation, dirsvc.KindLocation, dirsvc.KindService, dirsvc.KindPractitioner, dirsvc.KindRole} {
		for range 20 {
			v := newView(kind)
			randomize(rnd, reflect.ValueOf(v).Elem())
			body, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := m.DecodeView(kind, body); err != nil {
				t.Fatalf("%s: %v in %s", kind, err, body)
			}
			for n := range len(body) {
				if _, err := m.DecodeView(kind, body[:n]); err == nil {
					t.Fatalf("%s cut to %s decoded", kind, body[:n])
				}
			}
			for range 200 {
				b := bytes.Clone(body)
				const bytesOfJSON = "{}[]\",:\\ 0-tfnx"
				b[rnd.Intn(len(b))] = bytesOfJSON[rnd.Intn(len(bytesOfJSON))]
				m.DecodeView(kind, b) // must not panic
			}
		}
	}
}

func TestTypeOfAgreesWithTheKindTable(t *testing.T) {
	for k, rt := range typeOfKind {
		if got := TypeOf(k); got != rt {
			t.Errorf("TypeOf(%s) = %s, want %s", k, got, rt)
		}
	}
	if got := TypeOf("unknown"); got != "" {
		t.Errorf("TypeOf(unknown) = %s", got)
	}
}
