package edgetest_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/edge"
	"github.com/dirsvc/dirsvc/edge/edgetest"
	"github.com/pb33f/libopenapi"
)

// rawDocument returns the embedded OpenAPI document as plain JSON values.
func rawDocument(t *testing.T) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(edge.OpenAPIDocument(), &doc); err != nil {
		t.Fatalf("edge/openapi.json is not JSON: %v", err)
	}
	return doc
}

func TestDocumentIsOpenAPI31(t *testing.T) {
	doc, err := libopenapi.NewDocument(edge.OpenAPIDocument())
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if v := doc.GetVersion(); v != "3.1.0" {
		t.Errorf("openapi = %q, want 3.1.0", v)
	}
	m, err := doc.BuildV3Model()
	if err != nil {
		t.Fatalf("build model: %v", err)
	}
	if m.Model.Info == nil || m.Model.Info.Version != "1.0.0" || m.Model.Info.Title != "Directory Read API" {
		t.Errorf("info = %+v, want title Directory Read API, version 1.0.0", m.Model.Info)
	}
	edgetest.NewChecker(t) // validates the document against the OpenAPI 3.1 schema

	want := []string{"listServices", "getService", "getLocation", "getOrganisation", "getLeadership",
		"listPractitioners", "getPractitioner", "getRole", "searchIdentifiers", "getDeveloperInfo", "getFederationManifest", "getTaxonomy", "searchServices", "searchOrganisations", "autocomplete", "getNearestLocality",
		"listCategories", "getCategory", "listCollections", "getCollection", "getOpenAPI", "getHealth",
		"requestToken", "getJWKS", "putRecord", "transitionRecord", "listChanges",
		"listWebhooks", "createWebhook", "getWebhook", "updateWebhook", "deleteWebhook", "rotateWebhookSecret",
		"testWebhook", "listWebhookDeliveries", "getWebhookDelivery", "replayWebhookDelivery",
		"getFHIRCapabilityStatement", "searchFHIR", "readFHIR", "getOwnershipExtension", "getOwnershipCodeSystem",
		"listExports", "createExport", "getExport", "downloadExportFile", "bulkExport", "bulkExportPost",
		"getBulkExportStatus", "cancelBulkExport", "forwardProposal", "forwardIssue", "getForwardedReceipt",
		"withdrawForwarded", "listModerationQueue", "getModerationItem", "moderate", "getDeveloperPortal",
		"getSandboxSignup", "signUpForSandbox", "createAccessRequest"}
	want = append(want, "getSitemap", "getImage", "getAuthorizationServerMetadata", "getSMARTConfiguration")
	var got []string
	for tmpl, item := range m.Model.Paths.PathItems.FromOldest() {
		for method, op := range item.GetOperations().FromOldest() {
			where := strings.ToUpper(method) + " " + tmpl
			if op.OperationId == "" || op.Summary == "" || op.Description == "" || len(op.Tags) == 0 {
				t.Errorf("%s: want operationId, summary, description and tags; got %q, %q, %d characters, %v",
					where, op.OperationId, op.Summary, len(op.Description), op.Tags)
			}
			got = append(got, op.OperationId)
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("operationIds = %v, want %v", got, want)
	}
}

// routePattern matches the patterns registered in edge/routes.go: s.mux.HandleFunc("GET /path", ...),
// s.handleExpensive("GET /path", ...) and s.handleCopyFree("POST /path", ...).
var routePattern = regexp.MustCompile(`\.(?:HandleFunc|handleExpensive|handleCopyFree)\(\s*"(?:([A-Z]+)\s+)?([^"]*)"`)

// splitPattern splits a net/http route pattern into its method ("" for every method) and path,
// leaving out a host and writing a trailing wildcard {name...} as {name}.
func splitPattern(pattern string) (method, path string) {
	method, path, ok := strings.Cut(pattern, " ")
	if !ok {
		method, path = "", pattern
	}
	path = strings.TrimSpace(path)
	if i := strings.Index(path, "/"); i > 0 {
		path = path[i:] // a host in the pattern
	}
	path = strings.TrimSuffix(path, "{$}")
	path = regexp.MustCompile(`\{([A-Za-z0-9_]+)\.\.\.\}`).ReplaceAllString(path, "{$1}")
	return method, path
}

// routes returns the method and path of every route of edge/routes.go, as "GET /v1/...", leaving out
// the catch-all "/".
func routes(t *testing.T) []string {
	t.Helper()
	src, err := os.ReadFile("../routes.go")
	if err != nil {
		t.Fatalf("read routes: %v", err)
	}
	var out []string
	for _, m := range routePattern.FindAllStringSubmatch(string(src), -1) {
		method, path := splitPattern(m[1] + " " + m[2])
		if path == "/" {
			continue
		}
		if method == "" {
			method = "GET"
		}
		out = append(out, method+" "+path)
	}
	if len(out) == 0 {
		t.Fatalf("found no routes in edge/routes.go: has the registration changed? (pattern %s)", routePattern)
	}
	return out
}

// edgeConstants are the constants of package edge that the primary's route patterns are built from.
// A pattern naming another one fails TestEveryRouteIsDocumented until it is added here.
var edgeConstants = map[string]string{
	"TokenPath": edge.TokenPath, "JWKSPath": edge.JWKSPath, "OpenAPIPath": edge.OpenAPIPath,
}

// primaryRoute is a route the primary registers on the edge server (Access.Mount and any other call
// of Handle or HandleFunc in package primary).
type primaryRoute struct {
	method, path string // method "" matches every method
	where        string
}

// primaryRoutes returns the routes registered by the non-test files of package primary (and its
// subpackages): every call of a method named Handle or HandleFunc whose pattern is a string literal,
// a constant of package edge, or a concatenation of those.
func primaryRoutes(t *testing.T) []primaryRoute {
	t.Helper()
	fset := token.NewFileSet()
	var out []primaryRoute
	err := filepath.WalkDir("../../primary", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) != 2 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "Handle" && sel.Sel.Name != "HandleFunc" {
				return true
			}
			where := fset.Position(call.Pos()).String()
			pattern, ok := constantString(call.Args[0])
			if !ok {
				t.Errorf("%s: cannot read the route pattern: build it from string literals and constants of package edge (edgeConstants), or teach this test", where)
				return true
			}
			method, p := splitPattern(pattern)
			out = append(out, primaryRoute{method, p, where})
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("found no routes in package primary: has the registration (Access.Mount) changed?")
	}
	return out
}

