package demo

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/dirsvc/dirsvc"
)

// restrictable gathers, by kind of restrictable detail, the sets of audiences a generated directory
// gives details of that kind, counting only details whose record every audience sees (so that the
// detail's own audiences are who sees it).
type restrictable map[string]map[dirsvc.Audiences]bool

func (r restrictable) add(kind string, s dirsvc.Audiences) {
	if r[kind] == nil {
		r[kind] = map[dirsvc.Audiences]bool{}
	}
	r[kind][s] = true
}

// restrictableKinds returns what every kind of restrictable detail of d is given, by reading the
// records (independently of the generator).
func restrictableKinds(d *dir) restrictable {
	r := restrictable{}
	open := func(m *dirsvc.Meta) bool {
		return (m.State == "" || m.State == dirsvc.StateLive) && !recordAudiences(m).Restricted()
	}
	contacts := func(kind string, cs []dirsvc.Contact, def dirsvc.Audiences) {
		for _, c := range cs {
			r.add(kind, c.VisibleTo.Or(def))
		}
	}
	ids := func(kind string, xs []dirsvc.Identifier) {
		for _, x := range xs {
			r.add(kind, x.VisibleTo.Or(dirsvc.Everyone))
		}
	}
	for _, c := range d.Categories {
		r.add("category", c.VisibleTo.Or(dirsvc.Everyone))
	}
	for _, lt := range d.LocalTypes {
		r.add("local type", lt.VisibleTo.Or(dirsvc.Everyone))
	}
	for _, c := range d.Collections {
		if !c.Draft && c.StartDate == "" && c.EndDate == "" {
			r.add("collection", c.VisibleTo.Or(dirsvc.Everyone))
		}
	}
	orgOpen := map[string]bool{}
	for _, o := range d.Orgs {
		if o.State == "" || o.State == dirsvc.StateLive {
			r.add("organisation", recordAudiences(&o.Meta))
		}
		if orgOpen[o.PublicID] = open(&o.Meta); !orgOpen[o.PublicID] {
			continue
		}
		contacts("organisation contact", o.Contacts, dirsvc.Everyone)
		ids("organisation identifier", o.Identifiers)
		if o.PostalAddress != nil {
			r.add("postal address", addressAudiences(o.PostalAddress))
		}
		for _, l := range o.Leadership {
			if l.Current(today) {
				r.add("leader name", l.NameVisibleTo.Or(dirsvc.Everyone))
				if l.NameVisibleTo.Or(dirsvc.Everyone).Has(dirsvc.Professional) {
					r.add("leader bio", l.BioVisibleTo.Or(dirsvc.Everyone))
					contacts("leader contact", l.Contacts, dirsvc.StaffOnly)
				}
			}
		}
	}
	for _, l := range d.Locs {
		if !orgOpen[l.Organisation] {
			continue
		}
		if l.State == "" || l.State == dirsvc.StateLive {
			r.add("location", recordAudiences(&l.Meta))
		}
		if !open(&l.Meta) {
			continue
		}
		contacts("location contact", l.Contacts, dirsvc.Everyone)
		ids("location identifier", l.Identifiers)
		kind := "location address"
		if l.Address.Withheld {
			kind = "withheld location address"
		}
		r.add(kind, addressAudiences(&l.Address))
	}
	svcOpen := map[string]bool{}
	for _, s := range d.Svcs {
		if !orgOpen[s.Organisation] {
			continue
		}
		if s.State == "" || s.State == dirsvc.StateLive {
			r.add("service", recordAudiences(&s.Meta))
		}
		if svcOpen[s.PublicID] = open(&s.Meta); !svcOpen[s.PublicID] {
			continue
		}
		contacts("service contact", s.Contacts, dirsvc.Everyone)
		ids("service identifier", s.Identifiers)
	}
	pracOpen := map[string]bool{}
	for _, p := range d.Pracs {
		if p.State == "" || p.State == dirsvc.StateLive {
			r.add("practitioner", recordAudiences(&p.Meta))
		}
		if !open(&p.Meta) {
			continue
		}
		name := p.NameVisibleTo.Or(dirsvc.Everyone)
		r.add("practitioner name", name)
		if name.Restricted() {
			continue
		}
		pracOpen[p.PublicID] = true
		for _, f := range dirsvc.PrivateFields {
			r.add("practitioner shows "+f, p.FieldVisibleTo(f).Or(dirsvc.Everyone))
		}
		contacts("practitioner contact", p.Contacts, dirsvc.StaffOnly)
		ids("practitioner identifier", p.Identifiers)
	}
	for _, ro := range d.Roles {
		if !svcOpen[ro.Service] || !pracOpen[ro.Practitioner] {
			continue
		}
		r.add("role", recordAudiences(&ro.Meta))
		if open(&ro.Meta) {
			contacts("role contact", ro.Contacts, dirsvc.Everyone)
		}
	}
	return r
}

