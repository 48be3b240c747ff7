package demo_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/primary"
	"github.com/dirsvc/dirsvc/primary/demo"
)

func parse(tb testing.TB, gen func(*bytes.Buffer) error) *dirsvc.Snapshot {
	tb.Helper()
	var b bytes.Buffer
	if err := gen(&b); err != nil {
		tb.Fatal(err)
	}
	snap, err := primary.ParseImport(&b)
	if err != nil {
		tb.Fatalf("ParseImport: %v", err)
	}
	return snap
}

type named struct {
	name string
	snap *dirsvc.Snapshot
}

// demos parses the standard demos and two others with the importer.
func demos(tb testing.TB) []named {
	return []named{
		{"demo", parse(tb, func(b *bytes.Buffer) error { return demo.Demo(b) })},
		{"demo-nz", parse(tb, func(b *bytes.Buffer) error { return demo.DemoNZ(b) })},
		{"seed 42", parse(tb, func(b *bytes.Buffer) error {
			return demo.Generate(b, demo.Options{Slug: "other", Services: 300, Seed: 42})
		})},
		{"tiny nz", parse(tb, func(b *bytes.Buffer) error {
			return demo.Generate(b, demo.Options{Slug: "tiny", Country: "NZ", Services: 2, Seed: 8})
		})},
	}
}

// TestTheImporterAcceptsTheDemos proves the phone numbers normalise and every identifier, area, slug
// and reference validates.
func TestTheImporterAcceptsTheDemos(t *testing.T) {
	all := demos(t)
	for i, want := range []struct{ name, slug, country string }{
		{"demo", demo.DefaultSlug, "AU"}, {"demo-nz", "demo-nz", "NZ"},
	} {
		name, snap := want.name, all[i].snap
		if snap.Directory.Slug != want.slug || snap.Directory.Country != want.country {
			t.Errorf("%s: directory %s/%s", name, snap.Directory.Slug, snap.Directory.Country)
		}
		services := 0
		for _, r := range snap.Records {
			if r.Kind() == dirsvc.KindService {
				services++
			}
		}
		if name == "demo" && services != demo.DefaultServices {
			t.Errorf("demo: %d services, want %d", services, demo.DefaultServices)
		}
		if name == "demo-nz" && services != 60 {
			t.Errorf("demo-nz: %d services, want 60", services)
		}
	}
}

func TestGeneratedNumbersAreE164OfTheRightCountry(t *testing.T) {
	snap := demos(t)[0].snap
	foreign := 0
	check := func(owner string, cs []dirsvc.Contact) {
		for _, c := range cs {
			if !c.Kind.PhoneLike() {
				continue
			}
			if !strings.HasPrefix(c.Value, "+") || strings.ContainsAny(c.Value, " ()-") {
				t.Errorf("%s: %q is not E.164 after import", owner, c.Value)
			}
			if !strings.HasPrefix(c.Value, "+61") {
				foreign++
			}
			switch {
			case strings.HasPrefix(c.Value, "+6113") && c.Kind != dirsvc.ContactLocalRate,
				strings.HasPrefix(c.Value, "+611800") && c.Kind != dirsvc.ContactFreecall:
				t.Errorf("%s: %q has kind %s", owner, c.Value, c.Kind)
			}
		}
	}
	for _, r := range snap.Records {
		switch x := r.(type) {
		case *dirsvc.Organisation:
			check(x.PublicID, x.Contacts)
			for _, l := range x.Leadership {
				check(x.PublicID+" leader", l.Contacts)
			}
		case *dirsvc.Location:
			check(x.PublicID, x.Contacts)
		case *dirsvc.Service:
			check(x.PublicID, x.Contacts)
		case *dirsvc.Practitioner:
			check(x.PublicID, x.Contacts)
		case *dirsvc.PractitionerRole:
			check(x.PublicID, x.Contacts)
		}
	}
	if foreign == 0 {
		t.Error("no number of another country")
	}
}

