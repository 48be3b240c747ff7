package dirsvc_test

import (
	"strings"
	"testing"

	"github.com/dirsvc/dirsvc"
)

func TestValidDataIssueContact(t *testing.T) {
	for s, want := range map[string]bool{
		"data@example.org":                                true,
		"data.issues+au@health.example.org":               true,
		"https://example.org/report":                      true,
		"https://example.org/report?dir=demo":             true,
		"":                                                false,
		"data@localhost":                                  false,
		"call 1800 000 000":                               false,
		"mailto:data@example.org":                         false,
		"http://example.org/report":                       false,
		"https://":                                        false,
		"https://user:pass@example.org/":                  false,
		"javascript:alert(1)":                             false,
		"data@example.org\nBcc: all@example.org":          false,
		"https://example.org/" + strings.Repeat("a", 320): false,
	} {
		if got := dirsvc.ValidDataIssueContact(s); got != want {
			t.Errorf("ValidDataIssueContact(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestJurisdictionPacks(t *testing.T) {
	for country, id := range map[string]string{"AU": "au", "NZ": "nz"} {
		p := dirsvc.JurisdictionPacks(country)
		if len(p) != 1 || p[0].ID != id || p[0].Country != country || p[0].PhoneRegion != country || len(p[0].AreaTypes) == 0 {
			t.Errorf("%s: %+v", country, p)
		}
	}
	if p := dirsvc.JurisdictionPacks("FR"); p == nil || len(p) != 0 {
		t.Errorf("FR: %+v, want an empty list", p)
	}
}
