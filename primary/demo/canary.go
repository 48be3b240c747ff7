package demo

import (
	"regexp"
	"slices"
	"strings"

	"github.com/dirsvc/dirsvc"
)

// Canary markers
//
// Every value of a generated directory that some served audience (public, professional, partner)
// must not see carries a marker saying exactly which served audiences may see it, so a test can scan
// any output of the service — a JSON body, a FHIR bundle, a feed page, a webhook payload, an export
// file — and name every value that leaked to the wrong audience.
//
// Text values (names, address lines, emails, websites, bios, staff notes, qualifications, own
// gender terms, identifier values of the directory's own types, collection titles, labels) carry the
// token
//
//	canary-<list>-x
//
// where <list> names the served audiences that may see the value, joined with "." in the order
// public, professional, partner: canary-professional.partner-x, canary-partner-x,
// canary-professional-x. canary-staff-x marks a value no served audience may see. The token is put
// into the value naturally: "14 Quiet Lane canary-staff-x", "intake.canary-partner-x@example.org",
// "Nguyen canary-professional.partner-x". Values every audience may see carry no token.
//
// Telephone numbers must stay valid, so a hidden number is taken from the Australian fictitious range
// +61 2 5550 AXXX (written for example "(02) 5550 2041"), where the digit A says who may see it:
//
//	1  staff only (no served audience)
//	2  professional and partner
//	3  partner only
//	4  professional only
//	5  public only
//	6  public and professional
//	7  public and partner
//
// so that every set of served audiences but everyone has a digit. No value visible to every audience
// ever uses +61 2 5550. Any other digit A (0, 8, 9) is read as staff only.
//
// Effective audiences compound: a contact of a location visible to professional and partner only is
// marked for professional and partner even when the contact itself is for everyone; a whole record
// hidden from an audience carries the marker in its name, so any leak of the record shows. Records
// in the closed, removed and merged states carry no marker: their 410 and 301 answers reveal only
// the public ID. Staff notes, on any record, are staff only and marked canary-staff-x. Every kind of
// restrictable detail is generated for every set of served audiences (matrix.go), so a surface that
// ignores one kind's audiences leaks a marker. Leadership (senior management) is never shown to the
// public and only to callers with the leadership scope: what a leader shows to health professionals
// is marked canary-professional.partner-x, whatever other tiers the detail names; staff notes, past
// appointments and what a leader keeps from health professionals are marked canary-staff-x.
//
// Values a marker cannot be put into — codes such as the gender prefer_not_to_say, languages,
// points, HPI and Ahpra numbers — are not marked; tests check those separately (a point goes with its
// address's lines, which are marked).

// Marker token parts.
const (
	canaryPrefix = "canary-"
	canarySuffix = "-x"
)

var (
	// canaryTextRE matches text markers, tolerating the "." between audiences turned into "-" or
	// "_" (as a slug would) and any letter case.
	canaryTextRE = regexp.MustCompile(`(?i)canary-((?:public|professional|partner|staff)(?:[._-](?:public|professional|partner|staff))*)-x`)
	// canaryPhoneRE matches the fictitious range in international (+61 2, 61 2, +61 (0)2) and
	// national ((02), 02) forms, with spaces, dots or hyphens between the groups.
	canaryPhoneRE = regexp.MustCompile(`(?:\+?61[ .-]?(?:\(0\)[ .-]?)?\(?2\)?|\(?02\)?)[ .-]?5550[ .-]?([0-9])[ .-]?([0-9])[ .-]?([0-9])[ .-]?([0-9])`)
)

// markerFor returns the text marker of the audiences s, or "" when every served audience may see.
func markerFor(s dirsvc.Audiences) string {
	if !s.Restricted() {
		return ""
	}
	return canaryPrefix + strings.Join(s.List(), ".") + canarySuffix
}