// lookup is a dirsvc.Lookup over a parsed snapshot.
type lookup struct {
	snap  *dirsvc.Snapshot
	byID  map[string]dirsvc.Record
	locOf map[string][]*dirsvc.Location
}

func newLookup(snap *dirsvc.Snapshot) *lookup {
	l := &lookup{snap: snap, byID: map[string]dirsvc.Record{}, locOf: map[string][]*dirsvc.Location{}}
	for _, r := range snap.Records {
		l.byID[r.Base().PublicID] = r
		if loc, ok := r.(*dirsvc.Location); ok {
			l.locOf[loc.Organisation] = append(l.locOf[loc.Organisation], loc)
		}
	}
	for _, locs := range l.locOf {
		slices.SortFunc(locs, func(a, b *dirsvc.Location) int { return strings.Compare(a.PublicID, b.PublicID) })
	}
	return l
}

func (l *lookup) Directory() *dirsvc.Directory { return &l.snap.Directory }
func (l *lookup) Taxonomy() *dirsvc.Taxonomy   { return &l.snap.Taxonomy }
func (l *lookup) Organisation(id string) *dirsvc.Organisation {
	r, _ := l.byID[id].(*dirsvc.Organisation)
	return r
}
func (l *lookup) Location(id string) *dirsvc.Location {
	r, _ := l.byID[id].(*dirsvc.Location)
	return r
}
func (l *lookup) Service(id string) *dirsvc.Service {
	r, _ := l.byID[id].(*dirsvc.Service)
	return r
}
func (l *lookup) Practitioner(id string) *dirsvc.Practitioner {
	r, _ := l.byID[id].(*dirsvc.Practitioner)
	return r
}
func (l *lookup) LocationsOf(org string) []*dirsvc.Location { return l.locOf[org] }

var served = dirsvc.ServedAudiences

