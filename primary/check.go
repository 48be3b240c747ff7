package primary

import (
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/dirsvc/dirsvc"
)

var countryRE = regexp.MustCompile(`^[A-Z]{2}$`)

// check verifies what needs the whole file: the directory, the taxonomy, and that every reference
// resolves to a record of the right kind.
func (p *parser) check() error {
	p.line = 0
	d := &p.snap.Directory
	if !dirsvc.ValidSlug(d.Slug) {
		return p.fail("", "directory.slug", "%q is not a valid slug", d.Slug)
	}
	if !countryRE.MatchString(d.Country) {
		return p.fail("", "directory.country", "%q is not an ISO 3166 alpha-2 code", d.Country)
	}
	if !validZone(d.TimeZone) {
		return p.fail("", "directory.timeZone", "%q is not an IANA time zone", d.TimeZone)
	}
	if err := p.need("", "directory.name", d.Name); err != nil {
		return err
	}
	if n := utf8.RuneCountInString(d.Region); n > dirsvc.MaxRegionLength {
		return p.fail("", "directory.region", "is %d characters long: at most %d", n, dirsvc.MaxRegionLength)
	}
	if d.DataIssueContact != "" && !dirsvc.ValidDataIssueContact(d.DataIssueContact) {
		return p.fail("", "directory.dataIssueContact", "is neither an email address nor an https URL")
	}
	if err := p.checkTaxonomy(); err != nil {
		return err
	}
	tax := &p.snap.Taxonomy
	for _, rec := range p.snap.Records {
		m := rec.Base()
		p.line = p.lines[m.PublicID]
		refs := rec.Refs()
		for _, kind := range refOrder { // a fixed order: the same file gives the same error
			for _, id := range refs[kind] {
				if _, ok := p.lines[id]; !ok || dirsvc.KindOfID(id) != kind {
					return p.fail(m.PublicID, string(kind), "%q is not %s in the file", id, withArticle(string(kind)))
				}
			}
		}
		if m.Survivor != "" {
			if _, ok := p.lines[m.Survivor]; !ok || dirsvc.KindOfID(m.Survivor) != rec.Kind() || m.Survivor == m.PublicID {
				return p.fail(m.PublicID, "survivorPublicId", "%q is not another %s in the file", m.Survivor, rec.Kind())
			}
		}
		var specialties []string
		switch r := rec.(type) {
		case *dirsvc.Service:
			if tax.PlatformType(r.Type) == nil {
				return p.fail(m.PublicID, "type", "%q is not a platform type of the directory", r.Type)
			}
			specialties = r.LocalTypes
			if err := p.codes(m.PublicID, "programs", r.Programs, tax.Programs); err != nil {
				return err
			}
			if err := p.codes(m.PublicID, "targetGroups", r.TargetGroups, tax.TargetGroups); err != nil {
				return err
			}
		case *dirsvc.PractitionerRole:
			specialties = r.Specialties
		}
		for _, c := range specialties {
			if tax.LocalType(c) == nil {
				return p.fail(m.PublicID, "localTypes", "%q is not a local type of the directory", c)
			}
		}
	}
	p.line = 0
	for _, c := range p.snap.Collections {
		for _, id := range c.Services {
			if _, ok := p.lines[id]; !ok || dirsvc.KindOfID(id) != dirsvc.KindService {
				return p.fail("", "collection "+c.Slug+".services", "%q is not a service in the file", id)
			}
		}
	}
	return nil
}

func (p *parser) codes(id, field string, codes []string, terms []dirsvc.Term) error {
	for _, c := range codes {
		if !slices.ContainsFunc(terms, func(t dirsvc.Term) bool { return t.Code == c }) {
			return p.fail(id, field, "%q is not defined in the file", c)
		}
	}
	return nil
}

func (p *parser) checkTaxonomy() error {
	t := &p.snap.Taxonomy
	seen := map[string]bool{}
	unique := func(what, code string) error {
		if code == "" {
			return p.fail("", what, "a code is required")
		}
		if seen[what+"\x00"+code] {
			return p.fail("", what, "code %q is defined twice", code)
		}
		seen[what+"\x00"+code] = true
		return nil
	}
	for _, pt := range t.PlatformTypes {
		if err := unique("platformType", pt.Code); err != nil {
			return err
		}
	}
	for i := range t.LocalTypes {
		lt := &t.LocalTypes[i]
		if err := unique("localType", lt.Code); err != nil {
			return err
		}
		if lt.Slug == "" {
			lt.Slug = Slugify(lt.Label)
		}
		lt.VisibleTo = lt.VisibleTo.Or(dirsvc.Everyone)
		for _, r := range lt.Refines {
			if t.PlatformType(r) == nil {
				return p.fail("", "localType "+lt.Code+".refines", "%q is not a platform type", r)
			}
		}
	}
	for i := range t.Categories {
		c := &t.Categories[i]
		if err := unique("category", c.Code); err != nil {
			return err
		}
		c.VisibleTo = c.VisibleTo.Or(dirsvc.Everyone)
		for _, ty := range c.Types {
			if t.PlatformType(ty) == nil {
				return p.fail("", "category "+c.Code+".types", "%q is not a platform type", ty)
			}
		}
		for _, lt := range c.LocalTypes {
			if t.LocalType(lt) == nil {
				return p.fail("", "category "+c.Code+".localTypes", "%q is not a local type", lt)
			}
		}
	}
	for _, pr := range t.Programs {
		if err := unique("program", pr.Code); err != nil {
			return err
		}
	}
	for _, tg := range t.TargetGroups {
		if err := unique("targetGroup", tg.Code); err != nil {
			return err
		}
	}
	for i := range p.snap.Collections {
		c := &p.snap.Collections[i]
		if err := unique("collection", c.Slug); err != nil {
			return err
		}
		c.VisibleTo = c.VisibleTo.Or(dirsvc.Everyone)
		if err := p.dates("", "collection "+c.Slug, c.StartDate, c.EndDate); err != nil {
			return err
		}
	}
	return nil
}

// withArticle returns a noun with its indefinite article: "an organisation", "a service".
// refOrder is the order in which a record's references are checked.
var refOrder = []dirsvc.Kind{dirsvc.KindOrganisation, dirsvc.KindLocation, dirsvc.KindService, dirsvc.KindPractitioner}

func withArticle(noun string) string {
	if noun != "" && strings.ContainsRune("aeiou", rune(noun[0])) {
		return "an " + noun
	}
	return "a " + noun
}
