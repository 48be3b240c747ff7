package edge_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/dirsvc/dirsvc"
)

// nzAttribution is an attribution text with characters outside ASCII: a copyright sign and a
// macron, as New Zealand's address data asks for.
const nzAttribution = "Address data © Toitū Te Whenua Land Information New Zealand, CC BY 4.0, some via OpenStreetMap Foundation."

// attributionFixture is a New Zealand directory with an organisation that has a postal address and
// no site the public may see (its one site, with a withheld address, is unlisted), one whose only
// site's address is withheld, and one whose site's address only professionals may see; each has a
// service at its site.
func attributionFixture() []byte {
	return []byte(`{"kind":"directory","slug":"nz","name":"Aotearoa Test","country":"NZ","timeZone":"Pacific/Auckland","licence":"CC BY 4.0","attribution":"` + nzAttribution + `","settings":{"tiers":["professional","partner"]}}
{"kind":"platformType","code":"gp","label":"General practice"}
{"kind":"organisation","publicId":"org_post","name":"Post Only Health","postalAddress":{"lines":["PO Box 5501"],"locality":"Wellington","postcode":"6140","country":"NZ"}}
{"kind":"location","publicId":"loc_post","organisation":"org_post","name":"Nurses' Office","audiences":["professional","partner"],"address":{"lines":["5 Lambton Quay"],"locality":"Wellington","postcode":"6011","country":"NZ","withheld":true},"areas":["postcode:6011"]}
{"kind":"service","publicId":"svc_post","organisation":"org_post","location":"loc_post","name":"Phone Nursing","type":"gp"}
{"kind":"organisation","publicId":"org_quiet","name":"Quiet Health"}
{"kind":"location","publicId":"loc_quiet","organisation":"org_quiet","name":"Safe House","address":{"lines":["9 Quiet Lane"],"locality":"Te Aro","postcode":"6011","country":"NZ","withheld":true},"areas":["postcode:6011"]}
{"kind":"service","publicId":"svc_quiet","organisation":"org_quiet","location":"loc_quiet","name":"Refuge","type":"gp"}
{"kind":"organisation","publicId":"org_pro","name":"Clinician Health"}
{"kind":"location","publicId":"loc_pro","organisation":"org_pro","name":"Back Office","address":{"lines":["3 Cuba St"],"locality":"Te Aro","postcode":"6011","country":"NZ","audiences":["professional"]},"areas":["postcode:6011"]}
{"kind":"service","publicId":"svc_pro","organisation":"org_pro","location":"loc_pro","name":"Clinic","type":"gp"}
`)
}

