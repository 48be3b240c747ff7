package edge

import (
	"bytes"
	"net/http"
	"strings"

	"github.com/dirsvc/dirsvc"
)

// Address attribution (specification section 1, item 8): an answer whose body carries an address
// names the directory's attribution text. HTTP field values are ASCII in practice, and a client reads
// any other byte as ISO-8859-1 (RFC 9110 section 5.5), so a text such as "© Toitū Te Whenua" arrives
// garbled when sent as raw UTF-8. The text therefore goes out twice, as Content-Disposition does with
// filename and filename* (RFC 6266 section 4.3):
//
//   - X-DIR-Attribution: the text in ASCII, letters with diacritics as their base letters (ū as u),
//     symbols spelt out (© as (c)), anything else as "?"; never a byte above 0x7E or a control.
//   - X-DIR-Attribution*: the exact text as an RFC 8187 ext-value (charset UTF-8, no language, the
//     bytes percent-encoded), sent only when the ASCII form differs from it.
var (
	keyAttribution = http.CanonicalHeaderKey("X-DIR-Attribution")
	// keyAttributionExt is canonical too: "*" is a token character, which CanonicalHeaderKey keeps.
	keyAttributionExt = http.CanonicalHeaderKey("X-DIR-Attribution*")
)

// setAttribution names the attribution text in the answer's headers: the ASCII form always, and the
// exact text in RFC 8187 encoding when the two differ. An empty text sets nothing.
func setAttribution(h http.Header, text string) {
	if text == "" {
		return
	}
	plain := asciiText(text)
	h[keyAttribution] = []string{plain}
	if plain != text {
		h[keyAttributionExt] = []string{extValue(text)}
	}
}

// asciiText returns text with every character outside printable ASCII replaced: a letter with
// diacritics by its base letter, a ligature or symbol by its usual spelling, a combining mark by
// nothing, a control or other space by a space, and anything else by "?". Printable ASCII text is
// returned as it is.
func asciiText(text string) string {
	if printableASCII(text) {
		return text
	}
	var b strings.Builder
	b.Grow(len(text))
	for _, r := range text {
		switch {
		case r >= 0x20 && r < 0x7F:
			b.WriteRune(r)
		case r < 0x20 || r == 0x7F:
			b.WriteByte(' ')
		case r >= 0x300 && r <= 0x36F: // combining diacritical marks, as in decomposed text
		default:
			if s, ok := transliterations[r]; ok {
				b.WriteString(s)
			} else {
				b.WriteByte('?')
			}
		}
	}
	return b.String()
}

// printableASCII reports whether every byte of s is printable ASCII (0x20 to 0x7E).
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7E {
			return false
		}
	}
	return true
}

// extValue returns text as an RFC 8187 ext-value: the charset UTF-8, no language, and every byte
// that is not an attr-char percent-encoded.
func extValue(text string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len("UTF-8''") + 3*len(text))
	b.WriteString("UTF-8''")
	for i := 0; i < len(text); i++ {
		if c := text[i]; attrChar(c) {
			b.WriteByte(c)
		} else {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.String()
}

// attrChar reports whether c is an attr-char of RFC 8187 section 3.2.1, which an ext-value carries
// as it is.
func attrChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		strings.IndexByte("!#$&+-.^_`|~", c) >= 0
}

