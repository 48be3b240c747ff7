package edge_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/edge"
	"github.com/dirsvc/dirsvc/primary"
)

// testServer is the real edge handler over a real store on 127.0.0.1.
type testServer struct {
	*httptest.Server
	store  *dirdb.Store
	client *http.Client
	edge   *edge.Server
}

// newTestServer imports the files into a fresh store and serves it.
func newTestServer(tb testing.TB, files ...[]byte) *testServer {
	tb.Helper()
	return newTestServerWith(tb, nil, files...)
}

// newTestServerWith is newTestServer with the server's configuration changed by configure.
func newTestServerWith(tb testing.TB, configure func(*edge.Config), files ...[]byte) *testServer {
	tb.Helper()
	ctx := context.Background()
	store, err := dirdb.Open(ctx, tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { store.Close() })
	for _, f := range files {
		if _, _, err := primary.Import(ctx, store, bytes.NewReader(f)); err != nil {
			tb.Fatal(err)
		}
	}
	// Tests of what the answers hold must not depend on how loaded the machine is: the time budget
	// of expensive requests is generous here (the admission tests set their own).
	cfg := edge.Config{Catalog: store, Logger: discardLogger(),
		AnonymousLimits: edge.Limits{PerMinute: 1 << 30, PerDay: 1 << 30}, Keys: testKeys,
		Admission: edge.Admission{ExpensiveBudget: time.Minute, ExpensiveWait: time.Minute, PageWait: time.Minute, Wait: 10 * time.Second}}
	if configure != nil {
		configure(&cfg)
	}
	es := edge.New(cfg)
	srv := httptest.NewServer(es)
	tb.Cleanup(srv.Close)
	client := &http.Client{
		Transport:     checked(tb, http.DefaultTransport),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return &testServer{Server: srv, store: store, client: client, edge: es}
}

// response is a response read whole.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (s *testServer) get(tb testing.TB, path string, header ...string) response {
	tb.Helper()
	return s.do(tb, "GET", path, header...)
}

// do sends a request without a body, with the headers given as name, value pairs, and reads the
// response whole.
func (s *testServer) do(tb testing.TB, method, path string, header ...string) response {
	tb.Helper()
	return s.send(tb, method, path, nil, header...)
}

// send is do with a body (nil for none).
func (s *testServer) send(tb testing.TB, method, path string, body io.Reader, header ...string) response {
	tb.Helper()
	req, err := http.NewRequest(method, s.URL+path, body)
	if err != nil {
		tb.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := s.client.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return response{resp.StatusCode, resp.Header, b}
}

func (r response) json(tb testing.TB) map[string]any {
	tb.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		tb.Fatalf("body is not a JSON object: %v\n%s", err, r.body)
	}
	return m
}

// wire returns what a client can observe of a response: status, headers, body; but for the
// headers that change with every request whatever it asks for (the date, the caller's remaining
// quota).
func (r response) wire() string {
	var keys []string
	for k := range r.header {
		if k != "Date" && k != "Ratelimit" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(http.StatusText(r.status) + "\n")
	for _, k := range keys {
		b.WriteString(k + ": " + strings.Join(r.header[k], ", ") + "\n")
	}
	b.Write(r.body)
	return b.String()
}

func smallFixture(tb testing.TB) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "small.ndjson"))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func TestHiddenAndMissingAnswerTheSameBytes(t *testing.T) {
	s := newTestServer(t, smallFixture(t))
	missing := map[string]string{
		"services":      "/v1/d/small/services/svc_doesnotexist",
		"locations":     "/v1/d/small/locations/loc_doesnotexist",
		"organisations": "/v1/d/small/organisations/org_doesnotexist",
	}
	hidden := map[string][]string{
		"services": {
			"/v1/d/small/services/svc_reduced", // visibility reduced to professionals
			"/v1/d/small/services/svc_down",    // taken down
			"/v1/d/small/services/loc_ultimo",  // another kind's ID
			"/v1/d/small/services/svc_%20bad",  // not an ID at all
			"/v1/d/nowhere/services/svc_gp",    // unknown directory
			"/v1/d/small/services/svc_reduced?view=brief",
		},
		"locations":     {"/v1/d/small/locations/loc_unlisted", "/v1/d/small/locations/svc_gp", "/v1/d/NOPE/locations/loc_ultimo"},
		"organisations": {"/v1/d/small/organisations/loc_ultimo", "/v1/d/small/organisations/org_"},
	}
	for kind, paths := range hidden {
		want := s.get(t, missing[kind])
		if want.status != http.StatusNotFound || want.json(t)["code"] != "not-found-or-hidden" {
			t.Fatalf("missing %s: %d %s", kind, want.status, want.body)
		}
		for _, p := range paths {
			if got := s.get(t, p); got.wire() != want.wire() {
				t.Errorf("%s answers differently from a missing %s:\n%s\n--- missing:\n%s", p, kind, got.wire(), want.wire())
			}
		}
	}
}

