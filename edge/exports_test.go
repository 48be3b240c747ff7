package edge_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/csv"
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/edge"
	"github.com/dirsvc/dirsvc/fhir"
	"github.com/dirsvc/dirsvc/primary"
	"github.com/dirsvc/dirsvc/primary/demo"
	"github.com/dirsvc/dirsvc/primary/export"
	"github.com/dirsvc/dirsvc/replicate"
	"github.com/dirsvc/dirsvc/replicate/s3test"
)

// exportServer is the test server with the primary's export routes and service, on a clock the
// test can move.
type exportServer struct {
	*testServer
	exports *export.Service
	skew    atomic.Int64 // added to the real time, nanoseconds
}

func newExportServer(t *testing.T, files ...[]byte) *exportServer {
	t.Helper()
	return newExportServerWith(t, nil, files...)
}

// newExportServerWith is newExportServer whose exports keep their files in store too.
func newExportServerWith(t *testing.T, store export.Store, files ...[]byte) *exportServer {
	t.Helper()
	s := &exportServer{testServer: newTestServer(t, files...)}
	ctx := context.Background()
	key := make([]byte, primary.ServerKeySize)
	rand.Read(key)
	access, err := primary.NewAccess(ctx, s.store, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.exports, err = export.New(export.Config{Data: s.store.Root(), Catalog: s.store, LinkKey: primary.ExportLinkKey(key),
		BaseURL: edge.DefaultBaseURL, Log: discardLogger(), PartRecords: 7, Store: store,
		Now: func() time.Time { return time.Now().Add(time.Duration(s.skew.Load())) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := (&primary.Server{Edge: s.edge, Access: access, Exports: s.exports, Log: discardLogger()}).Mount(); err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { s.exports.Run(runCtx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return s
}

// pathOf returns the path and query of an absolute link of the service.
func pathOf(t *testing.T, link string) string {
	t.Helper()
	p, ok := strings.CutPrefix(link, edge.DefaultBaseURL)
	if !ok {
		t.Fatalf("link %s is not on the base URL", link)
	}
	return p
}

// exportRequest asks for an export and returns its answer.
func (s *exportServer) exportRequest(t *testing.T, tok, body string) response {
	t.Helper()
	h := []string{"Content-Type", "application/json"}
	if tok != "" {
		h = append(h, "Authorization", "Bearer "+tok)
	}
	return s.send(t, "POST", "/v1/d/demo/exports", strings.NewReader(body), h...)
}

// runExport asks for an export and polls it (bounded) until it ends; it returns the export.
func (s *exportServer) runExport(t *testing.T, tok, body string) export.Export {
	t.Helper()
	r := s.exportRequest(t, tok, body)
	if r.status != http.StatusAccepted {
		t.Fatalf("POST exports: %d %s", r.status, r.body)
	}
	var e export.Export
	if err := json.Unmarshal(r.body, &e); err != nil {
		t.Fatal(err)
	}
	return s.waitExport(t, tok, e.ID)
}

// waitExport polls an export, for at most a minute, until it has ended.
func (s *exportServer) waitExport(t *testing.T, tok, id string) export.Export {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		r := s.getAs(t, tok, "/v1/d/demo/exports/"+id)
		if r.status != http.StatusOK {
			t.Fatalf("GET export: %d %s", r.status, r.body)
		}
		var e export.Export
		if err := json.Unmarshal(r.body, &e); err != nil {
			t.Fatal(err)
		}
		if dirsvc.ExportDone(e.Status) {
			return e
		}
		if time.Now().After(deadline) {
			t.Fatalf("export %s still %s after a minute", id, e.Status)
		}
		time.Sleep(5 * time.Millisecond) // a poll, as a client's
	}
}

// files downloads every file of a succeeded export through its link.
func (s *exportServer) files(t *testing.T, e export.Export) map[string][]byte {
	t.Helper()
	if e.Status != dirsvc.ExportSucceeded {
		t.Fatalf("export %s: %s (%s)", e.ID, e.Status, e.Error)
	}
	out := map[string][]byte{}
	for _, f := range e.Files {
		r := s.get(t, pathOf(t, f.URL))
		if r.status != http.StatusOK {
			t.Fatalf("download %s: %d %s", f.Name, r.status, r.body)
		}
		if int64(len(r.body)) != f.Bytes {
			t.Errorf("%s: %d bytes, the export says %d", f.Name, len(r.body), f.Bytes)
		}
		out[f.Name] = r.body
	}
	return out
}

// exportCallers are the partner tiers an export serves, with export:run.
func exportCallers(t *testing.T, area string) []caller {
	all := "graph:read export:run practitioners:read leadership:read"
	return []caller{
		{"professional", token(t, grant{dir: "demo", tier: dirsvc.Professional, scopes: all}), dirsvc.Professional},
		{"partner", token(t, grant{dir: "demo", tier: dirsvc.Partner, scopes: all}), dirsvc.Partner},
		{"partner without practitioners or leadership", token(t, grant{dir: "demo", tier: dirsvc.Partner, scopes: "graph:read export:run", client: "dirp_other"}), dirsvc.Partner},
		{"narrowed professional", token(t, grant{dir: "demo", tier: dirsvc.Professional, scopes: all,
			narrowing: dirsvc.Narrowing{Areas: []string{area}}}), dirsvc.Professional},
	}
}

// listBodies pages through a REST list and returns its items' bodies.
func listBodies(t *testing.T, s *testServer, tok, path string) []json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	next := path + "?limit=100"
	for next != "" {
		r := s.getAs(t, tok, next)
		if r.status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", next, r.status, r.body)
		}
		var page struct {
			Items      []json.RawMessage
			NextCursor *string
		}
		if err := json.Unmarshal(r.body, &page); err != nil {
			t.Fatal(err)
		}
		out = append(out, page.Items...)
		next = ""
		if page.NextCursor != nil {
			next = path + "?limit=100&cursor=" + url.QueryEscape(*page.NextCursor)
		}
	}
	return out
}

// jsonExport is the JSON export file.
type jsonExport struct {
	Directory, Audience string
	Organisations       []json.RawMessage
	Locations           []json.RawMessage
	Services            []json.RawMessage
	Practitioners       []json.RawMessage
	Roles               []json.RawMessage
}

func idOf(t *testing.T, body []byte) string {
	var h struct{ PublicID string }
	if err := json.Unmarshal(body, &h); err != nil || h.PublicID == "" {
		t.Fatalf("no publicId in %s", body)
	}
	return h.PublicID
}

// TestExportsHoldWhatEachTierReads exports the demo directory (every kind of restrictable detail for
// every set of tiers, canaries in each, leadership switched on, a closed and a merged service) as
// every partner tier, and checks every file: no canary the tier may not see; the JSON export one
// line whose records equal, body for body and in order, what the REST lists and record reads give
// the tier; the CSV files the same records in the same order; every FHIR NDJSON line valid and
// equal to what the tier's FHIR search gives; practitioners only with practitioners:read; the
// attribution. Anonymous and public-tier callers, and a client without export:run, get 403.
func TestExportsHoldWhatEachTierReads(t *testing.T) {
	file := demoFiles(t)["demo"]
	s := newExportServer(t, file)
	if err := s.store.SetSeniorManagementAvailable(context.Background(), "demo", true); err != nil {
		t.Fatal(err)
	}
	snap, err := primary.ParseImport(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	closeAndMerge(t, s.testServer, "demo", snap)
	for name, tok := range map[string]string{
		"anonymous":                   "",
		"a public-tier client":        token(t, grant{dir: "demo", tier: dirsvc.Public, scopes: "graph:read export:run"}),
		"a client without export:run": token(t, grant{dir: "demo", tier: dirsvc.Partner, scopes: "graph:read"}),
	} {
		if r := s.exportRequest(t, tok, `{}`); r.status != http.StatusForbidden || r.json(t)["code"] != dirsvc.EForbiddenScope {
			t.Errorf("%s asks for an export: %d %s", name, r.status, r.body)
		}
	}
	rd, err := s.store.Reader(context.Background(), "demo")
	if err != nil {
		t.Fatal(err)
	}
	info, err := rd.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range exportCallers(t, broadArea(snap)) {
		t.Run(c.name, func(t *testing.T) {
			practitioners := strings.Contains(c.name, "without") == false
			e := s.runExport(t, c.tok, `{"formats":["csv","json","fhir-ndjson"]}`)
			files := s.files(t, e)
			for name, b := range files {
				if leaks := demo.Leaks(b, c.aud); len(leaks) > 0 {
					t.Errorf("%s leaks %v to %s", name, leaks, c.name)
				}
			}
			// The JSON export: one line, the tier's records.
			raw := files["directory.json"]
			if bytes.Count(raw, []byte("\n")) != 1 || !bytes.HasSuffix(raw, []byte("\n")) {
				t.Errorf("directory.json is not one line: %d line breaks", bytes.Count(raw, []byte("\n")))
			}
			var je jsonExport
			if err := json.Unmarshal(raw, &je); err != nil {
				t.Fatal(err)
			}
			if je.Directory != "demo" || je.Audience != c.aud.String() {
				t.Errorf("directory.json is of %q for %q", je.Directory, je.Audience)
			}
			equalBodies(t, "services", je.Services, listBodies(t, s.testServer, c.tok, "/v1/d/demo/services"))
			if practitioners {
				equalBodies(t, "practitioners", je.Practitioners, listBodies(t, s.testServer, c.tok, "/v1/d/demo/practitioners"))
			} else if len(je.Practitioners) > 0 || files["practitioners.csv"] != nil || files["Practitioner.ndjson"] != nil {
				t.Errorf("practitioners exported without practitioners:read")
			}
			// Organisations, locations and roles: the records the tier's FHIR searches walk, each
			// as the tier reads it (view=brief, with leadership as the record read gives it).
			fc := newFHIRClient(t, s.testServer, c, "demo", "AU")
			for _, k := range []struct {
				kind   dirsvc.Kind
				bodies []json.RawMessage
				path   string
			}{
				{dirsvc.KindOrganisation, je.Organisations, "organisations/%s?view=brief"},
				{dirsvc.KindLocation, je.Locations, "locations/%s?view=brief"},
				{dirsvc.KindRole, je.Roles, "roles/%s"},
			} {
				matches, _, ok := fc.search("/" + fhir.TypeOf(k.kind) + "?_count=100")
				if !ok {
					t.Fatalf("FHIR search of %s failed", fhir.TypeOf(k.kind))
				}
				var want []json.RawMessage
				for _, m := range matches {
					var res struct{ ID string }
					json.Unmarshal(m, &res)
					id := fhir.PublicID(k.kind, res.ID)
					r := s.getAs(t, c.tok, "/v1/d/demo/"+strings.Replace(k.path, "%s", id, 1))
					if r.status != http.StatusOK {
						t.Fatalf("read %s: %d", id, r.status)
					}
					want = append(want, r.body)
				}
				equalBodies(t, string(k.kind)+"s", k.bodies, want)
				if len(k.bodies) == 0 {
					t.Errorf("no %ss exported", k.kind)
				}
				checkCSV(t, files, k.kind, k.bodies)
			}
			checkCSV(t, files, dirsvc.KindService, je.Services)
			if practitioners {
				checkCSV(t, files, dirsvc.KindPractitioner, je.Practitioners)
			}
			// FHIR NDJSON: every line valid, and the very resources of the tier's FHIR searches.
			for _, typ := range fhir.Types {
				lines := ndjsonLines(t, files[export.FHIRFileName(typ)])
				for i, l := range lines {
					for _, p := range fc.v.check("AU", l) {
						t.Errorf("%s line %d: %s", typ, i+1, p)
					}
				}
				if typ == fhir.TypePractitioner && !practitioners {
					continue
				}
				matches, _, ok := fc.search("/" + typ + "?_count=100")
				if !ok {
					t.Fatalf("FHIR search of %s failed", typ)
				}
				equalBodies(t, typ+".ndjson", lines, matches)
			}
			att := string(files[export.AttributionFile])
			if !strings.Contains(att, info.Licence) || !strings.Contains(att, info.Attribution) {
				t.Errorf("ATTRIBUTION.txt lacks the licence or the address attribution:\n%s", att)
			}
		})
	}
}

// equalBodies checks that two lists of JSON bodies are equal, in order.
func equalBodies(t *testing.T, what string, got, want []json.RawMessage) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d exported, the reads give %d", what, len(got), len(want))
	}
	for i := range min(len(got), len(want)) {
		if !bytes.Equal(compact(got[i]), compact(want[i])) {
			t.Errorf("%s #%d differs:\nexported %s\nread     %s", what, i, got[i], want[i])
			return
		}
	}
}

func compact(b []byte) []byte {
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		return b
	}
	return out.Bytes()
}

// ndjsonLines splits an NDJSON file into its lines.
func ndjsonLines(t *testing.T, b []byte) []json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		out = append(out, json.RawMessage(slices.Clone(sc.Bytes())))
	}
	if len(b) > 0 && !bytes.HasSuffix(b, []byte("\n")) {
		t.Errorf("an NDJSON file does not end with a line break")
	}
	return out
}

