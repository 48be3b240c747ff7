package demo

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dirsvc/dirsvc"
)

// Lines of the import format: each domain type with the kind beside it. The embedded pointer's
// fields (and those of the Meta it embeds) are promoted, so the object is flat.
type (
	directoryLine struct {
		Kind string `json:"kind"`
		*dirsvc.Directory
	}
	categoryLine struct {
		Kind string `json:"kind"`
		*dirsvc.Category
	}
	platformTypeLine struct {
		Kind string `json:"kind"`
		*dirsvc.PlatformType
	}
	localTypeLine struct {
		Kind string `json:"kind"`
		*dirsvc.LocalType
	}
	termLine struct {
		Kind string `json:"kind"`
		*dirsvc.Term
	}
	collectionLine struct {
		Kind string `json:"kind"`
		*dirsvc.Collection
	}
	organisationLine struct {
		Kind string `json:"kind"`
		*dirsvc.Organisation
	}
	locationLine struct {
		Kind string `json:"kind"`
		*dirsvc.Location
	}
	serviceLine struct {
		Kind string `json:"kind"`
		*dirsvc.Service
	}
	practitionerLine struct {
		Kind string `json:"kind"`
		*dirsvc.Practitioner
	}
	roleLine struct {
		Kind string `json:"kind"`
		*dirsvc.PractitionerRole
	}
)

// Salts of the public IDs of each kind.
const (
	saltOrg = iota * 0x1F3D5B79
	saltLoc
	saltSvc
	saltPrac
	saltRole
	saltIdent
)

func (g *gen) id(prefix string, i int, kind uint64) string { return publicID(prefix, i, g.salt+kind) }

// withMarker appends the marker of s to text.
func withMarker(text string, s dirsvc.Audiences) string {
	if m := markerFor(s); m != "" {
		return text + " " + m
	}
	return text
}

func (g *gen) one(list []string) string { return list[g.rng.IntN(len(list))] }

func oneOf[T any](g *gen, list []T) T { return list[g.rng.IntN(len(list))] }

func (g *gen) chance(p float64) bool { return g.rng.Float64() < p }

func (g *gen) directoryName() string {
	name := "Demo Health Directory"
	if g.nz {
		name += " Aotearoa New Zealand"
	}
	if g.opt.Slug != DefaultSlug && g.opt.Slug != nzDemoSlug {
		name += " (" + g.opt.Slug + ")"
	}
	return name
}

func (g *gen) writeDirectory() {
	d := &dirsvc.Directory{
		Slug:     g.opt.Slug,
		Name:     g.directoryName(),
		Country:  g.opt.Country,
		TimeZone: "Australia/Sydney",
		Attribution: "Incorporates or developed using G-NAF © Geoscape Australia licensed by the Commonwealth of " +
			"Australia under the Open Geo-coded National Address File (G-NAF) End User Licence Agreement.",
		Settings: dirsvc.DirectorySettings{AnyoneMayListPractitioners: false, SeniorManagement: true,
			Tiers: []string{"professional", "partner"}},
	}
	if g.nz {
		d.TimeZone = "Pacific/Auckland"
		d.Attribution = "Address data © Toitū Te Whenua Land Information New Zealand, CC BY 4.0, some via OpenStreetMap Foundation."
	}
	d.Licence = "Directory data CC BY 4.0 " + d.Name
	d.Region, d.DataIssueContact = "Australia: every state and territory", "data@"+g.opt.Slug+".example.org"
	if g.nz {
		d.Region = "Aotearoa New Zealand: every region"
	}
	g.emit(directoryLine{"directory", d})
}

func (g *gen) programs() []term {
	if g.nz {
		return programsNZ
	}
	return programsAU
}

func (g *gen) groups() []term {
	if g.nz {
		return groupsNZ
	}
	return groupsAU
}

func (g *gen) writeTaxonomy() {
	for i, c := range categories {
		cat := &dirsvc.Category{Code: c.code, Name: c.name, Icon: c.icon, Order: i + 1, LocalTypes: c.localTypes}
		for _, t := range ptypes {
			if t.category == c.code {
				cat.Types = append(cat.Types, t.code)
			}
		}
		if c.restricted {
			cat.VisibleTo = proPartner
			cat.Name = withMarker(cat.Name, proPartner)
		}
		g.emit(categoryLine{"category", cat})
	}
	for _, t := range ptypes {
		label := t.label
		if g.nz && t.nzLabel != "" {
			label = t.nzLabel
		}
		g.emit(platformTypeLine{"platformType", &dirsvc.PlatformType{Code: t.code, Label: label, Icon: t.icon, Category: t.category}})
	}
	for _, t := range ltypes {
		lt := &dirsvc.LocalType{Code: t.code, Slug: t.slug, Label: t.label, Icon: t.icon, Refines: t.refines}
		if g.nz && t.nzLabel != "" {
			lt.Label = t.nzLabel
		}
		if t.restricted {
			lt.VisibleTo = proPartner
			lt.Label = withMarker(lt.Label, proPartner)
		}
		g.emit(localTypeLine{"localType", lt})
	}
	g.matrixTaxonomy()
	for _, p := range g.programs() {
		g.emit(termLine{"program", &dirsvc.Term{Code: p.code, Name: p.name}})
	}
	for _, p := range g.groups() {
		g.emit(termLine{"targetGroup", &dirsvc.Term{Code: p.code, Name: p.name}})
	}
}