// constantString evaluates a route pattern expression: string literals, constants of package edge
// and their concatenation.
func constantString(e ast.Expr) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(e.Value)
		return s, err == nil
	case *ast.BinaryExpr:
		if e.Op != token.ADD {
			return "", false
		}
		x, ok1 := constantString(e.X)
		y, ok2 := constantString(e.Y)
		return x + y, ok1 && ok2
	case *ast.ParenExpr:
		return constantString(e.X)
	case *ast.SelectorExpr:
		if pkg, ok := e.X.(*ast.Ident); ok && pkg.Name == "edge" {
			v, ok := edgeConstants[e.Sel.Name]
			return v, ok
		}
	}
	return "", false
}

// TestEveryRouteIsDocumented holds the document's operations to the routes served: those of
// edge/routes.go and those the primary mounts on the edge server (the token endpoint). A route
// without a method beside routes with one for the same path only answers the other methods 405: the
// document cannot give those methods operations, so each documented operation of the path lists the
// 405 answer instead (the Checker holds such answers to it).
func TestEveryRouteIsDocumented(t *testing.T) {
	doc := rawDocument(t)
	paths, _ := doc["paths"].(map[string]any)
	documented := map[string]bool{}
	for tmpl, item := range paths {
		for method := range item.(map[string]any) {
			switch method {
			case "get", "put", "post", "delete", "options", "head", "patch", "trace":
				documented[strings.ToUpper(method)+" "+tmpl] = true
			}
		}
	}
	served := map[string]bool{}
	for _, r := range routes(t) {
		served[r] = true
		if !documented[r] {
			t.Errorf("route %s (edge/routes.go) is not in edge/openapi.json: document it", r)
		}
	}
	prim := primaryRoutes(t)
	withMethod := map[string]bool{}
	for _, r := range prim {
		if r.method != "" {
			withMethod[r.path] = true
		}
	}
	for _, r := range prim {
		if r.method == "" && withMethod[r.path] {
			// A fallback answering 405 to the methods the path does not offer.
			ops, _ := paths[r.path].(map[string]any)
			if len(ops) == 0 {
				t.Errorf("%s: the fallback route %s answers 405, but the path is not in edge/openapi.json", r.where, r.path)
			}
			for method, op := range ops {
				if m, ok := op.(map[string]any); ok && m["responses"] != nil {
					if _, ok := m["responses"].(map[string]any)["405"]; !ok {
						t.Errorf("%s: other methods of %s answer 405: %s %s must list response 405",
							r.where, r.path, strings.ToUpper(method), r.path)
					}
				}
			}
			continue
		}
		method := r.method
		if method == "" {
			method = "GET"
		}
		op := method + " " + r.path
		served[op] = true
		if !documented[op] {
			t.Errorf("route %s (%s, mounted by the primary) is not in edge/openapi.json: document it", op, r.where)
		}
	}
	if !served["POST "+edge.TokenPath] {
		t.Errorf("found no POST %s among the primary's routes: has Access.Mount changed?", edge.TokenPath)
	}
	for op := range documented {
		if !served[op] {
			t.Errorf("edge/openapi.json documents %s, which neither edge/routes.go nor the primary serves", op)
		}
	}
}