// checkCSV checks a kind's CSV: a row per record, in the same order, and the ownership columns last.
func checkCSV(t *testing.T, files map[string][]byte, kind dirsvc.Kind, bodies []json.RawMessage) {
	t.Helper()
	name := export.CSVFileName(kind)
	rows, err := csv.NewReader(bytes.NewReader(files[name])).ReadAll()
	if err != nil || len(rows) == 0 {
		t.Fatalf("%s: %v (%d rows)", name, err, len(rows))
	}
	head := rows[0]
	if kind == dirsvc.KindService && !slices.Equal(head[len(head)-2:], []string{"ownershipType", "ownershipSource"}) {
		t.Errorf("%s does not end with ownershipType, ownershipSource: %v", name, head)
	}
	if head[0] != "publicId" {
		t.Fatalf("%s starts with %q", name, head[0])
	}
	if len(rows)-1 != len(bodies) {
		t.Errorf("%s: %d rows, %d records", name, len(rows)-1, len(bodies))
		return
	}
	for i, b := range bodies {
		if rows[i+1][0] != idOf(t, b) {
			t.Errorf("%s row %d is %s, the JSON export's record %s", name, i+1, rows[i+1][0], idOf(t, b))
			return
		}
		if want := viewCells(t, kind, head, b); !slices.Equal(rows[i+1], want) {
			t.Errorf("%s row %d:\n%q\nthe view's cells are\n%q", name, i+1, rows[i+1], want)
			return
		}
	}
}

