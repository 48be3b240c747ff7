package demo

import (
	"fmt"
	"strings"

	"github.com/dirsvc/dirsvc"
)

// Telephone numbers, written in the varied forms people type them in; the importer normalises them to
// E.164. Visible Australian geographic numbers never start 02 5 (the canary range is 02 5550), and
// mobiles use the 040 to 043 blocks, so no visible number can fall in the canary range.

func (g *gen) digits(n int) string {
	var b strings.Builder
	for range n {
		b.WriteByte(byte('0' + g.rng.IntN(10)))
	}
	return b.String()
}

// localAU returns the area code and eight-digit local number of a geographic number in the state.
func (g *gen) localAU(state string, metro bool) (area, local string) {
	first := func(opts ...string) string { return opts[g.rng.IntN(len(opts))] }
	switch state {
	case "VIC":
		if metro {
			return "3", first("9", "8") + g.digits(7)
		}
		return "3", "5" + first("1", "2", "3", "4", "8") + g.digits(6)
	case "TAS":
		return "3", "6" + first("2", "3", "4") + g.digits(6)
	case "QLD":
		if metro {
			return "7", "3" + g.digits(7)
		}
		return "7", first("4", "5") + first("0", "1", "4", "5", "6") + g.digits(6)
	case "SA":
		return "8", "8" + first("1", "2", "3", "4", "5") + g.digits(6)
	case "WA":
		return "8", first("9", "6") + first("2", "3", "4") + g.digits(6)
	case "NT":
		return "8", "89" + first("4", "5", "8") + g.digits(5)
	case "ACT":
		return "2", "62" + first("0", "4", "5", "6", "9") + g.digits(5)
	}
	if metro {
		return "2", first("9", "8") + g.digits(7)
	}
	return "2", first("4", "6") + first("0", "2", "3", "5", "7", "9") + g.digits(6)
}

// writeAU writes an Australian geographic number (area code and 8-digit local number) in one of the
// common forms.
func (g *gen) writeAU(area, local string) string {
	a, b := local[:4], local[4:]
	switch r := g.rng.IntN(20); {
	case r < 7:
		return fmt.Sprintf("(0%s) %s %s", area, a, b)
	case r < 14:
		return fmt.Sprintf("0%s %s %s", area, a, b)
	case r < 17:
		return fmt.Sprintf("+61 %s %s %s", area, a, b)
	case r < 19:
		return "0" + area + local
	default:
		return fmt.Sprintf("(0%s) %s-%s", area, a, b)
	}
}

// landline returns a visible geographic number near the locality.
func (g *gen) landline(l *dirsvc.Locality) string {
	if g.nz {
		return g.landlineNZ(l.State)
	}
	return g.writeAU(g.localAU(l.State, l.Remoteness == 0))
}

// nzArea returns the New Zealand area code of a region.
func nzArea(region string) string {
	switch region {
	case "Northland", "Auckland":
		return "9"
	case "Waikato", "Bay of Plenty":
		return "7"
	case "Gisborne", "Hawke's Bay", "Taranaki", "Manawatū-Whanganui":
		return "6"
	case "Wellington":
		return "4"
	}
	return "3"
}

func (g *gen) landlineNZ(region string) string {
	area := nzArea(region)
	firsts := map[string]string{"9": "34568", "7": "3578", "6": "35789", "4": "3459", "3": "34579"}[area]
	local := string(firsts[g.rng.IntN(len(firsts))]) + g.digits(6)
	a, b := local[:3], local[3:]
	switch r := g.rng.IntN(10); {
	case r < 4:
		return fmt.Sprintf("(0%s) %s %s", area, a, b)
	case r < 7:
		return fmt.Sprintf("0%s %s %s", area, a, b)
	case r < 8:
		return fmt.Sprintf("0%s-%s %s", area, a, b)
	default:
		return fmt.Sprintf("+64 %s %s %s", area, a, b)
	}
}

// mobile returns a visible mobile number.
func (g *gen) mobile() string {
	if g.nz {
		p := []string{"21", "22", "27"}[g.rng.IntN(3)]
		d := g.digits(7)
		if g.rng.IntN(4) == 0 {
			return fmt.Sprintf("+64 %s %s %s", p, d[:3], d[3:])
		}
		return fmt.Sprintf("0%s %s %s", p, d[:3], d[3:])
	}
	d := "4" + string(byte('0'+g.rng.IntN(4))) + g.digits(7)
	switch g.rng.IntN(5) {
	case 0:
		return "0" + d
	case 1:
		return fmt.Sprintf("+61 %s %s %s", d[:3], d[3:6], d[6:])
	}
	return fmt.Sprintf("0%s %s %s", d[:3], d[3:6], d[6:])
}

