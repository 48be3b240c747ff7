package edge_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/edge"
)

const nearestPath = "/v1/d/small/localities/nearest"

// post sends a body of the content type (none when empty), with the headers given as name, value
// pairs, and reads the response whole.
func (s *testServer) post(tb testing.TB, path, contentType, body string, header ...string) response {
	tb.Helper()
	if contentType != "" {
		header = append([]string{"Content-Type", contentType}, header...)
	}
	return s.send(tb, "POST", path, strings.NewReader(body), header...)
}

// nearestPlace decodes a 200 answer, refusing members the document does not give.
func nearestPlace(tb testing.TB, r response) edge.NearestPlace {
	tb.Helper()
	if r.status != http.StatusOK {
		tb.Fatalf("%d %s", r.status, r.body)
	}
	var p edge.NearestPlace
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		tb.Fatalf("%v: %s", err, r.body)
	}
	return p
}

// TestNearestLocalityNamesThePlace asks for the place near positions in Sydney of the small
// (Australian) directory, anonymously and as a client: the locality in display case, its postcode,
// state, country and areas, the distance rounded to 0.1 km, never stored, the position nowhere in
// the answer.
func TestNearestLocalityNamesThePlace(t *testing.T) {
	s := newTestServer(t, smallFixture(t))
	const body = `{"latitude": -33.881537, "longitude": 151.196612}`
	r := s.post(t, nearestPath, "application/json", body)
	p := nearestPlace(t, r)
	if p.Name != "Ultimo" || p.Postcode != "2007" || p.State != "NSW" || p.Country != "AU" {
		t.Errorf("place = %+v, want Ultimo 2007 NSW AU", p)
	}
	if want := []string{"postcode:2007", "sa:117031646", "lga:17200", "phn:PHN101", "state:nsw", "country:au"}; !slices.Equal(p.Areas, want) {
		t.Errorf("areas = %q, want %q", p.Areas, want)
	}
	if p.DistanceKm <= 0 || p.DistanceKm > 1 || math.Abs(p.DistanceKm*10-math.Round(p.DistanceKm*10)) > 1e-9 {
		t.Errorf("distanceKm = %v, want under 1 km in steps of 0.1", p.DistanceKm)
	}
	if got := r.header.Get("Cache-Control"); got != "no-store" {
		t.Errorf("Cache-Control = %q, want no-store", got)
	}
	if r.header.Get("ETag") != "" || r.header.Get("Surrogate-Key") != "" {
		t.Errorf("an answer about a private position carries cache headers: %v", r.header)
	}
	for _, c := range []string{"33.881537", "151.196612", "33.88", "151.19"} {
		if bytes.Contains(r.body, []byte(c)) {
			t.Errorf("the answer repeats %s of the position: %s", c, r.body)
		}
	}

	tok := token(t, grant{dir: "small", tier: dirsvc.Professional, scopes: "graph:read"})
	r = s.post(t, nearestPath, "application/json; charset=utf-8", body, "Authorization", "Bearer "+tok)
	if got := nearestPlace(t, r); got.Name != "Ultimo" || r.header.Get("Cache-Control") != "private, no-store" {
		t.Errorf("as a client: %+v, Cache-Control %q", got, r.header.Get("Cache-Control"))
	}
	tok = token(t, grant{dir: "other", tier: dirsvc.Professional, scopes: "graph:read"})
	if r := s.post(t, nearestPath, "application/json", body, "Authorization", "Bearer "+tok); r.status != http.StatusForbidden {
		t.Errorf("another directory's client: %d %s", r.status, r.body)
	}
}

// TestNearestLocalityOfNewZealand reads the New Zealand demo directory: its places, with macrons,
// and its areas; an Australian position is no place of it.
func TestNearestLocalityOfNewZealand(t *testing.T) {
	files := demoFiles(t)
	s := newTestServer(t, files["demo-nz"])
	p := nearestPlace(t, s.post(t, "/v1/d/demo-nz/localities/nearest", "application/json", `{"longitude":174.33,"latitude":-35.72}`))
	if want := []string{"postcode:0110", "ta:whangarei-district", "region:northland", "country:nz"}; p.Name != "Whangārei" ||
		p.State != "Northland" || p.Country != "NZ" || !slices.Equal(p.Areas, want) {
		t.Errorf("place = %+v, want Whangārei with areas %q", p, want)
	}
	if r := s.post(t, "/v1/d/demo-nz/localities/nearest", "application/json", `{"latitude":-33.8815,"longitude":151.1966}`); r.status != http.StatusNotFound {
		t.Errorf("a position in Sydney: %d %s", r.status, r.body)
	}
}