// viewCells returns the cells of the columns of a view, as the CSV rules say (export/csv.go): the
// view decoded with encoding/json into its type, and each column's field written as a text, number
// or boolean as it is, a reference as its public ID, a coded value as its code, a time in UTC, an
// empty list as nothing and any other structure as its JSON.
func viewCells(t *testing.T, kind dirsvc.Kind, columns []string, body []byte) []string {
	t.Helper()
	views := map[dirsvc.Kind]any{
		dirsvc.KindOrganisation: &dirsvc.OrganisationView{}, dirsvc.KindLocation: &dirsvc.LocationView{},
		dirsvc.KindService: &dirsvc.ServiceView{}, dirsvc.KindPractitioner: &dirsvc.PractitionerView{}, dirsvc.KindRole: &dirsvc.RoleView{},
	}
	v := views[kind]
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatal(err)
	}
	fields := map[string]reflect.Value{}
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.Anonymous {
				walk(v.Field(i))
			} else if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
				fields[name] = v.Field(i)
			}
		}
	}
	walk(reflect.ValueOf(v).Elem())
	var out []string
	for _, c := range columns {
		f, ok := fields[c]
		if !ok {
			t.Fatalf("column %s is no field of the %s view", c, kind)
		}
		out = append(out, fieldCell(f))
	}
	return out
}