// recorder is a testing.TB that records failures instead of failing the test. Fatal stops the
// goroutine (runtime.Goexit) as testing.T does, so failing code must run under capture.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recorder) Error(args ...any) { r.Errorf("%s", fmt.Sprint(args...)) }

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Fatal(args ...any) { r.Fatalf("%s", fmt.Sprint(args...)) }

func (r *recorder) Fail() { r.Errorf("failed") }

func (r *recorder) FailNow() { r.Fatalf("failed") }

func (r *recorder) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.errors) > 0
}

func (r *recorder) failures() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.errors)
}

// capture runs fn on its own goroutine with a recorder and returns what it reported.
func capture(t *testing.T, fn func(tb testing.TB)) []string {
	t.Helper()
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(r)
	}()
	<-done
	return r.failures()
}

// response is a fake response written to an httptest.ResponseRecorder.
type response struct {
	status  int
	headers map[string]string
	body    string
}

func (fr response) result() *http.Response {
	rec := httptest.NewRecorder()
	for k, v := range fr.headers {
		if v != "" {
			rec.Header().Set(k, v)
		}
	}
	rec.WriteHeader(fr.status)
	io.WriteString(rec, fr.body)
	return rec.Result()
}

// recordHeaders are the headers of a record read; overrides replace them ("" removes one).
func recordHeaders(overrides ...string) map[string]string {
	h := map[string]string{"Content-Type": "application/json", "X-DIR-Audience": "public",
		"ETag": `"0123abcd"`, "Cache-Control": "public, s-maxage=60", "Content-Language": "en"}
	for i := 0; i+1 < len(overrides); i += 2 {
		h[overrides[i]] = overrides[i+1]
	}
	return h
}

// listHeaders are the headers of a list page, the same as a record's; overrides replace them ("" removes
// one).
func listHeaders(overrides ...string) map[string]string {
	return recordHeaders(overrides...)
}

func problemHeaders() map[string]string {
	return map[string]string{"Content-Type": "application/problem+json", "Cache-Control": "no-store"}
}

var updated = time.Date(2025, 3, 1, 9, 30, 0, 0, time.UTC)

func head(id string) dirsvc.RecordHead {
	return dirsvc.RecordHead{PublicID: id, Version: 3, LocalRevision: 2, LastUpdated: updated}
}

