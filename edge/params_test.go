package edge_test

import (
	"context"
	"encoding/base64"
	"strconv"
	"strings"
	"testing"

	"github.com/dirsvc/dirsvc"
)

// TestEveryEndpointRefusesWhatItDoesNotTake sends every read endpoint a parameter it does not take, a
// single-valued parameter twice, and values it does not accept: each answers 400, a problem naming
// the parameter, whichever endpoint it is.
func TestEveryEndpointRefusesWhatItDoesNotTake(t *testing.T) {
	s := newTestServer(t, smallFixture(t))
	leader := token(t, grant{dir: "small", tier: dirsvc.Professional, scopes: "graph:read leadership:read practitioners:read"})
	for _, c := range []struct{ name, path, param string }{
		{"the service list takes no search words", "/v1/d/small/services?q=counselling", "q"},
		{"the service list takes no view", "/v1/d/small/services?view=brief", "view"},
		{"a limit with a plus sign", "/v1/d/small/services?limit=%2B5", "limit"},
		{"a limit with a minus sign", "/v1/d/small/services?limit=-5", "limit"},
		{"a limit with a leading space", "/v1/d/small/services?limit=%205", "limit"},
		{"a limit with a trailing space", "/v1/d/small/services?limit=5%20", "limit"},
		{"an empty limit", "/v1/d/small/services?limit=", "limit"},
		{"a limit in hexadecimal", "/v1/d/small/services?limit=0x10", "limit"},
		{"a limit past the bound", "/v1/d/small/services?limit=101", "limit"},
		{"an empty cursor", "/v1/d/small/services?cursor=", "cursor"},
		{"an empty updatedSince", "/v1/d/small/services?updatedSince=", "updatedSince"},
		{"updatedSince twice", "/v1/d/small/services?updatedSince=2026-01-01T00:00:00Z&updatedSince=2026-01-01T00:00:00Z", "updatedSince"},
		{"a value that is not form encoding", "/v1/d/small/services?limit=%ZZ", "limit"},
		{"a parameter name that is not form encoding", "/v1/d/small/services?li%ZZmit=5", "li%ZZmit"},
		{"a semicolon separator", "/v1/d/small/services?limit=5;type=gp", "limit"},
		{"a parameter named in another case", "/v1/d/small/services?Limit=5", "Limit"},
		{"a service read with view twice", "/v1/d/small/services/svc_gp?view=brief&view=brief", "view"},
		{"a service read with another view", "/v1/d/small/services/svc_gp?view=full", "view"},
		{"a service read with an empty view", "/v1/d/small/services/svc_gp?view=", "view"},
		{"a service read with a filter", "/v1/d/small/services/svc_gp?type=gp", "type"},
		{"a location read with an unknown parameter", "/v1/d/small/locations/loc_refuge?format=json", "format"},
		{"an organisation read with view twice", "/v1/d/small/organisations/org_harbour?view=page&view=brief", "view"},
		{"a practitioner read with view twice", "/v1/d/small/practitioners/prac_jo?view=page&view=page", "view"},
		{"a practitioner read with another view", "/v1/d/small/practitioners/prac_jo?view=bogus", "view"},
		{"a role read with a view it does not have", "/v1/d/small/roles/role_jo?view=bogus", "view"},
		{"a role read with view=page", "/v1/d/small/roles/role_jo?view=page", "view"},
		{"the practitioner list takes no view", "/v1/d/small/practitioners?view=page", "view"},
		{"the practitioner list with limit twice", "/v1/d/small/practitioners?limit=1&limit=1", "limit"},
		{"the practitioner list with a signed limit", "/v1/d/small/practitioners?limit=%2B1", "limit"},
		{"leadership takes no parameter", "/v1/d/small/organisations/org_harbour/leadership?view=brief", "view"},
		{"identifier search with an unknown parameter", "/v1/d/small/identifiers/search?system=abn&value=1&type=org", "type"},
		{"identifier search with value twice", "/v1/d/small/identifiers/search?system=abn&value=1&value=2", "value"},
		{"developer information takes no parameter", "/v1/d/small/developers?v=2", "v"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := s.getAs(t, leader, c.path)
			if r.status != 400 || r.header.Get("Content-Type") != "application/problem+json" {
				t.Fatalf("GET %s: %d %s, want a 400 problem", c.path, r.status, r.body)
			}
			if got := r.json(t)["param"]; got != c.param {
				t.Errorf("GET %s names %v, want %q: %s", c.path, got, c.param, r.body)
			}
		})
	}
}