// pickLocality returns the index of a locality: mostly in cities, some regional, a few remote.
func (g *gen) pickLocality() int {
	p := g.pool
	var from []int32
	switch r := g.rng.Float64(); {
	case r < 0.68 || len(p.regional) == 0:
		from = p.metro
	case r < 0.93 || len(p.remote) == 0:
		from = p.regional
	default:
		from = p.remote
	}
	return int(from[g.rng.IntN(len(from))])
}

// locRT is what the rest of an organisation needs of one of its sites.
type locRT struct {
	id      string
	loc     *dirsvc.Locality
	name    string
	eff     dirsvc.Audiences
	capable bool // services may be placed here
	state   uint8
}

// svcRT is what practitioners and collections need of a service.
type svcRT struct {
	id         string
	typ        uint8
	eff        dirsvc.Audiences
	public     bool // live and seen by every audience
	localTypes []string
	groups     []string
	referral   bool
	loc        *dirsvc.Locality
}

func (g *gen) ownership(code string) *dirsvc.Ownership {
	if code == "cc" {
		if g.nz {
			return &dirsvc.Ownership{Code: g.opt.Slug + ":kaupapa_maori", Display: "Kaupapa Māori provider"}
		}
		return &dirsvc.Ownership{Code: g.opt.Slug + ":community_controlled", Display: "Aboriginal community controlled"}
	}
	for _, o := range ownershipDisplay {
		if o.code == code {
			return &dirsvc.Ownership{Code: o.code, Display: o.display}
		}
	}
	panic("demo: unknown ownership " + code)
}

// otherOwnership returns an ownership type other than o.
func (g *gen) otherOwnership(o *dirsvc.Ownership) *dirsvc.Ownership {
	for {
		c := ownershipDisplay[g.rng.IntN(len(ownershipDisplay))]
		if o == nil || c.code != o.Code {
			return g.ownership(c.code)
		}
	}
}

func (g *gen) orgName(a *archetype, l *dirsvc.Locality) string {
	tpl := g.one(a.names)
	if g.nz && a == &archetypes[archACCHO] {
		tpl = g.one([]string{"{P} Hauora", "Te Whare Hauora o {L}", "{L} Māori Health Trust"})
	}
	places := placeWordsAU
	streets := streetNamesAU
	if g.nz {
		places, streets = placeWordsNZ, streetNamesNZ
	}
	r := strings.NewReplacer("{P}", g.one(places), "{L}", l.Name, "{S}", g.one(streets), "{N}", g.one(familyNames))
	return r.Replace(tpl)
}

// street returns a plausible street address line.
func (g *gen) street() string {
	names := streetNamesAU
	if g.nz {
		names = streetNamesNZ
	}
	typ := g.one(streetTypes)
	num := 1 + g.rng.IntN(180)
	if typ == "Highway" || typ == "Road" {
		num = 1 + g.rng.IntN(900)
	}
	line := fmt.Sprintf("%d %s %s", num, g.one(names), typ)
	switch r := g.rng.IntN(20); {
	case r < 2:
		line = fmt.Sprintf("Level %d, %s", 1+g.rng.IntN(5), line)
	case r < 4:
		line = fmt.Sprintf("Shop %d, %s", 1+g.rng.IntN(30), line)
	case r < 5:
		line = fmt.Sprintf("Suite %d, %s", 1+g.rng.IntN(12), line)
	}
	return line
}

func (g *gen) point(l *dirsvc.Locality) *dirsvc.Point {
	return &dirsvc.Point{
		Lat: round6(l.Lat + (g.rng.Float64()-0.5)*0.016),
		Lon: round6(l.Lon + (g.rng.Float64()-0.5)*0.016),
	}
}

func (g *gen) address(l *dirsvc.Locality, eff dirsvc.Audiences, withheld dirsvc.Audiences) dirsvc.Address {
	a := dirsvc.Address{Lines: []string{g.street()}, Locality: l.Name, State: l.State, Postcode: l.Postcode,
		Country: l.Country, Point: g.point(l)}
	if g.nz {
		a.State = ""
	}
	if withheld != 0 {
		a.Withheld = true
		if withheld != staffOnly || g.chance(0.5) {
			a.VisibleTo = withheld
		}
		eff &= withheld
	}
	a.Lines[0] = withMarker(a.Lines[0], eff)
	return a
}

