package dirsvc

import (
	"encoding/json"
	"math/rand"
	"strings"
	"testing"
)

// TestACardAppendedIsTheCardEncoded encodes cards of every shape (with and without a site, address,
// local type, specialties, ownership, practitioners; with and without a distance; every open state)
// by their kept prefix and by encoding/json: the bytes must be the same.
func TestACardAppendedIsTheCardEncoded(t *testing.T) {
	code := "gp"
	cards := []ResultCard{
		{PublicID: "svc_a", Slug: "a", Name: "A <&> \"quoted\" ĉlinic", Organisation: Ref{PublicID: "org_a", Name: "Org"},
			TypeDisplay: "General practice", PlatformTypeDisplay: "General practice", CategoryIcon: DefaultIcon, PractitionerLinks: []PractitionerLink{}},
		{PublicID: "svc_b", Slug: "b", Name: "B", Organisation: Ref{PublicID: "org_b"},
			Location:  &CardLocation{PublicID: "loc_b", Name: "Site", Area: "Ultimo NSW 2007", Address: []string{"1 Main St", "Ultimo NSW 2007"}, Point: &Point{Lat: -33.87, Lon: 151.2}},
			LocalType: &LocalTypeRef{ID: "x", Slug: "x", Label: "X", Icon: "i"}, Specialties: []LocalTypeRef{{ID: "y", Label: "Y"}},
			CategoryCode: &code, CategoryIcon: "stethoscope", Ownership: &OwnershipCard{Code: "c", Label: "Community", Source: "s"},
			PractitionerLinks: []PractitionerLink{{PublicID: "prac_a", Name: "Dr A", Title: "GP"}}},
		{PublicID: "svc_c", Slug: "c", Name: "C", Location: &CardLocation{PublicID: "loc_c", Name: "Withheld", AddressWithheld: true}, PractitionerLinks: []PractitionerLink{}},
	}
	distances := []*float64{nil, ptr(0), ptr(12.34), ptr(0.01), ptr(1234.5), ptr(1e-7)}
	statuses := []OpenStatus{{}, {Status: OpenNow, Detail: "Open until 17:00"}, {Status: ClosedNow, Detail: "Opens Monday at 08:30"},
		{Status: OpenUnknown, Detail: "Hours not listed"}}
	for _, c := range cards {
		prefix, err := CardPrefix(&c)
		if err != nil || prefix == nil {
			t.Fatalf("no prefix for %s: %v", c.PublicID, err)
		}
		for _, d := range distances {
			for _, st := range statuses {
				whole := c
				whole.DistanceKm, whole.OpenStatus = d, st
				want, _ := json.Marshal(whole)
				got, err := AppendCard([]byte("x"), prefix, d, st)
				if err != nil || string(got[1:]) != string(want) {
					t.Errorf("%s at %v, %+v:\n got %s\nwant %s", c.PublicID, d, st, got[1:], want)
				}
			}
		}
		c.OpenStatus = OpenStatus{Status: OpenNow}
		if p, _ := CardPrefix(&c); p != nil {
			t.Errorf("a card with an open status was given a prefix")
		}
	}
}

func ptr(f float64) *float64 { return &f }

// TestStringsAppendedAreTheStringsEncoded appends strings with every byte value at every place of
// their first words (the one byte to escape or not, or a piece of a character of several bytes,
// valid or not), characters of several bytes at every place, and strings of random bytes and
// characters: the bytes must be encoding/json's.
func TestStringsAppendedAreTheStringsEncoded(t *testing.T) {
	check := func(s string) {
		t.Helper()
		want, _ := json.Marshal(s)
		if got := AppendJSONString([]byte("x"), s); string(got[1:]) != string(want) {
			t.Fatalf("%q:\n got %s\nwant %s", s, got[1:], want)
		}
	}
	base := "abcdefghijklmnopqrstuvwxyz0123"
	for n := 0; n <= len(base); n++ {
		for at := 0; at < n; at++ {
			for b := range 256 {
				check(base[:at] + string([]byte{byte(b)}) + base[at+1:n])
			}
			for _, c := range []string{"é", "€", "😀", "\u2028", "\u2029", "\xe2\x80", "\xff\xfe"} {
				check(base[:at] + c + base[at:n])
			}
		}
	}
	rnd := rand.New(rand.NewSource(1))
	alphabet := []string{"a", "Z", " ", "/", ":", "\"", "\\", "<", ">", "&", "\n", "\t", "\x01", "\x7f", "é", "\u2028", "\xc3", "😀"}
	for range 20000 {
		var s strings.Builder
		for range rnd.Intn(40) {
			if rnd.Intn(4) == 0 {
				s.WriteString(alphabet[rnd.Intn(len(alphabet))])
			} else {
				s.WriteByte(byte('a' + rnd.Intn(26)))
			}
		}
		check(s.String())
	}
}

// BenchmarkAppendJSONString appends strings such as the FHIR export writes most: system URLs,
// codes, names, addresses, times.
func BenchmarkAppendJSONString(b *testing.B) {
	strs := []string{"http://terminology.hl7.org/CodeSystem/service-category", "gp", "Harbour Community Health Centre",
		"12 Example Street, Ultimo NSW 2007", "2026-01-31T09:00:00.000Z", "Mon–Fri, by appointment", "active"}
	buf := make([]byte, 0, 256)
	for b.Loop() {
		for _, s := range strs {
			buf = AppendJSONString(buf[:0], s)
		}
	}
}