// TestEveryEndpointTakesWhatTheSpecificationNames reads every endpoint with the parameters the
// specification gives it: none is refused.
func TestEveryEndpointTakesWhatTheSpecificationNames(t *testing.T) {
	s := newTestServer(t, smallFixture(t))
	if err := s.store.SetSeniorManagementAvailable(context.Background(), "small", true); err != nil {
		t.Fatal(err)
	}
	leader := token(t, grant{dir: "small", tier: dirsvc.Professional, scopes: "graph:read leadership:read practitioners:read"})
	for _, path := range []string{
		"/v1/d/small/services?updatedSince=2026-01-01T00:00:00Z&area=postcode:2007&area=state:nsw,lga:17200&type=gp,counselling" +
			"&category=primary_care&organisation=org_harbour&limit=100",
		"/v1/d/small/services?limit=007",
		"/v1/d/small/services/svc_gp?view=brief",
		"/v1/d/small/services/svc_gp?view=page",
		"/v1/d/small/services/svc_gp?",
		"/v1/d/small/locations/loc_refuge?view=brief",
		"/v1/d/small/organisations/org_harbour?view=page",
		"/v1/d/small/organisations/org_harbour/leadership",
		"/v1/d/small/practitioners?limit=1",
		"/v1/d/small/practitioners/prac_jo?view=page",
		"/v1/d/small/practitioners/prac_jo?view=brief",
		"/v1/d/small/roles/role_jo",
		"/v1/d/small/identifiers/search?system=abn&value=51+824+753+556",
		"/v1/d/small/developers",
	} {
		if r := s.getAs(t, leader, path); r.status != 200 {
			t.Errorf("GET %s: %d %s", path, r.status, r.body)
		}
	}
}

// TestABadParameterOnAHiddenRecordAnswersAsOnAMissingOne: a parameter is checked before the record is
// looked for, so the 400 says nothing of whether the record exists.
func TestABadParameterOnAHiddenRecordAnswersAsOnAMissingOne(t *testing.T) {
	s := newTestServer(t, smallFixture(t))
	for _, q := range []string{"?view=bogus", "?x=1", "?view=brief&view=brief"} {
		want := s.get(t, "/v1/d/small/services/svc_doesnotexist"+q)
		if want.status != 400 {
			t.Fatalf("a missing service%s: %d %s", q, want.status, want.body)
		}
		for _, id := range []string{"svc_reduced", "svc_down", "svc_doesnotexist"} {
			if got := s.get(t, "/v1/d/small/services/"+id+q); got.wire() != want.wire() {
				t.Errorf("%s%s answers differently from a missing service:\n%s\n--- missing:\n%s", id, q, got.wire(), want.wire())
			}
		}
	}
}

// TestCursorsAreOpaqueAndSigned reads the cursors of the service and practitioner lists: short,
// without the position in readable form, and refused (400 naming cursor) when altered, forged from a
// readable one, or given with another query, audience or narrowing.
func TestCursorsAreOpaqueAndSigned(t *testing.T) {
	s := newTestServer(t, demoFiles(t)["demo"])
	partner := token(t, grant{dir: "demo", tier: dirsvc.Partner, scopes: "graph:read practitioners:read"})
	professional := token(t, grant{dir: "demo", tier: dirsvc.Professional, scopes: "graph:read practitioners:read"})
	narrowed := token(t, grant{dir: "demo", tier: dirsvc.Partner, scopes: "graph:read practitioners:read",
		narrowing: dirsvc.Narrowing{Kinds: []dirsvc.Kind{dirsvc.KindService, dirsvc.KindPractitioner}}})
	for _, list := range []string{"/v1/d/demo/services?limit=2", "/v1/d/demo/practitioners?limit=1"} {
		first := s.getAs(t, partner, list).json(t)
		cur, ok := first["nextCursor"].(string)
		if !ok {
			t.Fatalf("%s has no next page", list)
		}
		items := first["items"].([]any)
		last := items[len(items)-1].(map[string]any)["publicId"].(string)
		if len(cur) >= 200 {
			t.Errorf("%s: the cursor has %d characters", list, len(cur))
		}
		raw, _ := base64.RawURLEncoding.DecodeString(cur)
		if strings.Contains(cur, last) || strings.Contains(string(raw), last) {
			t.Errorf("%s: the cursor %s shows the position %s", list, cur, last)
		}
		if r := s.getAs(t, partner, list+"&cursor="+cur); r.status != 200 {
			t.Fatalf("%s with its own cursor: %d %s", list, r.status, r.body)
		}
		refused := map[string]string{
			"altered in its last character":  cur[:len(cur)-1] + otherChar(cur[len(cur)-1]),
			"altered in its first character": otherChar(cur[0]) + cur[1:],
			"cut short":                      cur[:len(cur)-4],
			"with a line break":              cur[:4] + "%0A" + cur[4:],
			"forged from a readable cursor":  forgedCursor(cur, last),
			"of another deployment":          base64.RawURLEncoding.EncodeToString(append([]byte{1}, make([]byte, 60)...)),
		}
		for i := range len(raw) {
			b := append([]byte(nil), raw...)
			b[i] ^= 0x20
			refused["with byte "+strconv.Itoa(i)+" altered"] = base64.RawURLEncoding.EncodeToString(b)
		}
		for name, c := range refused {
			if r := s.getAs(t, partner, list+"&cursor="+c); r.status != 400 || r.json(t)["param"] != "cursor" {
				t.Errorf("%s, a cursor %s: %d %s", list, name, r.status, r.body)
			}
		}
		for name, tok := range map[string]string{"by a client of another tier": professional, "by a narrowed client": narrowed} {
			if r := s.getAs(t, tok, list+"&cursor="+cur); r.status != 400 || r.json(t)["param"] != "cursor" {
				t.Errorf("%s, a partner's cursor read %s: %d %s", list, name, r.status, r.body)
			}
		}
	}
	since := "/v1/d/demo/services?updatedSince=2000-01-01T00:00:00Z"
	cur := s.get(t, since+"&limit=2").json(t)["nextCursor"].(string)
	if r := s.get(t, "/v1/d/demo/services?updatedSince=2000-01-02T00:00:00Z&limit=2&cursor="+cur); r.status != 400 || r.json(t)["param"] != "cursor" {
		t.Errorf("a cursor with another filter: %d %s", r.status, r.body)
	}
	if r := s.get(t, "/v1/d/demo/services?limit=2&cursor="+cur); r.status != 400 || r.json(t)["param"] != "cursor" {
		t.Errorf("a cursor without its filter: %d %s", r.status, r.body)
	}
	if r := s.get(t, since+"&limit=5&cursor="+cur); r.status != 200 {
		t.Errorf("a cursor with its own filter and another limit: %d %s", r.status, r.body)
	}
}

// otherChar returns another character of the base64url alphabet than c.
func otherChar(c byte) string {
	if c == 'A' {
		return "B"
	}
	return "A"
}

// forgedCursor makes a cursor for the position after the one a real cursor names, as a client could
// when a cursor is readable: the position, a bar, and whatever binding the real cursor shows.
func forgedCursor(real, last string) string {
	binding := "0000000000000000"
	if b, err := base64.RawURLEncoding.DecodeString(real); err == nil {
		if _, k, ok := strings.Cut(string(b), "|"); ok {
			binding = k
		}
	}
	return base64.RawURLEncoding.EncodeToString([]byte(last + "a|" + binding))
}