// identifier returns an identifier of a type the service knows, with its system URI.
func (g *gen) identifier(typ, value string, vis dirsvc.Audiences) dirsvc.Identifier {
	return dirsvc.Identifier{Type: typ, System: dirsvc.IdentifierSystems[typ], Value: value, VisibleTo: vis}
}

// localIdentifier returns an identifier of the directory's own kind for vis (0 for everyone), whose
// value carries the marker of who may see it in the context ctx.
func (g *gen) localIdentifier(what string, vis, ctx dirsvc.Audiences) dirsvc.Identifier {
	g.extraN++
	v := fmt.Sprintf("%s-%06d", strings.ToUpper(what[:2]), g.extraN)
	if m := markerFor(ctx & vis.Or(everyone)); m != "" {
		v += "-" + m
	}
	return dirsvc.Identifier{Type: what, System: "https://id.example.org/" + g.opt.Slug + "/" + what, Value: v, VisibleTo: vis}
}

// orgIdentifiers returns the business and provider numbers of an organisation.
func (g *gen) orgIdentifiers(a *archetype, own *dirsvc.Ownership, eff dirsvc.Audiences, restricted bool) []dirsvc.Identifier {
	var ids []dirsvc.Identifier
	g.abnN++
	body := nineDigits(g.abnN, g.salt+saltIdent)
	if g.nz {
		ids = append(ids, g.identifier(dirsvc.IdentNZBN, nzbnFor(body), 0))
	} else {
		if own != nil && own.Code == "private" && g.chance(0.5) {
			acn := acnFor(body)
			ids = append(ids, g.identifier(dirsvc.IdentABN, abnFor(acn), 0), g.identifier(dirsvc.IdentACN, acn, 0))
		} else {
			ids = append(ids, g.identifier(dirsvc.IdentABN, abnFor(body), 0))
		}
		if a.healthy && g.chance(0.8) {
			g.hpioN++
			ids = append(ids, g.identifier(dirsvc.IdentHPIO, hpi("800362", g.hpioN, g.salt+saltOrg), 0))
		}
	}
	if restricted {
		vis := proPartner
		if g.chance(0.4) {
			vis = staffOnly
		}
		ids = append(ids, g.localIdentifier("provider_ref", vis, eff))
	}
	return ids
}

// writeOrganisation writes an organisation with its sites, services, practitioners and roles, then
// the tombstone organisations planned after it.
func (g *gen) writeOrganisation(oi int) {
	op := &g.orgs[oi]
	a := &archetypes[op.arch]
	eff := ownAudiences(op.state)
	hi := g.pickLocality()
	home := &g.pool.locs[hi]
	name := g.orgName(a, home)
	domain := domainOf(name)
	org := &dirsvc.Organisation{
		Meta: dirsvc.Meta{PublicID: g.id("org_", oi, saltOrg), State: stateOf[op.state], StaffNotes: staffNote(oi, false)},
		Name: withMarker(name, eff),
	}
	if op.state == stReduced {
		org.VisibleTo = proPartner
	}
	if op.feat&ofNoOwnership == 0 {
		org.OwnershipType = g.ownership(g.one(a.owners))
	}
	main := &ptypes[ptypeIndex(a.types[0])]
	org.Description = fmt.Sprintf("%s in %s and surrounding areas. %s", orgKind(org.OwnershipType), home.Name, main.desc)
	if g.chance(0.4) {
		org.Logo = markURL("https://"+domain+"/logo.svg", eff)
	}
	if g.chance(0.85) {
		org.Website = markURL("https://"+domain, eff)
	}
	org.Identifiers = g.orgIdentifiers(a, org.OwnershipType, eff, op.feat&ofRestrictedIdentifier != 0)
	if g.chance(0.7) {
		org.Contacts = append(org.Contacts, g.phone(dirsvc.ContactPhone, "Head office", 0, everyone, eff,
			func() string { return g.landline(home) }))
	}
	if g.chance(0.6) {
		org.Contacts = append(org.Contacts, g.email("info", domain, "", 0, everyone, eff))
	}
	if g.chance(0.1) {
		org.Contacts = append(org.Contacts, g.email("board.secretary", domain, "Board secretary", staffOnly, everyone, eff))
	}
	if g.chance(0.25) {
		org.PostalAddress = &dirsvc.Address{Lines: []string{withMarker(fmt.Sprintf("PO Box %d", 1+g.rng.IntN(2999)), eff)},
			Locality: home.Name, State: home.State, Postcode: home.Postcode, Country: home.Country}
		if g.nz {
			org.PostalAddress.State = ""
		}
	}
	if g.chance(0.05) {
		org.MetroRural = "rural"
		if home.Remoteness == 0 {
			org.MetroRural = "metro"
		}
	}
	if op.feat&ofLeadership != 0 {
		org.Leadership = g.leadership(eff, op.feat&ofLeadershipFull != 0, domain)
	}
	g.emit(organisationLine{"organisation", org})
	if op.state == stLive {
		g.lastOrg = org.PublicID
	}

	// Sites.
	var locs []locRT
	for k := range op.nLoc {
		l := home
		if k > 0 {
			l = g.nearLocality(hi)
		}
		locs = append(locs, g.writeLocation(op, org, name, domain, l, g.locFeat[op.locStart+k], stLive, eff, locs))
	}
	for _, st := range op.extraLocs {
		locs = append(locs, g.writeLocation(op, org, name, domain, g.nearLocality(hi), 0, st, eff, locs))
	}
	var capable []int
	for i, l := range locs {
		if l.capable {
			capable = append(capable, i)
		}
	}

	// Services.
	svcs := make([]svcRT, 0, op.nSvc)
	for k := range op.nSvc {
		li := capable[k%len(capable)]
		if k >= len(capable) {
			li = capable[g.rng.IntN(len(capable))]
		}
		svcs = append(svcs, g.writeService(op, org, name, domain, &locs[li], op.svcStart+k, eff))
	}

	// Practitioners and their roles.
	for k := range op.nPrac {
		g.writePractitioner(op.pracStart+k, domain, svcs)
	}

	for _, st := range op.tombs {
		g.writeTombstoneOrg(st)
	}
}

