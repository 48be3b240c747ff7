package dirsvc

// A JurisdictionPack is what the service knows of one country's places, numbers, holidays and
// health standards, which a directory of that country is published with: the area scheme its records'
// areas and partners' narrowings use, the region its phone numbers are read in, the public holidays
// its opening hours observe, and the FHIR implementation guide its resources claim. A directory's
// federation manifest names its packs, so an aggregate knows what its codes mean.
type JurisdictionPack struct {
	// ID is the pack's identifier: the country code in lower case.
	ID      string `json:"id"`
	Name    string `json:"name"`
	Country string `json:"country"`
	// AreaTypes are the area types of the country's scheme, most specific first (area IDs are
	// type:code; see Locality.Areas).
	AreaTypes []string `json:"areaTypes"`
	// PhoneRegion is the region phone numbers written without a country code are read in.
	PhoneRegion string `json:"phoneRegion"`
	// Holidays names the public holidays opening hours observe.
	Holidays string `json:"holidays"`
	// FHIRImplementationGuide is the package (name#version) whose profiles the directory's FHIR
	// resources claim; empty when they claim none beyond FHIR R4.
	FHIRImplementationGuide string `json:"fhirImplementationGuide,omitempty"`
}

var jurisdictionPacks = map[string]JurisdictionPack{
	"AU": {ID: "au", Name: "Australia", Country: "AU",
		AreaTypes:   []string{"postcode", AreaSA2, "lga", "phn", "state", "country"},
		PhoneRegion: "AU", Holidays: "Australian national, state and territory public holidays",
		FHIRImplementationGuide: "hl7.fhir.au.base#6.0.0"},
	"NZ": {ID: "nz", Name: "Aotearoa New Zealand", Country: "NZ",
		AreaTypes:   []string{"postcode", "ta", "region", "country"},
		PhoneRegion: "NZ", Holidays: "New Zealand public holidays"},
}

// JurisdictionPacks returns the packs a directory of country (ISO 3166-1 alpha-2) is published with:
// none for a country the service has no pack for (its records are still served, with the areas
// their import gave them).
func JurisdictionPacks(country string) []JurisdictionPack {
	if p, ok := jurisdictionPacks[country]; ok {
		return []JurisdictionPack{p}
	}
	return []JurisdictionPack{}
}
