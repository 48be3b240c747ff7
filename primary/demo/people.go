package demo

import (
	"fmt"
	"strings"

	"github.com/dirsvc/dirsvc"
)

// personName returns a given and family name to suit the gender ("" for any).
func (g *gen) personName(gender string) (given, family string) {
	women, men := givenWoman, givenMan
	if g.nz && g.chance(0.4) {
		women, men = givenWomanNZ, givenManNZ
	}
	switch {
	case gender == dirsvc.GenderWoman:
		given = g.one(women)
	case gender == dirsvc.GenderMan:
		given = g.one(men)
	case g.chance(0.5):
		given = g.one(givenNeutral)
	case g.chance(0.5):
		given = g.one(women)
	default:
		given = g.one(men)
	}
	family = g.one(familyNames)
	if g.nz && g.chance(0.35) {
		family = g.one(familyNamesNZ)
	}
	return given, family
}

// date returns a date in the years [from, to].
func (g *gen) date(from, to int) string {
	return fmt.Sprintf("%d-%02d-%02d", from+g.rng.IntN(to-from+1), 1+g.rng.IntN(12), 1+g.rng.IntN(28))
}

// leadership returns the executives, then the board, of an organisation seen by orgEff. Only what
// a leader shows to health professionals may leave the service, and only with the leadership scope:
// it is marked for professional and partner; the rest (past appointments, staff notes, details kept
// from health professionals) is marked staff only.
func (g *gen) leadership(orgEff dirsvc.Audiences, full bool, domain string) []dirsvc.Leader {
	var out []dirsvc.Leader
	add := func(group, title string, order int, past, nameStaff, notes bool) {
		given, family := g.personName("")
		l := dirsvc.Leader{Group: group, Title: title, Order: order, StartDate: g.date(2012, 2024)}
		if past {
			l.StartDate = g.date(2012, 2019)
			l.EndDate = g.one([]string{"2023-06-30", "2022-12-31", "2024-06-30"})
		}
		switch {
		case nameStaff:
			l.NameVisibleTo = staffOnly
		case g.chance(0.1):
			l.NameVisibleTo = proPartner
		}
		shown := proPartner
		if past || nameStaff {
			shown = staffOnly
		}
		ctx := orgEff & shown
		l.Name = withMarker(given+" "+family, ctx)
		if full || g.chance(0.6) {
			switch r := g.rng.Float64(); {
			case r < 0.6:
				l.BioVisibleTo = proPartner
			case r < 0.85:
				l.BioVisibleTo = staffOnly
			}
			l.Bio = withMarker(fmt.Sprintf(g.one(leaderBios), given), ctx&l.BioVisibleTo.Or(everyone))
		}
		local := strings.ToLower(dirsvc.Slugify(given) + "." + dirsvc.Slugify(family))
		if full || g.chance(0.6) {
			var vis dirsvc.Audiences
			if g.chance(0.4) {
				vis = proPartner
			}
			l.Contacts = append(l.Contacts, g.email(local, domain, "", vis, staffOnly, ctx))
		}
		if full || g.chance(0.3) {
			l.Contacts = append(l.Contacts, g.phone(dirsvc.ContactPhone, "Direct line", proPartner, staffOnly, ctx, nil))
		}
		if g.chance(0.15) {
			l.Contacts = append(l.Contacts, g.phone(dirsvc.ContactPhone, "After hours", 0, staffOnly, ctx, nil))
		}
		if notes || g.chance(0.3) {
			l.StaffNotes = withMarker(g.one(staffNotes), staffOnly)
		}
		out = append(out, l)
	}
	nExec, nBoard := 2+g.rng.IntN(2), 3+g.rng.IntN(3)
	if full {
		nExec, nBoard = 3, 5
	}
	for i := range nExec {
		title := executiveTitles[0]
		if i > 0 {
			title = executiveTitles[1+g.rng.IntN(len(executiveTitles)-1)]
		}
		add(dirsvc.LeaderExecutive, title, i+1, false, false, full && i == 0)
	}
	if full || g.chance(0.3) {
		add(dirsvc.LeaderExecutive, executiveTitles[0], 1, true, false, false)
	}
	for i := range nBoard {
		title := boardTitles[min(i, 2)]
		if i > 2 {
			title = boardTitles[3+g.rng.IntN(len(boardTitles)-3)]
		}
		add(dirsvc.LeaderBoard, title, i+1, false, full && i == nBoard-1 || g.chance(0.03), false)
	}
	if full || g.chance(0.2) {
		add(dirsvc.LeaderBoard, boardTitles[0], 1, true, false, full)
	}
	return out
}

