package fhir_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/dirsvc/dirsvc/fhir"
)

// TestValuesKeepEachParametersValues packs values of several parameters (some empty, some long
// enough to need a two-byte length, some holding the bytes a separator would use) and reads each
// back, in order, with none of another parameter's.
func TestValuesKeepEachParametersValues(t *testing.T) {
	long := strings.Repeat("x", 300)
	m := map[string][]string{
		"name":       {"Acme Clinic", "", "a\x00b\x01c"},
		"identifier": {"urn:x|1"},
		"address":    {long, "Sydney"},
		"specialty":  nil,
		"zz":         {"last"},
	}
	v := fhir.PackValues(m)
	for name, want := range m {
		if got := v.Get(name); !slices.Equal(got, want) {
			t.Errorf("Get(%q) = %q, want %q", name, got, want)
		}
		if got, want := v.Has(name), len(want) > 0; got != want {
			t.Errorf("Has(%q) = %v, want %v", name, got, want)
		}
	}
	for _, name := range []string{"", "a", "nam", "names", "zzz"} {
		if v.Has(name) || v.Get(name) != nil {
			t.Errorf("%q has values %q", name, v.Get(name))
		}
	}
	if !v.Contains("address", "Sydney") || v.Contains("address", "Melbourne") || v.Contains("name", "Sydney") {
		t.Errorf("Contains answers wrongly on %s", v)
	}
	if fhir.PackValues(nil) != "" || fhir.Values("").Has("name") {
		t.Error("empty values are not empty")
	}
	// A value cut short reads as no more values, never past the end.
	cut := v[:len(v)-2]
	if got := cut.Get("zz"); len(got) != 0 {
		t.Errorf("a cut value read as %q", got)
	}
}
