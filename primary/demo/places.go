package demo

import (
	"math"
	"strings"
	"sync"
	"unicode"
)

// pool is the localities services may be placed in, by class of remoteness.
type pool struct {
	locs                    []Locality
	metro, regional, remote []int32
}

// usableAU reports whether an Australian locality is a plausible place for a service: one with full
// statistical areas, on the mainland or Tasmania, and not a delivery centre, a base or a campus.
func usableAU(l *Locality) bool {
	if l.SA2 == "" || l.LGA == "" || l.PHN == "" || l.Remoteness < 0 {
		return false
	}
	if l.Lon < 112 || l.Lon > 154 || l.Lat > -10 {
		return false
	}
	for _, suf := range []string{" DC", " BC", " MC", " LPO", " PO"} {
		if strings.HasSuffix(l.Name, suf) {
			return false
		}
	}
	for _, w := range []string{"HMAS", "RAAF", "UNIVERSITY", "PLAZA", "BARRACKS", "MAIL CENTRE", "DELIVERY"} {
		if strings.Contains(l.Name, w) {
			return false
		}
	}
	return true
}

var auPool = sync.OnceValue(func() *pool {
	p := &pool{}
	for _, l := range AULocalities() {
		if usableAU(&l) {
			l.Name = titleCase(l.Name)
			p.locs = append(p.locs, l)
		}
	}
	p.classify()
	return p
})

var nzPool = sync.OnceValue(func() *pool {
	p := &pool{locs: append([]Locality(nil), NZLocalities()...)}
	p.classify()
	return p
})

func (p *pool) classify() {
	for i := range p.locs {
		switch r := p.locs[i].Remoteness; {
		case r == 0:
			p.metro = append(p.metro, int32(i))
		case r <= 2:
			p.regional = append(p.regional, int32(i))
		default:
			p.remote = append(p.remote, int32(i))
		}
	}
}

// titleCase turns an Australia Post name in capitals into the usual mixed case: "MCMAHONS POINT"
// becomes "McMahons Point", "O'CONNOR" "O'Connor".
func titleCase(s string) string {
	words := strings.Fields(strings.ToLower(s))
	for i, w := range words {
		if i > 0 && (w == "of" || w == "the" || w == "on") {
			continue
		}
		words[i] = capitalise(w)
	}
	return strings.Join(words, " ")
}

func capitalise(w string) string {
	if strings.Contains(w, "-") {
		parts := strings.Split(w, "-")
		for i := range parts {
			parts[i] = capitalise(parts[i])
		}
		return strings.Join(parts, "-")
	}
	r := []rune(w)
	if len(r) == 0 {
		return w
	}
	r[0] = unicode.ToUpper(r[0])
	switch {
	case len(r) > 3 && r[0] == 'M' && r[1] == 'c':
		r[2] = unicode.ToUpper(r[2])
	case len(r) > 2 && r[1] == '\'':
		r[2] = unicode.ToUpper(r[2])
	}
	return string(r)
}

// ascii folds the Māori macrons and other diacritics the data uses to plain letters.
var ascii = strings.NewReplacer(
	"ā", "a", "ē", "e", "ī", "i", "ō", "o", "ū", "u", "Ā", "A", "Ē", "E", "Ī", "I", "Ō", "O", "Ū", "U",
	"č", "c", "ü", "u", "é", "e",
)

// slugify returns lower-case letters and digits of s joined by single hyphens.
func slugify(s string) string {
	s = strings.ToLower(ascii.Replace(s))
	var b strings.Builder
	dash := false
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
			dash = false
		case r == '\'':
			// Women's -> womens
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}

// cut shortens a slug to at most n bytes without a trailing hyphen.
func cut(s string, n int) string {
	if len(s) > n {
		s = s[:n]
	}
	return strings.TrimRight(s, "-")
}

// cutWords shortens a slug to at most n bytes, at a hyphen when it has to cut.
func cutWords(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n+1]
	if i := strings.LastIndexByte(s, '-'); i > 0 {
		return s[:i]
	}
	return cut(s, n)
}

// domainOf returns a made-up web domain for an organisation name, under example.org.
func domainOf(name string) string {
	return cut(strings.ReplaceAll(slugify(name), "-", ""), 40) + ".example.org"
}

// timeZoneOf returns the IANA zone of an Australian or New Zealand locality.
func timeZoneOf(l *Locality) string {
	if l.Country == "NZ" {
		return "Pacific/Auckland"
	}
	switch l.State {
	case "VIC":
		return "Australia/Melbourne"
	case "QLD":
		return "Australia/Brisbane"
	case "SA":
		return "Australia/Adelaide"
	case "WA":
		return "Australia/Perth"
	case "NT":
		return "Australia/Darwin"
	case "TAS":
		return "Australia/Hobart"
	case "NSW":
		if l.Postcode == "2880" {
			return "Australia/Broken_Hill"
		}
	}
	return "Australia/Sydney"
}

// areaSA2 is the area type of ABS Statistical Areas Level 2. An area type is 2 to 12 lower-case
// letters only (dirsvc.ValidArea, and the area pattern of the specification's search parameters), so
// it cannot be "sa2"; SA2 codes are nine digits (SA3 five, SA4 three), so "sa:" with a nine-digit code
// is unambiguous (docs/import-format.md).
const areaSA2 = "sa"

// areasOf returns the areas a locality lies in, most specific first.
func areasOf(l *Locality) []string {
	if l.Country == "NZ" {
		return []string{"postcode:" + l.Postcode, "ta:" + cut(slugify(l.LGAName), 40),
			"region:" + cut(slugify(l.State), 40), "country:nz"}
	}
	return []string{"postcode:" + l.Postcode, areaSA2 + ":" + l.SA2, "lga:" + l.LGA, "phn:" + l.PHN,
		"state:" + strings.ToLower(l.State), "country:au"}
}

func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }
