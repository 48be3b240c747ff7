package edge

import (
	"net/url"
	"strings"
	"testing"
)

// TestAttributionTextsAreSpeltInASCII: every character outside printable ASCII is spelt in it, and
// the RFC 8187 form gives back the exact text.
func TestAttributionTextsAreSpeltInASCII(t *testing.T) {
	for _, c := range []struct{ name, text, want string }{
		{"printable ASCII is kept", "Incorporates G-NAF data", "Incorporates G-NAF data"},
		{"macrons become base letters", "Toitū Te Whenua, Māori", "Toitu Te Whenua, Maori"},
		{"decomposed marks are dropped", "Toitu\u0304", "Toitu"},
		{"symbols are spelt out", "© Geoscape Australia® – “G-NAF”…", `(c) Geoscape Australia(R) - "G-NAF"...`},
		{"ligatures are spelt out", "Œuvre Straße Æ", "OEuvre Strasse AE"},
		{"controls become spaces", "a\tb\r\nc\x7f", "a b  c "},
		{"other scripts become question marks", "地図 data", "?? data"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := asciiText(c.text)
			if got != c.want {
				t.Errorf("asciiText(%q) = %q, want %q", c.text, got, c.want)
			}
			if !printableASCII(got) {
				t.Errorf("asciiText(%q) = %q, not printable ASCII", c.text, got)
			}
			ext := extValue(c.text)
			enc, ok := strings.CutPrefix(ext, "UTF-8''")
			if !ok || !printableASCII(ext) || strings.ContainsAny(enc, " \"'(),/:;<=>?@[\\]{}") {
				t.Fatalf("extValue(%q) = %q, not an RFC 8187 ext-value", c.text, ext)
			}
			if dec, err := url.PathUnescape(enc); err != nil || dec != c.text {
				t.Errorf("extValue(%q) = %q decodes to %q, %v", c.text, ext, dec, err)
			}
		})
	}
}
