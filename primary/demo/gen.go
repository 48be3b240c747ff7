package demo

import (
	"bufio"
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/dirsvc/dirsvc"
)

// Audience sets the generator uses.
var (
	everyone     = dirsvc.Everyone
	staffOnly    = dirsvc.StaffOnly
	proPartner   = dirsvc.AudiencesOf(dirsvc.Professional, dirsvc.Partner)
	partnerOnly  = dirsvc.AudiencesOf(dirsvc.Partner)
	professional = dirsvc.AudiencesOf(dirsvc.Professional)
)

// Record states of the plans.
const (
	stLive uint8 = iota
	stClosed
	stRemoved
	stMerged
	stReduced
	stTakedown
)

var stateOf = [...]dirsvc.State{
	stLive: "", stClosed: dirsvc.StateClosed, stRemoved: dirsvc.StateRemoved, stMerged: dirsvc.StateMerged,
	stReduced: dirsvc.StateVisibilityReduced, stTakedown: dirsvc.StateTakedown,
}

// tombstone reports whether records in the state are shown only as a 410 or 301 answer (and so carry
// no marker).
func tombstone(st uint8) bool { return st == stClosed || st == stRemoved || st == stMerged }

// own returns the audiences a record in the state may be seen by, for marking.
func ownAudiences(st uint8) dirsvc.Audiences {
	switch st {
	case stReduced:
		return proPartner
	case stTakedown:
		return staffOnly
	}
	return everyone
}

// Feature bits of services.
const (
	sfForeign uint16 = 1 << iota
	sfWholeCountry
	sfMulti
	sfLaterRefines
	sfHiddenLocalType
	sfRestrictedContacts
	sfOwnership
	sfAlways
	sfAllContactKinds
)

// Feature bits of practitioners.
const (
	pfPreferNotToSay uint16 = 1 << iota
	pfDifferentTerm
	pfDifferentTermHidden
	pfNameHidden
	pfPrivateFields
	pfContactStaff
	pfContactProPartner
	pfContactEveryone
	pfEndedRole
	pfWoman
	pfMan
	pfNonBinary
)

// Feature bits of locations.
const (
	lfUnlisted uint8 = 1 << iota
	lfWithheldProPartner
	lfWithheldStaff
	lfOwnership
	lfNoHours
)

// Feature bits of organisations.
const (
	ofLeadership uint8 = 1 << iota
	ofLeadershipFull
	ofNoOwnership
	ofRestrictedIdentifier
)

// orgPlan is what the plan decides of an organisation before it is written.
type orgPlan struct {
	arch      uint8
	state     uint8
	feat      uint8
	nSvc      int
	nLoc      int
	nPrac     int
	svcStart  int
	locStart  int // global index of its first base location
	pracStart int
	extraLocs []uint8 // additional sites in a lifecycle state other than live
	tombs     []uint8 // organisations in a tombstone state written after this one
}

// gen is one run of the generator.
type gen struct {
	opt   Options
	nz    bool
	rng   *rand.Rand
	bw    *bufio.Writer
	enc   *json.Encoder
	err   error
	salt  uint64
	pool  *pool
	lower string // country code in lower case

	orgs      []orgPlan
	svcType   []uint8
	svcState  []uint8
	svcFeat   []uint16
	locFeat   []uint8
	pracState []uint8
	pracFeat  []uint16

	// counters of IDs and identifiers
	locN, roleN, tombOrgN, phoneN, hpioN, hpiiN, abnN, ahpraN, extraN int

	// the audience matrix (matrix.go): services restricted so far, and the locality of its records
	svcMatrixN int
	matrixHome *dirsvc.Locality

	// the latest live records every audience sees, survivors of merges
	lastOrg, lastSvc, lastPrac string
	lastLivePrac               string

	// recent public services by type, for roles at other organisations
	recent [][]svcRT
	colls  []*collPlan
	public []string // the first public services, fallback of collections
}

// emit writes one line.
func (g *gen) emit(v any) {
	if g.err == nil {
		g.err = g.enc.Encode(v)
	}
}

func quota(n int, rate float64) int { return max(1, int(rate*float64(n)+0.5)) }

