package edge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/primary/demo"
)

// addressSets are the audiences an address of the address fixture is restricted to, by site: every
// subset of the served tiers but the whole set, which is the site loc_all.
var addressSets = map[string][]string{
	"loc_staff":  {"staff"},
	"loc_pub":    {"public"},
	"loc_pro":    {"professional"},
	"loc_par":    {"partner"},
	"loc_pubpro": {"public", "professional"},
	"loc_pubpar": {"public", "partner"},
	"loc_propar": {"professional", "partner"},
}

// addressFixture is a directory whose sites' addresses (each with a point whose latitude names the
// site) and whose organisation's postal address are restricted by their audiences alone, not
// withheld; each line carries the canary of who may see it.
func addressFixture() []byte {
	var b strings.Builder
	b.WriteString(`{"kind":"directory","slug":"addr","name":"Address Test","country":"AU","timeZone":"Australia/Sydney","licence":"CC BY 4.0","attribution":"Incorporates G-NAF data","settings":{"seniorManagement":true}}` + "\n")
	b.WriteString(`{"kind":"platformType","code":"gp","label":"General practice"}` + "\n")
	b.WriteString(`{"kind":"organisation","publicId":"org_a","name":"Address Health","postalAddress":{"lines":["PO Box 7 canary-professional-x"],"locality":"Ultimo","state":"NSW","postcode":"2007","audiences":["professional"]}}` + "\n")
	b.WriteString(`{"kind":"organisation","publicId":"org_b","name":"Address Partners","postalAddress":{"lines":["PO Box 8 canary-public.partner-x"],"locality":"Glebe","state":"NSW","postcode":"2037","audiences":["public","partner"]}}` + "\n")
	sites := append(sortedSites(), "loc_all")
	for i, id := range sites {
		aud, marker := "", ""
		if set, ok := addressSets[id]; ok {
			aud = fmt.Sprintf(`,"audiences":["%s"]`, strings.Join(set, `","`))
			marker = " canary-" + strings.Join(set, ".") + "-x"
		}
		fmt.Fprintf(&b, `{"kind":"location","publicId":"%s","organisation":"org_a","name":"Site %d","address":{"lines":["%d Harris St%s"],"locality":"Ultimo","state":"NSW","postcode":"2007","point":{"lat":-33.8%d4321,"lon":151.2}%s},"areas":["postcode:2007","state:nsw"]}`+"\n",
			id, i, i+1, marker, i, aud)
		fmt.Fprintf(&b, `{"kind":"service","publicId":"svc_%s","organisation":"org_a","location":"%s","name":"Clinic %d","type":"gp"}`+"\n",
			strings.TrimPrefix(id, "loc_"), id, i)
	}
	return []byte(b.String())
}

func sortedSites() []string {
	return []string{"loc_staff", "loc_pub", "loc_pro", "loc_par", "loc_pubpro", "loc_pubpar", "loc_propar"}
}

// TestAddressAudiencesHoldWithoutWithheld reads every site, service and organisation of the address
// fixture as every tier, in every representation, and the service list: an address (with its point)
// and a postal address restricted by their audiences alone reach exactly the tiers they name; the
// others see the area only, as for a withheld address, and no canary, header or latitude of it.
func TestAddressAudiencesHoldWithoutWithheld(t *testing.T) {
	s := newTestServer(t, addressFixture())
	callers := []caller{
		{"anonymous", "", dirsvc.Public},
		{"public client", token(t, grant{dir: "addr", tier: dirsvc.Public, scopes: "graph:read"}), dirsvc.Public},
		{"professional", token(t, grant{dir: "addr", tier: dirsvc.Professional, scopes: "graph:read"}), dirsvc.Professional},
		{"partner", token(t, grant{dir: "addr", tier: dirsvc.Partner, scopes: "graph:read"}), dirsvc.Partner},
	}
	for _, c := range callers {
		t.Run(c.name, func(t *testing.T) {
			read := func(path string) response {
				r := s.getAs(t, c.tok, "/v1/d/addr"+path)
				if r.status != http.StatusOK {
					t.Fatalf("GET %s: %d %s", path, r.status, r.body)
				}
				var head strings.Builder
				for k, vs := range r.header {
					head.WriteString(k + ": " + strings.Join(vs, " ") + "\n")
				}
				if leaks := demo.Leaks(append([]byte(head.String()), r.body...), c.aud); len(leaks) > 0 {
					t.Errorf("GET %s leaks %v to %s", path, leaks, c.name)
				}
				return r
			}
			for i, id := range append(sortedSites(), "loc_all") {
				may := true
				if set, ok := addressSets[id]; ok {
					may = false
					for _, n := range set {
						may = may || n == c.aud.String()
					}
				}
				lat := fmt.Sprintf("-33.8%d4321", i)
				for _, q := range []string{"", "?view=brief"} {
					r := read("/locations/" + id + q)
					v := r.json(t)
					if shown := v["address"] != nil; shown != may {
						t.Errorf("%s%s: address shown %v to %s, want %v: %s", id, q, shown, c.name, may, r.body)
					}
					if shown := v["point"] != nil; shown != may || strings.Contains(string(r.body), lat) != may {
						t.Errorf("%s%s: point shown %v to %s, want %v", id, q, shown, c.name, may)
					}
					if v["addressWithheld"] != !may || v["area"] != "Ultimo NSW 2007" {
						t.Errorf("%s%s: addressWithheld %v, area %v for %s", id, q, v["addressWithheld"], v["area"], c.name)
					}
				}
				if r := read("/services/svc_" + strings.TrimPrefix(id, "loc_")); strings.Contains(string(r.body), lat) != may {
					t.Errorf("service page of %s: point shown to %s: %v, want %v", id, c.name, !may, may)
				}
				if r := read("/organisations/org_a"); strings.Contains(string(r.body), lat) != may {
					t.Errorf("organisation page, site %s: point shown to %s: %v, want %v", id, c.name, !may, may)
				}
			}
			for org, set := range map[string][]string{"org_a": {"professional"}, "org_b": {"public", "partner"}} {
				may := strings.Contains(strings.Join(set, " "), c.aud.String())
				for _, q := range []string{"", "?view=brief"} {
					r := read("/organisations/" + org + q)
					if shown := r.json(t)["postalAddress"] != nil; shown != may {
						t.Errorf("%s%s: postal address shown %v to %s, want %v", org, q, shown, c.name, may)
					}
					if q == "?view=brief" && (r.header.Get("X-DIR-Attribution") != "") != may {
						t.Errorf("%s%s: attribution header %q to %s, who may see the postal address: %v", org, q, r.header.Get("X-DIR-Attribution"), c.name, may)
					}
				}
			}
			read("/services?limit=100")
		})
	}
}

// TestLeadershipJoinsABodyEndingInAnObject reads, with the leadership scope, an organisation whose
// brief view ends with an object (its postal address): the leadership member must join it as valid
// JSON (it once took off every closing brace at the end, the postal address's too).
func TestLeadershipJoinsABodyEndingInAnObject(t *testing.T) {
	s := newTestServer(t, addressFixture())
	if err := s.store.SetSeniorManagementAvailable(context.Background(), "addr", true); err != nil {
		t.Fatal(err)
	}
	tok := token(t, grant{dir: "addr", tier: dirsvc.Professional, scopes: "graph:read leadership:read"})
	r := s.getAs(t, tok, "/v1/d/addr/organisations/org_a?view=brief")
	var v map[string]json.RawMessage
	if err := json.Unmarshal(r.body, &v); r.status != http.StatusOK || err != nil {
		t.Fatalf("%d, %v: %s", r.status, err, r.body)
	}
	if v["postalAddress"] == nil || string(v["leadership"]) != "[]" {
		t.Errorf("postalAddress %s, leadership %s", v["postalAddress"], v["leadership"])
	}
}
