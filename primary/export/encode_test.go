package export

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"testing/quick"

	"github.com/dirsvc/dirsvc"
)

// awkwardTexts are texts that encoding/json and encoding/csv write in some special way.
var awkwardTexts = []string{
	"", "plain", `quote " and backslash \`, "<b>Tom & Jerry</b>", "line\nbreak\r\n", "tab\tand\bbell\f\x00\x1f\x7f",
	"\u2028 and \u2029", "invalid \xff\xfe utf-8", "é, 中文, 🙂", " leading space", "\tleading tab", `\.`, "a,b",
	"\u00a0no-break space first", "trailing space ",
}

// TestJSONWritersAgreeWithEncodingJSON checks the hand-written JSON of the HSDS objects against
// encoding/json: strings, numbers and each object, with every member filled or empty.
func TestJSONWritersAgreeWithEncodingJSON(t *testing.T) {
	checkString := func(s string) bool {
		want, _ := json.Marshal(s)
		return bytes.Equal(dirsvc.AppendJSONString(nil, s), want)
	}
	for _, s := range awkwardTexts {
		if !checkString(s) {
			t.Errorf("%q: %s, encoding/json %s", s, dirsvc.AppendJSONString(nil, s), must(json.Marshal(s)))
		}
	}
	if err := quick.Check(checkString, &quick.Config{MaxCount: 20000}); err != nil {
		t.Error(err)
	}
	checkFloat := func(f float64) bool {
		want, _ := json.Marshal(f)
		got, err := dirsvc.AppendJSONFloat(nil, f)
		return err == nil && bytes.Equal(got, want)
	}
	for _, f := range []float64{0, -0.0, 1, -1, 151.2093, -33.8688, 1e-6, 9.99e-7, 1e-7, 1e20, 1e21, 123456789e15, math.MaxFloat64, math.SmallestNonzeroFloat64} {
		if !checkFloat(f) {
			got, _ := dirsvc.AppendJSONFloat(nil, f)
			t.Errorf("%v: %s, encoding/json %s", f, got, must(json.Marshal(f)))
		}
	}
	if err := quick.Check(checkFloat, &quick.Config{MaxCount: 20000}); err != nil {
		t.Error(err)
	}
	if _, err := dirsvc.AppendJSONFloat(nil, math.NaN()); err == nil {
		t.Error("NaN written")
	}
	lat, lon := -33.8688, 151.2093
	for i, s := range awkwardTexts {
		o := awkwardTexts[(i+1)%len(awkwardTexts)]
		phones := []hsdsPhone{{ID: s, Number: o, Type: s, Description: o}, {ID: o, Number: s}}
		if i%2 == 1 {
			phones = nil
		}
		objects := []interface{ appendJSON([]byte) ([]byte, error) }{
			&hsdsOrganization{ID: s, Name: o, Description: s, Email: o, Website: s, Logo: o, Phones: phones},
			&hsdsOrganization{ID: s},
			&hsdsLocation{ID: s, LocationType: o, OrganizationID: s, Name: o, Description: s, Latitude: &lat, Longitude: &lon,
				Addresses: []hsdsAddress{{ID: s, LocationID: o, Address1: s, Address2: o, City: s, StateProvince: o, PostalCode: s,
					Country: o, AddressType: s}}, Phones: phones},
			&hsdsLocation{ID: o, Addresses: []hsdsAddress{{}}},
			&hsdsService{ID: s, OrganizationID: o, Name: s, Description: o, URL: s, Email: o, Status: s, LastModified: o, Phones: phones},
			&hsdsService{},
			&hsdsServiceAtLocation{ID: s, ServiceID: o, LocationID: s},
		}
		for _, v := range objects {
			got, err := v.appendJSON(nil)
			want, _ := json.Marshal(v)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%T: %s (%v)\nencoding/json %s", v, got, err, want)
			}
		}
	}
}

// TestCSVFieldsAgreeWithEncodingCSV checks the hand-written CSV rows against encoding/csv.
func TestCSVFieldsAgreeWithEncodingCSV(t *testing.T) {
	row := func(fields []string) bool {
		var want bytes.Buffer
		w := csv.NewWriter(&want)
		w.Write(fields)
		w.Flush()
		var got []byte
		for i, f := range fields {
			if i > 0 {
				got = append(got, ',')
			}
			got = appendCSVField(got, []byte(f))
		}
		got = append(got, '\n')
		return bytes.Equal(got, want.Bytes())
	}
	if !row(awkwardTexts) {
		t.Errorf("the awkward texts are written otherwise than by encoding/csv")
	}
	for _, f := range awkwardTexts {
		if !row([]string{f}) || !row([]string{f, f}) {
			t.Errorf("%q is written otherwise than by encoding/csv", f)
		}
	}
	if err := quick.Check(row, &quick.Config{MaxCount: 20000}); err != nil {
		t.Error(err)
	}
	if got := string(csvColumnsOf["service"].header); !strings.HasPrefix(got, "publicId,") || !strings.HasSuffix(got, ",ownershipType,ownershipSource\n") {
		t.Errorf("services header %q", got)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