// matrixKinds are the kinds of detail a directory may restrict to some audiences.
var matrixKinds = []string{
	"organisation", "location", "service", "practitioner", "role",
	"organisation contact", "location contact", "service contact", "role contact", "practitioner contact", "leader contact",
	"organisation identifier", "location identifier", "service identifier", "practitioner identifier",
	"location address", "withheld location address", "postal address",
	"local type", "category", "collection",
	"practitioner name", "leader name", "leader bio",
	"practitioner shows gender", "practitioner shows qualifications", "practitioner shows languages",
	"practitioner shows bio", "practitioner shows photo", "practitioner shows identifiers",
}

// TestEveryAudienceCombinationIsPresent shows the generator gives every kind of restrictable detail
// every set of served audiences (staff only, each tier, each pair, everyone), on a record every
// audience sees, so that a surface ignoring one kind's audiences for any set leaks a marker.
func TestEveryAudienceCombinationIsPresent(t *testing.T) {
	for _, run := range []struct {
		name string
		body []byte
	}{
		{"demo", demoBytes(t)}, {"demo-nz", demoNZBytes(t)},
		{"137 services", generate(t, Options{Services: 137, Seed: 137})},
		{"50 services NZ", generate(t, Options{Country: "NZ", Slug: "nz", Services: 50, Seed: 5})},
	} {
		t.Run(run.name, func(t *testing.T) {
			got := restrictableKinds(decode(t, run.body))
			for _, kind := range matrixKinds {
				var missing []string
				for _, s := range combos {
					if !got[kind][s] {
						missing = append(missing, "["+s.String()+"]")
					}
				}
				if len(missing) > 0 {
					t.Errorf("%s: no example for %s", kind, strings.Join(missing, " "))
				}
			}
		})
	}
}

// TestSmallDirectoriesHaveTheMatrixToo shows that the matrix does not depend on a directory's size:
// a directory of one service holds every set for every kind of detail but whole services (which it
// has too few of).
func TestSmallDirectoriesHaveTheMatrixToo(t *testing.T) {
	got := restrictableKinds(decode(t, generate(t, Options{Services: 1, Seed: 11})))
	for _, kind := range matrixKinds {
		if kind == "service" {
			continue
		}
		for _, s := range combos {
			if !got[kind][s] {
				t.Errorf("%s: no example for [%s]", kind, s)
			}
		}
	}
}

// TestEveryPhoneDigitIsUsed shows every digit of the phone canary scheme appears in the demo.
func TestEveryPhoneDigitIsUsed(t *testing.T) {
	found := Canaries(demoBytes(t))
	for d := 1; d <= 7; d++ {
		prefix := fmt.Sprintf("+6125550%d", d)
		if !slices.ContainsFunc(found, func(c string) bool { return strings.HasPrefix(c, prefix) }) {
			t.Errorf("no number of the canary range with digit %d (%s)", d, phoneDigitAudiences(byte('0'+d)))
		}
	}
}