// writePractitioner writes a practitioner of the organisation and their roles.
func (g *gen) writePractitioner(p int, domain string, svcs []svcRT) {
	st, feat := g.pracState[p], g.pracFeat[p]
	id := g.id("prac_", p, saltPrac)
	eff := ownAudiences(st)
	if tombstone(st) {
		eff = everyone
	}
	prim := &svcs[g.rng.IntN(len(svcs))]
	prof := &professions[ptypes[prim.typ].prof]

	var gender string
	switch {
	case feat&pfPreferNotToSay != 0:
		gender = dirsvc.GenderPreferNotToSay
	case feat&(pfDifferentTerm|pfDifferentTermHidden) != 0:
		gender = dirsvc.GenderDifferentTerm
	case feat&pfWoman != 0:
		gender = dirsvc.GenderWoman
	case feat&pfMan != 0:
		gender = dirsvc.GenderMan
	case feat&pfNonBinary != 0:
		gender = dirsvc.GenderNonBinary
	default:
		switch r := g.rng.Float64(); {
		case r < 0.55:
			gender = dirsvc.GenderWoman
		case r < 0.91:
			gender = dirsvc.GenderMan
		case r < 0.94:
			gender = dirsvc.GenderNonBinary
		}
	}
	given, family := g.personName(gender)
	pr := &dirsvc.Practitioner{
		Meta:   dirsvc.Meta{PublicID: id, State: stateOf[st], StaffNotes: staffNote(p, false)},
		Given:  given,
		Gender: gender,
	}
	if st == stReduced {
		pr.VisibleTo = proPartner
	}
	title := g.one(prof.titles)
	switch {
	case doctorTitle(title) && g.chance(prof.dr):
		pr.Prefix = "Dr"
		if g.chance(0.03) {
			pr.Prefix = "Prof"
		}
	case gender == dirsvc.GenderNonBinary && g.chance(0.3):
		pr.Prefix = "Mx"
	case gender == dirsvc.GenderWoman && g.chance(0.1):
		pr.Prefix = "Ms"
	case gender == dirsvc.GenderMan && g.chance(0.1):
		pr.Prefix = "Mr"
	}
	if feat&pfNameHidden != 0 {
		pr.NameVisibleTo = proPartner
	}
	nameEff := eff & pr.NameVisibleTo.Or(everyone)
	pr.Family = withMarker(family, nameEff)

	// Fields kept private.
	if feat&(pfPrivateFields|pfDifferentTermHidden) != 0 {
		pr.Shows = map[string]dirsvc.Audiences{dirsvc.FieldGender: proPartner}
	}
	if feat&pfPrivateFields != 0 {
		pr.Shows[dirsvc.FieldBio] = partnerOnly
		if g.chance(0.5) {
			pr.Shows[dirsvc.FieldQualifications] = proPartner
		}
		if g.chance(0.4) {
			pr.Shows[dirsvc.FieldIdentifiers] = proPartner
		}
		if g.chance(0.3) {
			pr.Shows[dirsvc.FieldPhoto] = partnerOnly
		}
	}
	field := func(f string) dirsvc.Audiences {
		if s, ok := pr.Shows[f]; ok {
			return nameEff & s
		}
		return nameEff
	}
	if gender == dirsvc.GenderDifferentTerm {
		terms := ownTermsAU
		if g.nz {
			terms = ownTermsNZ
		}
		pr.GenderOwnTerm = withMarker(g.one(terms), field(dirsvc.FieldGender))
	}
	quals := prof.qualsAU
	if g.nz {
		quals = prof.qualsNZ
	}
	for _, q := range oneOf(g, quals) {
		pr.Qualifications = append(pr.Qualifications, withMarker(q, field(dirsvc.FieldQualifications)))
	}
	pr.Languages = []string{"en"}
	if g.chance(0.3) {
		langs := languagesAU
		if g.nz {
			langs = languagesNZ
		}
		pr.Languages = appendNew(pr.Languages, g.one(langs))
	}
	if feat&pfPrivateFields != 0 || g.chance(0.7) {
		i1 := g.one(prof.interests)
		i2 := g.one(prof.interests)
		bio := fmt.Sprintf("%s is %s with a special interest in %s", given, article(lowerFirst(title)), i1)
		if i2 != i1 {
			bio += " and " + i2
		}
		bio += "."
		if g.chance(0.3) {
			bio += fmt.Sprintf(" %s has practised since %d.", given, 1995+g.rng.IntN(28))
		}
		pr.Bio = withMarker(bio, field(dirsvc.FieldBio))
	}
	if g.chance(0.3) || pr.Shows[dirsvc.FieldPhoto] != 0 {
		photo := "https://images.example.org/" + g.opt.Slug + "/practitioners/" + id
		if m := markerFor(field(dirsvc.FieldPhoto)); m != "" {
			photo += "-" + m
		}
		pr.Photo = photo + ".jpg"
	}
	// Identifiers: HPI-I and Ahpra number in Australia, the HPI person number in New Zealand.
	if !g.nz && prof.ahpra != "" {
		g.ahpraN++
		if g.chance(0.8) {
			g.hpiiN++
			pr.Identifiers = append(pr.Identifiers, g.identifier(dirsvc.IdentHPII, hpi("800361", g.hpiiN, g.salt+saltPrac), 0))
		}
		pr.Identifiers = append(pr.Identifiers, g.identifier(dirsvc.IdentAhpra, ahpraFor(prof.ahpra, g.ahpraN, g.salt+saltIdent), 0))
	}
	if g.nz && prof.registeredN {
		pr.Identifiers = append(pr.Identifiers, dirsvc.Identifier{Type: "nz_hpi_person",
			System: "https://standards.digital.health.nz/ns/hpi-person-id", Value: g.nzCPN()})
	}
	if len(pr.Identifiers) > 0 && field(dirsvc.FieldIdentifiers).Restricted() {
		// The numbers cannot carry a marker; the directory's own reference beside them does, so any
		// leak of the identifiers shows.
		pr.Identifiers = append(pr.Identifiers, g.localIdentifier("staff_ref", 0, field(dirsvc.FieldIdentifiers)))
	}

	// Own contacts: staff only unless shown.
	local := strings.ToLower(dirsvc.Slugify(given) + "." + dirsvc.Slugify(family))
	if feat&pfContactStaff != 0 {
		pr.Contacts = append(pr.Contacts, g.email(local, domain, "", 0, staffOnly, nameEff))
		if g.chance(0.5) {
			pr.Contacts = append(pr.Contacts, g.phone(dirsvc.ContactPhone, "", 0, staffOnly, nameEff, nil))
		}
	}
	if feat&pfContactProPartner != 0 {
		pr.Contacts = append(pr.Contacts, g.phone(dirsvc.ContactPhone, "", proPartner, staffOnly, nameEff, nil))
		if g.chance(0.5) {
			pr.Contacts = append(pr.Contacts, g.email(local+".clinical", domain, "", proPartner, staffOnly, nameEff))
		}
	}
	if feat&pfContactEveryone != 0 {
		c := g.phone(dirsvc.ContactMobile, "", everyone, staffOnly, nameEff, g.mobile)
		if nameEff.Restricted() {
			c.Kind = dirsvc.ContactPhone
		}
		pr.Contacts = append(pr.Contacts, c)
		if g.chance(0.4) {
			pr.Contacts = append(pr.Contacts, g.email(local, "practitioners.example.org", "", everyone, staffOnly, nameEff))
		}
	}
	if st == stMerged {
		pr.Survivor = g.lastPrac
		if pr.Survivor == "" {
			pr.Survivor = g.lastLivePrac
		}
	}
	g.emit(practitionerLine{"practitioner", pr})
	if st == stLive {
		g.lastLivePrac = id
		if nameEff == everyone {
			g.lastPrac = id
		}
	}

	// Roles: at the main service, and at other services of the same kind here or elsewhere.
	chosen := []*svcRT{prim}
	nRoles := 1
	switch r := g.rng.Float64(); {
	case r < 0.1:
		nRoles = 3
	case r < 0.4:
		nRoles = 2
	}
	for len(chosen) < nRoles {
		var next *svcRT
		for i := range svcs {
			s := &svcs[i]
			if ptypes[s.typ].prof == ptypes[prim.typ].prof && !containsSvc(chosen, s.id) && g.chance(0.6) {
				next = s
				break
			}
		}
		if next == nil {
			for i := range g.recent[prim.typ] {
				s := &g.recent[prim.typ][i]
				if !containsSvc(chosen, s.id) {
					next = s
					break
				}
			}
		}
		if next == nil {
			break
		}
		chosen = append(chosen, next)
	}
	for k, sv := range chosen {
		g.writeRole(id, sv, title, eff, feat&pfEndedRole != 0 && k == len(chosen)-1 || g.chance(0.03))
	}
}