// TestNearestLocalityOfNowhere answers 404 for a position no place of the directory's country lies
// near, and for an unknown directory.
func TestNearestLocalityOfNowhere(t *testing.T) {
	s := newTestServer(t, smallFixture(t))
	for _, c := range []struct{ name, path, body string }{
		{"in Wellington, for an Australian directory", nearestPath, `{"latitude":-41.29,"longitude":174.78}`},
		{"in the Tasman Sea, 150 km off Sydney", nearestPath, `{"latitude":-34.2,"longitude":152.9}`},
		{"in London", nearestPath, `{"latitude":51.5074,"longitude":-0.1278}`},
		{"at the South Pole", nearestPath, `{"latitude":-90,"longitude":0}`},
		{"of an unknown directory", "/v1/d/nowhere/localities/nearest", `{"latitude":-33.88,"longitude":151.19}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := s.post(t, c.path, "application/json", c.body)
			if r.status != http.StatusNotFound || r.json(t)["code"] != "not-found-or-hidden" || r.header.Get("Cache-Control") != "no-store" {
				t.Errorf("%d %v %s", r.status, r.header, r.body)
			}
		})
	}
}

// badPositions are requests the nearest-locality read refuses, with the status, and the field the
// problem names. The values in them must never come back, in an answer or a log.
var badPositions = []struct {
	name, contentType, body string
	status                  int
	param                   string
}{
	{"without latitude", "application/json", `{"longitude":151.196612}`, 400, "latitude"},
	{"without longitude", "application/json", `{"latitude":-33.881537}`, 400, "longitude"},
	{"with latitude out of range", "application/json", `{"latitude":95.123456,"longitude":151.196612}`, 400, "latitude"},
	{"with longitude out of range", "application/json", `{"latitude":-33.881537,"longitude":-180.000001}`, 400, "longitude"},
	{"with a huge number", "application/json", `{"latitude":-33.881537,"longitude":1e400}`, 400, "longitude"},
	{"with latitude as a string", "application/json", `{"latitude":"-33.881537","longitude":151.196612}`, 400, "latitude"},
	{"with latitude null", "application/json", `{"latitude":null,"longitude":151.196612}`, 400, "latitude"},
	{"with latitude twice", "application/json", `{"latitude":-33.881537,"latitude":-33.881537,"longitude":151.196612}`, 400, "latitude"},
	{"with another member", "application/json", `{"latitude":-33.881537,"longitude":151.196612,"accuracy":12.345678}`, 400, "body"},
	{"with the position as a member name", "application/json", `{"-33.881537":151.196612}`, 400, "body"},
	{"as an array", "application/json", `[-33.881537,151.196612]`, 400, "body"},
	{"with more after the object", "application/json", `{"latitude":-33.881537,"longitude":151.196612} {}`, 400, "body"},
	{"that is not JSON", "application/json", `latitude=-33.881537&longitude=151.196612`, 400, "body"},
	{"that is empty", "application/json", ``, 400, "body"},
	{"as a form", "application/x-www-form-urlencoded", `latitude=-33.881537&longitude=151.196612`, 415, "Content-Type"},
	{"without a content type", "", `{"latitude":-33.881537,"longitude":151.196612}`, 415, "Content-Type"},
	{"larger than 1 KB", "application/json", `{"latitude":-33.881537,"longitude":151.196612` + strings.Repeat(" ", 1024) + `}`, 413, ""},
}

// TestNearestLocalityRefusesBadPositions sends requests the read refuses: each answers a problem
// naming the field, never its value.
func TestNearestLocalityRefusesBadPositions(t *testing.T) {
	s := newTestServer(t, smallFixture(t))
	for _, c := range badPositions {
		t.Run(c.name, func(t *testing.T) {
			r := s.post(t, nearestPath, c.contentType, c.body)
			p := r.json(t)
			if r.status != c.status || r.header.Get("Content-Type") != "application/problem+json" || p["status"] != float64(c.status) {
				t.Fatalf("%d %v %s, want %d", r.status, r.header, r.body, c.status)
			}
			if got, _ := p["param"].(string); got != c.param {
				t.Errorf("param = %q, want %q: %s", got, c.param, r.body)
			}
			for _, v := range []string{"33.881537", "151.196612", "95.123456", "180.000001", "1e400", "12.345678"} {
				if bytes.Contains(r.body, []byte(v)) {
					t.Errorf("the problem repeats %s: %s", v, r.body)
				}
			}
		})
	}
	for _, q := range []string{"?latitude=-33.881537", "?-33.881537,151.196612", "?"} {
		r := s.post(t, nearestPath+q, "application/json", `{"latitude":-33.88,"longitude":151.19}`)
		if r.status != http.StatusBadRequest && q != "?" || bytes.Contains(r.body, []byte("33.881537")) {
			t.Errorf("query %s: %d %s", q, r.status, r.body)
		}
	}
	r := s.get(t, nearestPath)
	if r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != "POST" {
		t.Errorf("GET: %d Allow %q %s", r.status, r.header.Get("Allow"), r.body)
	}
}

// TestNearestLocalityLogsNoPosition serves good and bad requests with the server logging everything
// it logs, at debug level: the log has a line for each request, and no digit of a position.
func TestNearestLocalityLogsNoPosition(t *testing.T) {
	var logs syncBuffer
	s := newTestServerWith(t, func(c *edge.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}, smallFixture(t))
	if r := s.post(t, nearestPath, "application/json", `{"latitude":-33.881537,"longitude":151.196612}`); r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	s.post(t, nearestPath, "application/json", `{"latitude":-41.290123,"longitude":174.780123}`) // 404: abroad
	for _, c := range badPositions {
		s.post(t, nearestPath, c.contentType, c.body)
	}
	out := logs.String()
	if n := strings.Count(out, "/localities/nearest"); n < len(badPositions)+2 {
		t.Fatalf("%d request lines in the debug log, want one per request:\n%s", n, out)
	}
	for _, v := range []string{"33.881537", "151.196612", "41.290123", "174.780123", "95.123456", "180.000001", "1e400", "12.345678", "33.88", "151.19"} {
		if strings.Contains(out, v) {
			t.Errorf("the log holds %s of a position:\n%s", v, out)
		}
	}
}

// TestAnEdgeAnswersTheNearestLocalityItself: the read is a POST, but an edge serves it from its own
// gazetteer, whatever position of the directory the reader asks for; the primary never sees it.
func TestAnEdgeAnswersTheNearestLocalityItself(t *testing.T) {
	var forwarded sync.Map
	primary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		forwarded.Store(r.Method+" "+r.URL.Path, true)
		w.WriteHeader(http.StatusTeapot)
	}))
	t.Cleanup(primary.Close)
	s := edgeOf(t, primary, edge.Forwarding{Positions: &positions{at: 5}})
	if p := nearestPlace(t, s.post(t, nearestPath, "application/json", `{"latitude":-33.8815,"longitude":151.1966}`)); p.Name != "Ultimo" {
		t.Errorf("place = %+v", p)
	}
	// Its copy is behind the position the reader asks for, but the answer does not come from it.
	if p := nearestPlace(t, s.post(t, nearestPath, "application/json", `{"latitude":-33.8815,"longitude":151.1966}`,
		"Directory-Position", "999999")); p.Name != "Ultimo" {
		t.Errorf("with a position ahead of the copy: %+v", p)
	}
	if r := s.post(t, nearestPath, "application/json", `{"latitude":95.5,"longitude":151.1966}`); r.status != http.StatusBadRequest {
		t.Errorf("a bad position at the edge: %d %s", r.status, r.body)
	}
	// What no read route serves still goes to the primary (an answer the document does not give).
	resp, err := http.Post(s.URL+"/v1/d/small/localities", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTeapot {
		t.Errorf("another POST at the edge: %d", resp.StatusCode)
	}
	forwarded.Range(func(k, _ any) bool {
		if strings.Contains(k.(string), "nearest") {
			t.Errorf("the edge forwarded %s", k)
		}
		return true
	})
}