// TestRecordsNeverPublishedAnswerAsMissing reads records imported already closed, merged (into a
// record every tier sees, and into one only some see) and taken down, as every tier: none of them was
// ever published, so each must answer byte for byte as a record that does not exist, never 410 or 301.
func TestRecordsNeverPublishedAnswerAsMissing(t *testing.T) {
	s := newTestServer(t, smallFixture(t))
	for _, c := range smallCallers(t) {
		t.Run(c.name, func(t *testing.T) {
			missing := s.getAs(t, c.tok, "/v1/d/small/services/svc_missing")
			if missing.status != http.StatusNotFound {
				t.Fatalf("missing service: %d %s", missing.status, missing.body)
			}
			for _, id := range []string{"svc_closed", "svc_old", "svc_hiddenmerge", "svc_down"} {
				for _, q := range []string{"", "?view=brief"} {
					want := s.getAs(t, c.tok, "/v1/d/small/services/svc_missing"+q)
					if got := s.getAs(t, c.tok, "/v1/d/small/services/"+id+q); got.wire() != want.wire() {
						t.Errorf("%s%s, never published, answers differently from a missing service:\n%s\n--- missing:\n%s", id, q, got.wire(), want.wire())
					}
				}
			}
		})
	}
}

// smallCallers are an anonymous caller and clients of the professional and partner tiers of the small
// fixture.
func smallCallers(tb testing.TB) []caller {
	return []caller{
		{"anonymous", "", dirsvc.Public},
		{"professional", token(tb, grant{dir: "small", tier: dirsvc.Professional, scopes: "graph:read"}), dirsvc.Professional},
		{"partner", token(tb, grant{dir: "small", tier: dirsvc.Partner, scopes: "graph:read"}), dirsvc.Partner},
	}
}

