package edge

import (
	"testing"

	"github.com/dirsvc/dirsvc"
)

// TestNegotiateLanguage reads Accept-Language headers by weight, with lookup fallback from a longer
// tag to a shorter one, and the directory's language when nothing shipped matches.
func TestNegotiateLanguage(t *testing.T) {
	xa, en := dirsvc.PseudoLanguage, dirsvc.DirectoryLanguage
	for _, c := range []struct {
		name   string
		header []string
		want   string
	}{
		{"no header gives the directory's language", nil, en},
		{"an empty header gives the directory's language", []string{""}, en},
		{"a shipped language is chosen", []string{"en-XA"}, xa},
		{"case does not matter", []string{"EN-xa"}, xa},
		{"a longer tag falls back to a shipped one", []string{"en-XA-u-nu-latn"}, xa},
		{"a private-use singleton goes with its subtag", []string{"en-XA-x-test"}, xa},
		{"a regional tag falls back to its language", []string{"en-AU"}, en},
		{"an unknown language falls back to the directory's", []string{"xx"}, en},
		{"unknown languages are passed over for a known one", []string{"fr-CA, de;q=0.9, en-XA;q=0.5"}, xa},
		{"the highest weight wins", []string{"en-XA;q=0.5, en;q=0.9"}, en},
		{"the highest weight wins whatever the order", []string{"en;q=0.4, en-XA"}, xa},
		{"equal weights keep their order", []string{"en-XA;q=0.8, en;q=0.8"}, xa},
		{"a weight of zero refuses a language", []string{"en-XA;q=0, fr"}, en},
		{"the wildcard gives the directory's language", []string{"*, en-XA;q=0.5"}, en},
		{"a malformed weight is ignored", []string{"en-XA;q=2, en-XA;q=x, en-XA;level=1"}, en},
		{"several header lines are read as one list", []string{"fr", "en-XA;q=0.3"}, xa},
		{"white space is allowed", []string{" en-XA ; q=0.7 , fr ; q=0.6"}, xa},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := negotiateLanguage(c.header, en); got != c.want {
				t.Errorf("negotiateLanguage(%q)=%q, want %q", c.header, got, c.want)
			}
		})
	}
}
