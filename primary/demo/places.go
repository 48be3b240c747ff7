package demo

import (
	"math"
	"strings"
	"sync"

	"github.com/dirsvc/dirsvc"
)

// pool is the localities services may be placed in, by class of remoteness.
type pool struct {
	locs                    []dirsvc.Locality
	metro, regional, remote []int32
}

// usableAU reports whether an Australian locality is a plausible place for a service: a place, not a
// name of the post (Postal), with full statistical areas, on the mainland or Tasmania, and not a
// base or a campus.
func usableAU(l *dirsvc.Locality) bool {
	if l.Postal() || l.LGA == "" || l.PHN == "" || l.Remoteness < 0 {
		return false
	}
	if l.Lon < 112 || l.Lon > 154 || l.Lat > -10 {
		return false
	}
	for _, w := range []string{"HMAS", "RAAF", "UNIVERSITY", "PLAZA", "BARRACKS"} {
		if strings.Contains(l.Name, w) {
			return false
		}
	}
	return true
}

var auPool = sync.OnceValue(func() *pool {
	p := &pool{}
	for _, l := range dirsvc.Localities() {
		if l.Country == "AU" && usableAU(&l) {
			l.Name = l.DisplayName()
			p.locs = append(p.locs, l)
		}
	}
	p.classify()
	return p
})

var nzPool = sync.OnceValue(func() *pool {
	p := &pool{}
	for _, l := range dirsvc.Localities() {
		if l.Country == "NZ" {
			p.locs = append(p.locs, l)
		}
	}
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
	return cut(strings.ReplaceAll(dirsvc.Slugify(name), "-", ""), 40) + ".example.org"
}

// timeZoneOf returns the IANA zone of an Australian or New Zealand locality.
func timeZoneOf(l *dirsvc.Locality) string {
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

func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }
