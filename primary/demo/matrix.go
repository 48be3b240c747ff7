package demo

import (
	"fmt"
	"strings"

	"github.com/dirsvc/dirsvc"
)

// The audience matrix
//
// Every detail the import format lets a directory restrict (a record's audiences; contacts,
// identifiers, location addresses with their point, withheld or not, and postal addresses; local
// types, categories and collections; a practitioner's name and each field of shows; a leader's name,
// bio and contacts) is generated for every set of served audiences it can take: staff only, each tier
// alone, each pair of tiers, and everyone. Each carries the marker of who may see it (canary.go), so a
// surface that ignores one kind of detail's audiences for one set leaks a marker the leak scans name.
// The random part of the generator makes realistic directories; the matrix makes sure none of these
// cases depends on chance (only whole services need a directory of a few dozen services, for the
// matrix takes planned ones). Its own records come after the planned ones; of those it changes only
// the first service (its contacts, identifiers and local types for every set), the audiences of a
// few services, and the staff notes one record in seven carries.

// combos are the sets of served audiences a restricted detail may be for, in a fixed order; the last,
// everyone, carries no marker.
var combos = []dirsvc.Audiences{
	staffOnly,
	dirsvc.AudiencesOf(dirsvc.Public),
	professional,
	partnerOnly,
	dirsvc.AudiencesOf(dirsvc.Public, dirsvc.Professional),
	dirsvc.AudiencesOf(dirsvc.Public, dirsvc.Partner),
	proPartner,
	everyone,
}

// comboWords names a set for people, as the matrix's labels do.
func comboWords(s dirsvc.Audiences) string {
	if !s.Restricted() {
		return "everyone"
	}
	return strings.Join(s.List(), " and ")
}

// comboSlug names a set in codes and slugs.
func comboSlug(s dirsvc.Audiences) string {
	if !s.Restricted() {
		return "everyone"
	}
	return strings.Join(s.List(), "-")
}

// leaderShown returns who sees a leader's detail restricted to s: leadership shows only what is shown
// to health professionals, to every holder of the leadership scope, so a detail is either seen by
// professional and partner callers or by staff only.
func leaderShown(s dirsvc.Audiences) dirsvc.Audiences {
	if s.Has(dirsvc.Professional) {
		return proPartner
	}
	return staffOnly
}

// recordNotes are staff notes of records: internal, never published.
var recordNotes = []string{
	"Verified by phone with the practice manager; hours confirmed.",
	"Safety note: do not give the street address over the phone.",
	"Unlisted at the provider's request while the service is at capacity.",
	"Awaiting updated insurance certificate before the next review.",
	"Complaint received about wait times; follow up at the next verification call.",
}

// staffNote returns a staff note for the i-th record of a kind, marked staff only, on one record in
// seven (by index, so the notes draw nothing from the generator's random source), and on every record
// of the matrix (force).
func staffNote(i int, force bool) string {
	if !force && i%7 != 3 {
		return ""
	}
	return withMarker(recordNotes[i%len(recordNotes)], staffOnly)
}

// matrixContacts returns a phone and an email for every set of audiences, in the context ctx (who
// may see the record they belong to), def being the default of the kind of contact; a number every
// audience sees is one near l.
func (g *gen) matrixContacts(l *dirsvc.Locality, domain, local string, def, ctx dirsvc.Audiences) []dirsvc.Contact {
	var cs []dirsvc.Contact
	for _, s := range combos {
		label := "For " + comboWords(s)
		cs = append(cs, g.phone(dirsvc.ContactPhone, label, s, def, ctx, func() string { return g.landline(l) }),
			g.email(local+"."+comboSlug(s), domain, label, s, def, ctx))
	}
	return cs
}

// matrixIdentifiers returns an identifier of the directory's own kind for every set of audiences.
func (g *gen) matrixIdentifiers(what string, ctx dirsvc.Audiences) []dirsvc.Identifier {
	var ids []dirsvc.Identifier
	for _, s := range combos {
		ids = append(ids, g.localIdentifier(what, s, ctx))
	}
	return ids
}

// matrixTaxonomy writes a category and a local type for every set of audiences but everyone.
func (g *gen) matrixTaxonomy() {
	for i, s := range combos[:len(combos)-1] {
		code := "access-" + comboSlug(s)
		g.emit(localTypeLine{"localType", &dirsvc.LocalType{Code: code, Slug: code,
			Label: withMarker("Access pathway for "+comboWords(s), s), VisibleTo: s}})
		g.emit(categoryLine{"category", &dirsvc.Category{Code: code, Name: withMarker("Access pathways for "+comboWords(s), s),
			Order: 100 + i, LocalTypes: []string{code}, VisibleTo: s}})
	}
}

// matrixLocalTypes are the codes of the matrix's local types.
func matrixLocalTypes() []string {
	var out []string
	for _, s := range combos[:len(combos)-1] {
		out = append(out, "access-"+comboSlug(s))
	}
	return out
}

// matrixCollections returns a collection for every set of audiences but everyone.
func (g *gen) matrixCollections() []*collPlan {
	var out []*collPlan
	for _, s := range combos[:len(combos)-1] {
		out = append(out, &collPlan{c: dirsvc.Collection{Slug: "access-" + comboSlug(s),
			Title:       withMarker("Access pathways for "+comboWords(s), s),
			Description: withMarker("Services chosen for "+comboWords(s)+".", s), VisibleTo: s}})
	}
	return out
}

// matrixServiceAudiences returns the audiences of the s-th service when it is one of the matrix's
// services restricted as a whole (the first live, featureless services of live organisations, one for
// each set but everyone), else 0.
func (g *gen) matrixServiceAudiences(s int, st uint8, feat uint16, orgEff dirsvc.Audiences) dirsvc.Audiences {
	if s == 0 || st != stLive || feat != 0 || orgEff != everyone || g.svcMatrixN >= len(combos)-1 {
		return 0
	}
	g.svcMatrixN++
	return combos[g.svcMatrixN-1]
}

// writeMatrix writes the matrix's records: for every set of audiences an organisation whose postal
// address, and whose sites' addresses (one withheld, one not), are for that set, and a site and an
// organisation visible to that set only; practitioners whose name, or every private field, is for
// each set, practitioners and roles visible to each set only; and contacts, identifiers and leaders
// for every set on the first of them.
func (g *gen) writeMatrix() {
	home := &g.pool.locs[g.pickLocality()]
	g.matrixHome = home
	var first *dirsvc.Organisation
	for i, s := range combos {
		g.tombOrgN++
		name := fmt.Sprintf("%s Access Network %d", home.Name, i+1)
		domain := domainOf(name)
		org := &dirsvc.Organisation{
			Meta: dirsvc.Meta{PublicID: g.id("org_", len(g.orgs)+g.tombOrgN, saltOrg), StaffNotes: staffNote(i, true)},
			Name: name,
			PostalAddress: &dirsvc.Address{Lines: []string{withMarker(fmt.Sprintf("PO Box %d", 100+i), s)},
				Locality: home.Name, State: home.State, Postcode: home.Postcode, Country: home.Country, VisibleTo: s},
			OwnershipType: g.ownership("not_for_profit"),
		}
		if g.nz {
			org.PostalAddress.State = ""
		}
		if i == 0 {
			first = org
			org.Contacts = g.matrixContacts(home, domain, "office", everyone, everyone)
			org.Identifiers = g.matrixIdentifiers("provider_ref", everyone)
			org.Leadership = g.matrixLeaders(domain)
		}
		g.emit(organisationLine{"organisation", org})
		for k, withheld := range []bool{false, true} {
			id := g.id("loc_", g.locN, saltLoc)
			g.locN++
			a := g.address(home, everyone, 0)
			a.Lines[0] = withMarker(g.street(), s)
			a.Withheld, a.VisibleTo = withheld, s
			loc := &dirsvc.Location{Meta: dirsvc.Meta{PublicID: id, StaffNotes: staffNote(k, true)},
				Organisation: org.PublicID, Name: fmt.Sprintf("%s site %d", name, k+1), Address: a, Areas: home.Areas()}
			if i == 0 && !withheld {
				loc.Contacts = g.matrixContacts(home, domain, "site", everyone, everyone)
				loc.Identifiers = g.matrixIdentifiers("site_ref", everyone)
			}
			g.emit(locationLine{"location", loc})
		}
		if !s.Restricted() {
			continue
		}
		// A site, and an organisation with its site, visible to s only.
		g.emit(locationLine{"location", &dirsvc.Location{
			Meta:         dirsvc.Meta{PublicID: g.id("loc_", g.locN, saltLoc), VisibleTo: s, StaffNotes: staffNote(2, true)},
			Organisation: first.PublicID, Name: withMarker(fmt.Sprintf("%s outreach point %d", home.Name, i+1), s),
			Address: g.address(home, s, 0), Areas: home.Areas()}})
		g.locN++
		g.tombOrgN++
		hidden := &dirsvc.Organisation{
			Meta: dirsvc.Meta{PublicID: g.id("org_", len(g.orgs)+g.tombOrgN, saltOrg), VisibleTo: s, StaffNotes: staffNote(3, true)},
			Name: withMarker(fmt.Sprintf("%s Health Partners %d", home.Name, i+1), s)}
		g.emit(organisationLine{"organisation", hidden})
		g.emit(locationLine{"location", &dirsvc.Location{
			Meta:         dirsvc.Meta{PublicID: g.id("loc_", g.locN, saltLoc), StaffNotes: staffNote(4, true)},
			Organisation: hidden.PublicID, Name: withMarker(hidden.Name, s), Address: g.address(home, s, 0), Areas: home.Areas()}})
		g.locN++
	}
	g.matrixPractitioners()
}