// freecall returns a visible 1800 (Australia) or 0800/0508 (New Zealand) number.
func (g *gen) freecall() string {
	if g.nz {
		p := []string{"0800", "0800", "0508"}[g.rng.IntN(3)]
		d := g.digits(6)
		return fmt.Sprintf("%s %s %s", p, d[:3], d[3:])
	}
	d := g.digits(6)
	return fmt.Sprintf("1800 %s %s", d[:3], d[3:])
}

// localRate returns a visible Australian 13 or 1300 number (New Zealand has none).
func (g *gen) localRate() string {
	if g.rng.IntN(3) == 0 {
		// 13 xx xx: avoid 13 00 (1300 numbers) and 13 45 (eight-digit numbers).
		a := 1 + g.rng.IntN(9)
		b := g.rng.IntN(10)
		if a == 4 && b == 5 {
			b = 6
		}
		return fmt.Sprintf("13 %d%d %s", a, b, g.digits(2))
	}
	d := g.digits(6)
	return fmt.Sprintf("1300 %s %s", d[:3], d[3:])
}

// foreign returns a visible number of another country than the directory's, with a label.
func (g *gen) foreign() (string, string) {
	if g.rng.IntN(2) == 0 {
		return fmt.Sprintf("+44 20 7946 0%s", g.digits(3)), "London office"
	}
	if g.nz {
		return fmt.Sprintf("+61 2 9%s %s", g.digits(3), g.digits(4)), "Sydney office"
	}
	return fmt.Sprintf("+64 9 3%s %s", g.digits(2), g.digits(4)), "Auckland office"
}

// canaryPhone returns a number of the fictitious range +61 2 5550 AXXX for audiences s, in a form
// the directory's country reads correctly.
func (g *gen) canaryPhone(s dirsvc.Audiences) string {
	d := phoneDigit(s)
	g.phoneN++
	xxx := fmt.Sprintf("%03d", g.phoneN%1000)
	if g.nz {
		return fmt.Sprintf("+61 2 5550 %d%s", d, xxx)
	}
	switch g.rng.IntN(3) {
	case 0:
		return fmt.Sprintf("(02) 5550 %d%s", d, xxx)
	case 1:
		return fmt.Sprintf("02 5550 %d%s", d, xxx)
	}
	return fmt.Sprintf("+61 2 5550 %d%s", d, xxx)
}

// phone returns a contact of a phone-like kind. own is the contact's audiences (0 when omitted, when
// def applies) and ctx who may see the record it belongs to; when some served audience may not see
// the contact, the number comes from the canary range.
func (g *gen) phone(kind dirsvc.ContactKind, label string, own, def, ctx dirsvc.Audiences, visible func() string) dirsvc.Contact {
	eff := ctx & own.Or(def)
	c := dirsvc.Contact{Kind: kind, Label: label, VisibleTo: own}
	if eff.Restricted() {
		c.Value = g.canaryPhone(eff)
	} else {
		c.Value = visible()
	}
	return c
}

// email returns an email contact local@domain, marked when some served audience may not see it.
func (g *gen) email(local, domain, label string, own, def, ctx dirsvc.Audiences) dirsvc.Contact {
	if m := markerFor(ctx & own.Or(def)); m != "" {
		local += "." + m
	}
	return dirsvc.Contact{Kind: dirsvc.ContactEmail, Value: local + "@" + domain, Label: label, VisibleTo: own}
}

// website returns a website contact, marked when some served audience may not see it.
func (g *gen) website(url, label string, own, def, ctx dirsvc.Audiences) dirsvc.Contact {
	return dirsvc.Contact{Kind: dirsvc.ContactWebsite, Value: markURL(url, ctx&own.Or(def)), Label: label, VisibleTo: own}
}

// markURL puts the marker of s first in the path of an http(s) url.
func markURL(url string, s dirsvc.Audiences) string {
	m := markerFor(s)
	if m == "" {
		return url
	}
	scheme, rest, _ := strings.Cut(url, "://")
	host, path, _ := strings.Cut(rest, "/")
	return scheme + "://" + host + "/" + m + strings.TrimSuffix("/"+path, "/")
}