// pick returns up to k distinct elements of cands chosen at random; it reorders cands.
func (g *gen) pick(cands []int32, k int) []int32 {
	k = min(k, len(cands))
	for i := range k {
		j := i + g.rng.IntN(len(cands)-i)
		cands[i], cands[j] = cands[j], cands[i]
	}
	return cands[:k]
}

// pickPref picks k of the candidates for which pref holds; when none does, it picks one of all and
// calls fix on it so that it fits.
func (g *gen) pickPref(cands []int32, k int, pref func(int32) bool, fix func(int32)) []int32 {
	var p []int32
	for _, c := range cands {
		if pref(c) {
			p = append(p, c)
		}
	}
	if len(p) == 0 {
		got := slices.Clone(g.pick(cands, 1))
		for _, c := range got {
			if fix != nil {
				fix(c)
			}
		}
		return got
	}
	return slices.Clone(g.pick(p, k))
}

// without returns the candidates not in taken.
func without(cands []int32, taken []int32) []int32 {
	skip := make(map[int32]bool, len(taken))
	for _, t := range taken {
		skip[t] = true
	}
	var out []int32
	for _, c := range cands {
		if !skip[c] {
			out = append(out, c)
		}
	}
	return out
}

// assignStates gives the states, in order, to distinct candidates, quota(n, rate) each.
func (g *gen) assignStates(cands []int32, n int, into []uint8, states []uint8, rates []float64) {
	total := 0
	for _, r := range rates {
		total += quota(n, r)
	}
	chosen := g.pick(cands, total)
	k := 0
	for i, st := range states {
		for range quota(n, rates[i]) {
			if k < len(chosen) {
				into[chosen[k]] = st
				k++
			}
		}
	}
}

func (g *gen) weighted(n int, weight func(int) int) int {
	total := 0
	for i := range n {
		total += weight(i)
	}
	r := g.rng.IntN(total)
	for i := range n {
		if r -= weight(i); r < 0 {
			return i
		}
	}
	return n - 1
}

// plan decides, before anything is written, how many records of each kind there are, where they
// belong and which of them carry which special case, so that every case appears at every size.
func (g *gen) plan() {
	n := g.opt.Services
	nOrg := max(3, n/4)
	g.orgs = make([]orgPlan, nOrg)
	for i := range min(n, nOrg) {
		g.orgs[i].nSvc = 1
	}
	rank := g.rng.Perm(nOrg)
	for range n - min(n, nOrg) {
		u := g.rng.Float64()
		g.orgs[rank[int(float64(nOrg)*u*math.Sqrt(u))]].nSvc++
	}
	for i := range g.orgs {
		o := &g.orgs[i]
		switch {
		case o.nSvc <= 1:
			o.nLoc = 1
		case o.nSvc == 2:
			o.nLoc = 1 + g.rng.IntN(2)
		case o.nSvc > 8:
			o.nLoc = 2 + g.rng.IntN(2)
		default:
			o.nLoc = 1 + g.rng.IntN(3)
		}
		big := o.nSvc >= 8
		o.arch = uint8(g.weighted(numArch, func(a int) int {
			if big && !archetypes[a].big {
				return 0
			}
			return archetypes[a].weight
		}))
	}

	// Organisations: states that hide whole organisations only when there are enough of them.
	if nOrg >= 10 {
		var cands []int32
		for i := 1; i < nOrg; i++ {
			cands = append(cands, int32(i))
		}
		st := make([]uint8, nOrg)
		g.assignStates(cands, nOrg, st, []uint8{stReduced, stTakedown}, []float64{0.01, 0.007})
		for i := range st {
			g.orgs[i].state = st[i]
		}
	}
	var liveOrgs []int32
	for i := range g.orgs {
		if g.orgs[i].state == stLive {
			liveOrgs = append(liveOrgs, int32(i))
		}
	}
	for _, i := range g.pick(slices.Clone(liveOrgs), quota(nOrg, 0.03)) {
		g.orgs[i].arch = archACCHO
	}
	noACCHO := slices.DeleteFunc(slices.Clone(liveOrgs), func(i int32) bool { return g.orgs[i].arch == archACCHO })
	for _, i := range g.pick(noACCHO, quota(nOrg, 0.05)) {
		g.orgs[i].feat |= ofNoOwnership
	}
	for _, i := range g.pick(slices.Clone(liveOrgs), quota(nOrg, 0.08)) {
		g.orgs[i].feat |= ofRestrictedIdentifier
	}
	for _, i := range g.pick(slices.Clone(liveOrgs), quota(nOrg, 0.25)) {
		g.orgs[i].feat |= ofLeadership
	}
	for _, i := range g.pick(slices.Clone(liveOrgs), quota(nOrg, 0.01)) {
		g.orgs[i].feat |= ofLeadership | ofLeadershipFull
	}
	for _, st := range []uint8{stClosed, stRemoved, stMerged} {
		for range quota(nOrg, 0.005) {
			o := &g.orgs[g.rng.IntN(nOrg)]
			o.tombs = append(o.tombs, st)
		}
	}

	// Practitioners: about one for two services, at least twelve, spread over the organisations in
	// proportion to their services.
	nPrac := max(n/2, 12)
	cum, prev, svc, loc := 0, 0, 0, 0
	for i := range g.orgs {
		o := &g.orgs[i]
		o.svcStart, o.locStart, o.pracStart = svc, loc, prev
		svc += o.nSvc
		loc += o.nLoc
		cum += o.nSvc
		next := cum * nPrac / n
		o.nPrac = next - prev
		prev = next
	}

	// Service types.
	g.svcType = make([]uint8, n)
	for i := range g.orgs {
		o := &g.orgs[i]
		a := &archetypes[o.arch]
		for k := range o.nSvc {
			t := a.types[0]
			if k > 0 {
				t = a.types[g.rng.IntN(len(a.types))]
			}
			g.svcType[o.svcStart+k] = ptypeIndex(t)
		}
	}

	// Locations: features of the base sites of visible organisations; sites in other lifecycle
	// states are extra sites of visible organisations.
	g.locFeat = make([]uint8, loc)
	var baseLocs []int32
	for i := range g.orgs {
		o := &g.orgs[i]
		if o.state == stLive {
			for k := range o.nLoc {
				baseLocs = append(baseLocs, int32(o.locStart+k))
			}
		}
	}
	nb := len(baseLocs)
	for _, i := range g.pick(baseLocs, quota(nb, 0.02)) {
		g.locFeat[i] |= lfUnlisted
	}
	withheld := g.pick(baseLocs, quota(nb, 0.015)+quota(nb, 0.015))
	for k, i := range withheld {
		if k < quota(nb, 0.015) {
			g.locFeat[i] |= lfWithheldProPartner
		} else {
			g.locFeat[i] |= lfWithheldStaff
		}
	}
	for _, i := range g.pick(baseLocs, quota(nb, 0.04)) {
		g.locFeat[i] |= lfOwnership
	}
	for _, i := range g.pick(baseLocs, quota(nb, 0.03)) {
		g.locFeat[i] |= lfNoHours
	}
	for _, st := range []uint8{stClosed, stRemoved, stMerged, stReduced, stTakedown} {
		for range quota(nb, 0.005) {
			o := &g.orgs[liveOrgs[g.rng.IntN(len(liveOrgs))]]
			o.extraLocs = append(o.extraLocs, st)
		}
	}

	// Services.
	g.svcState = make([]uint8, n)
	g.svcFeat = make([]uint16, n)
	var stateCands []int32
	for i := range g.orgs {
		o := &g.orgs[i]
		if o.state != stLive {
			continue
		}
		for k := range o.nSvc {
			if s := o.svcStart + k; s > 0 {
				stateCands = append(stateCands, int32(s))
			}
		}
	}
	g.assignStates(stateCands, n, g.svcState,
		[]uint8{stClosed, stMerged, stReduced, stTakedown, stRemoved}, []float64{0.01, 0.005, 0.01, 0.005, 0.005})
	var live []int32
	for i := range g.orgs {
		o := &g.orgs[i]
		if o.state != stLive {
			continue
		}
		for k := range o.nSvc {
			if s := o.svcStart + k; g.svcState[s] == stLive {
				live = append(live, int32(s))
			}
		}
	}
	isType := func(codes ...string) func(int32) bool {
		return func(s int32) bool { return slices.Contains(codes, ptypes[g.svcType[s]].code) }
	}
	setGP := func(s int32) { g.svcType[s] = ptypeIndex("gp") }
	mark := func(ids []int32, f uint16) {
		for _, s := range ids {
			g.svcFeat[s] |= f
		}
	}
	g.svcFeat[0] |= sfAllContactKinds
	mark(g.pick(live, quota(n, 0.005)), sfForeign)
	mark(g.pickPref(live, quota(n, 0.003), func(s int32) bool {
		return slices.Contains(ptypes[g.svcType[s]].delivery, "telehealth")
	}, nil), sfWholeCountry)
	later := g.pickPref(live, quota(n, 0.02), func(s int32) bool { return refinersOf(ptypes[g.svcType[s]].code) != nil }, setGP)
	mark(later, sfLaterRefines)
	mark(g.pick(without(live, later), quota(n, 0.06)), sfMulti)
	mark(g.pickPref(live, quota(n, 0.01), isType("aod", "gp", "pharmacy"), setGP), sfHiddenLocalType)
	mark(g.pick(live, quota(n, 0.05)), sfRestrictedContacts)
	mark(g.pick(live, quota(n, 0.04)), sfOwnership)
	mark(g.pickPref(live, quota(n, 0.01), isType("emergency_department", "mental_health_crisis", "domestic_violence"), nil), sfAlways)

	// Practitioners.
	g.pracState = make([]uint8, nPrac)
	g.pracFeat = make([]uint16, nPrac)
	var pc []int32
	for i := 1; i < nPrac; i++ {
		pc = append(pc, int32(i))
	}
	g.assignStates(pc, nPrac, g.pracState,
		[]uint8{stClosed, stMerged, stReduced, stTakedown, stRemoved}, []float64{0.01, 0.005, 0.01, 0.005, 0.005})
	var livePrac []int32
	for i := range nPrac {
		if g.pracState[i] == stLive {
			livePrac = append(livePrac, int32(i))
		}
	}
	pmark := func(ids []int32, f uint16) {
		for _, p := range ids {
			g.pracFeat[p] |= f
		}
	}
	// Genders: the rare values by quota; one woman, man and non-binary person at least, the rest
	// drawn when the practitioner is written.
	genders := []uint16{pfPreferNotToSay, pfDifferentTerm, pfDifferentTermHidden, pfNonBinary, pfWoman, pfMan}
	rates := []float64{0.02, 0.015, 0.005, 0.0, 0.0, 0.0}
	total := 0
	for _, r := range rates {
		total += quota(nPrac, r)
	}
	chosen := g.pick(livePrac, total)
	k := 0
	for i, f := range genders {
		for range quota(nPrac, rates[i]) {
			if k < len(chosen) {
				g.pracFeat[chosen[k]] |= f
				k++
			}
		}
	}
	pmark(g.pick(livePrac, quota(nPrac, 0.03)), pfNameHidden)
	pmark(g.pick(livePrac, quota(nPrac, 0.06)), pfPrivateFields)
	pmark(g.pick(livePrac, quota(nPrac, 0.10)), pfContactStaff)
	pmark(g.pick(livePrac, quota(nPrac, 0.05)), pfContactProPartner)
	pmark(g.pick(livePrac, quota(nPrac, 0.08)), pfContactEveryone)
	pmark(g.pick(livePrac, quota(nPrac, 0.08)), pfEndedRole)

	g.recent = make([][]svcRT, len(ptypes))
	g.colls = append(g.collectionPlans(), g.matrixCollections()...)
}

// refinersOf returns the local types visible to everyone that refine the platform type.
func refinersOf(code string) []string { return refiners[ptypeIndex(code)] }

// refiners are, by platform type, the local types visible to everyone that refine it.
var refiners = func() [][]string {
	out := make([][]string, len(ptypes))
	for i, t := range ptypes {
		for _, lt := range ltypes {
			if !lt.restricted && slices.Contains(lt.refines, t.code) {
				out[i] = append(out[i], lt.code)
			}
		}
	}
	return out
}()

// run writes the whole directory.
func (g *gen) run() {
	g.plan()
	g.writeDirectory()
	g.writeTaxonomy()
	for i := range g.orgs {
		if g.err != nil {
			return
		}
		g.writeOrganisation(i)
	}
	g.writeMatrix()
	g.writeCollections()
}
