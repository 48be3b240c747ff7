package dirsvc

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestHaversineKnownAnswers checks HaversineKm against distances worked out by hand on a sphere of
// 6371 km (Rosetta Code's haversine task gives the Nashville to Los Angeles one).
func TestHaversineKnownAnswers(t *testing.T) {
	for _, c := range []struct {
		name                   string
		lat1, lon1, lat2, lon2 float64
		want, tolerance        float64
	}{
		{"Nashville BNA to Los Angeles LAX", 36.12, -86.67, 33.94, -118.40, 2886.444442837984, 1e-9},
		{"Sydney GPO to Melbourne GPO", -33.8678, 151.2073, -37.8136, 144.9631, 713.3565303448555, 1e-9},
		{"Auckland to Wellington", -36.8485, 174.7633, -41.2865, 174.7762, 493.48433925002803, 1e-9},
		{"pole to pole", 90, 0, -90, 0, math.Pi * EarthRadiusKm, 1e-9},
		{"a quarter of the equator", 0, 0, 0, 90, math.Pi * EarthRadiusKm / 2, 1e-9},
		{"across the antimeridian", 0, 179.5, 0, -179.5, math.Pi * EarthRadiusKm / 180, 1e-9},
		{"one place", -33.8678, 151.2073, -33.8678, 151.2073, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := HaversineKm(c.lat1, c.lon1, c.lat2, c.lon2)
			if math.Abs(got-c.want) > c.tolerance {
				t.Errorf("HaversineKm = %.9f, want %.9f", got, c.want)
			}
			if back := HaversineKm(c.lat2, c.lon2, c.lat1, c.lon1); back != got {
				t.Errorf("HaversineKm is not symmetric: %v and %v", got, back)
			}
		})
	}
}

// nearestByScan is the nearest locality by reading every one: what the grid must agree with.
func nearestByScan(lat, lon float64) (Locality, float64) {
	best, bestKm := Locality{}, math.Inf(1)
	for _, l := range Localities() {
		if l.Postal() {
			continue
		}
		if d := HaversineKm(lat, lon, l.Lat, l.Lon); d < bestKm {
			best, bestKm = l, d
		}
	}
	return best, bestKm
}

// TestNearestLocalityAgreesWithAScan asks for the nearest locality of random positions in and
// around both countries, and of every locality's own position: the grid finds what reading every
// locality finds (the same distance; a tie may pick either of two places).
func TestNearestLocalityAgreesWithAScan(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	var positions [][2]float64
	for range 1000 {
		positions = append(positions, [2]float64{-56 + rnd.Float64()*48, 95 + rnd.Float64()*85})
	}
	for i, l := range Localities() {
		if i%25 == 0 {
			positions = append(positions, [2]float64{l.Lat + rnd.NormFloat64()*0.05, l.Lon + rnd.NormFloat64()*0.05})
		}
	}
	found := 0
	for _, p := range positions {
		got, gotKm, ok := NearestLocality(p[0], p[1])
		if !ok {
			continue
		}
		found++
		want, wantKm := nearestByScan(p[0], p[1])
		if math.Abs(gotKm-wantKm) > 1e-9 || math.Abs(HaversineKm(p[0], p[1], got.Lat, got.Lon)-gotKm) > 1e-9 {
			t.Fatalf("NearestLocality(%v, %v) = %s %s at %.6f km, want %s %s at %.6f km",
				p[0], p[1], got.Name, got.Postcode, gotKm, want.Name, want.Postcode, wantKm)
		}
	}
	if found < len(positions)/2 {
		t.Errorf("only %d of %d positions had a nearest locality", found, len(positions))
	}
}