func fieldCell(v reflect.Value) string {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return ""
		}
		v = v.Elem()
	}
	switch x := v.Interface().(type) {
	case dirsvc.Ref:
		return x.PublicID
	case dirsvc.Ownership:
		return x.Code
	case dirsvc.CodeLabel:
		return x.Code
	case time.Time:
		if x.IsZero() {
			return ""
		}
		return x.UTC().Format(time.RFC3339Nano)
	}
	switch v.Kind() {
	case reflect.String:
		return v.String()
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Float32, reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'f', -1, 64)
	case reflect.Slice, reflect.Map:
		if v.Len() == 0 {
			return ""
		}
	}
	b, err := json.Marshal(v.Interface())
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestTakedownLeavesTheNextExportAtOnce takes a service down between two exports: the first holds
// it, the second (asked for right after the takedown) does not, in any format.
func TestTakedownLeavesTheNextExportAtOnce(t *testing.T) {
	s := newExportServer(t, demoFiles(t)["demo"])
	tok := token(t, grant{dir: "demo", tier: dirsvc.Partner, scopes: "graph:read export:run"})
	first := s.files(t, s.runExport(t, tok, `{"formats":["csv","json","fhir-ndjson"],"types":["service"]}`))
	var je jsonExport
	if err := json.Unmarshal(first["directory.json"], &je); err != nil || len(je.Services) == 0 {
		t.Fatalf("first export: %v, %d services", err, len(je.Services))
	}
	id := idOf(t, je.Services[len(je.Services)/2])
	ctx := context.Background()
	w, err := s.store.Writer(ctx, "demo")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Transition(ctx, id, dirsvc.Transition{To: dirsvc.StateTakedown}); err != nil {
		t.Fatal(err)
	}
	second := s.files(t, s.runExport(t, tok, `{"formats":["csv","json","fhir-ndjson"],"types":["service"]}`))
	for name, b := range first {
		if name != export.AttributionFile && name != export.FHIRFileName(fhir.TypeEndpoint) && !bytes.Contains(b, []byte(id)) && !bytes.Contains(b, []byte(fhir.ResourceID(id))) {
			t.Errorf("the first export's %s lacks %s", name, id)
		}
	}
	for name, b := range second {
		if bytes.Contains(b, []byte(`"`+id+`"`)) || bytes.Contains(b, []byte(id+",")) || bytes.Contains(b, []byte(`"`+fhir.ResourceID(id)+`"`)) {
			t.Errorf("the export after the takedown holds %s in %s", id, name)
		}
	}
	if err := json.Unmarshal(second["directory.json"], &je); err != nil {
		t.Fatal(err)
	}
	equalBodies(t, "services after the takedown", je.Services, listBodies(t, s.testServer, tok, "/v1/d/demo/services"))
}