// decodeExtValue decodes an RFC 8187 ext-value of charset UTF-8 and no language.
func decodeExtValue(tb testing.TB, v string) string {
	tb.Helper()
	enc, ok := strings.CutPrefix(v, "UTF-8''")
	if !ok {
		tb.Fatalf("X-DIR-Attribution* %q is not a UTF-8 ext-value", v)
	}
	for i := 0; i < len(enc); i++ {
		if c := enc[i]; c != '%' && !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$&+-.^_`|~", c) >= 0) {
			tb.Fatalf("X-DIR-Attribution* %q carries %q, which is not an attr-char", v, c)
		}
	}
	text, err := url.PathUnescape(enc)
	if err != nil {
		tb.Fatalf("X-DIR-Attribution* %q: %v", v, err)
	}
	return text
}

// TestAttributionGoesWithEveryAddressInAFormEveryClientReads reads, as the public and as a
// professional, every representation of the attribution fixture: the attribution comes with every
// answer whose body carries an address (a site's address or an organisation's postal address), and
// with no other, so its presence never tells a caller of an address hidden from them; it is ASCII
// only (a client reads other bytes as ISO-8859-1), with the exact text beside it in RFC 8187 form.
func TestAttributionGoesWithEveryAddressInAFormEveryClientReads(t *testing.T) {
	s := newTestServer(t, attributionFixture())
	professional := token(t, grant{dir: "nz", tier: dirsvc.Professional, scopes: "graph:read"})
	const ascii = "Address data (c) Toitu Te Whenua Land Information New Zealand, CC BY 4.0, some via OpenStreetMap Foundation."
	for _, c := range []struct {
		name, tok, path string
		attributed      bool
	}{
		{"an organisation with only a postal address", "", "/organisations/org_post", true},
		{"its brief view", "", "/organisations/org_post?view=brief", true},
		{"a service whose site the public may not see, of an organisation with a postal address", "", "/services/svc_post", true},
		{"the same service to a professional, who sees the site's withheld address as null", professional, "/services/svc_post", true},
		{"a brief service, which carries no address", "", "/services/svc_post?view=brief", false},
		{"a site with a withheld address", "", "/locations/loc_quiet", false},
		{"its brief view", "", "/locations/loc_quiet?view=brief", false},
		{"a service at a site with a withheld address", "", "/services/svc_quiet", false},
		{"an organisation whose only site's address is withheld", "", "/organisations/org_quiet", false},
		{"a site whose address the public may not see", "", "/locations/loc_pro", false},
		{"its brief view", "", "/locations/loc_pro?view=brief", false},
		{"its service", "", "/services/svc_pro", false},
		{"its organisation", "", "/organisations/org_pro", false},
		{"the same site to a professional", professional, "/locations/loc_pro", true},
		{"its brief view to a professional", professional, "/locations/loc_pro?view=brief", true},
		{"its service to a professional", professional, "/services/svc_pro", true},
		{"its organisation to a professional", professional, "/organisations/org_pro", true},
		{"the service list, whose items carry no address", "", "/services", false},
		{"the service list to a professional", professional, "/services", false},
	} {
		t.Run(c.name+" "+c.path, func(t *testing.T) {
			r := s.getAs(t, c.tok, "/v1/d/nz"+c.path)
			if r.status != http.StatusOK {
				t.Fatalf("%d %s", r.status, r.body)
			}
			plain, ext := r.header.Values("X-DIR-Attribution"), r.header.Values("X-DIR-Attribution*")
			if !c.attributed {
				if len(plain)+len(ext) > 0 {
					t.Fatalf("attribution %q %q on an answer without an address: %s", plain, ext, r.body)
				}
				return
			}
			if len(plain) != 1 || len(ext) != 1 {
				t.Fatalf("X-DIR-Attribution %q, X-DIR-Attribution* %q, want one of each: %s", plain, ext, r.body)
			}
			for i := 0; i < len(plain[0]); i++ {
				if b := plain[0][i]; b < 0x20 || b > 0x7E {
					t.Fatalf("X-DIR-Attribution %q has the byte %#x, outside printable ASCII", plain[0], b)
				}
			}
			if got, want := plain[0], ascii; got != want {
				t.Errorf("X-DIR-Attribution = %q, want %q", got, want)
			}
			if got, want := decodeExtValue(t, ext[0]), nzAttribution; got != want {
				t.Errorf("X-DIR-Attribution* decodes to %q, want %q", got, want)
			}
		})
	}
}

// TestAnASCIIAttributionIsSentAsItIs: a text that is printable ASCII already goes in
// X-DIR-Attribution unchanged, without an X-DIR-Attribution* beside it.
func TestAnASCIIAttributionIsSentAsItIs(t *testing.T) {
	s := newTestServer(t, smallFixture(t))
	r := s.get(t, "/v1/d/small/locations/loc_ultimo")
	if got, want := r.header.Get("X-DIR-Attribution"), "Incorporates G-NAF data"; r.status != 200 || got != want {
		t.Fatalf("%d X-DIR-Attribution %q, want %q", r.status, got, want)
	}
	if ext := r.header.Values("X-DIR-Attribution*"); len(ext) != 0 {
		t.Errorf("X-DIR-Attribution* %q beside an ASCII text", ext)
	}
}
