package dirsvc

import (
	"encoding/json"
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