// TestExportLinksAreSignedAndExpire checks the download links: no credentials needed; an altered
// signature, name or expiry, another export's ID, and an expired link answer 403; a removed file
// 404; the links' lifetime ends with the file's retention. Another client's export answers as a
// missing one.
func TestExportLinksAreSignedAndExpire(t *testing.T) {
	s := newExportServer(t, demoFiles(t)["demo"])
	tok := token(t, grant{dir: "demo", tier: dirsvc.Partner, scopes: "graph:read export:run"})
	a := s.runExport(t, tok, `{"formats":["csv"],"types":["organisation","location"]}`)
	b := s.runExport(t, tok, `{"formats":["csv"],"types":["organisation"]}`)
	s.files(t, a)
	link := func(e export.Export, name string) *url.URL {
		for _, f := range e.Files {
			if f.Name == name {
				u, err := url.Parse(pathOf(t, f.URL))
				if err != nil {
					t.Fatal(err)
				}
				if f.LinkExpiresAt == nil || s.skew.Load() == 0 && f.LinkExpiresAt.Sub(time.Now()) > export.LinkLifetime+time.Minute {
					t.Errorf("%s: the link expires at %v", name, f.LinkExpiresAt)
				}
				return u
			}
		}
		t.Fatalf("no file %s", name)
		return nil
	}
	get := func(u *url.URL) response { return s.get(t, u.String()) }
	orgs := link(a, "organisations.csv")
	altered := func(f func(u *url.URL)) *url.URL {
		c := *orgs
		f(&c)
		return &c
	}
	for name, u := range map[string]*url.URL{
		"an altered sig": altered(func(u *url.URL) {
			q := u.Query()
			sig := []byte(q.Get("sig"))
			sig[3] ^= 1
			q.Set("sig", string(sig))
			u.RawQuery = q.Encode()
		}),
		"an altered name": altered(func(u *url.URL) { u.Path = strings.Replace(u.Path, "organisations.csv", "locations.csv", 1) }),
		"an altered expiry": altered(func(u *url.URL) {
			q := u.Query()
			q.Set("expires", q.Get("expires")+"0")
			u.RawQuery = q.Encode()
		}),
		"another export's id": altered(func(u *url.URL) { u.Path = strings.Replace(u.Path, a.ID, b.ID, 1) }),
		"no sig": altered(func(u *url.URL) {
			q := u.Query()
			q.Del("sig")
			u.RawQuery = q.Encode()
		}),
	} {
		if r := get(u); r.status != http.StatusForbidden {
			t.Errorf("%s: %d %s", name, r.status, r.body)
		}
	}
	if r := get(orgs); r.status != http.StatusOK {
		t.Fatalf("the link itself: %d", r.status)
	}
	// Expired: an hour and a bit later.
	s.skew.Store(int64(export.LinkLifetime + time.Minute))
	if r := get(orgs); r.status != http.StatusForbidden {
		t.Errorf("an expired link: %d %s", r.status, r.body)
	}
	// A fresh link works again; once the file is gone it answers 404.
	other := token(t, grant{dir: "demo", tier: dirsvc.Partner, scopes: "graph:read export:run", client: "dirp_someone"})
	if r := s.getAs(t, other, "/v1/d/demo/exports/"+a.ID); r.status != http.StatusNotFound {
		t.Errorf("another client reads the export: %d", r.status)
	}
	r := s.getAs(t, tok, "/v1/d/demo/exports/"+a.ID)
	var again export.Export
	json.Unmarshal(r.body, &again)
	fresh := link(again, "locations.csv")
	if r := get(fresh); r.status != http.StatusOK {
		t.Fatalf("a fresh link: %d", r.status)
	}
	if err := os.Remove(filepath.Join(dirsvc.ExportsPath(s.store.Root()), a.ID, "locations.csv")); err != nil {
		t.Fatal(err)
	}
	if r := get(fresh); r.status != http.StatusNotFound {
		t.Errorf("a removed file: %d %s", r.status, r.body)
	}
	// Past the retention the export is removed, with its files.
	s.skew.Store(int64(export.Retention + time.Hour))
	s.exports.Prune(context.Background())
	if r := s.getAs(t, tok, "/v1/d/demo/exports/"+a.ID); r.status != http.StatusNotFound {
		t.Errorf("an export past its retention: %d", r.status)
	}
	if _, err := os.Stat(filepath.Join(dirsvc.ExportsPath(s.store.Root()), a.ID)); !os.IsNotExist(err) {
		t.Errorf("the export's folder is still there: %v", err)
	}
}