// transliterations are the ASCII spellings of the characters of attribution texts: the Latin letters
// with diacritics of Latin-1 and Latin Extended-A (te reo Māori's macrons among them), ligatures,
// and the typographic symbols and spaces licence texts use.
var transliterations = func() map[rune]string {
	m := map[rune]string{
		'©': "(c)", '®': "(R)", '™': "(TM)", '℗': "(P)", '°': " deg", '×': "x", '·': ".", '•': "*",
		'‘': "'", '’': "'", '‚': ",", '‛': "'", '′': "'", '“': `"`, '”': `"`, '„': `"`, '″': `"`,
		'«': `"`, '»': `"`, '‹': "'", '›': "'", '‐': "-", '‑': "-", '‒': "-", '–': "-", '—': "-",
		'―': "-", '−': "-", '…': "...", '§': "S.", '¶': "P.", '€': "EUR", '£': "GBP", '¥': "JPY",
		'¢': "c", '½': "1/2", '¼': "1/4", '¾': "3/4", '¹': "1", '²': "2", '³': "3", 'ª': "a", 'º': "o",
		'¡': "!", '¿': "?", '\u00A0': " ", '\u2002': " ", '\u2003': " ", '\u2009': " ", '\u202F': " ",
		'\u200B': "", '\u00AD': "", '\uFEFF': "",
		'Æ': "AE", 'æ': "ae", 'Œ': "OE", 'œ': "oe", 'ß': "ss", 'ẞ': "SS", 'Þ': "Th", 'þ': "th",
		'Ĳ': "IJ", 'ĳ': "ij", 'ŉ': "'n",
	}
	for _, group := range []string{
		"AÀÁÂÃÄÅĀĂĄǍ", "aàáâãäåāăąǎ", "CÇĆĈĊČ", "cçćĉċč", "DĎĐÐ", "dďđð", "EÈÉÊËĒĔĖĘĚ", "eèéêëēĕėęě",
		"GĜĞĠĢ", "gĝğġģ", "HĤĦ", "hĥħ", "IÌÍÎÏĨĪĬĮİǏ", "iìíîïĩīĭįıǐ", "JĴ", "jĵ", "KĶ", "kķĸ",
		"LĹĻĽĿŁ", "lĺļľŀł", "NÑŃŅŇŊ", "nñńņňŋ", "OÒÓÔÕÖØŌŎŐǑ", "oòóôõöøōŏőǒ", "RŔŖŘ", "rŕŗř",
		"SŚŜŞŠ", "sśŝşšſ", "TŢŤŦ", "tţťŧ", "UÙÚÛÜŨŪŬŮŰŲǓ", "uùúûüũūŭůűųǔ", "WŴ", "wŵ", "YÝŸŶ",
		"yýÿŷ", "ZŹŻŽ", "zźżž",
	} {
		base, rest := group[:1], group[1:]
		for _, r := range rest {
			m[r] = base
		}
	}
	return m
}()

// The address presence checks below decide whether an answer carries X-DIR-Attribution. They look
// only at what the body carries to the caller: an address hidden from the caller's audience is
// absent (or null) in the view, so the header never tells a caller that an address it may not see
// exists.

// briefLocationAddresses reports whether a stored location view carries its address (null when it
// is withheld or hidden from the audience). A JSON string escapes every quote, so the member's name
// followed by an object can only be the member itself.
func briefLocationAddresses(body []byte) bool { return bytes.Contains(body, []byte(`"address":{`)) }

// briefOrganisationAddresses reports whether a stored organisation view carries its postal address
// (left out when it has none or it is hidden from the audience).
func briefOrganisationAddresses(body []byte) bool {
	return bytes.Contains(body, []byte(`"postalAddress":{`))
}

// servicePageAddresses reports whether a service page carries an address: its location's or its
// organisation's postal address.
func servicePageAddresses(p *dirsvc.ServicePage) bool {
	return p.Location != nil && p.Location.Address != nil || p.Organisation != nil && p.Organisation.PostalAddress != nil
}

// locationPageAddresses reports whether a location page carries an address: the location's own or
// its organisation's postal address.
func locationPageAddresses(p *dirsvc.LocationPage) bool {
	return p.Address != nil || p.Organisation != nil && p.Organisation.PostalAddress != nil
}

// organisationPageAddresses reports whether an organisation page carries an address: its postal
// address or the address of one of its locations.
func organisationPageAddresses(p *dirsvc.OrganisationPage) bool {
	if p.PostalAddress != nil {
		return true
	}
	for _, l := range p.Locations {
		if l.Address != nil {
			return true
		}
	}
	return false
}
