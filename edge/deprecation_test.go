package edge_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc/edge"
)

// deprecatedDocument is the served OpenAPI document with the service read (GET services/{publicId})
// deprecated in favour of the list, and the list's updatedSince parameter deprecated: nothing of the
// service is superseded today, so the test marks these in the document of a test server, which is
// the one table both the served document and the headers come from.
func deprecatedDocument(tb testing.TB) []byte {
	tb.Helper()
	var doc map[string]any
	if err := json.Unmarshal(edge.OpenAPIDocument(), &doc); err != nil {
		tb.Fatal(err)
	}
	paths := doc["paths"].(map[string]any)
	read := paths["/v1/d/{dir}/services/{publicId}"].(map[string]any)["get"].(map[string]any)
	read["deprecated"] = true
	read["x-deprecated-at"] = "2026-01-01"
	read["x-sunset"] = "2027-07-01"
	read["x-successor"] = "/v1/d/{dir}/services"
	list := paths["/v1/d/{dir}/services"].(map[string]any)["get"].(map[string]any)
	params := list["parameters"].([]any)
	for i, p := range params {
		if p.(map[string]any)["$ref"] == "#/components/parameters/updatedSince" {
			inline := map[string]any{}
			for k, v := range doc["components"].(map[string]any)["parameters"].(map[string]any)["updatedSince"].(map[string]any) {
				inline[k] = v
			}
			inline["deprecated"], inline["x-deprecated-at"], inline["x-sunset"] = true, "2026-03-01", "2027-03-01"
			params[i] = inline
		}
	}
	b, err := json.Marshal(doc)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func TestDeprecatedOperationsSendDeprecationAndSunset(t *testing.T) {
	doc := deprecatedDocument(t)
	s := newTestServerWith(t, func(c *edge.Config) { c.OpenAPI = doc; c.BaseURL = "https://directory.example.org" }, smallFixture(t))

	t.Run("the served document marks the operation deprecated", func(t *testing.T) {
		var served struct {
			Paths map[string]map[string]json.RawMessage `json:"paths"`
		}
		if err := json.Unmarshal(s.get(t, "/v1/openapi.json").body, &served); err != nil {
			t.Fatal(err)
		}
		var op struct {
			Deprecated bool   `json:"deprecated"`
			Sunset     string `json:"x-sunset"`
		}
		if err := json.Unmarshal(served.Paths["/v1/d/{dir}/services/{publicId}"]["get"], &op); err != nil {
			t.Fatal(err)
		}
		if !op.Deprecated || op.Sunset != "2027-07-01" {
			t.Fatalf("served operation: deprecated %v, x-sunset %q", op.Deprecated, op.Sunset)
		}
	})
	t.Run("a deprecated operation sends Deprecation, Sunset and its successor", func(t *testing.T) {
		for _, path := range []string{"/v1/d/small/services/svc_gp", "/v1/d/small/services/svc_doesnotexist"} {
			r := s.get(t, path)
			since := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			if got, want := r.header.Get("Deprecation"), "@"+strconv.FormatInt(since.Unix(), 10); got != want {
				t.Errorf("%s: Deprecation %q, want %q", path, got, want)
			}
			sunset, err := http.ParseTime(r.header.Get("Sunset"))
			if err != nil || !sunset.Equal(time.Date(2027, 7, 1, 0, 0, 0, 0, time.UTC)) {
				t.Errorf("%s: Sunset %q (%v), want 1 July 2027 as an HTTP-date", path, r.header.Get("Sunset"), err)
			}
			if got, want := r.header.Get("Link"), `<https://directory.example.org/v1/d/{dir}/services>; rel="successor-version"`; got != want {
				t.Errorf("%s: Link %q, want %q", path, got, want)
			}
		}
	})
	t.Run("a deprecated parameter sends the headers only when given", func(t *testing.T) {
		r := s.get(t, "/v1/d/small/services?updatedSince=2020-01-01T00:00:00Z")
		if r.status != http.StatusOK {
			t.Fatalf("status %d", r.status)
		}
		since := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
		if got, want := r.header.Get("Deprecation"), "@"+strconv.FormatInt(since.Unix(), 10); got != want {
			t.Errorf("Deprecation %q, want %q", got, want)
		}
		if got := r.header.Get("Sunset"); got != "Mon, 01 Mar 2027 00:00:00 GMT" {
			t.Errorf("Sunset %q", got)
		}
		if got := r.header.Get("Link"); got != "" {
			t.Errorf("Link %q for a parameter without successor", got)
		}
		r = s.get(t, "/v1/d/small/services")
		if r.header.Get("Deprecation") != "" || r.header.Get("Sunset") != "" {
			t.Errorf("the list without the parameter sends Deprecation %q, Sunset %q", r.header.Get("Deprecation"), r.header.Get("Sunset"))
		}
	})
	t.Run("other operations send neither", func(t *testing.T) {
		for _, path := range []string{"/v1/d/small/locations/loc_ultimo", "/v1/d/small/developers", "/v1/openapi.json"} {
			if r := s.get(t, path); r.header.Get("Deprecation") != "" || r.header.Get("Sunset") != "" {
				t.Errorf("%s sends Deprecation %q, Sunset %q", path, r.header.Get("Deprecation"), r.header.Get("Sunset"))
			}
		}
	})
}

// The served document's own marks are well formed (edge.New panics otherwise), and a document that
// gives less than the specification's twelve months' notice, or no dates, is refused.
func TestDeprecationMarksAreChecked(t *testing.T) {
	edge.New(edge.Config{Catalog: nil})
	for name, change := range map[string]func(op map[string]any){
		"sunset within a year": func(op map[string]any) { op["x-sunset"] = "2026-12-31" },
		"no sunset":            func(op map[string]any) { delete(op, "x-sunset") },
		"no deprecation date":  func(op map[string]any) { delete(op, "x-deprecated-at") },
		"successor not a URL":  func(op map[string]any) { op["x-successor"] = "services" },
	} {
		t.Run(name, func(t *testing.T) {
			var doc map[string]any
			if err := json.Unmarshal(deprecatedDocument(t), &doc); err != nil {
				t.Fatal(err)
			}
			change(doc["paths"].(map[string]any)["/v1/d/{dir}/services/{publicId}"].(map[string]any)["get"].(map[string]any))
			b, _ := json.Marshal(doc)
			defer func() {
				v := recover()
				if v == nil || !strings.Contains(v.(string), "GET /v1/d/{dir}/services/{publicId}") {
					t.Fatalf("New with %s: panic %v, want one naming the operation", name, v)
				}
			}()
			edge.New(edge.Config{OpenAPI: b})
		})
	}
}