// TestLifecycleAnswers closes and merges records that were live for some tiers: each answers 410, or
// 301 naming its survivor, to the tiers that saw it, and exactly as a missing record to the others.
func TestLifecycleAnswers(t *testing.T) {
	s := newTestServer(t, smallFixture(t))
	ctx := context.Background()
	w, err := s.store.Writer(ctx, "small")
	if err != nil {
		t.Fatal(err)
	}
	everyone := []dirsvc.Audience{dirsvc.Public, dirsvc.Professional, dirsvc.Partner}
	clinicians := []dirsvc.Audience{dirsvc.Professional, dirsvc.Partner}
	for _, tc := range []struct {
		name   string
		id     string
		to     dirsvc.Transition
		saw    []dirsvc.Audience // who saw the record live
		status int               // what they get (0: 301 to clinicians, 410 to the public)
		target string            // the survivor named by a 301
	}{
		{"a service every tier saw, merged into one every tier sees", "svc_refuge",
			dirsvc.Transition{To: dirsvc.StateMerged, Survivor: "svc_counsel"}, everyone, http.StatusMovedPermanently, "svc_counsel"},
		{"a service every tier saw, merged into one the public cannot see", "svc_gp",
			dirsvc.Transition{To: dirsvc.StateMerged, Survivor: "svc_reduced"}, everyone, 0, "svc_reduced"},
		{"a service only clinicians saw, merged", "svc_reduced",
			dirsvc.Transition{To: dirsvc.StateMerged, Survivor: "svc_unlisted"}, clinicians, http.StatusMovedPermanently, "svc_unlisted"},
		{"a service every tier saw, closed", "svc_counsel", dirsvc.Transition{To: dirsvc.StateClosed}, everyone, http.StatusGone, ""},
		{"a service every tier saw, removed", "svc_unlisted", dirsvc.Transition{To: dirsvc.StateRemoved}, everyone, http.StatusGone, ""},
		{"a site only clinicians saw, closed", "loc_unlisted", dirsvc.Transition{To: dirsvc.StateClosed}, clinicians, http.StatusGone, ""},
	} {
		if _, err := w.Transition(ctx, tc.id, tc.to); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		kind := "/v1/d/small/services/"
		if strings.HasPrefix(tc.id, "loc_") {
			kind = "/v1/d/small/locations/"
		}
		for _, c := range smallCallers(t) {
			got := s.getAs(t, c.tok, kind+tc.id+"?view=brief")
			if !slices.Contains(tc.saw, c.aud) {
				missing := strings.Replace(tc.id, "_", "_missing", 1)
				if want := s.getAs(t, c.tok, kind+missing+"?view=brief"); got.wire() != want.wire() {
					t.Errorf("%s: %s, never seen by %s, answers differently from a missing service:\n%s", tc.name, tc.id, c.name, got.wire())
				}
				continue
			}
			status, target := tc.status, tc.target
			if status == 0 {
				// Merged into a survivor some tiers cannot see: they learn only that it is gone.
				status, target = http.StatusMovedPermanently, tc.target
				if c.aud == dirsvc.Public {
					status, target = http.StatusGone, ""
				}
			}
			if got.status != status {
				t.Errorf("%s: %s answers %s %d, want %d: %s", tc.name, tc.id, c.name, got.status, status, got.body)
			}
			wantLoc := ""
			if status == http.StatusMovedPermanently {
				wantLoc = edge.DefaultBaseURL + kind + target + "?view=brief"
			}
			if loc := got.header.Get("Location"); loc != wantLoc {
				t.Errorf("%s: %s answers %s Location %q, want %q", tc.name, tc.id, c.name, loc, wantLoc)
			}
			if status == http.StatusGone && (got.header.Get("Content-Type") != "application/problem+json" || bytes.Contains(got.body, []byte("svc_reduced"))) {
				t.Errorf("%s: %s answers %s %s %s", tc.name, tc.id, c.name, got.header.Get("Content-Type"), got.body)
			}
		}
	}
}

