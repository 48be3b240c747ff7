package edge_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/dirsvc/dirsvc/edge"
)

// FuzzRequest sends the read routes any path and query: the answer is never a 5xx, and an error is
// always a problem body. The seed corpus is in testdata/fuzz/FuzzRequest.
func FuzzRequest(f *testing.F) {
	s := newTestServer(f, browseFixture(f))
	h := edge.New(edge.Config{Catalog: s.store, Logger: discardLogger(),
		AnonymousLimits: edge.Limits{PerMinute: 1 << 30, PerDay: 1 << 30}, Keys: testKeys})
	for _, seed := range []struct{ path, query string }{
		{"/v1/d/small/services/svc_gp", "view=brief"},
		{"/v1/d/small/services/svc_old", "view=page&view=brief"},
		{"/v1/d/small/locations/loc_refuge", "view=%ZZ"},
		{"/v1/d/small/organisations/org_harbour", ""},
		{"/v1/d/%00/services/svc_gp", "view="},
		{"/v1/d/small/services/" + strings.Repeat("x", 300), "view=brief;view=page"},
		{"/v1/d/small/developers", "x=" + strings.Repeat("%", 40)},
		{"/v1/d/small/services/svc_gp/..", ""},
		{"/v1/d/small/services", "area=postcode:2007,lga:17200&type=gp&category=primary_care&limit=100"},
		{"/v1/d/small/services", "updatedSince=2026-01-01T00:00:00.123456789%2B10:00&organisation=org_harbour"},
		{"/v1/d/small/services", "cursor=c3ZjX2dwfDAwMDAwMDAwMDAwMDAwMDA&limit=-1"},
		{"/v1/d/small/services", "area=" + strings.Repeat("state:nsw,", 60)},
		{"/v1/d/small/practitioners", "limit=1&cursor=cHJhY19qb3w"},
		{"/v1/d/small/practitioners/prac_jo", "view=page"},
		{"/v1/d/small/roles/role_jo", ""},
		{"/v1/d/small/organisations/org_harbour/leadership", ""},
		{"/v1/d/small/identifiers/search", "system=abn&value=51+824+753+556"},
		{"/v1/d/small/identifiers/search", "system=http://hl7.org.au/id/abn&value=%00"},
		{"/v1/d/small/categories", ""},
		{"/v1/d/small/categories/womens", "x=1"},
		{"/v1/d/small/categories/" + strings.Repeat("a", 70), ""},
		{"/v1/d/small/collections", "home=true"},
		{"/v1/d/small/collections", "home=1&home=true"},
		{"/v1/d/small/collections/care-near-you", ""},
		{"/v1/d/small/collections/%E2%80%AE", ""},
		{"/v1/d/small/search/services", "q=gp+ultimo&near=-33.88,151.2&radiusKm=2000&sort=distance&limit=100&offset=10000"},
		{"/v1/d/small/search/services", "q=%22%2A%5E(OR)+NEAR/2+-x&type=gp,dentist&category=primary_care&cost=free&group=organisation"},
		{"/v1/d/small/search/services", "openNow=true&openOn=weekdays&openFrom=23:59&openTo=24:00&afterHours=true&publicHolidays=true"},
		{"/v1/d/small/search/services", "postcode=2000&includeCatchment=false&area=country:au&referral=self&appointment=required&spell=off"},
	} {
		f.Add(seed.path, seed.query)
	}
	f.Fuzz(func(t *testing.T, path, query string) {
		u := &url.URL{Path: path, RawQuery: query}
		req, err := http.NewRequest("GET", "http://dirsvc.test"+u.EscapedPath()+"?"+query, nil)
		if err != nil {
			return // not a request a client could send
		}
		req.RemoteAddr = "192.0.2.1:1234"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if msg := notAnAnswer(w); msg != "" {
			t.Fatalf("GET %s?%s: %s", path, query, msg)
		}
	})
}

// notAnAnswer says what is wrong with an answer to a fuzzed request: a 5xx, or an error whose body
// is not a problem; "" when nothing is.
func notAnAnswer(w *httptest.ResponseRecorder) string {
	if w.Code >= 500 {
		return fmt.Sprintf("%d %s", w.Code, w.Body)
	}
	if w.Code >= 400 {
		var p struct {
			Status int    `json:"status"`
			Code   string `json:"code"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil || p.Status != w.Code || p.Code == "" {
			return fmt.Sprintf("%d with a body that is not a problem: %s", w.Code, w.Body)
		}
	}
	return ""
}

// positionNumber matches the numbers of a nearest-locality body precise enough to be a position.
var positionNumber = regexp.MustCompile(`-?[0-9]+\.[0-9]{3,}`)

// FuzzNearestLocality sends the nearest-locality read any body: the answer is never a 5xx, an error
// is always a problem body, and no answer repeats a number of the body precise enough to be a
// position (a 200's distance has one decimal, its codes none).
func FuzzNearestLocality(f *testing.F) {
	s := newTestServer(f, smallFixture(f))
	h := edge.New(edge.Config{Catalog: s.store, Logger: discardLogger(),
		AnonymousLimits: edge.Limits{PerMinute: 1 << 30, PerDay: 1 << 30}, Keys: testKeys})
	for _, c := range badPositions {
		f.Add(c.body)
	}
	for _, seed := range []string{
		`{"latitude":-33.881537,"longitude":151.196612}`,
		`{"longitude":174.780123,"latitude":-41.290123}`,
		`{"latitude":-33.881537e0,"longitude":15119.6612e-2}`,
		`{"latitude":-0.000,"longitude":-0.0}`,
		`{"latitude":-33.881537,"longitude":151.196612,}`,
		`{"latitude":-33.881537,"longitude":[151.196612]}`,
		`{"latitude":-33.881537,"longitude":{"x":151.196612}}`,
		`{"latitude":-33.881537,"longitude":151.196612` + strings.Repeat(`,"latitude":1.234567`, 60) + `}`,
		"{\"latitude\":-33.881537,\"longitude\":151.196612\x00}",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		req := httptest.NewRequest("POST", "http://dirsvc.test"+nearestPath, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.RemoteAddr = "192.0.2.1:1234"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if msg := notAnAnswer(w); msg != "" {
			t.Fatalf("POST %q: %s", body, msg)
		}
		if cc := w.Header().Get("Cache-Control"); cc != "no-store" {
			t.Fatalf("POST %q: %d with Cache-Control %q", body, w.Code, cc)
		}
		for _, n := range positionNumber.FindAllString(body, -1) {
			if strings.Contains(w.Body.String(), strings.TrimPrefix(n, "-")) {
				t.Fatalf("POST %q: the answer repeats %s: %s", body, n, w.Body)
			}
		}
	})
}
