package federation_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dirsvc/dirsvc"
)

// TestForwardingLeaksNothing forwards a proposal and an issue on every record of the small directory
// (and on missing ones) as a client of each tier and of a narrowing: each is taken exactly when the
// client reads the record live (200), and answers the bytes of a missing record otherwise; no answer,
// headers included, holds a canary.
func TestForwardingLeaksNothing(t *testing.T) {
	s := newFedService(t)
	f, err := os.Open(filepath.Join("..", "..", "testdata", "small.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ids := []string{"svc_missing", "loc_missing", "org_missing", "role_missing", "prac_missing"}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec struct{ PublicID string }
		if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.PublicID != "" {
			ids = append(ids, rec.PublicID)
		}
	}
	paths := map[dirsvc.Kind]string{dirsvc.KindService: "services", dirsvc.KindLocation: "locations", dirsvc.KindOrganisation: "organisations",
		dirsvc.KindPractitioner: "practitioners", dirsvc.KindRole: "roles"}
	missing := send(t, s.anonymous(t), "GET", s.URL+"/v1/d/small/services/svc_nothing", nil)
	clients := map[string]*http.Client{"public": s.aggregator(t, dirsvc.Public), "professional": s.aggregator(t, dirsvc.Professional),
		"partner": s.aggregator(t, dirsvc.Partner)}
	clients["narrowed"], _ = s.client(t, dirsvc.Grant{Tier: dirsvc.Partner, Scopes: []string{dirsvc.ScopeFederationHarvest, dirsvc.ScopeGraphRead},
		Narrowing: dirsvc.Narrowing{Areas: []string{"postcode:2250"}}})
	taken := 0
	for name, c := range clients {
		for _, id := range ids {
			read := send(t, c, "GET", s.URL+"/v1/d/small/"+paths[dirsvc.KindOfID(id)]+"/"+id, nil)
			for _, a := range []answer{
				send(t, c, "POST", s.proposals(), map[string]any{"publicId": id, "message": "Please check."}),
				send(t, c, "POST", s.issues(), map[string]any{"publicId": id, "category": "incorrect"}),
			} {
				var head strings.Builder
				for k, vs := range a.header {
					head.WriteString(k + ": " + strings.Join(vs, ",") + "\n")
				}
				if bytes.Contains(a.body, []byte("canary-")) || strings.Contains(head.String(), "canary-") {
					t.Errorf("%s, %s: a canary in the answer: %s", name, id, a.body)
				}
				switch {
				case read.status == 200 && a.status == 201:
					taken++
				case read.status != 200 && a.status == 404 && bytes.Equal(a.body, missing.body):
				default:
					t.Errorf("%s, %s: read %d, forwarded %d %s", name, id, read.status, a.status, a.body)
				}
			}
		}
	}
	if taken == 0 {
		t.Fatal("nothing was taken: the scan proves nothing")
	}
}