// phoneDigit returns the digit A of the fictitious range for the audiences s, or 0 when every served
// audience may see (no canary needed). Every other set has a digit.
func phoneDigit(s dirsvc.Audiences) int {
	pro, par, pub := s.Has(dirsvc.Professional), s.Has(dirsvc.Partner), s.Has(dirsvc.Public)
	switch {
	case pub && pro && par:
		return 0
	case pub && pro:
		return 6
	case pub && par:
		return 7
	case pub:
		return 5
	case pro && par:
		return 2
	case par:
		return 3
	case pro:
		return 4
	}
	return 1
}

// phoneDigitAudiences returns who may see a number of the fictitious range with digit d.
func phoneDigitAudiences(d byte) dirsvc.Audiences {
	switch d {
	case '2':
		return dirsvc.AudiencesOf(dirsvc.Professional, dirsvc.Partner)
	case '3':
		return dirsvc.AudiencesOf(dirsvc.Partner)
	case '4':
		return dirsvc.AudiencesOf(dirsvc.Professional)
	case '5':
		return dirsvc.AudiencesOf(dirsvc.Public)
	case '6':
		return dirsvc.AudiencesOf(dirsvc.Public, dirsvc.Professional)
	case '7':
		return dirsvc.AudiencesOf(dirsvc.Public, dirsvc.Partner)
	}
	return dirsvc.StaffOnly
}

// canary is one marker found in a body: its canonical form and who may see it.
type canary struct {
	token string
	may   dirsvc.Audiences
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

// findCanaries returns every marker in body, in order of appearance (duplicates included).
func findCanaries(body []byte) []canary {
	var out []canary
	type hit struct {
		at int
		c  canary
	}
	var hits []hit
	for _, m := range canaryTextRE.FindAllSubmatchIndex(body, -1) {
		list := strings.ToLower(string(body[m[2]:m[3]]))
		set := dirsvc.StaffOnly
		for _, name := range strings.FieldsFunc(list, func(r rune) bool { return r == '.' || r == '-' || r == '_' }) {
			if a, err := dirsvc.ParseAudience(name); err == nil {
				set |= 1 << a
			}
		}
		hits = append(hits, hit{m[0], canary{markerFor(set), set}})
	}
	for _, m := range canaryPhoneRE.FindAllSubmatchIndex(body, -1) {
		// A number of the range stands alone: no digit just before or after it.
		if m[0] > 0 && isDigit(body[m[0]-1]) {
			continue
		}
		if m[1] < len(body) && isDigit(body[m[1]]) {
			continue
		}
		d := body[m[2]]
		digits := "+6125550" + string(d) + string(body[m[4]]) + string(body[m[6]]) + string(body[m[8]])
		hits = append(hits, hit{m[0], canary{digits, phoneDigitAudiences(d)}})
	}
	slices.SortStableFunc(hits, func(a, b hit) int { return a.at - b.at })
	for _, h := range hits {
		out = append(out, h.c)
	}
	return out
}

// tokenSet returns the distinct tokens of the markers found that keep accepts, sorted.
func tokenSet(found []canary, keep func(canary) bool) []string {
	var out []string
	for _, c := range found {
		if keep(c) && !slices.Contains(out, c.token) {
			out = append(out, c.token)
		}
	}
	slices.Sort(out)
	return out
}

// Canaries returns every canary marker in body, deduplicated and sorted: text markers in their
// canonical form (for example "canary-professional.partner-x", whatever separator or case the body
// used) and numbers of the fictitious range in E.164 form (for example "+61255502041"), whatever
// form the body wrote them in.
func Canaries(body []byte) []string {
	return tokenSet(findCanaries(body), func(canary) bool { return true })
}

// Leaks returns the canary markers in body that audience a may not see, deduplicated and sorted, in
// the forms Canaries uses. A body projected for a that yields anything here leaks. For the staff
// audience it returns nothing.
func Leaks(body []byte, a dirsvc.Audience) []string {
	return tokenSet(findCanaries(body), func(c canary) bool { return !c.may.Has(a) })
}