// serviceView is a service as the projection gate makes it, with the fields a public service has.
func serviceView() dirsvc.ServiceView {
	return dirsvc.ServiceView{RecordHead: head("svc_x"), Name: "Harbour GP", Slug: "harbour-gp",
		Organisation: dirsvc.Ref{PublicID: "org_a", Name: "Harbour Health"},
		Location:     &dirsvc.Ref{PublicID: "loc_a", Name: "Harbour clinic"},
		Type:         dirsvc.CodeLabel{Code: "general_practice", Label: "General practice"},
		TypeDisplay:  "General practice", PlatformTypeDisplay: "General practice",
		CategoryIcon: dirsvc.DefaultIcon, ReferralRequiredFromLabels: []string{},
		Contacts: []dirsvc.ContactView{{Kind: dirsvc.ContactPhone, Value: "+61290000000"}}}
}

// practitionerView is a practitioner who keeps their bio and photo private from the caller.
func practitionerView() dirsvc.PractitionerView {
	gender := dirsvc.GenderWoman
	return dirsvc.PractitionerView{RecordHead: head("prac_a"), Name: dirsvc.PersonName{Given: "Ann", Family: "Lee", Text: "Ann Lee"},
		Gender: &gender, Qualifications: []string{"MBBS"}, Languages: []string{"en"}, Identifiers: []dirsvc.IdentifierView{}}
}

func practitionerPage() dirsvc.PractitionerPage {
	return dirsvc.PractitionerPage{PractitionerView: practitionerView(), Roles: []dirsvc.RoleView{}, Services: []dirsvc.ServiceCard{}}
}

func organisationView() *dirsvc.OrganisationView {
	return &dirsvc.OrganisationView{RecordHead: head("org_a"), Name: "Harbour Health", MetroRural: "metro"}
}

func servicePage() dirsvc.ServicePage {
	return dirsvc.ServicePage{ServiceView: serviceView(), Organisation: organisationView(),
		Roles: []dirsvc.RoleView{}, OpenStatus: dirsvc.OpenStatus{Status: dirsvc.OpenNow, Detail: "Open until 17:00"}}
}