func TestNearestLocality(t *testing.T) {
	for _, c := range []struct {
		name        string
		lat, lon    float64
		want        string // name and postcode; "" for none
		maxKm       float64
		wantCountry string
	}{
		{"the Sydney GPO is in Sydney", -33.8678, 151.2073, "SYDNEY 2000", 1, "AU"},
		{"Harris Street, Ultimo", -33.8815, 151.1966, "ULTIMO 2007", 1, "AU"},
		{"Te Papa in Wellington", -41.2905, 174.7821, "", 3, "NZ"},
		{"off Bondi Beach", -33.8915, 151.2900, "", 3, "AU"},
		{"Christmas Island", -10.4475, 105.6904, "", 20, "AU"},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, km, ok := NearestLocality(c.lat, c.lon)
			if !ok || km > c.maxKm || l.Country != c.wantCountry || c.want != "" && l.Name+" "+l.Postcode != c.want {
				t.Errorf("NearestLocality = %s %s %s at %.2f km, ok %v; want %s of %s within %v km",
					l.Name, l.Postcode, l.Country, km, ok, c.want, c.wantCountry, c.maxKm)
			}
		})
	}
	for _, c := range []struct {
		name     string
		lat, lon float64
	}{
		{"London", 51.5074, -0.1278},
		{"Jakarta, north of Australia's extent", -6.2, 106.8},
		{"the middle of the Indian Ocean", -30, 80},
		{"the South Pole", -90, 0},
		{"Chatham Islands, east of the New Zealand list", -43.95, -176.55},
		{"not a number", math.NaN(), 150},
		{"infinity", math.Inf(-1), math.Inf(1)},
	} {
		t.Run(c.name+" has none", func(t *testing.T) {
			if l, km, ok := NearestLocality(c.lat, c.lon); ok {
				t.Errorf("NearestLocality = %s %s at %.1f km, want none", l.Name, l.Country, km)
			}
		})
	}
}

func TestNearestLocalityDoesNotAllocate(t *testing.T) {
	NearestLocality(-33.87, 151.21) // build the gazetteer
	if n := testing.AllocsPerRun(100, func() { NearestLocality(-33.87, 151.21) }); n != 0 {
		t.Errorf("NearestLocality allocates %v times a call", n)
	}
}

// BenchmarkNearestLocality reads the nearest locality of positions in the Sydney basin (the
// densest cells), and, in the same run, by reading every locality: the grid's gain is the ratio.
func BenchmarkNearestLocality(b *testing.B) {
	rnd := rand.New(rand.NewPCG(3, 4))
	pos := make([][2]float64, 1024)
	for i := range pos {
		pos[i] = [2]float64{-33.7 - rnd.Float64()*0.4, 150.8 + rnd.Float64()*0.5}
	}
	NearestLocality(0, 0)
	var grid, scan float64
	b.Run("grid", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			p := pos[i%len(pos)]
			NearestLocality(p[0], p[1])
		}
		grid = float64(b.Elapsed()) / float64(b.N)
	})
	b.Run("scan", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			p := pos[i%len(pos)]
			nearestByScan(p[0], p[1])
		}
		scan = float64(b.Elapsed()) / float64(b.N)
	})
	if grid > 0 {
		b.ReportMetric(scan/grid, "scan/grid")
	}
}

func TestLocalitiesNamed(t *testing.T) {
	for _, c := range []struct {
		query string
		want  []string // name postcode country of each
	}{
		{"Whangarei", []string{"Whangārei 0110 NZ"}},
		{"WHANGĀREI", []string{"Whangārei 0110 NZ"}},
		{"ultimo", []string{"ULTIMO 2007 AU"}},
		{"  St   Kilda ", []string{"ST KILDA 3182 AU", "ST KILDA 4671 AU", "ST KILDA 5110 AU"}},
		{"o’connor", []string{"O'CONNOR 2602 AU", "O’CONNOR 2602 AU", "O'CONNOR 6163 AU", "O’CONNOR 6163 AU"}},
		{"Brisbane City", []string{"BRISBANE CITY 4000 AU", "BRISBANE-CITY 4000 AU"}},
		{"Nowhere Special", nil},
		{"", nil},
	} {
		t.Run(c.query, func(t *testing.T) {
			var got []string
			for _, l := range LocalitiesNamed(c.query) {
				got = append(got, l.Name+" "+l.Postcode+" "+l.Country)
			}
			slices.Sort(got)
			slices.Sort(c.want)
			if !slices.Equal(got, c.want) {
				t.Errorf("LocalitiesNamed(%q) = %q, want %q", c.query, got, c.want)
			}
		})
	}
}