// doctorTitle reports whether people with the title are usually addressed as Dr.
func doctorTitle(title string) bool {
	t := strings.ToLower(title)
	if strings.Contains(t, "nurse") {
		return false
	}
	for _, w := range []string{"general practitioner", "gp ", "dentist", "physician", "psychologist", "cardiologist",
		"endocrinologist", "radiologist", "registrar"} {
		if strings.Contains(t, w) {
			return true
		}
	}
	return false
}

// article puts "a" or "an" before a noun phrase.
func article(s string) string {
	if s != "" && strings.ContainsRune("aeiou", rune(s[0])) {
		return "an " + s
	}
	return "a " + s
}

func containsSvc(list []*svcRT, id string) bool {
	for _, s := range list {
		if s.id == id {
			return true
		}
	}
	return false
}

// nzCPN returns a New Zealand HPI person identifier in its format (two digits, four letters); the
// check character is not computed.
func (g *gen) nzCPN() string {
	const letters = "ABCDEFGHJKLMNPQRSTUVWXYZ"
	b := []byte(g.digits(2))
	for range 4 {
		b = append(b, letters[g.rng.IntN(len(letters))])
	}
	return string(b)
}

// writeRole writes a practitioner's role at a service. pracEff is who may see the practitioner
// record (a role names a practitioner whose name is hidden by ID only, so the name's audiences do
// not matter here).
func (g *gen) writeRole(pracID string, sv *svcRT, title string, pracEff dirsvc.Audiences, ended bool) {
	id := g.id("role_", g.roleN, saltRole)
	g.roleN++
	eff := sv.eff & pracEff
	r := &dirsvc.PractitionerRole{
		Meta:         dirsvc.Meta{PublicID: id, StaffNotes: staffNote(g.roleN, false)},
		Practitioner: pracID,
		Service:      sv.id,
		Title:        withMarker(title, eff),
		Active:       true,
		StartDate:    g.date(2008, 2024),
	}
	if ended {
		start := 2010 + g.rng.IntN(10)
		r.StartDate = g.date(start, start)
		r.EndDate = g.date(start+1, min(start+5, 2024))
		r.Active = false
	}
	if len(sv.localTypes) > 0 && g.chance(0.5) {
		r.Specialties = []string{sv.localTypes[g.rng.IntN(len(sv.localTypes))]}
	} else if refs := refinersOf(ptypes[sv.typ].code); len(refs) > 0 && g.chance(0.15) {
		r.Specialties = []string{g.one(refs)}
	}
	if g.chance(0.2) {
		var vis dirsvc.Audiences
		label := "Direct line"
		if g.chance(0.4) {
			vis, label = proPartner, "Direct line for referrers"
		}
		r.Contacts = append(r.Contacts, g.phone(dirsvc.ContactPhone, label, vis, everyone, eff,
			func() string { return g.landline(sv.loc) }))
	}
	g.emit(roleLine{"role", r})
}