// matrixLeaders returns, for every set of audiences, a current leader whose name is for it, and one
// whose name everyone sees but whose bio and contacts are for it.
func (g *gen) matrixLeaders(domain string) []dirsvc.Leader {
	var out []dirsvc.Leader
	for i, s := range combos {
		for k := range 2 {
			given, family := g.personName("")
			name, bio := s, everyone
			if k == 1 {
				name, bio = everyone, s
			}
			shown := leaderShown(name)
			l := dirsvc.Leader{Group: dirsvc.LeaderBoard, Title: boardTitles[3], Order: 10 + 2*i + k, StartDate: g.date(2015, 2024),
				Name: withMarker(given+" "+family, shown), NameVisibleTo: name,
				Bio: withMarker(fmt.Sprintf(g.one(leaderBios), given), shown&leaderShown(bio)), BioVisibleTo: bio,
				StaffNotes: withMarker(g.one(staffNotes), staffOnly)}
			if k == 1 {
				// Leaders' contacts default to staff only; those for everyone are written out. They are
				// marked by who sees them: every holder of the scope when shown to health professionals.
				local := strings.ToLower(dirsvc.Slugify(given) + "." + dirsvc.Slugify(family))
				email := g.email(local, domain, "", 0, everyone, shown&leaderShown(s))
				phoneFor := combos[(i+4)%len(combos)]
				phone := g.phone(dirsvc.ContactPhone, "Direct line", 0, everyone, shown&leaderShown(phoneFor), nil)
				email.VisibleTo, phone.VisibleTo = s, phoneFor
				l.Contacts = []dirsvc.Contact{email, phone}
			}
			out = append(out, l)
		}
	}
	return out
}

// matrixPractitioners writes, for every set of audiences, a practitioner whose name is for it, one
// whose every private field is for it (with a role whose own audiences are the set), and one visible
// to it only; each has a role at a service every audience sees.
func (g *gen) matrixPractitioners() {
	if len(g.public) == 0 {
		return
	}
	sv := g.matrixService()
	p := len(g.pracState)
	write := func(name, fields, record dirsvc.Audiences, contacts bool, role dirsvc.Audiences) {
		id := g.id("prac_", p, saltPrac)
		p++
		given, family := g.personName(dirsvc.GenderDifferentTerm)
		pr := &dirsvc.Practitioner{Meta: dirsvc.Meta{PublicID: id, StaffNotes: staffNote(p, true)},
			Prefix: "Dr", Given: given, Gender: dirsvc.GenderDifferentTerm}
		if record.Restricted() {
			pr.VisibleTo = record
		}
		pr.NameVisibleTo = name
		nameEff := record & name
		pr.Family = withMarker(family, nameEff)
		field := nameEff
		if fields != 0 {
			pr.Shows = map[string]dirsvc.Audiences{}
			for _, f := range dirsvc.PrivateFields {
				pr.Shows[f] = fields
			}
			field = nameEff & fields
		}
		pr.GenderOwnTerm = withMarker(g.one(ownTermsAU), field)
		pr.Qualifications = []string{withMarker("MBBS", field), withMarker("FRACGP", field)}
		pr.Languages = []string{"en"}
		pr.Bio = withMarker(given+" works with people who find it hard to reach services.", field)
		pr.Photo = "https://images.example.org/" + g.opt.Slug + "/practitioners/" + id
		if m := markerFor(field); m != "" {
			pr.Photo += "-" + m
		}
		pr.Photo += ".jpg"
		pr.Identifiers = []dirsvc.Identifier{g.localIdentifier("staff_ref", 0, field)}
		if contacts {
			pr.Contacts = g.matrixContacts(g.matrixHome, "practitioners.example.org", strings.ToLower(dirsvc.Slugify(given)), staffOnly, nameEff)
			pr.Identifiers = append(pr.Identifiers, g.matrixIdentifiers("registry_ref", field)...)
		}
		g.emit(practitionerLine{"practitioner", pr})
		rid := g.id("role_", g.roleN, saltRole)
		g.roleN++
		r := &dirsvc.PractitionerRole{Meta: dirsvc.Meta{PublicID: rid, StaffNotes: staffNote(g.roleN, true)},
			Practitioner: id, Service: sv.id, Title: withMarker("General practitioner", sv.eff&record&role),
			Active: true, StartDate: "2020-02-03", Specialties: matrixLocalTypes()}
		if role.Restricted() {
			r.VisibleTo = role
		}
		if contacts {
			r.Contacts = g.matrixContacts(g.matrixHome, "roles.example.org", "role", everyone, sv.eff&record&role)
		}
		g.emit(roleLine{"role", r})
	}
	for _, s := range combos {
		write(s, 0, everyone, false, everyone)
		write(everyone, s, everyone, !s.Restricted(), s)
		if s.Restricted() {
			write(everyone, 0, s, false, everyone)
		}
	}
}

// matrixService returns the service the matrix's roles are at: the first one every audience sees.
func (g *gen) matrixService() *svcRT {
	return &svcRT{id: g.public[0], eff: everyone, loc: g.matrixHome}
}