func orgKind(o *dirsvc.Ownership) string {
	if o == nil {
		return "Health and community services"
	}
	switch o.Code {
	case "public":
		return "A public health service"
	case "private":
		return "A privately owned practice"
	case "not_for_profit":
		return "A not-for-profit organisation"
	}
	return "A community-controlled organisation"
}

// nearLocality returns a locality close to the i-th (neighbouring in the gazetteer's order, which is
// by state and postcode), or the i-th itself.
func (g *gen) nearLocality(i int) *dirsvc.Locality {
	p := g.pool
	j := min(max(i+g.rng.IntN(41)-20, 0), len(p.locs)-1)
	if p.locs[j].State != p.locs[i].State {
		j = i
	}
	return &p.locs[j]
}

func (g *gen) writeTombstoneOrg(st uint8) {
	g.tombOrgN++
	home := &g.pool.locs[g.pickLocality()]
	a := &archetypes[g.rng.IntN(numArch)]
	org := &dirsvc.Organisation{
		Meta:          dirsvc.Meta{PublicID: g.id("org_", len(g.orgs)+g.tombOrgN, saltOrg), State: stateOf[st]},
		Name:          g.orgName(a, home),
		OwnershipType: g.ownership(g.one(a.owners)),
	}
	if st == stMerged {
		org.Survivor = g.lastOrg
	}
	org.Description = "This organisation no longer operates under this name."
	g.emit(organisationLine{"organisation", org})
}