func TestRecordReads(t *testing.T) {
	s := newTestServer(t, smallFixture(t))
	t.Run("service page expands organisation, location and roles", func(t *testing.T) {
		r := s.get(t, "/v1/d/small/services/svc_gp")
		if r.status != 200 || r.header.Get("X-DIR-Audience") != "public" {
			t.Fatalf("%d %v", r.status, r.header)
		}
		v := r.json(t)
		if v["organisation"].(map[string]any)["name"] != "Harbour Health" || v["location"].(map[string]any)["address"] == nil {
			t.Fatalf("service page: %s", r.body)
		}
		roles := v["roles"].([]any)
		if len(roles) != 2 {
			t.Fatalf("roles = %d, want 2", len(roles))
		}
		if r.header.Get("X-DIR-Attribution") == "" {
			t.Error("a page with an address carries no attribution")
		}
	})
	t.Run("view=brief is the canonical form", func(t *testing.T) {
		r := s.get(t, "/v1/d/small/services/svc_gp?view=brief")
		v := r.json(t)
		if _, ok := v["roles"]; ok || v["organisation"].(map[string]any)["publicId"] != "org_harbour" {
			t.Fatalf("brief: %s", r.body)
		}
		if r.header.Get("X-DIR-Attribution") != "" {
			t.Error("a brief service without addresses carries attribution")
		}
	})
	t.Run("an invalid view is a 400 naming the parameter", func(t *testing.T) {
		r := s.get(t, "/v1/d/small/services/svc_gp?view=full")
		if r.status != 400 || r.json(t)["param"] != "view" {
			t.Fatalf("%d %s", r.status, r.body)
		}
	})
	t.Run("organisation page lists the sites the caller may see", func(t *testing.T) {
		v := s.get(t, "/v1/d/small/organisations/org_harbour").json(t)
		var ids []string
		for _, l := range v["locations"].([]any) {
			l := l.(map[string]any)
			ids = append(ids, l["publicId"].(string))
			if l["publicId"] == "loc_refuge" && (l["address"] != nil || l["addressWithheld"] != true || l["area"] != "Glebe NSW 2037") {
				t.Errorf("withheld site: %v", l)
			}
		}
		if strings.Join(ids, " ") != "loc_refuge loc_ultimo" {
			t.Fatalf("organisation page locations = %v", ids)
		}
		if v["lastUpdated"] == nil || v["metroRural"] != "metro" {
			t.Fatalf("lastUpdated %v metroRural %v", v["lastUpdated"], v["metroRural"])
		}
	})
	t.Run("location page lists its services", func(t *testing.T) {
		v := s.get(t, "/v1/d/small/locations/loc_coast").json(t)
		var names []string
		for _, c := range v["services"].([]any) {
			names = append(names, c.(map[string]any)["publicId"].(string))
		}
		if strings.Join(names, " ") != "svc_counsel" {
			t.Fatalf("location services = %v", names)
		}
	})
	t.Run("ETag and If-None-Match", func(t *testing.T) {
		r := s.get(t, "/v1/d/small/services/svc_gp?view=brief")
		tag := r.header.Get("ETag")
		if tag == "" {
			t.Fatal("no ETag")
		}
		if again := s.get(t, "/v1/d/small/services/svc_gp?view=brief", "If-None-Match", tag); again.status != http.StatusNotModified || len(again.body) != 0 {
			t.Fatalf("If-None-Match: %d", again.status)
		}
	})
	t.Run("developer information", func(t *testing.T) {
		r := s.get(t, "/v1/d/small/developers")
		v := r.json(t)
		if r.status != 200 || !strings.HasSuffix(v["openapi"].(string), edge.OpenAPIPath) {
			t.Fatalf("%d %s", r.status, r.body)
		}
		// Every address it advertises answers (the token endpoint takes POST; the REST base is a
		// prefix): the FHIR server, the change feed and the portal are named once they are served.
		addresses := []any{v["openapi"], v["jwksUri"], v["changeFeed"], v["developerPortal"]}
		if fhir, ok := v["fhir"].(map[string]any); ok {
			addresses = append(addresses, fhir["capabilityStatement"])
		}
		for _, a := range addresses {
			if a == nil {
				continue
			}
			path := strings.TrimPrefix(a.(string), edge.DefaultBaseURL)
			if got := s.get(t, path); got.status == http.StatusNotFound || got.status == http.StatusMethodNotAllowed {
				t.Errorf("the developer information advertises %s, which answers %d", a, got.status)
			}
		}
		if doc := s.get(t, edge.OpenAPIPath); doc.status != 200 || doc.json(t)["openapi"] != "3.1.0" {
			t.Fatalf("OpenAPI document: %d", doc.status)
		}
	})
}

// TestTheHostHeaderIsNeverReflected: links in the developer information (which public caches keep)
// come from the configured base URL, whatever Host a request names.
func TestTheHostHeaderIsNeverReflected(t *testing.T) {
	s := newTestServer(t, smallFixture(t))
	for _, path := range []string{"/v1/d/small/developers"} {
		req, err := http.NewRequest("GET", s.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = "attacker.example"
		resp, err := s.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || bytes.Contains(body, []byte("attacker.example")) || !bytes.Contains(body, []byte(edge.DefaultBaseURL+"/")) {
			t.Errorf("%s with another Host: %d %s", path, resp.StatusCode, body)
		}
	}
}