func TestLocalitiesWithPostcode(t *testing.T) {
	var names []string
	for _, l := range LocalitiesWithPostcode("2007") {
		names = append(names, l.Name+" "+l.State)
	}
	if want := []string{"BROADWAY NSW", "ULTIMO NSW"}; !slices.Equal(names, want) {
		t.Errorf("LocalitiesWithPostcode(2007) = %q, want %q", names, want)
	}
	// Australian and New Zealand postcodes overlap.
	names = nil
	for _, l := range LocalitiesWithPostcode("6011") {
		names = append(names, l.Name+" "+l.Country)
	}
	if want := []string{"COTTESLOE AU", "PEPPERMINT GROVE AU", "Te Aro NZ"}; !slices.Equal(names, want) {
		t.Errorf("LocalitiesWithPostcode(6011) = %q, want %q", names, want)
	}
	for _, pc := range []string{"", "20", "abcd", "0001"} {
		if got := LocalitiesWithPostcode(pc); got != nil {
			t.Errorf("LocalitiesWithPostcode(%q) = %d localities, want none", pc, len(got))
		}
	}
	// The answer is the caller's: changing it changes nothing of the gazetteer's.
	got := LocalitiesWithPostcode("2000")
	got[0].Name = "CHANGED"
	if LocalitiesWithPostcode("2000")[0].Name == "CHANGED" {
		t.Error("LocalitiesWithPostcode shares its answer with the gazetteer")
	}
}

func TestDisplayName(t *testing.T) {
	for name, want := range map[string]string{
		"ULTIMO":                         "Ultimo",
		"ST KILDA":                       "St Kilda",
		"MCMAHONS POINT":                 "McMahons Point",
		"O'CONNOR":                       "O'Connor",
		"O’SULLIVAN BEACH":               "O’Sullivan Beach",
		"D'AGUILAR":                      "D'Aguilar",
		"ISLE OF CAPRI":                  "Isle of Capri",
		"BRIGHTON-LE-SANDS":              "Brighton-Le-Sands",
		"ERNABELLA (PUKATJA)":            "Ernabella (Pukatja)",
		"NO. 4 BRANCH":                   "No. 4 Branch",
		"Australian National University": "Australian National University",
	} {
		if got := (Locality{Name: name, Country: "AU"}).DisplayName(); got != want {
			t.Errorf("DisplayName of %q = %q, want %q", name, got, want)
		}
	}
	if got := (Locality{Name: "Whangārei", Country: "NZ"}).DisplayName(); got != "Whangārei" {
		t.Errorf("DisplayName of Whangārei = %q", got)
	}
}

func TestAreas(t *testing.T) {
	syd := LocalitiesNamed("Sydney")
	i := slices.IndexFunc(syd, func(l Locality) bool { return l.Postcode == "2000" })
	if i < 0 {
		t.Fatal("no SYDNEY 2000")
	}
	want := []string{"postcode:2000", "sa:117031645", "lga:17200", "phn:PHN101", "state:nsw", "country:au"}
	if got := syd[i].Areas(); !slices.Equal(got, want) {
		t.Errorf("Areas of SYDNEY 2000 = %q, want %q", got, want)
	}
	wh := LocalitiesNamed("Whangarei")[0]
	want = []string{"postcode:0110", "ta:whangarei-district", "region:northland", "country:nz"}
	if got := wh.Areas(); !slices.Equal(got, want) {
		t.Errorf("Areas of Whangārei = %q, want %q", got, want)
	}
	for _, l := range Localities() {
		for _, a := range l.Areas() {
			if !ValidArea(a) {
				t.Fatalf("%s %s: area %q is not valid", l.Name, l.Postcode, a)
			}
		}
	}
	// A locality without statistical areas (a PO box postcode) has only what it has.
	if got := (Locality{Postcode: "2001", State: "NSW", Country: "AU"}).Areas(); !slices.Equal(got, []string{"postcode:2001", "state:nsw", "country:au"}) {
		t.Errorf("Areas without SA2, LGA and PHN = %q", got)
	}
}

func TestSlugify(t *testing.T) {
	for in, want := range map[string]string{
		"Whangārei District":  "whangarei-district",
		"Women's health":      "womens-health",
		"O’Sullivan Beach":    "osullivan-beach",
		"  Brisbane -- City ": "brisbane-city",
		"Ōtāhuhu / Māngere":   "otahuhu-mangere",
		"":                    "",
	} {
		if got := Slugify(in); got != want {
			t.Errorf("Slugify(%q) = %q, want %q", in, got, want)
		}
	}
}