func (g *gen) writeLocation(op *orgPlan, org *dirsvc.Organisation, orgName, domain string, l *dirsvc.Locality,
	feat uint8, st uint8, orgEff dirsvc.Audiences, earlier []locRT) locRT {
	a := &archetypes[op.arch]
	id := g.id("loc_", g.locN, saltLoc)
	g.locN++
	own := ownAudiences(st)
	if feat&lfUnlisted != 0 {
		own = proPartner
	}
	eff := orgEff & own
	if tombstone(st) {
		eff = orgEff
	}
	name := orgName
	if !strings.Contains(orgName, l.Name) && (op.nLoc > 1 || len(earlier) > 0 || g.chance(0.5)) {
		name += " " + l.Name
	}
	for _, e := range earlier {
		if e.name == name {
			name += " " + g.one([]string{"North", "South", "East", "West", "Central", "Plaza", "Village"})
			break
		}
	}
	loc := &dirsvc.Location{
		Meta:         dirsvc.Meta{PublicID: id, State: stateOf[st], StaffNotes: staffNote(g.locN, false)},
		Organisation: org.PublicID,
		Name:         withMarker(name, eff),
		Areas:        l.Areas(),
	}
	if own != everyone && st != stTakedown {
		loc.VisibleTo = own
	}
	if st == stMerged {
		loc.Survivor = earlier[0].id
		for _, e := range earlier {
			if e.state == stLive && e.eff == everyone {
				loc.Survivor = e.id
				break
			}
		}
	}
	var withheld dirsvc.Audiences
	switch {
	case feat&lfWithheldProPartner != 0:
		withheld = proPartner
	case feat&lfWithheldStaff != 0:
		withheld = staffOnly
	case st == stLive && a.withheld > 0 && g.chance(a.withheld):
		withheld = proPartner
		if g.chance(0.3) {
			withheld = staffOnly
		}
	}
	loc.Address = g.address(l, eff, withheld)
	if l.Remoteness >= 0 {
		r := l.Remoteness
		loc.Remoteness = &r
	}
	switch {
	case withheld != 0:
		loc.Description = "The address is given to clients after their first contact with the service."
	case g.chance(0.3):
		loc.Description = g.one([]string{
			"Ground floor, step-free entrance from the car park.",
			"A short walk from the train station; bus stops outside.",
			"Upstairs in the shopping centre; lift available.",
			"Free parking behind the building, including accessible spaces.",
			"Enter through the main hospital entrance and follow the signs.",
		})
	}
	if feat&lfOwnership != 0 {
		loc.OwnershipType = g.otherOwnership(org.OwnershipType)
	}
	tpl := a.hours[g.rng.IntN(len(a.hours))]
	if feat&lfNoHours == 0 {
		loc.Hours = g.hours(tpl, timeZoneOf(l))
	}
	if g.chance(0.9) {
		loc.Contacts = append(loc.Contacts, g.phone(dirsvc.ContactPhone, "Reception", 0, everyone, eff,
			func() string { return g.landline(l) }))
	}
	if g.chance(0.2) {
		var vis dirsvc.Audiences
		if g.chance(0.5) {
			vis = proPartner
		}
		loc.Contacts = append(loc.Contacts, g.phone(dirsvc.ContactFax, "Referrals", vis, everyone, eff,
			func() string { return g.landline(l) }))
	}
	if g.chance(0.3) {
		loc.Contacts = append(loc.Contacts, g.email("reception."+cut(dirsvc.Slugify(l.Name), 20), domain, "", 0, everyone, eff))
	}
	if !g.nz && a.healthy && g.chance(0.15) {
		g.hpioN++
		loc.Identifiers = append(loc.Identifiers, g.identifier(dirsvc.IdentHPIO, hpi("800362", g.hpioN, g.salt+saltOrg), 0))
	}
	for _, f := range facilities {
		if g.chance(0.25) {
			loc.Facilities = append(loc.Facilities, f)
		}
	}
	g.emit(locationLine{"location", loc})
	return locRT{id: id, loc: l, name: name, eff: eff, capable: st == stLive, state: st}
}

var weekdays = []string{"mon", "tue", "wed", "thu", "fri"}

func interval(open, close string) []dirsvc.Interval {
	return []dirsvc.Interval{{Open: open, Close: close}}
}

// hours returns opening hours of the template in the zone.
func (g *gen) hours(tpl int, tz string) *dirsvc.OpeningHours {
	h := &dirsvc.OpeningHours{TimeZone: tz, PublicHolidays: "closed"}
	day := func(d string, iv []dirsvc.Interval) {
		h.Weekly = append(h.Weekly, dirsvc.WeeklyHours{Day: d, Intervals: iv})
	}
	switch tpl {
	case hoursOffice:
		open, close := g.one([]string{"08:00", "08:30", "09:00"}), g.one([]string{"16:30", "17:00", "17:30"})
		for _, d := range weekdays {
			day(d, interval(open, close))
		}
	case hoursClinic:
		open, close := g.one([]string{"08:00", "08:30"}), g.one([]string{"18:00", "18:30", "19:00"})
		late := g.chance(0.3)
		for _, d := range weekdays {
			if late && d == "thu" {
				day(d, interval(open, "20:00"))
			} else {
				day(d, interval(open, close))
			}
		}
		if g.chance(0.6) {
			day("sat", interval(g.one([]string{"08:30", "09:00"}), g.one([]string{"12:00", "13:00"})))
			if g.chance(0.25) {
				day("sun", interval("10:00", "14:00"))
			}
		}
	case hoursSplit:
		halfWed := g.chance(0.3)
		for _, d := range weekdays {
			if halfWed && d == "wed" {
				day(d, interval("09:00", "12:30"))
				continue
			}
			day(d, []dirsvc.Interval{{Open: "09:00", Close: "12:30"}, {Open: "13:30", Close: "17:00"}})
		}
	case hoursExtended:
		close := g.one([]string{"21:00", "22:00"})
		for _, d := range weekdays {
			day(d, interval("08:00", close))
		}
		day("sat", interval("08:00", "18:00"))
		day("sun", interval("09:00", g.one([]string{"17:00", "18:00"})))
		h.PublicHolidays = "hours"
		h.HolidayIntervals = interval("10:00", "16:00")
	case hoursAlways:
		for _, d := range append(slices.Clone(weekdays), "sat", "sun") {
			day(d, interval("00:00", "24:00"))
		}
		h.Always = true
		h.PublicHolidays = "open"
		return h
	case hoursPartTime:
		days := oneOf(g, [][]string{{"tue", "thu"}, {"mon", "wed"}, {"wed", "fri"}, {"mon", "tue", "thu"}})
		for _, d := range days {
			day(d, interval("09:30", "15:00"))
		}
	case hoursEvening:
		for _, d := range weekdays {
			day(d, interval("18:00", "23:00"))
		}
		day("sat", interval("12:00", "23:00"))
		day("sun", interval("08:00", "23:00"))
		h.PublicHolidays = "open"
	}
	if g.chance(0.12) {
		ex := []dirsvc.DateHours{
			{Date: "2026-03-20", Closed: true, Note: "Closed for staff training"},
			{Date: "2026-07-09", Intervals: interval("09:00", "19:00"), Note: "Extended hours for flu vaccinations"},
			{Date: "2026-12-24", Intervals: interval("09:00", "12:00"), Note: "Closing early on Christmas Eve"},
			{Date: "2026-12-29", Closed: true, Note: "Closed between Christmas and New Year"},
		}
		i := g.rng.IntN(len(ex))
		h.Exceptions = ex[i:min(i+1+g.rng.IntN(2), len(ex))]
	}
	if g.chance(0.2) {
		if g.nz {
			h.AfterHours = g.one(afterHoursTextNZ)
		} else {
			h.AfterHours = g.one(afterHoursText)
		}
	}
	return h
}

// hoursEvening is a template of services only: an after-hours GP.
const hoursEvening = 100

func (g *gen) writeService(op *orgPlan, org *dirsvc.Organisation, orgName, domain string, loc *locRT, s int,
	orgEff dirsvc.Audiences) svcRT {
	st, feat := g.svcState[s], g.svcFeat[s]
	t := &ptypes[g.svcType[s]]
	id := g.id("svc_", s, saltSvc)
	eff := orgEff & ownAudiences(st)
	if tombstone(st) {
		eff = orgEff
	}
	matrix := g.matrixServiceAudiences(s, st, feat, orgEff)
	if matrix != 0 {
		eff &= matrix
	}
	tmpl := g.one(t.names)
	name := tmpl + " – " + loc.loc.Name
	if first, _, _ := strings.Cut(strings.ToLower(tmpl), " "); g.chance(0.35) && !strings.Contains(strings.ToLower(orgName), first) {
		name = orgName + " " + lowerFirst(tmpl)
	}
	svc := &dirsvc.Service{
		Meta:         dirsvc.Meta{PublicID: id, State: stateOf[st], VisibleTo: matrix, StaffNotes: staffNote(s, false)},
		Organisation: org.PublicID,
		Location:     loc.id,
		Name:         withMarker(name, eff),
		Slug:         cutWords(dirsvc.Slugify(tmpl+" "+loc.loc.Name), 31) + "-" + id[len("svc_"):],
		Description:  t.desc,
		Type:         t.code,
	}
	if st == stReduced {
		svc.VisibleTo = proPartner
	}
	if st == stMerged {
		svc.Survivor = g.lastSvc
	}

	// Specialties, in tagging order.
	refiners := refinersOf(t.code)
	switch {
	case feat&sfLaterRefines != 0:
		svc.LocalTypes = []string{g.one(nonRefining), g.one(refiners)}
	case feat&sfMulti != 0:
		if len(refiners) > 0 {
			svc.LocalTypes = append(svc.LocalTypes, g.one(refiners))
		}
		svc.LocalTypes = append(svc.LocalTypes, nonRefining[g.rng.IntN(2)])
		if g.chance(0.5) || len(svc.LocalTypes) < 2 {
			svc.LocalTypes = appendNew(svc.LocalTypes, nonRefining...)
		}
	case g.chance(0.25):
		if len(refiners) > 0 && g.chance(0.8) {
			svc.LocalTypes = []string{g.one(refiners)}
		} else {
			svc.LocalTypes = []string{g.one(nonRefining)}
		}
	}
	if feat&sfHiddenLocalType != 0 {
		svc.LocalTypes = appendNew(svc.LocalTypes, "otp")
	}
	if len(svc.LocalTypes) > 3 {
		svc.LocalTypes = svc.LocalTypes[:3]
	}
	if feat&sfAllContactKinds != 0 {
		svc.LocalTypes = append(svc.LocalTypes, matrixLocalTypes()...)
	}

	progs := t.programsAU
	if g.nz {
		progs = t.programsNZ
	}
	if len(progs) > 0 && g.chance(0.35) {
		svc.Programs = []string{g.one(progs)}
		if len(progs) > 1 && g.chance(0.3) {
			svc.Programs = appendNew(svc.Programs, g.one(progs))
		}
	}
	var groups []string
	for _, c := range t.groups {
		if slices.ContainsFunc(g.groups(), func(x term) bool { return x.code == c }) {
			groups = append(groups, c)
		}
	}
	if g.nz && op.arch == archACCHO {
		groups = append(groups, "maori", "pacific")
	} else if !g.nz && op.arch == archACCHO {
		groups = append(groups, "first_nations")
	}
	if len(groups) > 0 && g.chance(0.4) {
		svc.TargetGroups = []string{g.one(groups)}
		if len(groups) > 1 && g.chance(0.3) {
			svc.TargetGroups = appendNew(svc.TargetGroups, g.one(groups))
		}
	}
	if feat&sfOwnership != 0 {
		locOwn := org.OwnershipType
		svc.OwnershipType = g.otherOwnership(locOwn)
	}

	// Where it serves.
	areas := loc.loc.Areas()
	switch {
	case feat&sfWholeCountry != 0:
		svc.Catchment = []string{"country:" + g.lower}
	case g.chance(0.15):
		// The state or region, or the local government area (lga: in Australia, ta: in New
		// Zealand), or the Primary Health Network.
		svc.Catchment = []string{areas[len(areas)-2]}
		switch r := g.rng.IntN(10); {
		case g.nz && r < 6:
			svc.Catchment = []string{areas[1]}
		case !g.nz && r < 5:
			svc.Catchment = []string{areas[2]}
		case !g.nz && r < 7:
			svc.Catchment = []string{areas[3]}
		}
	}

	// Hours, when not those of the site.
	switch {
	case feat&sfAlways != 0 || t.code == "emergency_department" || t.code == "mental_health_crisis":
		svc.Hours = g.hours(hoursAlways, timeZoneOf(loc.loc))
	case t.code == "after_hours_gp":
		svc.Hours = g.hours(hoursEvening, timeZoneOf(loc.loc))
	case g.chance(0.08):
		svc.Hours = g.hours(oneOf(g, []int{hoursPartTime, hoursOffice, hoursClinic}), timeZoneOf(loc.loc))
	}

	svc.Contacts = g.serviceContacts(t, feat, loc.loc, domain, eff)
	if feat&sfAllContactKinds != 0 {
		svc.Contacts = append(svc.Contacts, g.matrixContacts(loc.loc, domain, "intake", everyone, eff)...)
		svc.Identifiers = g.matrixIdentifiers("intake_ref", eff)
	}
	if g.chance(0.35) {
		svc.Website = markURL("https://"+domain+"/services/"+dirsvc.Slugify(tmpl), eff)
	}
	if g.chance(0.05) {
		vis := proPartner
		if g.chance(0.3) {
			vis = partnerOnly
		}
		svc.Identifiers = append(svc.Identifiers, g.localIdentifier("intake_ref", vis, eff))
	}
	svc.Referral = g.referral(t)
	switch r := g.rng.Float64(); {
	case r < 0.1:
	case r < 0.1+0.9*t.apptRequired:
		svc.Appointment = dirsvc.AppointmentRequired
	default:
		svc.Appointment = dirsvc.AppointmentNotRequired
	}
	if len(t.costs) > 0 && g.chance(0.85) {
		svc.Cost = &dirsvc.Cost{Kind: g.one(t.costs)}
		switch svc.Cost.Kind {
		case "fees_concession":
			svc.Cost.Notes = "Reduced fees for concession card holders."
		case "bulk_billed":
			if g.chance(0.5) {
				svc.Cost.Notes = "Bulk billed for children under 16 and concession card holders."
			}
		case "varies":
			svc.Cost.Notes = "Ask about costs when you book; funding may cover some or all of the fee."
		}
		if g.nz && svc.Cost.Kind == "bulk_billed" {
			svc.Cost = &dirsvc.Cost{Kind: "free", Notes: "Free for enrolled patients under 14."}
		}
	}
	for i, d := range t.delivery {
		if i == 0 || g.chance(0.5) {
			svc.Delivery = append(svc.Delivery, d)
		}
	}
	if feat&sfWholeCountry != 0 {
		svc.Delivery = appendNew(svc.Delivery, "telehealth", "phone")
	}
	if g.chance(0.35) {
		langs := languagesAU
		if g.nz {
			langs = languagesNZ
		}
		svc.Languages = appendNew([]string{"en"}, g.one(langs))
		if g.chance(0.3) {
			svc.Languages = appendNew(svc.Languages, g.one(langs))
		}
	}
	g.emit(serviceLine{"service", svc})

	rt := svcRT{id: id, typ: g.svcType[s], eff: eff, localTypes: svc.LocalTypes, loc: loc.loc,
		groups: svc.TargetGroups, referral: svc.Referral != nil && svc.Referral.Required}
	rt.public = st == stLive && eff == everyone
	if rt.public {
		g.lastSvc = id
		r := g.recent[rt.typ]
		if len(r) >= 4 {
			r = r[1:]
		}
		g.recent[rt.typ] = append(r, rt)
		if len(g.public) < 24 {
			g.public = append(g.public, id)
		}
		g.collect(&rt)
	}
	return rt
}

