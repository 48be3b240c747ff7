package dirsvc_test

import (
	"encoding/json"
	"testing"

	"github.com/dirsvc/dirsvc"
)

// TestEncodedCardIsTheCard checks that a card whose fields before its distance and open status were
// kept encoded writes the same JSON as the card written field by field, with and without a
// distance, with strings that JSON escapes, and after those fields change and Encode runs again.
func TestEncodedCardIsTheCard(t *testing.T) {
	code := "gp"
	km := 12.3456789
	card := dirsvc.ResultCard{PublicID: "svc_1", Slug: "a-<b>", Name: "Dr \"Quokka\" & Co\u2028", Organisation: dirsvc.Ref{PublicID: "org_1", Name: "Ünïcode <org>"},
		Location:    &dirsvc.CardLocation{PublicID: "loc_1", Name: "Site", Area: "Ultimo NSW 2007", Address: []string{"1 Harris St"}, Point: &dirsvc.Point{Lat: -33.87, Lon: 151.2}},
		TypeDisplay: "General practice", PlatformTypeDisplay: "General practice", LocalType: &dirsvc.LocalTypeRef{ID: "lt_1", Label: "Women's health"},
		Specialties: []dirsvc.LocalTypeRef{{ID: "lt_2", Label: "Sports & exercise"}}, CategoryCode: &code, CategoryIcon: "briefcase-medical",
		Ownership:         &dirsvc.OwnershipCard{Code: "private", Label: "Private"},
		PractitionerLinks: []dirsvc.PractitionerLink{{PublicID: "prac_1", Name: "Dr A", Title: "GP"}}}
	for _, distance := range []*float64{nil, &km} {
		for _, status := range []dirsvc.OpenStatus{{}, {Status: dirsvc.OpenNow, Detail: "Open until 17:00 <today> & more"}} {
			plain := card
			plain.DistanceKm, plain.OpenStatus = distance, status
			want, err := json.Marshal(plain)
			if err != nil {
				t.Fatal(err)
			}
			kept := card
			if err := kept.Encode(); err != nil {
				t.Fatal(err)
			}
			kept.DistanceKm, kept.OpenStatus = distance, status
			got, err := json.Marshal([]dirsvc.ResultCard{kept})
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != "["+string(want)+"]" {
				t.Errorf("distance %v, status %v:\n%s\nnot\n[%s]", distance, status, got, want)
			}
		}
	}
	// A field changed and encoded again.
	card.Name = "Renamed"
	if err := card.Encode(); err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(card); !json.Valid(got) || !containsName(got, "Renamed") {
		t.Errorf("after Encode again: %s", got)
	}
}

func containsName(b []byte, name string) bool {
	var v struct {
		Name string `json:"name"`
	}
	return json.Unmarshal(b, &v) == nil && v.Name == name
}