// TestExportRequestsAreChecked sends bad export requests: each is a 400 naming what is wrong.
func TestExportRequestsAreChecked(t *testing.T) {
	s := newExportServer(t, demoFiles(t)["demo"])
	tok := token(t, grant{dir: "demo", tier: dirsvc.Partner, scopes: "graph:read export:run"})
	for body, param := range map[string]string{
		`{"formats":["xlsx"]}`:   "formats",
		`{"types":["patient"]}`:  "types",
		`{"since":"yesterday"}`:  "since",
		`{"colour":"blue"}`:      "colour",
		`{"formats":"csv"}`:      "formats",
		`[1,2]`:                  "body",
		`{"formats":["csv"]} {}`: "body",
	} {
		r := s.exportRequest(t, tok, body)
		if r.status != http.StatusBadRequest || r.json(t)["param"] != param {
			t.Errorf("%.40q: %d %s, want 400 naming %s", body, r.status, r.body, param)
		}
	}
	if r := s.exportRequest(t, tok, strings.Repeat(" ", 17<<10)+"{}"); r.status != http.StatusRequestEntityTooLarge || r.json(t)["code"] != dirsvc.ETooLarge {
		t.Errorf("a body past the bound: %d %s, want 413", r.status, r.body)
	}
	if r := s.getAs(t, tok, "/v1/d/demo/exports/not-a-uuid"); r.status != http.StatusNotFound {
		t.Errorf("a malformed id: %d", r.status)
	}
	if r := s.getAs(t, tok, "/v1/d/demo/exports?limit=5"); r.status != http.StatusBadRequest || r.json(t)["param"] != "limit" {
		t.Errorf("a parameter of the list: %d %s", r.status, r.body)
	}
	e := s.runExport(t, tok, `{"formats":["json"],"types":["location"],"since":"2000-01-01T00:00:00Z"}`)
	if e.Status != dirsvc.ExportSucceeded {
		t.Fatalf("export: %s %s", e.Status, e.Error)
	}
	r := s.getAs(t, tok, "/v1/d/demo/exports")
	var list export.ExportList
	if err := json.Unmarshal(r.body, &list); err != nil || len(list.Items) != 1 || list.Items[0].ID != e.ID {
		t.Errorf("the list: %v %s", err, r.body)
	}
	future := s.runExport(t, tok, `{"formats":["json"],"types":["location"],"since":"2999-01-01T00:00:00Z"}`)
	if future.Records != 0 {
		t.Errorf("an export since the future holds %d records", future.Records)
	}
}

// hsdsSchemas compiles the HSDS 3.0 schemas of the tables the HSDS export writes.
func hsdsSchemas(t *testing.T) map[string]*jsonschema.Schema {
	t.Helper()
	const base = "https://hsds.invalid/schema/"
	dir := filepath.Join("..", "testdata", "hsds-3.0", "schema")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	for _, e := range ents {
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		if err := c.AddResource(base+e.Name(), doc); err != nil {
			t.Fatal(err)
		}
	}
	out := map[string]*jsonschema.Schema{}
	for _, table := range []string{"organization", "location", "service", "service_at_location"} {
		sch, err := c.Compile(base + table + ".json")
		if err != nil {
			t.Fatalf("compile %s: %v", table, err)
		}
		out[table] = sch
	}
	return out
}

