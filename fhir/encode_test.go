package fhir

import (
	"bytes"
	"encoding/json"
	"math/rand"
	"reflect"
	"testing"
	"testing/quick"
	"time"
)

// awkwardTexts are texts encoding/json writes in some special way.
var awkwardTexts = []string{
	"", "plain", `quote " and backslash \`, "<b>Tom & Jerry</b>", "line\nbreak\r\n", "tab\tand\bbell\f\x00\x1f\x7f",
	"\u2028 and \u2029", "invalid \xff\xfe utf-8", "é, 中文, 🙂",
}

// TestResourceJSONAgreesWithEncodingJSON checks the hand-written JSON of every resource type against
// encoding/json, on random values of each (every member filled, empty or nil in turn, texts
// random and awkward).
func TestResourceJSONAgreesWithEncodingJSON(t *testing.T) {
	check := func(v jsonAppender) bool {
		got, err := v.appendJSON(nil)
		want, werr := json.Marshal(v)
		if err != nil || werr != nil || !bytes.Equal(got, want) {
			t.Errorf("%T:\n%s (%v)\nencoding/json:\n%s (%v)", v, got, err, want, werr)
			return false
		}
		return true
	}
	rnd := rand.New(rand.NewSource(1))
	// values fills v at random, then makes some of its texts awkward and some members empty.
	values := func(v any) {
		rv := reflect.ValueOf(v).Elem()
		x, ok := quick.Value(rv.Type(), rnd)
		if !ok {
			t.Fatalf("no random %T", v)
		}
		rv.Set(x)
		var walk func(reflect.Value)
		walk = func(f reflect.Value) {
			switch f.Kind() {
			case reflect.String:
				if rnd.Intn(3) == 0 {
					f.SetString(awkwardTexts[rnd.Intn(len(awkwardTexts))])
				}
			case reflect.Pointer:
				if !f.IsNil() && rnd.Intn(4) == 0 {
					f.SetZero()
				} else if !f.IsNil() {
					walk(f.Elem())
				}
			case reflect.Slice:
				switch {
				case !f.IsNil() && rnd.Intn(4) == 0:
					f.SetZero()
				case f.IsNil() && rnd.Intn(4) == 0:
					f.Set(reflect.MakeSlice(f.Type(), 0, 0))
				default:
					for i := range f.Len() {
						walk(f.Index(i))
					}
				}
			case reflect.Struct:
				for i := range f.NumField() {
					walk(f.Field(i))
				}
			case reflect.Bool:
				f.SetBool(rnd.Intn(2) == 0)
			case reflect.Int:
				if rnd.Intn(2) == 0 {
					f.SetInt(0)
				}
			}
		}
		walk(rv)
	}
	for range 3000 {
		for _, v := range []jsonAppender{&Organization{}, &Location{}, &HealthcareService{}, &Practitioner{},
			&PractitionerRole{}, &Endpoint{}} {
			values(v)
			if !check(v) {
				return
			}
		}
	}
	for _, v := range []jsonAppender{&Organization{}, &Location{Position: &Position{}}, &HealthcareService{},
		&Practitioner{}, &PractitionerRole{}, &Endpoint{}} {
		check(v)
	}
}

// TestInstantsAreFormatsInstants writes times of every part's range (years of one to four digits
// and past them, every millisecond's digits, zones other than UTC) as FHIR instants: the text must
// be Format's with the instant layout, in UTC.
func TestInstantsAreFormatsInstants(t *testing.T) {
	rnd := rand.New(rand.NewSource(1))
	zones := []*time.Location{time.UTC, time.FixedZone("AEST", 10*3600), time.FixedZone("west", -9*3600-30*60)}
	times := []time.Time{{}, time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(7, 2, 3, 4, 5, 6, 7_000_000, time.UTC), time.Date(2026, 11, 24, 5, 47, 0, 1, time.UTC)}
	for range 20000 {
		times = append(times, time.Unix(rnd.Int63n(400*365*86400)-100*365*86400, rnd.Int63n(1e9)).In(zones[rnd.Intn(len(zones))]))
	}
	for _, tm := range times {
		if got, want := instant(tm), tm.UTC().Format("2006-01-02T15:04:05.000Z07:00"); got != want {
			t.Fatalf("%v: %s, want %s", tm, got, want)
		}
	}
}