func lowerFirst(s string) string {
	if s == "" || strings.HasPrefix(s, "GP") {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// appendNew appends the values not yet in list.
func appendNew(list []string, vs ...string) []string {
	for _, v := range vs {
		if !slices.Contains(list, v) {
			list = append(list, v)
		}
	}
	return list
}

func (g *gen) serviceContacts(t *ptype, feat uint16, l *dirsvc.Locality, domain string, eff dirsvc.Audiences) []dirsvc.Contact {
	var cs []dirsvc.Contact
	land := func() string { return g.landline(l) }
	if feat&sfAllContactKinds != 0 || g.chance(0.85) {
		cs = append(cs, g.phone(dirsvc.ContactPhone, g.one([]string{"", "Bookings", "Enquiries", "Intake"}), 0, everyone, eff, land))
	}
	if feat&sfAllContactKinds != 0 || g.chance(0.3) {
		cs = append(cs, g.email(g.one([]string{"bookings", "intake", "enquiries", "hello"}), domain, "", 0, everyone, eff))
	}
	if feat&sfAllContactKinds != 0 || g.chance(0.12) {
		var vis dirsvc.Audiences
		if g.chance(0.5) {
			vis = proPartner
		}
		cs = append(cs, g.phone(dirsvc.ContactFax, "Referrals", vis, everyone, eff, land))
	}
	if feat&sfAllContactKinds != 0 || g.chance(0.08) || t.code == "domestic_violence" || t.code == "mental_health_crisis" {
		cs = append(cs, g.phone(dirsvc.ContactFreecall, "Free call", 0, everyone, eff, g.freecall))
	}
	if !g.nz && (feat&sfAllContactKinds != 0 || g.chance(0.08)) {
		cs = append(cs, g.phone(dirsvc.ContactLocalRate, "Local call cost", 0, everyone, eff, g.localRate))
	}
	all := feat&sfAllContactKinds != 0
	if all || g.chance(0.04) {
		cs = append(cs, g.phone(dirsvc.ContactMobile, "Outreach worker", 0, everyone, eff, g.mobile))
	}
	if all || g.chance(0.05) || t.code == "youth_mental_health" && g.chance(0.5) {
		cs = append(cs, g.phone(dirsvc.ContactSMS, "Text us", 0, everyone, eff, g.mobile))
	}
	if all || g.chance(0.02) {
		cs = append(cs, g.phone(dirsvc.ContactTTY, "TTY", 0, everyone, eff, land))
	}
	if all || g.chance(0.04) {
		cs = append(cs, g.website("https://"+domain+"/book", "Book online", 0, everyone, eff))
	}
	if feat&sfRestrictedContacts != 0 {
		cs = append(cs,
			g.phone(dirsvc.ContactPhone, "Intake line for health professionals", proPartner, everyone, eff, land),
			g.email("partners", domain, "Partner agencies", partnerOnly, everyone, eff),
			g.phone(dirsvc.ContactFax, "Secure referrals (health professionals)", professional, everyone, eff, land),
			g.phone(dirsvc.ContactPhone, "Manager's direct line", staffOnly, everyone, eff, land),
		)
	} else if g.chance(0.04) {
		cs = append(cs, g.phone(dirsvc.ContactPhone, "Clinician line", proPartner, everyone, eff, land))
	}
	if feat&sfForeign != 0 {
		v, label := g.foreign()
		cs = append(cs, g.phone(dirsvc.ContactPhone, label, 0, everyone, eff, func() string { return v }))
	}
	return cs
}

func (g *gen) referral(t *ptype) *dirsvc.Referral {
	switch t.referral {
	case refSelf:
		return &dirsvc.Referral{Required: false, From: []string{"self", "gp", "community"}}
	case refGP:
		return &dirsvc.Referral{Required: true, From: []string{"gp"},
			Notes: "A mental health treatment plan from your GP lets you claim a rebate."}
	case refGPSpec:
		return &dirsvc.Referral{Required: true, From: []string{"gp", "specialist"}}
	case refOpen:
		return &dirsvc.Referral{Required: false, From: []string{"self", "gp", "hospital", "mental_health"}}
	case refAssessment:
		if g.nz {
			return &dirsvc.Referral{Required: true, From: []string{"gp", "hospital", "case_manager"}}
		}
		return &dirsvc.Referral{Required: true, From: []string{"self", "gp", "hospital", "case_manager"},
			Notes: "Register with My Aged Care first."}
	}
	if g.chance(0.2) {
		return &dirsvc.Referral{Required: false, From: []string{"self"}}
	}
	return nil
}
