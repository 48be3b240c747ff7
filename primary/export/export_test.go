package export

import (
	"encoding/json"
	"reflect"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/fhir"
)

func testService(t *testing.T) *Service {
	t.Helper()
	s, err := New(Config{Data: t.TempDir(), Catalog: nil, LinkKey: make([]byte, 32), BaseURL: "https://directory.test"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestLinksVerifyOnlyAsSigned checks the signature of download links: valid as made until its
// expiry, void with any of its parts changed.
func TestLinksVerifyOnlyAsSigned(t *testing.T) {
	s := testService(t)
	now := time.Unix(1_800_000_000, 0)
	const id, other = "0b7a3c1e-5d2f-4a8b-9c6d-1e2f3a4b5c6d", "1b7a3c1e-5d2f-4a8b-9c6d-1e2f3a4b5c6d"
	exp := now.Unix() + 60
	sig := s.sign(id, "services.csv", exp)
	for _, c := range []struct {
		name                   string
		id, file, expires, sig string
		at                     time.Time
		wantValid, wantCurrent bool
	}{
		{"as made", id, "services.csv", "1800000060", sig, now, true, true},
		{"at its expiry", id, "services.csv", "1800000060", sig, now.Add(time.Minute), true, true},
		{"after its expiry", id, "services.csv", "1800000060", sig, now.Add(time.Minute + time.Second), true, false},
		{"another file", id, "locations.csv", "1800000060", sig, now, false, false},
		{"another export", other, "services.csv", "1800000060", sig, now, false, false},
		{"a later expiry", id, "services.csv", "1800000061", sig, now, false, false},
		{"the expiry written otherwise", id, "services.csv", "01800000060", sig, now, false, false},
		{"no signature", id, "services.csv", "1800000060", "", now, false, false},
		{"a signature not base64", id, "services.csv", "1800000060", "!!", now, false, false},
	} {
		valid, current := s.verify(c.id, c.file, c.expires, c.sig, c.at)
		if valid != c.wantValid || current != c.wantCurrent {
			t.Errorf("%s: valid %v current %v, want %v %v", c.name, valid, current, c.wantValid, c.wantCurrent)
		}
	}
	other2 := testService(t)
	other2.cfg.LinkKey = append(make([]byte, 31), 1)
	if valid, _ := other2.verify(id, "services.csv", "1800000060", sig, now); valid {
		t.Errorf("a link verifies under another key")
	}
}

// TestServicesCSVEndsWithOwnership checks the columns of the CSV files: the view's fields, the
// ownership columns last where the view has them.
func TestServicesCSVEndsWithOwnership(t *testing.T) {
	for _, k := range dirsvc.ExportKinds {
		cols := CSVColumns(k)
		if cols[0] != "publicId" {
			t.Errorf("%s: first column %s", k, cols[0])
		}
		if k != dirsvc.KindPractitioner && k != dirsvc.KindRole && !slices.Equal(cols[len(cols)-2:], []string{"ownershipType", "ownershipSource"}) {
			t.Errorf("%s: columns end %v", k, cols[len(cols)-2:])
		}
	}
}

// TestHSDSIDsAreStableUUIDs checks the HSDS identifiers: name-based UUIDs, the same for the same
// record, different for different ones.
func TestHSDSIDsAreStableUUIDs(t *testing.T) {
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	a, b := HSDSID("svc_a"), HSDSID("svc_b")
	if !uuid.MatchString(a) || a != HSDSID("svc_a") || a == b {
		t.Errorf("HSDSID: %s, %s", a, b)
	}
}

// TestHSDSReadsWholeViewsFromTheFHIRDecoding: an export of FHIR and HSDS decodes each view once, as
// the FHIR mapper decodes it (which leaves out members its mapping does not read), and the HSDS
// objects are made from that view: it must hold every member they read.
func TestHSDSReadsWholeViewsFromTheFHIRDecoding(t *testing.T) {
	all := hsdsView{PublicID: "x_1", LastUpdated: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Name: "Name",
		Description: "Description", Website: "https://w.example", Logo: "https://w.example/logo.png",
		Contacts:     []dirsvc.ContactView{{Kind: dirsvc.ContactPhone, Value: "+61212345678", Label: "Office"}},
		Organisation: dirsvc.Ref{PublicID: "org_1", Name: "Org"}, Location: &dirsvc.Ref{PublicID: "loc_1", Name: "Loc"},
		Point:   &dirsvc.Point{Lat: -33.8, Lon: 151.2},
		Address: &dirsvc.AddressView{Lines: []string{"1 Main St"}, Locality: "Town", State: "NSW", Postcode: "2000", Country: "AU"}}
	body, err := json.Marshal(all)
	if err != nil {
		t.Fatal(err)
	}
	m := &fhir.Mapper{Country: "AU", BodiesOnly: true}
	for _, kind := range []dirsvc.Kind{dirsvc.KindOrganisation, dirsvc.KindLocation, dirsvc.KindService} {
		shared := &record{kind: kind, body: body}
		if _, err := shared.decoded(m); err != nil {
			t.Fatal(err)
		}
		got, err := shared.hsdsView()
		if err != nil {
			t.Fatal(err)
		}
		// A kind's view has only some of the members: compare with what the whole view gives.
		full, err := fhir.DecodeView(kind, body)
		if err != nil {
			t.Fatal(err)
		}
		want, err := (&record{kind: kind, body: body, view: full}).hsdsView()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: HSDS reads\n%+v\nfrom the FHIR decoding, and\n%+v\nfrom the whole view", kind, got, want)
		}
	}
}