func mustJSON(tb testing.TB, v any) []byte {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// TestProjectionsLeakNoCanary projects every record, the taxonomy, the collections and the
// leadership for each served audience through the domain's projection gate: no marker the audience
// may not see may appear. This shows the markers are never stricter than what the service shows.
func TestProjectionsLeakNoCanary(t *testing.T) {
	today := time.Now().UTC().Format(time.DateOnly)
	for _, d := range demos(t) {
		name, snap := d.name, d.snap
		rel := newLookup(snap)
		for _, a := range served {
			for _, r := range snap.Records {
				if v := dirsvc.Project(r, rel, a); v != nil {
					if leaks := demo.Leaks(mustJSON(t, v), a); len(leaks) > 0 {
						t.Errorf("%s: %s projected for %s leaks %q", name, r.Base().PublicID, a, leaks)
					}
				}
				if o, ok := r.(*dirsvc.Organisation); ok && a != dirsvc.Public && o.VisibleFor(a) {
					if leaks := demo.Leaks(mustJSON(t, dirsvc.ProjectLeadership(o, today)), a); len(leaks) > 0 {
						t.Errorf("%s: leadership of %s for %s leaks %q", name, o.PublicID, a, leaks)
					}
				}
			}
			var tax []any
			for _, c := range snap.Taxonomy.Categories {
				if c.VisibleTo.Has(a) {
					tax = append(tax, c)
				}
			}
			for _, lt := range snap.Taxonomy.LocalTypes {
				if lt.VisibleTo.Has(a) {
					tax = append(tax, lt)
				}
			}
			for _, c := range snap.Collections {
				if !c.Draft && c.VisibleTo.Has(a) && (c.StartDate == "" || c.StartDate <= today) &&
					(c.EndDate == "" || c.EndDate >= today) {
					tax = append(tax, c)
				}
			}
			if leaks := demo.Leaks(mustJSON(t, tax), a); len(leaks) > 0 {
				t.Errorf("%s: taxonomy and collections for %s leak %q", name, a, leaks)
			}
		}
	}
}

// hidden reports whether a value carries a marker that audience a may not see.
func hidden(v string, a dirsvc.Audience) bool { return len(demo.Leaks([]byte(v), a)) > 0 }

// TestHiddenValuesCarryCanaries compares each record with its projection for each served audience:
// a record left out must carry a marker in its name, and a detail left out of a view (a contact, an
// identifier, an address or postal address, a local type, a private practitioner field, staff
// notes) must carry one in its value. This shows the markers are never laxer than what the service
// hides.
func TestHiddenValuesCarryCanaries(t *testing.T) {
	for _, d := range demos(t) {
		name, snap := d.name, d.snap
		rel := newLookup(snap)
		for _, a := range served {
			for _, r := range snap.Records {
				m := r.Base()
				switch m.State {
				case dirsvc.StateClosed, dirsvc.StateRemoved, dirsvc.StateMerged:
					continue // tombstones carry no marker
				}
				v := dirsvc.Project(r, rel, a)
				id := m.PublicID
				if v == nil {
					var label string
					switch x := r.(type) {
					case *dirsvc.Organisation:
						label = x.Name
					case *dirsvc.Location:
						label = x.Name
					case *dirsvc.Service:
						label = x.Name
					case *dirsvc.Practitioner:
						label = x.Family
					case *dirsvc.PractitionerRole:
						label = x.Title
						if s := rel.Service(x.Service); s != nil && s.State != dirsvc.StateLive && s.State != dirsvc.StateVisibilityReduced && s.State != dirsvc.StateTakedown {
							continue // a role at a closed or merged service goes with it
						}
						if p := rel.Practitioner(x.Practitioner); p != nil && p.State != dirsvc.StateLive && p.State != dirsvc.StateVisibilityReduced && p.State != dirsvc.StateTakedown {
							continue
						}
					}
					if !hidden(label, a) {
						t.Errorf("%s: %s is hidden from %s but %q carries no marker for it", name, id, a, label)
					}
					continue
				}
				contacts := func(raw []dirsvc.Contact, shown []dirsvc.ContactView) {
					for _, c := range raw {
						if !slices.ContainsFunc(shown, func(s dirsvc.ContactView) bool { return s.Value == c.Value && s.Kind == c.Kind }) && !hidden(c.Value, a) {
							t.Errorf("%s: %s contact %s %q is hidden from %s but carries no marker", name, id, c.Kind, c.Value, a)
						}
					}
				}
				idents := func(raw []dirsvc.Identifier, shown []dirsvc.IdentifierView) {
					left := false
					for _, x := range raw {
						if !slices.ContainsFunc(shown, func(s dirsvc.IdentifierView) bool { return s.Value == x.Value }) {
							left = true
							if _, known := dirsvc.IdentifierSystems[x.Type]; !known && !hidden(x.Value, a) {
								t.Errorf("%s: %s identifier %q is hidden from %s but carries no marker", name, id, x.Value, a)
							}
						}
					}
					if left && !slices.ContainsFunc(raw, func(x dirsvc.Identifier) bool { return hidden(x.Value, a) }) {
						t.Errorf("%s: %s keeps identifiers from %s but none of them carries a marker", name, id, a)
					}
				}
				// Staff notes are never projected: they must carry a marker every served tier lacks.
				if m.StaffNotes != "" && !hidden(m.StaffNotes, a) {
					t.Errorf("%s: %s staff notes %q carry no marker against %s", name, id, m.StaffNotes, a)
				}
				localTypes := func(codes []string, shown []dirsvc.LocalTypeRef) {
					for _, c := range codes {
						lt := snap.Taxonomy.LocalType(c)
						if lt != nil && !slices.ContainsFunc(shown, func(s dirsvc.LocalTypeRef) bool { return s.ID == c }) && !hidden(lt.Label, a) {
							t.Errorf("%s: %s local type %s is hidden from %s but %q carries no marker", name, id, c, a, lt.Label)
						}
					}
				}
				switch x := r.(type) {
				case *dirsvc.Organisation:
					ov := v.(*dirsvc.OrganisationView)
					contacts(x.Contacts, ov.Contacts)
					idents(x.Identifiers, ov.Identifiers)
					if x.PostalAddress != nil && ov.PostalAddress == nil && !hidden(x.PostalAddress.Lines[0], a) {
						t.Errorf("%s: %s postal address hidden from %s but %q carries no marker", name, id, a, x.PostalAddress.Lines[0])
					}
				case *dirsvc.Location:
					lv := v.(*dirsvc.LocationView)
					contacts(x.Contacts, lv.Contacts)
					idents(x.Identifiers, lv.Identifiers)
					if lv.Address == nil && !hidden(x.Address.Lines[0], a) {
						t.Errorf("%s: %s address withheld from %s but %q carries no marker", name, id, a, x.Address.Lines[0])
					}
				case *dirsvc.Service:
					sv := v.(*dirsvc.ServiceView)
					contacts(x.Contacts, sv.Contacts)
					idents(x.Identifiers, sv.Identifiers)
					localTypes(x.LocalTypes, sv.Specialties)
				case *dirsvc.PractitionerRole:
					rv := v.(*dirsvc.RoleView)
					contacts(x.Contacts, rv.Contacts)
					localTypes(x.Specialties, rv.Specialties)
				case *dirsvc.Practitioner:
					pv := v.(*dirsvc.PractitionerView)
					contacts(x.Contacts, pv.Contacts)
					if x.Bio != "" && pv.Bio == nil && !hidden(x.Bio, a) {
						t.Errorf("%s: %s bio hidden from %s but unmarked", name, id, a)
					}
					if x.Photo != "" && pv.Photo == nil && !hidden(x.Photo, a) {
						t.Errorf("%s: %s photo hidden from %s but unmarked", name, id, a)
					}
					if len(x.Qualifications) > 0 && pv.Qualifications == nil && !hidden(strings.Join(x.Qualifications, " "), a) {
						t.Errorf("%s: %s qualifications hidden from %s but unmarked", name, id, a)
					}
					if x.GenderOwnTerm != "" && pv.GenderOwnTerm == "" && !hidden(x.GenderOwnTerm, a) {
						t.Errorf("%s: %s own gender term hidden from %s but unmarked", name, id, a)
					}
					if pv.Identifiers == nil && len(x.Identifiers) > 0 {
						idents(x.Identifiers, nil)
					} else {
						idents(x.Identifiers, pv.Identifiers)
					}
					if a == dirsvc.Public && pv.Gender != nil && *pv.Gender == dirsvc.GenderPreferNotToSay {
						t.Errorf("%s: %s shows prefer_not_to_say to public", name, id)
					}
				}
			}
		}
		// Leadership: the public never sees it; health professionals see what is shown to them.
		today := time.Now().UTC().Format(time.DateOnly)
		for _, r := range snap.Records {
			o, ok := r.(*dirsvc.Organisation)
			if !ok {
				continue
			}
			shown := dirsvc.ProjectLeadership(o, today)
			for _, l := range o.Leadership {
				if !hidden(l.Name, dirsvc.Public) {
					t.Errorf("%s: leader %q of %s carries no marker against the public", name, l.Name, o.PublicID)
				}
				if l.StaffNotes != "" && !hidden(l.StaffNotes, dirsvc.Professional) {
					t.Errorf("%s: staff notes of %q unmarked", name, l.Name)
				}
				if !slices.ContainsFunc(shown, func(v dirsvc.LeaderView) bool { return v.Name == l.Name }) && !hidden(l.Name, dirsvc.Professional) {
					t.Errorf("%s: leader %q is not shown to professionals but carries no staff marker", name, l.Name)
				}
			}
		}
	}
}