// jsonWithout returns v as JSON with the given top-level fields removed, or replaced when a value
// follows the name ("field=value" with a JSON value).
func jsonWithout(t *testing.T, v any, edits ...string) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, e := range edits {
		name, value, ok := strings.Cut(e, "=")
		if !ok {
			delete(m, name)
			continue
		}
		var x any
		if err := json.Unmarshal([]byte(value), &x); err != nil {
			t.Fatalf("edit %s: %v", e, err)
		}
		m[name] = x
	}
	b, err = json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func gzipped(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := io.WriteString(zw, s); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestCheckerCatchesProblems(t *testing.T) {
	c := edgetest.NewChecker(t)
	const svc = "/v1/d/demo/services/svc_x"
	tests := []struct {
		name   string
		method string
		target string
		resp   response
		want   []string // substrings of the failure; none means the response must pass
	}{
		{name: "valid page", target: svc,
			resp: response{200, recordHeaders(), jsonWithout(t, servicePage())}},
		{name: "valid page asked for", target: svc + "?view=page",
			resp: response{200, recordHeaders(), jsonWithout(t, servicePage())}},
		{name: "page with attribution and hidden organisation", target: svc,
			resp: response{200, recordHeaders("X-DIR-Attribution", "Addresses: (c) Geoscape Australia",
				"X-DIR-Attribution*", "UTF-8''Addresses%3A%20%C2%A9%20Geoscape%20Australia"),
				jsonWithout(t, servicePage(), "organisation=null")}},
		{name: "attribution with a byte outside ASCII", target: svc,
			resp: response{200, recordHeaders("X-DIR-Attribution", "Addresses: © Geoscape Australia"), jsonWithout(t, servicePage())},
			want: []string{"X-DIR-Attribution"}},
		{name: "attribution ext-value that is not RFC 8187", target: svc,
			resp: response{200, recordHeaders("X-DIR-Attribution", "Addresses: (c) Geoscape Australia",
				"X-DIR-Attribution*", "Addresses: © Geoscape Australia"), jsonWithout(t, servicePage())},
			want: []string{"X-DIR-Attribution*"}},
		{name: "page missing a field every representation has", target: svc,
			resp: response{200, recordHeaders(), jsonWithout(t, servicePage(), "name")},
			want: []string{"GET", svc, "200", "name"}},
		{name: "page missing a page field", target: svc,
			resp: response{200, recordHeaders(), jsonWithout(t, servicePage(), "roles")},
			want: []string{"ServicePage", "roles"}},
		{name: "page with an unknown open status", target: svc,
			resp: response{200, recordHeaders(), jsonWithout(t, servicePage(), `openStatus={"status":"maybe","detail":""}`)},
			want: []string{"openStatus"}},
		{name: "page with a wrong type", target: svc,
			resp: response{200, recordHeaders(), jsonWithout(t, servicePage(), `version="3"`)},
			want: []string{"version"}},
		{name: "page with a bad date-time", target: svc,
			resp: response{200, recordHeaders(), jsonWithout(t, servicePage(), `lastUpdated="yesterday"`)},
			want: []string{"lastUpdated"}},
		{name: "unknown fields are allowed (tolerant reader)", target: svc,
			resp: response{200, recordHeaders(), jsonWithout(t, servicePage(), `addedLater={"x":1}`)}},
		{name: "valid brief", target: svc + "?view=brief",
			resp: response{200, recordHeaders(), jsonWithout(t, serviceView())}},
		{name: "brief with a category", target: svc + "?view=brief",
			resp: response{200, recordHeaders(), jsonWithout(t, serviceView(), `categoryCode="primary_care"`)}},
		{name: "brief missing a nullable field", target: svc + "?view=brief",
			resp: response{200, recordHeaders(), jsonWithout(t, serviceView(), "categoryCode")},
			want: []string{"ServiceView", "categoryCode"}},
		{name: "brief with an unknown contact kind", target: svc + "?view=brief",
			resp: response{200, recordHeaders(), jsonWithout(t, serviceView(), `contacts=[{"kind":"pager","value":"1"}]`)},
			want: []string{"contacts"}},
		{name: "missing audience header", target: svc,
			resp: response{200, recordHeaders("X-DIR-Audience", ""), jsonWithout(t, servicePage())},
			want: []string{"X-DIR-Audience"}},
		{name: "unknown audience", target: svc,
			resp: response{200, recordHeaders("X-DIR-Audience", "everyone"), jsonWithout(t, servicePage())},
			want: []string{"X-DIR-Audience", "everyone"}},
		{name: "unquoted entity tag", target: svc,
			resp: response{200, recordHeaders("ETag", "0123abcd"), jsonWithout(t, servicePage())},
			want: []string{"ETag"}},
		{name: "missing cache control", target: svc,
			resp: response{200, recordHeaders("Cache-Control", ""), jsonWithout(t, servicePage())},
			want: []string{"Cache-Control"}},
		{name: "wrong content type", target: svc,
			resp: response{200, recordHeaders("Content-Type", "text/plain"), jsonWithout(t, servicePage())},
			want: []string{"text/plain"}},
		{name: "not JSON", target: svc,
			resp: response{200, recordHeaders(), "<html>"},
			want: []string{svc}},
		{name: "undocumented path", target: "/v1/d/demo/widgets/w_1",
			resp: response{404, problemHeaders(), `{"type":"/problems/not-found-or-hidden","title":"Not found","status":404,"code":"not-found-or-hidden"}`},
			want: []string{"undocumented operation", "/v1/d/demo/widgets/w_1"}},
		{name: "undocumented method", method: http.MethodPost, target: svc,
			resp: response{404, problemHeaders(), `{"type":"/problems/not-found-or-hidden","title":"Not found","status":404,"code":"not-found-or-hidden"}`},
			want: []string{"undocumented operation", "POST"}},
		{name: "undocumented status", target: svc,
			resp: response{http.StatusTeapot, problemHeaders(), `{}`},
			want: []string{"undocumented status 418", "getService"}},
		{name: "problem 404", target: svc,
			resp: response{404, problemHeaders(), `{"type":"/problems/not-found-or-hidden","title":"Not found","status":404,"code":"not-found-or-hidden","detail":"The record does not exist or is not visible to you."}`}},
		{name: "problem 404 of an unknown directory", target: "/v1/d/nope/developers",
			resp: response{404, problemHeaders(), `{"type":"/problems/not-found-or-hidden","title":"Not found","status":404,"code":"not-found-or-hidden"}`}},
		{name: "problem missing its code", target: svc,
			resp: response{404, problemHeaders(), `{"type":"/problems/not-found-or-hidden","title":"Not found","status":404}`},
			want: []string{"code"}},
		{name: "problem as application/json", target: svc,
			resp: response{404, map[string]string{"Content-Type": "application/json", "Cache-Control": "no-store"},
				`{"type":"/problems/not-found-or-hidden","title":"Not found","status":404,"code":"not-found-or-hidden"}`},
			want: []string{"application/json"}},
		{name: "problem 400 naming its parameter", target: svc + "?view=full",
			resp: response{400, problemHeaders(), `{"type":"/problems/invalid-parameter","title":"Invalid parameter","status":400,"code":"invalid-parameter","detail":"view must be brief or page","param":"view"}`}},
		{name: "429 with Retry-After", target: svc,
			resp: response{429, map[string]string{"Content-Type": "application/problem+json", "Cache-Control": "no-store", "Retry-After": "30"},
				`{"type":"/problems/rate-limited","title":"Too many requests","status":429,"code":"rate-limited"}`}},
		{name: "429 without Retry-After", target: svc,
			resp: response{429, problemHeaders(), `{"type":"/problems/rate-limited","title":"Too many requests","status":429,"code":"rate-limited"}`},
			want: []string{"Retry-After"}},
		{name: "301 to the survivor", target: svc,
			resp: response{301, map[string]string{"Location": "https://directory.example/v1/d/demo/services/svc_y",
				"X-DIR-Audience": "public", "Cache-Control": "public, s-maxage=60"}, ""}},
		{name: "301 without Location", target: svc,
			resp: response{301, map[string]string{"X-DIR-Audience": "public", "Cache-Control": "public, s-maxage=60"}, ""},
			want: []string{"Location"}},
		{name: "301 without audience", target: svc,
			resp: response{301, map[string]string{"Location": "https://directory.example/v1/d/demo/services/svc_y",
				"Cache-Control": "public, s-maxage=60"}, ""},
			want: []string{"X-DIR-Audience"}},
		{name: "410 without audience", target: svc,
			resp: response{410, problemHeaders(), `{"type":"/problems/gone","title":"Gone","status":410,"code":"gone"}`},
			want: []string{"X-DIR-Audience"}},
		{name: "304 has no body", target: svc,
			resp: response{304, map[string]string{"ETag": `"0123abcd"`}, ""}},
		{name: "304 not documented", target: "/v1/d/demo/developers",
			resp: response{304, nil, ""},
			want: []string{"undocumented status 304"}},
		{name: "gzip body from a transport that does not decompress", target: svc,
			resp: response{200, recordHeaders("Content-Encoding", "gzip"), gzipped(t, jsonWithout(t, servicePage()))}},
		{name: "gzip body missing a field", target: svc,
			resp: response{200, recordHeaders("Content-Encoding", "gzip"), gzipped(t, jsonWithout(t, servicePage(), "slug"))},
			want: []string{"slug"}},
		{name: "HEAD is checked as GET without the body", method: http.MethodHead, target: svc,
			resp: response{200, recordHeaders(), ""}},
		{name: "HEAD missing a header", method: http.MethodHead, target: svc,
			resp: response{200, recordHeaders("ETag", ""), ""},
			want: []string{"ETag"}},
		{name: "practitioner: brief by default", target: "/v1/d/demo/practitioners/prac_a",
			resp: response{200, recordHeaders(), jsonWithout(t, practitionerView())}},
		{name: "practitioner page asked for", target: "/v1/d/demo/practitioners/prac_a?view=page",
			resp: response{200, recordHeaders(), jsonWithout(t, practitionerPage())}},
		{name: "practitioner page missing a page field", target: "/v1/d/demo/practitioners/prac_a?view=page",
			resp: response{200, recordHeaders(), jsonWithout(t, practitionerPage(), "services")},
			want: []string{"PractitionerPage", "services"}},
		{name: "practitioner brief missing a nullable field", target: "/v1/d/demo/practitioners/prac_a",
			resp: response{200, recordHeaders(), jsonWithout(t, practitionerView(), "bio")},
			want: []string{"PractitionerView", "bio"}},
		{name: "service list", target: "/v1/d/demo/services?limit=1",
			resp: response{200, listHeaders(), `{"items":[` + jsonWithout(t, serviceView()) + `],"limit":1,"nextCursor":"c3ZjX3h8YWJj"}`}},
		{name: "service list without its entity tag", target: "/v1/d/demo/services",
			resp: response{200, listHeaders("ETag", ""), `{"items":[],"limit":50,"nextCursor":null}`},
			want: []string{"missing required header ETag"}},
		{name: "service list without nextCursor", target: "/v1/d/demo/services",
			resp: response{200, listHeaders(), `{"items":[],"limit":50}`},
			want: []string{"nextCursor"}},
		{name: "service list with cache tags of a record", target: "/v1/d/demo/services",
			resp: response{200, listHeaders("Cache-Tag", "dir:demo,demo:services x"), `{"items":[],"limit":50,"nextCursor":null}`},
			want: []string{"Cache-Tag"}},
		{name: "401 without WWW-Authenticate", target: "/v1/d/demo/services",
			resp: response{401, problemHeaders(), `{"type":"/problems/invalid-token","title":"Invalid access token","status":401,"code":"invalid-token"}`},
			want: []string{"WWW-Authenticate"}},
		{name: "token response", method: http.MethodPost, target: "/oauth/token",
			resp: response{200, map[string]string{"Content-Type": "application/json", "Cache-Control": "no-store", "Pragma": "no-cache"},
				`{"access_token":"a.b.c","token_type":"Bearer","expires_in":900,"scope":"graph:read","directory":"demo","sandbox":false}`}},
		{name: "token error as a problem", method: http.MethodPost, target: "/oauth/token",
			resp: response{400, problemHeaders(), `{"type":"/problems/invalid-parameter","title":"Invalid parameter","status":400,"code":"invalid-parameter"}`},
			want: []string{"application/problem+json"}},
		{name: "token 429 as a problem", method: http.MethodPost, target: "/oauth/token",
			resp: response{429, map[string]string{"Content-Type": "application/problem+json", "Cache-Control": "no-store", "Retry-After": "60"},
				`{"type":"/problems/rate-limited","title":"Too many requests","status":429,"code":"rate-limited"}`},
			want: []string{"application/problem+json"}},
		{name: "token 429 as an OAuth error", method: http.MethodPost, target: "/oauth/token",
			resp: response{429, map[string]string{"Content-Type": "application/json", "Cache-Control": "no-store", "Pragma": "no-cache", "Retry-After": "60"},
				`{"error":"temporarily_unavailable","error_description":"Too many requests: try again in 60 seconds."}`}},
		{name: "token response that may be stored", method: http.MethodPost, target: "/oauth/token",
			resp: response{200, map[string]string{"Content-Type": "application/json", "Cache-Control": "public, max-age=60", "Pragma": "no-cache"},
				`{"access_token":"a.b.c","token_type":"Bearer","expires_in":900,"scope":"","directory":"demo","sandbox":false}`},
			want: []string{"Cache-Control"}},
		{name: "405 to a method the path does not offer", target: "/oauth/token",
			resp: response{405, map[string]string{"Content-Type": "application/json", "Cache-Control": "no-store", "Allow": "POST"},
				`{"error":"invalid_request","error_description":"use POST"}`}},
		{name: "405 without Allow", method: http.MethodPut, target: "/oauth/token",
			resp: response{405, map[string]string{"Content-Type": "application/json", "Cache-Control": "no-store"}, `{"error":"invalid_request"}`},
			want: []string{"Allow"}},
		{name: "405 allowing an undocumented method", target: "/oauth/token",
			resp: response{405, map[string]string{"Content-Type": "application/json", "Cache-Control": "no-store", "Allow": "POST, PUT"},
				`{"error":"invalid_request"}`},
			want: []string{"Allow names PUT"}},
		{name: "405 with a problem body", target: "/oauth/token",
			resp: response{405, map[string]string{"Content-Type": "application/problem+json", "Cache-Control": "no-store", "Allow": "POST"},
				`{"type":"/problems/x","title":"x","status":405,"code":"x"}`},
			want: []string{"application/problem+json"}},
		{name: "405 with a body not documented", target: "/oauth/token",
			resp: response{405, map[string]string{"Content-Type": "application/json", "Cache-Control": "no-store", "Allow": "POST"}, `{"message":"no"}`},
			want: []string{"error"}},
		{name: "405 to a method a read path does not offer", method: http.MethodPost, target: svc,
			resp: response{405, map[string]string{"Content-Type": "application/problem+json", "Cache-Control": "no-store", "Allow": "GET, HEAD"},
				`{"type":"/problems/method-not-allowed","title":"Method not allowed","status":405,"code":"method-not-allowed"}`}},
		{name: "405 of a read path as text", method: http.MethodPost, target: svc,
			resp: response{405, map[string]string{"Content-Type": "text/plain; charset=utf-8", "Cache-Control": "no-store", "Allow": "GET, HEAD"},
				"Method Not Allowed\n"},
			want: []string{"text/plain"}},
		{name: "health as documented", target: "/healthz",
			resp: response{503, map[string]string{"Content-Type": "application/json", "Cache-Control": "no-store"},
				`{"role":"edge","healthy":false,"ready":true}`}},
		{name: "health as text", target: "/healthz",
			resp: response{200, map[string]string{"Content-Type": "text/plain; charset=utf-8", "Cache-Control": "no-store"}, "ok\n"},
			want: []string{"text/plain"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := tt.method
			if method == "" {
				method = http.MethodGet
			}
			req := httptest.NewRequest(method, tt.target, nil)
			resp := tt.resp.result()
			failures := capture(t, func(tb testing.TB) { c.Check(tb, req, resp) })
			body, err := io.ReadAll(resp.Body)
			if err != nil || string(body) != tt.resp.body {
				t.Errorf("after Check the body reads %q, %v; want %q", body, err, tt.resp.body)
			}
			if len(tt.want) == 0 {
				if len(failures) > 0 {
					t.Errorf("Check failed a valid response:\n%s", strings.Join(failures, "\n"))
				}
				return
			}
			if len(failures) == 0 {
				t.Fatalf("Check passed a response it should fail (want a failure mentioning %q)", tt.want)
			}
			all := strings.Join(failures, "\n")
			for _, w := range tt.want {
				if !strings.Contains(all, w) {
					t.Errorf("failure does not mention %q:\n%s", w, all)
				}
			}
			if !strings.Contains(all, method+" "+tt.target) || !strings.Contains(all, fmt.Sprint(tt.resp.status)) {
				t.Errorf("failure does not name method, path and status:\n%s", all)
			}
		})
	}
}

func TestCount(t *testing.T) {
	c := edgetest.NewChecker(t)
	if n := c.Count(); n != 0 {
		t.Fatalf("new checker Count = %d, want 0", n)
	}
	ok := response{200, recordHeaders(), jsonWithout(t, servicePage())}
	c.Check(t, httptest.NewRequest("GET", "/v1/d/demo/services/svc_x", nil), ok.result())
	health := response{200, map[string]string{"Content-Type": "application/json", "Cache-Control": "no-store"}, `{"role":"serve","healthy":true,"ready":true}`}
	c.Check(t, httptest.NewRequest("GET", "/healthz", nil), health.result())
	if n := c.Count(); n != 2 {
		t.Errorf("Count = %d after a record and /healthz were checked, want 2", n)
	}
}

func TestCheckIsSafeForConcurrentUse(t *testing.T) {
	c := edgetest.NewChecker(t)
	page := jsonWithout(t, servicePage())
	brief := jsonWithout(t, serviceView())
	var wg sync.WaitGroup
	const n = 32
	for i := range n {
		wg.Go(func() {
			target, body := "/v1/d/demo/services/svc_x", page
			if i%2 == 1 {
				target, body = target+"?view=brief", brief
			}
			c.Check(t, httptest.NewRequest("GET", target, nil), response{200, recordHeaders(), body}.result())
		})
	}
	wg.Wait()
	if got := c.Count(); got != n {
		t.Errorf("Count = %d, want %d", got, n)
	}
}