// TestHSDSExportValidates exports the demo directory as HSDS 3.0 for each partner tier: every
// object validates against the HSDS 3.0 schemas, every reference names an object of the export,
// the tables hold the records the JSON export holds, and no canary the tier may not see appears.
func TestHSDSExportValidates(t *testing.T) {
	file := demoFiles(t)["demo"]
	s := newExportServer(t, file)
	snap, err := primary.ParseImport(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	schemas := hsdsSchemas(t)
	for _, c := range exportCallers(t, broadArea(snap)) {
		t.Run(c.name, func(t *testing.T) {
			files := s.files(t, s.runExport(t, c.tok, `{"formats":["json","hsds"]}`))
			var je jsonExport
			if err := json.Unmarshal(files["directory.json"], &je); err != nil {
				t.Fatal(err)
			}
			ids := map[string]map[string]bool{}
			tables := map[string]string{"organization": "hsds_organizations.json", "location": "hsds_locations.json",
				"service": "hsds_services.json", "service_at_location": export.HSDSServiceAtLocations}
			objects := map[string][]map[string]any{}
			for table, name := range tables {
				raw, ok := files[name]
				if !ok {
					t.Fatalf("no %s", name)
				}
				if leaks := demo.Leaks(raw, c.aud); len(leaks) > 0 {
					t.Errorf("%s leaks %v", name, leaks)
				}
				var list []any
				if err := json.Unmarshal(raw, &list); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				ids[table] = map[string]bool{}
				for i, o := range list {
					if err := schemas[table].Validate(o); err != nil {
						t.Errorf("%s #%d is not an HSDS %s: %v", name, i, table, err)
					}
					m := o.(map[string]any)
					ids[table][m["id"].(string)] = true
					objects[table] = append(objects[table], m)
				}
			}
			for table, want := range map[string][]json.RawMessage{"organization": je.Organisations, "location": je.Locations, "service": je.Services} {
				if len(objects[table]) != len(want) {
					t.Errorf("%d HSDS %ss, %d in the JSON export", len(objects[table]), table, len(want))
					continue
				}
				for i, b := range want {
					if objects[table][i]["id"] != export.HSDSID(idOf(t, b)) {
						t.Errorf("HSDS %s #%d is not %s", table, i, idOf(t, b))
						break
					}
				}
			}
			for table, objs := range objects {
				for _, o := range objs {
					for field, target := range map[string]string{"organization_id": "organization", "location_id": "location", "service_id": "service"} {
						if ref, ok := o[field].(string); ok && !ids[target][ref] {
							t.Errorf("a %s's %s %s names no %s of the export", table, field, ref, target)
						}
					}
				}
			}
			if len(objects["service_at_location"]) == 0 {
				t.Errorf("no service_at_location")
			}
			// Beside FHIR, the objects are made from the views FHIR decodes: the same bytes.
			withFHIR := s.files(t, s.runExport(t, c.tok, `{"formats":["fhir-ndjson","hsds"]}`))
			for _, name := range tables {
				if !bytes.Equal(withFHIR[name], files[name]) {
					t.Errorf("%s differs beside FHIR", name)
				}
			}
		})
	}
}

// bucketStore is a bucket's exports prefix as the primary keeps exports in it.
type bucketStore struct{ *replicate.Blobs }

func (b bucketStore) Open(ctx context.Context, name string) (export.Blob, error) {
	bl, err := b.Blobs.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	return bl, nil
}

// TestExportsKeepTheirFilesInObjectStorage runs exports with object storage configured: a
// succeeded export's files and status are in the bucket; a node that lost the export's folder
// answers the export and serves its files from the bucket; past the retention the bucket holds
// nothing of it; and a bucket that does not answer fails the export, leaving no file behind.
func TestExportsKeepTheirFilesInObjectStorage(t *testing.T) {
	ctx := context.Background()
	fs := s3test.New(t)
	target := replicate.Target{S3: &replicate.S3{Endpoint: fs.URL, Bucket: s3test.BucketName, Path: "dirsvc", Region: "us-east-1",
		ForcePathStyle: true}, StorageTimeout: 10 * time.Second}
	blobs, err := target.Blobs(ctx, replicate.ExportsPrefix)
	if err != nil {
		t.Fatal(err)
	}
	s := newExportServerWith(t, bucketStore{blobs}, demoFiles(t)["demo"])
	tok := token(t, grant{dir: "demo", tier: dirsvc.Partner, scopes: "graph:read export:run"})
	e := s.runExport(t, tok, `{"formats":["csv","json"],"types":["organisation","location"]}`)
	if e.Status != dirsvc.ExportSucceeded {
		t.Fatalf("the export: %s %s", e.Status, e.Error)
	}
	local := s.files(t, e)
	stored := func() []string {
		var keys []string
		for _, k := range fs.Keys(t) {
			if strings.HasPrefix(k, "dirsvc/exports/"+e.ID+"/") {
				keys = append(keys, strings.TrimPrefix(k, "dirsvc/exports/"+e.ID+"/"))
			}
		}
		return keys
	}
	want := []string{"export.json"}
	for _, f := range e.Files {
		want = append(want, f.Name)
	}
	if got := stored(); !sameSet(got, want) {
		t.Errorf("the bucket holds %v of the export, want %v", got, want)
	}
	other := token(t, grant{dir: "demo", tier: dirsvc.Partner, scopes: "graph:read export:run", client: "dirp_other"})
	// listed returns the ids of a client's export list.
	listed := func(tok string) []string {
		t.Helper()
		r := s.getAs(t, tok, "/v1/d/demo/exports")
		var list export.ExportList
		if r.status != http.StatusOK || json.Unmarshal(r.body, &list) != nil {
			t.Fatalf("the export list: %d %s", r.status, r.body)
		}
		var ids []string
		for _, it := range list.Items {
			ids = append(ids, it.ID)
		}
		return ids
	}
	if ids := listed(tok); !slices.Equal(ids, []string{e.ID}) {
		t.Errorf("the list holds %v, want the export once", ids)
	}

	// The node loses the export's folder (a primary restored from the bucket has none).
	if err := os.RemoveAll(filepath.Join(dirsvc.ExportsPath(s.store.Root()), e.ID)); err != nil {
		t.Fatal(err)
	}
	r := s.getAs(t, tok, "/v1/d/demo/exports/"+e.ID)
	var again export.Export
	if r.status != http.StatusOK || json.Unmarshal(r.body, &again) != nil || again.Status != dirsvc.ExportSucceeded {
		t.Fatalf("the export without its folder: %d %s", r.status, r.body)
	}
	if r := s.getAs(t, other, "/v1/d/demo/exports/"+e.ID); r.status != http.StatusNotFound {
		t.Errorf("another client reads the export from the bucket: %d", r.status)
	}
	// The list holds it, from the bucket, for its client only.
	if ids := listed(tok); !slices.Equal(ids, []string{e.ID}) {
		t.Errorf("the list of a node without the export's folder holds %v, want the export", ids)
	}
	if ids := listed(other); len(ids) > 0 {
		t.Errorf("another client's list holds %v", ids)
	}
	// With the bucket down, the list answers the node's own exports (here none).
	fs.Set(s3test.Down)
	if ids := listed(tok); len(ids) > 0 {
		t.Errorf("the list with the bucket down holds %v", ids)
	}
	fs.Set(s3test.Up)
	if fromBucket := s.files(t, again); !maps.EqualFunc(fromBucket, local, bytes.Equal) {
		t.Error("the files served from the bucket differ from the ones the export wrote")
	}

	// Past the retention the bucket holds nothing of it.
	s.skew.Store(int64(export.Retention + time.Hour))
	s.exports.Prune(ctx)
	if got := stored(); len(got) > 0 {
		t.Errorf("past its retention the bucket still holds %v of the export", got)
	}
	s.skew.Store(0)

	// A bucket that does not answer fails the export: nothing is served as done.
	fs.Set(s3test.Down)
	failed := s.runExport(t, tok, `{"formats":["csv"],"types":["organisation"]}`)
	fs.Set(s3test.Up)
	if failed.Status != dirsvc.ExportFailed || !strings.Contains(failed.Error, "Object storage") || len(failed.Files) != 0 {
		t.Errorf("an export with the bucket down: %s %q, %d files", failed.Status, failed.Error, len(failed.Files))
	}
	left, _ := os.ReadDir(filepath.Join(dirsvc.ExportsPath(s.store.Root()), failed.ID))
	for _, f := range left {
		if f.Name() != "export.json" {
			t.Errorf("the failed export's folder keeps %s", f.Name())
		}
	}
}

// sameSet reports whether a and b hold the same strings, in any order.
func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