// collPlan is a collection whose services are gathered while services are written.
type collPlan struct {
	c    dirsvc.Collection
	want func(*svcRT) bool
	max  int
}

func isCode(codes ...string) func(*svcRT) bool {
	return func(s *svcRT) bool {
		for _, c := range codes {
			if ptypes[s.typ].code == c {
				return true
			}
		}
		return false
	}
}

func (g *gen) collectionPlans() []*collPlan {
	area, young := "state:nsw", "young_people"
	if g.nz {
		area, young = "region:auckland", "rangatahi"
	}
	return []*collPlan{
		{c: dirsvc.Collection{Slug: "mental-health-support", Title: "Mental health support",
			Description: "Free and low-cost mental health services, from a first conversation to ongoing care.",
			Home:        true, Search: "category=mental_health"},
			want: func(s *svcRT) bool { return ptypes[s.typ].category == "mental_health" }, max: 6},
		{c: dirsvc.Collection{Slug: "young-people", Title: "Support for young people",
			Description: "Health, wellbeing and housing services for young people aged 12 to 25.",
			Home:        true, Search: "targetGroup=" + young},
			want: func(s *svcRT) bool {
				return isCode("youth_mental_health")(s) || containsStr(s.groups, young)
			}, max: 6},
		{c: dirsvc.Collection{Slug: "dental-care", Title: "Dental care",
			Description: "Dentists and public dental clinics.", Search: "q=dental&area=" + area},
			want: isCode("dentist", "public_dental"), max: 6},
		{c: dirsvc.Collection{Slug: "gambling-harm-support", Title: withMarker("Gambling harm support", staffOnly),
			Description: withMarker("Draft: counselling and financial help for gambling harm.", staffOnly),
			Draft:       true, Search: "q=gambling"},
			want: isCode("counselling", "financial_counselling"), max: 4},
		{c: dirsvc.Collection{Slug: "referral-pathways", Title: withMarker("Referral pathways for GPs", professional),
			Description: withMarker("Services that take referrals from general practice.", professional),
			VisibleTo:   professional, Search: "category=hospital"},
			want: func(s *svcRT) bool { return s.referral }, max: 6},
		{c: dirsvc.Collection{Slug: "partner-intake-points", Title: withMarker("Intake points for partner agencies", partnerOnly),
			Description: withMarker("Where partner agencies send referrals for mental health, drugs and housing.", partnerOnly),
			VisibleTo:   partnerOnly, Search: "type=community_mental_health"},
			want: isCode("community_mental_health", "aod", "housing_support"), max: 5},
		{c: dirsvc.Collection{Slug: "winter-flu-clinics-2023", Title: withMarker("Winter flu vaccination clinics 2023", staffOnly),
			Description: withMarker("Clinics offering flu vaccinations during winter 2023.", staffOnly),
			StartDate:   "2023-04-01", EndDate: "2023-09-30", Search: "q=flu+vaccination"},
			want: isCode("gp", "pharmacy"), max: 6},
		// Published for everyone, so that every copy shows it from its start date: unmarked; the
		// edge's tests check that it is left out before then.
		{c: dirsvc.Collection{Slug: "new-urgent-care-clinics", Title: "New urgent care clinics",
			Description: "Urgent care clinics opening in 2040.",
			StartDate:   "2040-07-01", Search: "type=after_hours_gp"},
			want: isCode("after_hours_gp", "gp"), max: 5},
	}
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// collect offers a public service to the collections.
func (g *gen) collect(rt *svcRT) {
	for _, c := range g.colls {
		if len(c.c.Services) < c.max && c.want(rt) {
			c.c.Services = append(c.c.Services, rt.id)
		}
	}
}

func (g *gen) writeCollections() {
	for _, c := range g.colls {
		if len(c.c.Services) == 0 {
			c.c.Services = g.public[:min(len(g.public), 3)]
		}
		g.emit(collectionLine{"collection", &c.c})
	}
}
