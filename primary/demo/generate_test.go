package demo

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
)

func generate(tb testing.TB, opt Options) []byte {
	tb.Helper()
	var b bytes.Buffer
	if err := Generate(&b, opt); err != nil {
		tb.Fatalf("Generate(%+v): %v", opt, err)
	}
	return b.Bytes()
}

func demoBytes(tb testing.TB) []byte {
	tb.Helper()
	var b bytes.Buffer
	if err := Demo(&b); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

func demoNZBytes(tb testing.TB) []byte {
	tb.Helper()
	var b bytes.Buffer
	if err := DemoNZ(&b); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

func TestGenerateIsDeterministic(t *testing.T) {
	for _, opt := range []Options{
		{Slug: "demo", Country: "AU", Services: 600, Seed: 1},
		{Slug: "demo-nz", Country: "NZ", Services: 60, Seed: 7},
		{Slug: "tiny", Country: "AU", Services: 3, Seed: -5},
	} {
		a, b := generate(t, opt), generate(t, opt)
		if !bytes.Equal(a, b) {
			t.Errorf("%+v: two runs differ", opt)
		}
		other := opt
		other.Seed++
		if bytes.Equal(a, generate(t, other)) {
			t.Errorf("%+v: seed %d gives the same output as seed %d", opt, other.Seed, opt.Seed)
		}
	}
	if !bytes.Equal(demoBytes(t), generate(t, Options{Slug: DefaultSlug, Country: "AU", Services: DefaultServices, Seed: DefaultSeed})) {
		t.Error("Demo differs from Generate with the default options")
	}
	if !bytes.Equal(demoBytes(t), generate(t, Options{Seed: DefaultSeed})) {
		t.Error("zero options do not default to the standard demo")
	}
}

func TestGenerateRejectsBadOptions(t *testing.T) {
	for _, opt := range []Options{
		{Slug: "Not A Slug", Services: 10},
		{Country: "US", Services: 10},
		{Services: -1},
	} {
		if err := Generate(io.Discard, opt); err == nil {
			t.Errorf("Generate(%+v) succeeded", opt)
		}
	}
}

// dir is a generated directory decoded into the root types.
type dir struct {
	Directory     dirsvc.Directory
	Categories    []dirsvc.Category
	PlatformTypes []dirsvc.PlatformType
	LocalTypes    []dirsvc.LocalType
	Programs      []dirsvc.Term
	TargetGroups  []dirsvc.Term
	Collections   []dirsvc.Collection
	Orgs          []*dirsvc.Organisation
	Locs          []*dirsvc.Location
	Svcs          []*dirsvc.Service
	Pracs         []*dirsvc.Practitioner
	Roles         []*dirsvc.PractitionerRole
	byID          map[string]dirsvc.Record
}

// strictInto decodes b into v refusing unknown fields, as the importer does.
func strictInto(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// decode reads a generated file: every line a JSON object with a kind, the first the directory,
// every object made only of the fields of its root type.
func decode(tb testing.TB, body []byte) *dir {
	tb.Helper()
	d := &dir{byID: map[string]dirsvc.Record{}}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 4<<20)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Bytes()
		var head struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal(line, &head); err != nil || head.Kind == "" {
			tb.Fatalf("line %d: not a JSON object with a kind (%v): %.200s", n, err, line)
		}
		if (n == 1) != (head.Kind == "directory") {
			tb.Fatalf("line %d: kind %q; the directory must be the first line and only there", n, head.Kind)
		}
		var err error
		var rec dirsvc.Record
		type k struct {
			Kind string `json:"kind"`
		}
		switch head.Kind {
		case "directory":
			var v struct {
				k
				dirsvc.Directory
			}
			err = strictInto(line, &v)
			d.Directory = v.Directory
		case "category":
			var v struct {
				k
				dirsvc.Category
			}
			err = strictInto(line, &v)
			d.Categories = append(d.Categories, v.Category)
		case "platformType":
			var v struct {
				k
				dirsvc.PlatformType
			}
			err = strictInto(line, &v)
			d.PlatformTypes = append(d.PlatformTypes, v.PlatformType)
		case "localType":
			var v struct {
				k
				dirsvc.LocalType
			}
			err = strictInto(line, &v)
			d.LocalTypes = append(d.LocalTypes, v.LocalType)
		case "program", "targetGroup":
			var v struct {
				k
				dirsvc.Term
			}
			err = strictInto(line, &v)
			if head.Kind == "program" {
				d.Programs = append(d.Programs, v.Term)
			} else {
				d.TargetGroups = append(d.TargetGroups, v.Term)
			}
		case "collection":
			var v struct {
				k
				dirsvc.Collection
			}
			err = strictInto(line, &v)
			d.Collections = append(d.Collections, v.Collection)
		case "organisation":
			var v struct {
				k
				dirsvc.Organisation
			}
			err = strictInto(line, &v)
			d.Orgs = append(d.Orgs, &v.Organisation)
			rec = &v.Organisation
		case "location":
			var v struct {
				k
				dirsvc.Location
			}
			err = strictInto(line, &v)
			d.Locs = append(d.Locs, &v.Location)
			rec = &v.Location
		case "service":
			var v struct {
				k
				dirsvc.Service
			}
			err = strictInto(line, &v)
			d.Svcs = append(d.Svcs, &v.Service)
			rec = &v.Service
		case "practitioner":
			var v struct {
				k
				dirsvc.Practitioner
			}
			err = strictInto(line, &v)
			d.Pracs = append(d.Pracs, &v.Practitioner)
			rec = &v.Practitioner
		case "role":
			var v struct {
				k
				dirsvc.PractitionerRole
			}
			err = strictInto(line, &v)
			d.Roles = append(d.Roles, &v.PractitionerRole)
			rec = &v.PractitionerRole
		default:
			tb.Fatalf("line %d: unknown kind %q", n, head.Kind)
		}
		if err != nil {
			tb.Fatalf("line %d (%s): %v: %.300s", n, head.Kind, err, line)
		}
		if rec != nil {
			id := rec.Base().PublicID
			if !dirsvc.ValidPublicID(rec.Kind(), id) {
				tb.Fatalf("line %d: %q is not a valid %s public ID", n, id, rec.Kind())
			}
			if _, dup := d.byID[id]; dup {
				tb.Fatalf("line %d: public ID %s used twice", n, id)
			}
			d.byID[id] = rec
		}
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return d
}

func TestLinesAreObjectsOfTheRootTypes(t *testing.T) {
	// decode checks kinds, the first line, strict fields and unique public IDs.
	for _, body := range [][]byte{demoBytes(t), demoNZBytes(t), generate(t, Options{Services: 1, Seed: 2})} {
		d := decode(t, body)
		if !bytes.HasPrefix(body, []byte(`{"kind":"directory",`)) {
			t.Errorf("the file does not start with the directory object: %.80s", body)
		}
		if bytes.Count(body, []byte("\n")) != len(d.byID)+1+len(d.Categories)+len(d.PlatformTypes)+
			len(d.LocalTypes)+len(d.Programs)+len(d.TargetGroups)+len(d.Collections) {
			t.Error("some lines were not counted")
		}
	}
}

// live reports whether the record is in the live state.
func live(r dirsvc.Record) bool {
	s := r.Base().State
	return s == "" || s == dirsvc.StateLive
}

func TestReferencesResolve(t *testing.T) {
	for _, body := range [][]byte{demoBytes(t), demoNZBytes(t), generate(t, Options{Services: 5, Seed: 9})} {
		d := decode(t, body)
		for id, rec := range d.byID {
			for kind, ids := range rec.Refs() {
				for _, ref := range ids {
					if r, ok := d.byID[ref]; !ok || r.Kind() != kind {
						t.Errorf("%s refers to %s %q, which is not in the file", id, kind, ref)
					}
				}
			}
			m := rec.Base()
			if m.State == dirsvc.StateMerged {
				s, ok := d.byID[m.Survivor]
				if !ok || s.Kind() != rec.Kind() || !live(s) || m.Survivor == id {
					t.Errorf("merged %s names survivor %q, which is not another live %s", id, m.Survivor, rec.Kind())
				}
			} else if m.Survivor != "" {
				t.Errorf("%s names a survivor but is %q", id, m.State)
			}
			if !m.State.Valid() && m.State != "" {
				t.Errorf("%s: state %q", id, m.State)
			}
		}
		for _, l := range d.Locs {
			switch st := d.byID[l.Organisation].Base().State; st {
			case dirsvc.StateClosed, dirsvc.StateRemoved, dirsvc.StateMerged:
				t.Errorf("location %s belongs to organisation %s in state %s", l.PublicID, l.Organisation, st)
			}
		}
		tax := dirsvc.Taxonomy{Categories: d.Categories, PlatformTypes: d.PlatformTypes, LocalTypes: d.LocalTypes}
		for _, s := range d.Svcs {
			if tax.PlatformType(s.Type) == nil {
				t.Errorf("%s: type %q is not in the taxonomy", s.PublicID, s.Type)
			}
			for _, c := range s.LocalTypes {
				if tax.LocalType(c) == nil {
					t.Errorf("%s: local type %q is not in the taxonomy", s.PublicID, c)
				}
			}
			if s.Slug != "" && !dirsvc.ValidSlug(s.Slug) {
				t.Errorf("%s: slug %q", s.PublicID, s.Slug)
			}
		}
		for _, c := range d.Collections {
			for _, id := range c.Services {
				if r, ok := d.byID[id]; !ok || r.Kind() != dirsvc.KindService {
					t.Errorf("collection %s names %q, which is not a service", c.Slug, id)
				}
			}
		}
		for _, lt := range d.LocalTypes {
			if !dirsvc.ValidSlug(lt.Slug) {
				t.Errorf("local type %s: slug %q", lt.Code, lt.Slug)
			}
		}
	}
}

func TestIdentifiersAndAreasAreValid(t *testing.T) {
	for _, body := range [][]byte{demoBytes(t), demoNZBytes(t)} {
		d := decode(t, body)
		check := func(owner string, ids []dirsvc.Identifier) {
			for _, x := range ids {
				ok := true
				switch x.Type {
				case dirsvc.IdentHPIO:
					ok = len(x.Value) == 16 && strings.HasPrefix(x.Value, "800362") && luhnValid(x.Value)
				case dirsvc.IdentHPII:
					ok = len(x.Value) == 16 && strings.HasPrefix(x.Value, "800361") && luhnValid(x.Value)
				case dirsvc.IdentABN:
					ok = abnValid(x.Value)
				case dirsvc.IdentACN:
					ok = acnValid(x.Value)
				case dirsvc.IdentAhpra:
					ok = len(x.Value) == 13 && strings.ToUpper(x.Value[:3]) == x.Value[:3] && strings.Trim(x.Value[3:], "0123456789") == ""
				case dirsvc.IdentNZBN:
					ok = len(x.Value) == 13 && nzbnFor("0"+x.Value[4:12]) == x.Value
				default:
					ok = x.System != "" && x.Value != ""
				}
				if !ok {
					t.Errorf("%s: invalid %s identifier %q", owner, x.Type, x.Value)
				}
			}
		}
		for _, o := range d.Orgs {
			check(o.PublicID, o.Identifiers)
		}
		for _, l := range d.Locs {
			check(l.PublicID, l.Identifiers)
			for _, a := range l.Areas {
				if !dirsvc.ValidArea(a) {
					t.Errorf("%s: area %q", l.PublicID, a)
				}
			}
		}
		for _, s := range d.Svcs {
			check(s.PublicID, s.Identifiers)
			for _, a := range s.Catchment {
				if !dirsvc.ValidArea(a) {
					t.Errorf("%s: catchment %q", s.PublicID, a)
				}
			}
		}
		for _, p := range d.Pracs {
			check(p.PublicID, p.Identifiers)
		}
	}
}

func TestIdentifierAlgorithms(t *testing.T) {
	// Known good values.
	for _, abn := range []string{"51824753556", "53004085616"} {
		if !abnValid(abn) {
			t.Errorf("abnValid(%s) = false", abn)
		}
	}
	if abnValid("51824753557") {
		t.Error("abnValid accepts a bad checksum")
	}
	if !acnValid("004085616") || acnValid("004085617") {
		t.Error("acnValid is wrong on 004085616 / 004085617")
	}
	if !luhnValid("8003621566684455") || luhnValid("8003621566684454") {
		t.Error("luhnValid is wrong on 8003621566684455 / ...54")
	}
	if got := nzbnFor("094290000"); len(got) != 13 || !strings.HasPrefix(got, "9429") {
		t.Errorf("nzbnFor = %q", got)
	}
	// GS1 check digits of known numbers: EAN-13 4006381333931, GTIN-14 10614141000415.
	if got := gs1Check("400638133393"); got != '1' {
		t.Errorf("gs1Check(400638133393) = %c, want 1", got)
	}
	if got := gs1Check("1061414100041"); got != '5' {
		t.Errorf("gs1Check(1061414100041) = %c, want 5", got)
	}
	seen := map[string]bool{}
	for i := range 5000 {
		v := abnFor(nineDigits(i, 42))
		if !abnValid(v) || seen[v] {
			t.Fatalf("abnFor %d: %q invalid or repeated", i, v)
		}
		seen[v] = true
		if h := hpi("800362", i, 7); !luhnValid(h) || len(h) != 16 {
			t.Fatalf("hpi %d: %q", i, h)
		}
	}
	ids := map[string]bool{}
	for i := range 100000 {
		id := publicID("svc_", i, 12345)
		if ids[id] {
			t.Fatalf("publicID repeats at %d: %s", i, id)
		}
		ids[id] = true
	}
}

// today is the date the collection dates are read against.
var today = time.Now().UTC().Format(time.DateOnly)

// visibility of the record itself, as projection treats it; tombstones (closed, removed, merged)
// count as seen by everyone, since they carry no marker.
func recordAudiences(m *dirsvc.Meta) dirsvc.Audiences {
	switch m.State {
	case dirsvc.StateClosed, dirsvc.StateRemoved, dirsvc.StateMerged:
		return dirsvc.Everyone
	case dirsvc.StateTakedown:
		return dirsvc.StaffOnly
	}
	return m.VisibleTo.Or(dirsvc.Everyone)
}

// audit checks the markers of a generated directory against the audiences worked out from the
// records themselves, independently of the generator.
type audit struct {
	t *testing.T
	d *dir
}

func (a *audit) orgAud(id string) dirsvc.Audiences {
	return recordAudiences(a.d.byID[id].Base())
}

// text checks that s carries exactly the marker of eff (none when every served audience may see).
func (a *audit) text(what, s string, eff dirsvc.Audiences) {
	a.t.Helper()
	want := []string(nil)
	if m := markerFor(eff); m != "" {
		want = []string{m}
	}
	if got := Canaries([]byte(s)); !slices.Equal(got, want) {
		a.t.Errorf("%s %q: canaries %q, want %q (audiences %s)", what, s, got, want, eff)
	}
}

// contact checks a contact seen in the context ctx (who may see its record), def being the default
// audiences of the kind of contact.
func (a *audit) contact(what string, c dirsvc.Contact, ctx, def dirsvc.Audiences) {
	a.t.Helper()
	eff := ctx & c.VisibleTo.Or(def)
	if !c.Kind.PhoneLike() {
		a.text(what+" "+string(c.Kind), c.Value, eff)
		return
	}
	got := Canaries([]byte(c.Value))
	switch {
	case !eff.Restricted():
		if len(got) > 0 {
			a.t.Errorf("%s: visible number %q is in the canary range", what, c.Value)
		}
	case len(got) != 1 || !strings.HasPrefix(got[0], "+6125550"):
		a.t.Errorf("%s: hidden number %q (audiences %s) is not in the canary range", what, c.Value, eff)
	default:
		if d := got[0][len("+6125550")]; phoneDigitAudiences(d) != eff {
			a.t.Errorf("%s: number %q marks %s, want %s", what, c.Value, phoneDigitAudiences(d), eff)
		}
	}
}

func (a *audit) identifiers(what string, ids []dirsvc.Identifier, ctx dirsvc.Audiences) {
	for _, x := range ids {
		if _, known := dirsvc.IdentifierSystems[x.Type]; known {
			if x.VisibleTo.Or(dirsvc.Everyone).Restricted() {
				a.t.Errorf("%s: %s identifier restricted to %s cannot carry a marker", what, x.Type, x.VisibleTo)
			}
			continue
		}
		a.text(what+" identifier", x.Value, ctx&x.VisibleTo.Or(dirsvc.Everyone))
	}
}

func (a *audit) run() {
	d := a.d
	for _, c := range d.Categories {
		a.text("category "+c.Code, c.Name, c.VisibleTo.Or(dirsvc.Everyone))
	}
	for _, lt := range d.LocalTypes {
		a.text("local type "+lt.Code, lt.Label, lt.VisibleTo.Or(dirsvc.Everyone))
	}
	for _, c := range d.Collections {
		aud := c.VisibleTo.Or(dirsvc.Everyone)
		// A collection that starts later is published for its audiences (each copy shows it from its
		// start date), so it carries their marker; drafts and ended ones are never published.
		if c.Draft || c.EndDate != "" && c.EndDate < today {
			aud = dirsvc.StaffOnly
		}
		a.text("collection "+c.Slug, c.Title, aud)
	}
	pp := dirsvc.AudiencesOf(dirsvc.Professional, dirsvc.Partner)
	for _, o := range d.Orgs {
		ctx := recordAudiences(&o.Meta)
		a.text("organisation "+o.PublicID+" name", o.Name, ctx)
		for _, c := range o.Contacts {
			a.contact(o.PublicID, c, ctx, dirsvc.Everyone)
		}
		a.identifiers(o.PublicID, o.Identifiers, ctx)
		if o.PostalAddress != nil {
			a.text(o.PublicID+" postal address", o.PostalAddress.Lines[0], ctx&addressAudiences(o.PostalAddress))
		}
		a.staffNotes(&o.Meta)
		for _, l := range o.Leadership {
			what := o.PublicID + " leader " + l.Title
			lctx := ctx & pp
			if !l.Current(today) || !l.NameVisibleTo.Or(dirsvc.Everyone).Has(dirsvc.Professional) {
				lctx = dirsvc.StaffOnly
			}
			a.text(what+" name", l.Name, lctx)
			if l.Bio != "" {
				bio := lctx
				if !l.BioVisibleTo.Or(dirsvc.Everyone).Has(dirsvc.Professional) {
					bio = dirsvc.StaffOnly
				}
				a.text(what+" bio", l.Bio, bio)
			}
			if l.StaffNotes != "" {
				a.text(what+" staff notes", l.StaffNotes, dirsvc.StaffOnly)
			}
			for _, c := range l.Contacts {
				// A leader's contact is shown to every holder of the leadership scope when it is
				// shown to health professionals, else to nobody.
				shown := lctx
				if !c.VisibleTo.Or(dirsvc.StaffOnly).Has(dirsvc.Professional) {
					shown = dirsvc.StaffOnly
				}
				a.contact(what, dirsvc.Contact{Kind: c.Kind, Value: c.Value}, shown, dirsvc.Everyone)
			}
		}
	}
	for _, l := range d.Locs {
		ctx := a.orgAud(l.Organisation) & recordAudiences(&l.Meta)
		a.text("location "+l.PublicID+" name", l.Name, ctx)
		a.text(l.PublicID+" address", l.Address.Lines[0], ctx&addressAudiences(&l.Address))
		a.staffNotes(&l.Meta)
		for _, c := range l.Contacts {
			a.contact(l.PublicID, c, ctx, dirsvc.Everyone)
		}
		a.identifiers(l.PublicID, l.Identifiers, ctx)
	}
	svcAud := map[string]dirsvc.Audiences{}
	for _, s := range d.Svcs {
		ctx := a.orgAud(s.Organisation) & recordAudiences(&s.Meta)
		svcAud[s.PublicID] = ctx
		a.text("service "+s.PublicID+" name", s.Name, ctx)
		for _, c := range s.Contacts {
			a.contact(s.PublicID, c, ctx, dirsvc.Everyone)
		}
		a.identifiers(s.PublicID, s.Identifiers, ctx)
		if s.Website != "" {
			a.text(s.PublicID+" website", s.Website, ctx)
		}
		a.staffNotes(&s.Meta)
	}
	pracAud := map[string]dirsvc.Audiences{}
	for _, p := range d.Pracs {
		rec := recordAudiences(&p.Meta)
		pracAud[p.PublicID] = rec
		name := rec & p.NameVisibleTo.Or(dirsvc.Everyone)
		a.text("practitioner "+p.PublicID+" name", p.Given+" "+p.Family, name)
		field := func(f string) dirsvc.Audiences {
			if s, ok := p.Shows[f]; ok {
				return name & s
			}
			return name
		}
		if p.Bio != "" {
			a.text(p.PublicID+" bio", p.Bio, field(dirsvc.FieldBio))
		}
		for _, q := range p.Qualifications {
			a.text(p.PublicID+" qualification", q, field(dirsvc.FieldQualifications))
		}
		if p.GenderOwnTerm != "" {
			a.text(p.PublicID+" own gender term", p.GenderOwnTerm, field(dirsvc.FieldGender))
		}
		if p.Photo != "" {
			a.text(p.PublicID+" photo", p.Photo, field(dirsvc.FieldPhoto))
		}
		for _, x := range p.Identifiers {
			if x.VisibleTo != 0 {
				a.text(p.PublicID+" identifier", x.Value, field(dirsvc.FieldIdentifiers)&x.VisibleTo)
			}
		}
		if ids := field(dirsvc.FieldIdentifiers); ids.Restricted() && len(p.Identifiers) > 0 {
			marked := false
			for _, x := range p.Identifiers {
				if got := Canaries([]byte(x.Value)); len(got) == 1 && got[0] == markerFor(ids) {
					marked = true
				}
			}
			if !marked {
				a.t.Errorf("%s: identifiers seen only by %s carry no %s marker", p.PublicID, ids, markerFor(ids))
			}
		}
		for _, c := range p.Contacts {
			a.contact(p.PublicID, c, name, dirsvc.StaffOnly)
		}
		a.staffNotes(&p.Meta)
	}
	for _, r := range d.Roles {
		ctx := svcAud[r.Service] & pracAud[r.Practitioner] & recordAudiences(&r.Meta)
		a.text("role "+r.PublicID+" title", r.Title, ctx)
		for _, c := range r.Contacts {
			a.contact(r.PublicID, c, ctx, dirsvc.Everyone)
		}
		a.staffNotes(&r.Meta)
	}
}

// addressAudiences returns who may see an address: its audiences, else everyone, or staff only when
// it is withheld. Withheld or not, an address's audiences hold.
func addressAudiences(ad *dirsvc.Address) dirsvc.Audiences {
	if ad.Withheld {
		return ad.VisibleTo.Or(dirsvc.StaffOnly)
	}
	return ad.VisibleTo.Or(dirsvc.Everyone)
}

// staffNotes checks that a record's staff notes, if any, are marked staff only.
func (a *audit) staffNotes(m *dirsvc.Meta) {
	a.t.Helper()
	if m.StaffNotes != "" {
		a.text(m.PublicID+" staff notes", m.StaffNotes, dirsvc.StaffOnly)
	}
}

func TestEveryHiddenValueCarriesItsMarker(t *testing.T) {
	bodies := map[string][]byte{
		"demo":     demoBytes(t),
		"demo-nz":  demoNZBytes(t),
		"seed 99":  generate(t, Options{Services: 400, Seed: 99}),
		"nz small": generate(t, Options{Country: "NZ", Slug: "nz-small", Services: 7, Seed: 3}),
		"one":      generate(t, Options{Services: 1, Seed: 11}),
	}
	for _, name := range sortedKeys(bodies) {
		t.Run(name, func(t *testing.T) {
			(&audit{t: t, d: decode(t, bodies[name])}).run()
		})
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// countCases counts, by decoding the records, every case the specification names.
func countCases(d *dir) map[string]int {
	c := map[string]int{}
	pp := dirsvc.AudiencesOf(dirsvc.Professional, dirsvc.Partner)
	inc := func(k string, cond bool) {
		if cond {
			c[k]++
		}
	}
	country := "+61"
	if d.Directory.Country == "NZ" {
		country = "+64"
	}
	contact := func(owner string, cs []dirsvc.Contact) {
		for _, x := range cs {
			inc("contact kind "+string(x.Kind), true)
			if owner != "practitioner" && owner != "leader" {
				inc("contact restricted to some audiences", x.VisibleTo.Or(dirsvc.Everyone).Restricted())
			}
			inc("number of another country", x.Kind.PhoneLike() && strings.HasPrefix(x.Value, "+") &&
				!strings.HasPrefix(x.Value, country) && len(Canaries([]byte(x.Value))) == 0)
		}
	}
	ids := func(xs []dirsvc.Identifier) {
		for _, x := range xs {
			inc("identifier "+x.Type, true)
			inc("identifier restricted to some audiences", x.VisibleTo.Or(dirsvc.Everyone).Restricted())
		}
	}
	hours := func(h *dirsvc.OpeningHours) {
		if h == nil {
			return
		}
		inc("hours always open (24/7)", h.Always)
		weekend := false
		for _, w := range h.Weekly {
			weekend = weekend || w.Day == "sat" || w.Day == "sun"
		}
		inc("hours closed at weekends", !weekend)
		inc("hours public holidays "+h.PublicHolidays, h.PublicHolidays != "")
		inc("hours with date exceptions", len(h.Exceptions) > 0)
		inc("hours with after-hours text", h.AfterHours != "")
	}
	state := func(kind string, m *dirsvc.Meta) {
		if m.State != "" && m.State != dirsvc.StateLive {
			inc("state "+string(m.State), true)
			inc(kind+" "+string(m.State), true)
		}
	}
	for _, lt := range d.LocalTypes {
		inc("local type refining platform types", len(lt.Refines) > 0)
		inc("local type refining none", len(lt.Refines) == 0)
		inc("local type for professional and partner only", lt.VisibleTo == pp)
	}
	for _, cat := range d.Categories {
		inc("category made of local types", len(cat.LocalTypes) > 0)
	}
	tax := dirsvc.Taxonomy{LocalTypes: d.LocalTypes}
	for _, col := range d.Collections {
		inc("collection on the home page", col.Home)
		inc("collection draft", col.Draft)
		inc("collection for professional only", col.VisibleTo == dirsvc.AudiencesOf(dirsvc.Professional))
		inc("collection for partner only", col.VisibleTo == dirsvc.AudiencesOf(dirsvc.Partner))
		inc("collection ended", col.EndDate != "" && col.EndDate < today)
		inc("collection starting in the future", col.StartDate > today)
		inc("collection with a saved search", col.Search != "")
	}
	for _, o := range d.Orgs {
		c["organisations"]++
		state("organisation", &o.Meta)
		inc("organisation without ownership type", o.OwnershipType == nil)
		inc("organisation with the directory's own ownership code", o.OwnershipType != nil && strings.Contains(o.OwnershipType.Code, ":"))
		inc("organisation with leadership", len(o.Leadership) > 0)
		for _, l := range o.Leadership {
			inc("leader", true)
			inc("leader past appointment", !l.Current(today))
			inc("leader with staff notes", l.StaffNotes != "")
			inc("leader name hidden from health professionals", !l.NameVisibleTo.Or(dirsvc.Everyone).Has(dirsvc.Professional))
			inc("leader bio shown to professional and partner", l.Bio != "" && l.BioVisibleTo == pp)
			inc("leader bio staff only", l.Bio != "" && l.BioVisibleTo == dirsvc.StaffOnly)
			for _, x := range l.Contacts {
				inc("leader contact staff only (default)", x.VisibleTo == 0)
				inc("leader contact shown to professional and partner", x.VisibleTo == pp)
			}
		}
		contact("organisation", o.Contacts)
		ids(o.Identifiers)
	}
	for _, l := range d.Locs {
		c["locations"]++
		state("location", &l.Meta)
		inc("unlisted site (live, professional and partner)", live(l) && l.VisibleTo == pp)
		inc("withheld address for professional and partner", l.Address.Withheld && l.Address.VisibleTo == pp)
		inc("withheld address staff only", l.Address.Withheld && !l.Address.VisibleTo.Or(dirsvc.StaffOnly).Has(dirsvc.Professional))
		inc("location overriding ownership", l.OwnershipType != nil)
		contact("location", l.Contacts)
		ids(l.Identifiers)
		hours(l.Hours)
	}
	for _, s := range d.Svcs {
		c["services"]++
		state("service", &s.Meta)
		inc("service overriding ownership", s.OwnershipType != nil)
		inc("service with several specialties", len(s.LocalTypes) > 1)
		if len(s.LocalTypes) > 1 {
			first := tax.LocalType(s.LocalTypes[0])
			later := false
			for _, code := range s.LocalTypes[1:] {
				later = later || slices.Contains(tax.LocalType(code).Refines, s.Type)
			}
			inc("service whose first tag does not refine its type and a later one does",
				!slices.Contains(first.Refines, s.Type) && later)
		}
		for _, code := range s.LocalTypes {
			inc("service tagged with a restricted local type", tax.LocalType(code).VisibleTo == pp)
		}
		inc("service with catchment", len(s.Catchment) > 0)
		inc("service serving the whole country", slices.Contains(s.Catchment, "country:"+strings.ToLower(d.Directory.Country)))
		inc("service referral required", s.Referral != nil && s.Referral.Required)
		inc("service appointment "+s.Appointment, s.Appointment != "")
		if s.Cost != nil {
			inc("service cost "+s.Cost.Kind, true)
		}
		for _, dl := range s.Delivery {
			inc("service delivery "+dl, true)
		}
		inc("service with languages", len(s.Languages) > 0)
		inc("service with programs", len(s.Programs) > 0)
		inc("service with target groups", len(s.TargetGroups) > 0)
		contact("service", s.Contacts)
		ids(s.Identifiers)
		hours(s.Hours)
	}
	for _, p := range d.Pracs {
		c["practitioners"]++
		state("practitioner", &p.Meta)
		inc("gender "+p.Gender, p.Gender != "")
		inc("practitioner name hidden from public", !p.NameVisibleTo.Or(dirsvc.Everyone).Has(dirsvc.Public))
		inc("practitioner keeping fields private", len(p.Shows) > 0)
		inc("different_term with the gender kept private", p.Gender == dirsvc.GenderDifferentTerm && p.Shows[dirsvc.FieldGender] != 0)
		for _, x := range p.Contacts {
			inc("practitioner own contact staff only (default)", x.VisibleTo == 0)
			inc("practitioner own contact for professional and partner", x.VisibleTo == pp)
			inc("practitioner own contact for everyone", x.VisibleTo == dirsvc.Everyone)
		}
		ids(p.Identifiers)
		contact("practitioner", p.Contacts)
	}
	for _, r := range d.Roles {
		c["roles"]++
		inc("role ended", !r.Active && r.EndDate != "")
		inc("role with specialties", len(r.Specialties) > 0)
		contact("role", r.Contacts)
	}
	return c
}

// requiredCases are the cases every generated directory holds.
var requiredCases = []string{
	"withheld address for professional and partner", "withheld address staff only",
	"unlisted site (live, professional and partner)",
	"practitioner name hidden from public", "practitioner keeping fields private",
	"gender prefer_not_to_say", "gender different_term", "different_term with the gender kept private",
	"gender woman", "gender man", "gender non_binary",
	"state merged", "state closed", "state removed", "state visibility_reduced", "state takedown",
	"practitioner merged", "practitioner closed", "practitioner removed", "practitioner visibility_reduced", "practitioner takedown",
	"location merged", "location closed", "location removed", "location visibility_reduced", "location takedown",
	"organisation merged", "organisation closed", "organisation removed",
	"local type refining platform types", "local type refining none", "local type for professional and partner only",
	"category made of local types",
	"service with several specialties", "service whose first tag does not refine its type and a later one does",
	"service tagged with a restricted local type", "service serving the whole country",
	"collection on the home page", "collection draft", "collection for professional only",
	"collection ended", "collection starting in the future", "collection with a saved search",
	"organisation with leadership", "leader past appointment", "leader with staff notes",
	"leader name hidden from health professionals", "leader bio shown to professional and partner",
	"leader bio staff only", "leader contact staff only (default)", "leader contact shown to professional and partner",
	"number of another country",
	"practitioner own contact staff only (default)", "practitioner own contact for professional and partner",
	"practitioner own contact for everyone",
	"contact restricted to some audiences", "identifier restricted to some audiences",
	"organisation without ownership type", "organisation with the directory's own ownership code",
	"location overriding ownership", "service overriding ownership",
	"hours always open (24/7)", "hours closed at weekends", "role ended",
}

// requiredLarge are the cases of directories of at least 50 services (organisations hidden whole need
// at least ten organisations).
var requiredLarge = []string{
	"organisation visibility_reduced", "organisation takedown",
	"service merged", "service closed", "service removed", "service visibility_reduced", "service takedown",
	"contact kind phone", "contact kind freecall", "contact kind local_rate", "contact kind fax", "contact kind sms",
	"contact kind email", "contact kind website", "contact kind mobile",
	"hours public holidays closed", "hours public holidays open", "hours public holidays hours",
	"hours with date exceptions", "hours with after-hours text", "service with catchment",
	"identifier abn", "identifier hpio", "identifier hpii", "identifier ahpra", "identifier acn",
	"service delivery in_person", "service delivery telehealth", "service delivery phone",
	"service delivery home_visit", "service delivery outreach",
	"service appointment required", "service appointment not_required", "service referral required",
}

func TestEveryCaseIsPresent(t *testing.T) {
	type run struct {
		name string
		body []byte
		want []string
	}
	au := slices.Concat(requiredCases, requiredLarge)
	nz := slices.DeleteFunc(slices.Clone(au), func(s string) bool {
		return strings.HasPrefix(s, "identifier ") || s == "contact kind local_rate" || s == "contact kind tty" ||
			strings.HasPrefix(s, "organisation visibility") || strings.HasPrefix(s, "organisation takedown")
	})
	runs := []run{{"demo", demoBytes(t), au}, {"demo-nz", demoNZBytes(t), append(nz, "identifier nzbn")}}
	for _, n := range []int{1, 2, 5, 12, 20} {
		runs = append(runs, run{fmt.Sprintf("%d services", n), generate(t, Options{Services: n, Seed: int64(n)}), requiredCases})
	}
	for _, n := range []int{50, 137} {
		runs = append(runs, run{fmt.Sprintf("%d services", n), generate(t, Options{Services: n, Seed: int64(n)}), au})
	}
	runs = append(runs, run{"nz 3 services", generate(t, Options{Country: "NZ", Slug: "nz", Services: 3, Seed: 5}), requiredCases})
	for _, r := range runs {
		c := countCases(decode(t, r.body))
		for _, k := range r.want {
			if c[k] == 0 {
				t.Errorf("%s: no %s", r.name, k)
			}
		}
		if r.name == "demo" && testing.Verbose() {
			for _, k := range sortedKeys(c) {
				t.Logf("%6d  %s", c[k], k)
			}
		}
	}
}

func TestServiceCount(t *testing.T) {
	for _, n := range []int{1, 3, 4, 17, 600} {
		c := countCases(decode(t, generate(t, Options{Services: n, Seed: 3})))
		if c["services"] != n {
			t.Errorf("Services %d: %d services written", n, c["services"])
		}
		if c["organisations"] < 3 {
			t.Errorf("Services %d: %d organisations", n, c["organisations"])
		}
	}
}

func TestVisibleNumbersAreNeverInTheCanaryRange(t *testing.T) {
	g := newGen(Options{Slug: "x", Country: "AU", Services: 1, Seed: 1}, bufio.NewWriter(io.Discard))
	gnz := newGen(Options{Slug: "x", Country: "NZ", Services: 1, Seed: 1}, bufio.NewWriter(io.Discard))
	for range 20000 {
		for _, v := range []string{g.landline(&g.pool.locs[g.pickLocality()]), g.mobile(), g.freecall(), g.localRate(),
			gnz.landline(&gnz.pool.locs[gnz.pickLocality()]), gnz.mobile(), gnz.freecall()} {
			if c := Canaries([]byte(v)); len(c) > 0 {
				t.Fatalf("visible number %q reads as canary %q", v, c)
			}
		}
		v, _ := g.foreign()
		if c := Canaries([]byte(v)); len(c) > 0 {
			t.Fatalf("visible number %q reads as canary %q", v, c)
		}
	}
}

func TestCanariesAndLeaksKnownAnswers(t *testing.T) {
	body := []byte(`{"name":"Harbour Clinic canary-professional.partner-x","lines":["9 Quiet Lane canary-staff-x"],` +
		`"bio":"For partners canary-partner-x","t":"canary-professional-x",` +
		`"phones":["+61255502001","(02) 5550 1001","02 5550 3042","+61 2 5550 4043","tel:+61-2-5550-2001"],` +
		`"slug":"clinic-canary-professional-partner-x","CAPS":"CANARY-STAFF-X",` +
		`"visible":["+61298765432","(02) 9555 0100","0402 555 012","+61 2 9555 5501","8003625550212345","1300 555 012"]}`)
	wantAll := []string{"+61255501001", "+61255502001", "+61255503042", "+61255504043",
		"canary-partner-x", "canary-professional-x", "canary-professional.partner-x", "canary-staff-x"}
	if got := Canaries(body); !slices.Equal(got, wantAll) {
		t.Errorf("Canaries = %q\nwant %q", got, wantAll)
	}
	for _, tc := range []struct {
		a    dirsvc.Audience
		want []string
	}{
		{dirsvc.Public, wantAll},
		{dirsvc.Professional, []string{"+61255501001", "+61255503042", "canary-partner-x", "canary-staff-x"}},
		{dirsvc.Partner, []string{"+61255501001", "+61255504043", "canary-professional-x", "canary-staff-x"}},
		{dirsvc.Staff, nil},
	} {
		if got := Leaks(body, tc.a); !slices.Equal(got, tc.want) {
			t.Errorf("Leaks(%s) = %q\nwant %q", tc.a, got, tc.want)
		}
	}
	clean := []byte(`{"name":"Harbour Health","phone":"+61298765432","abn":"51824753556","hpio":"8003621566684455",` +
		`"note":"canary without list","x":"canary--x","y":"canary-everyone-x","z":"+61255505"}`)
	if got := Canaries(clean); len(got) != 0 {
		t.Errorf("Canaries(clean) = %q", got)
	}
	public := []byte(`{"a":"+61 2 5550 5001","b":"(02) 5550 6002","c":"02 5550 7003","d":"canary-public.partner-x","e":"canary-public-x"}`)
	for _, tc := range []struct {
		a    dirsvc.Audience
		want []string
	}{
		{dirsvc.Public, nil},
		{dirsvc.Professional, []string{"+61255505001", "+61255507003", "canary-public-x", "canary-public.partner-x"}},
		{dirsvc.Partner, []string{"+61255505001", "+61255506002", "canary-public-x"}},
	} {
		if got := Leaks(public, tc.a); !slices.Equal(got, tc.want) {
			t.Errorf("Leaks(%s) of markers the public may see = %q\nwant %q", tc.a, got, tc.want)
		}
	}
	if got := Leaks([]byte(`{"a":"+61 2 5550 9123","b":"canary-public.professional.partner-x"}`), dirsvc.Public); !slices.Equal(got, []string{"+61255509123"}) {
		t.Errorf("a number of the range with an unknown digit must count as staff only; got %q", got)
	}
}

func TestMarkerScheme(t *testing.T) {
	for _, tc := range []struct {
		s     dirsvc.Audiences
		text  string
		digit int
	}{
		{dirsvc.Everyone, "", 0},
		{dirsvc.StaffOnly, "canary-staff-x", 1},
		{proPartner, "canary-professional.partner-x", 2},
		{partnerOnly, "canary-partner-x", 3},
		{professional, "canary-professional-x", 4},
		{dirsvc.AudiencesOf(dirsvc.Public), "canary-public-x", 5},
		{dirsvc.AudiencesOf(dirsvc.Public, dirsvc.Professional), "canary-public.professional-x", 6},
		{dirsvc.AudiencesOf(dirsvc.Public, dirsvc.Partner), "canary-public.partner-x", 7},
	} {
		if got := markerFor(tc.s); got != tc.text {
			t.Errorf("markerFor(%s) = %q, want %q", tc.s, got, tc.text)
		}
		if got := phoneDigit(tc.s); got != tc.digit {
			t.Errorf("phoneDigit(%s) = %d, want %d", tc.s, got, tc.digit)
		}
		if tc.digit > 0 && phoneDigitAudiences(byte('0'+tc.digit)) != tc.s {
			t.Errorf("phoneDigitAudiences(%d) = %s, want %s", tc.digit, phoneDigitAudiences(byte('0'+tc.digit)), tc.s)
		}
	}
}

func TestJSONIsFlat(t *testing.T) {
	b, err := json.Marshal(organisationLine{"organisation", &dirsvc.Organisation{
		Meta: dirsvc.Meta{PublicID: "org_x", State: dirsvc.StateMerged, Survivor: "org_y"}, Name: "X"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"kind":"organisation","publicId":"org_x","state":"merged","survivorPublicId":"org_y","name":"X"}`; string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}

func BenchmarkGenerate100k(b *testing.B) {
	var n int64
	for b.Loop() {
		cw := &countWriter{}
		if err := Generate(cw, Options{Slug: "bench", Country: "AU", Services: 100_000, Seed: 1}); err != nil {
			b.Fatal(err)
		}
		n = cw.n
	}
	b.SetBytes(n)
	b.ReportMetric(float64(n), "bytes/file")
}

type countWriter struct{ n int64 }

func (w *countWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }
