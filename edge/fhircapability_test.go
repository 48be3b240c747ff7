package edge_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/fhir"
)

// paramValue returns, for a search parameter, the value a resource would be found by (from the
// resource as the caller received it), or "" when the resource has none.
var paramValue = map[string]func(r map[string]any) string{
	"_id":          func(r map[string]any) string { return str(r, "id") },
	"_lastUpdated": func(r map[string]any) string { return "ge" + str(r, "meta", "lastUpdated") },
	"identifier": func(r map[string]any) string {
		if s, v := str(r, "identifier", 0, "system"), str(r, "identifier", 0, "value"); s != "" && v != "" {
			return s + "|" + v
		}
		return ""
	},
	"name": func(r map[string]any) string {
		n := str(r, "name")
		if n == "" {
			n = str(r, "name", 0, "family")
		}
		w, _, _ := strings.Cut(n, " ")
		return w
	},
	"active":       func(r map[string]any) string { return "true" },
	"address":      func(r map[string]any) string { return firstOf(str(r, "address", "city"), str(r, "address", 0, "city")) },
	"address-city": func(r map[string]any) string { return firstOf(str(r, "address", "city"), str(r, "address", 0, "city")) },
	"address-postalcode": func(r map[string]any) string {
		return firstOf(str(r, "address", "postalCode"), str(r, "address", 0, "postalCode"))
	},
	"address-state": func(r map[string]any) string {
		return firstOf(str(r, "address", "state"), str(r, "address", 0, "state"))
	},
	"organization": func(r map[string]any) string {
		return firstOf(str(r, "managingOrganization", "reference"), str(r, "providedBy", "reference"), str(r, "organization", "reference"))
	},
	"location":         func(r map[string]any) string { return str(r, "location", 0, "reference") },
	"service-type":     func(r map[string]any) string { return str(r, "type", 0, "coding", 0, "code") },
	"service-category": func(r map[string]any) string { return str(r, "category", 0, "coding", 0, "code") },
	"specialty": func(r map[string]any) string {
		if s, c := str(r, "specialty", 0, "coding", 0, "system"), str(r, "specialty", 0, "coding", 0, "code"); c != "" {
			return s + "|" + c
		}
		return ""
	},
	"endpoint":     func(r map[string]any) string { return str(r, "endpoint", 0, "reference") },
	"practitioner": func(r map[string]any) string { return str(r, "practitioner", "reference") },
	"service": func(r map[string]any) string {
		if str(r, "resourceType") == fhir.TypeEndpoint {
			id, _, _ := strings.Cut(str(r, "id"), "-ep")
			return fhir.TypeHealthcareService + "/" + id
		}
		return str(r, "healthcareService", 0, "reference")
	},
	"near": func(r map[string]any) string {
		p, ok := r["position"].(map[string]any)
		if !ok {
			return ""
		}
		return strconv.FormatFloat(p["latitude"].(float64), 'f', -1, 64) + "|" + strconv.FormatFloat(p["longitude"].(float64), 'f', -1, 64) + "|1|km"
	},
}

func firstOf(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// str walks a decoded JSON value by member names and array indexes to a string ("" when absent).
func str(v any, path ...any) string {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return ""
			}
			v = m[k]
		case int:
			a, ok := v.([]any)
			if !ok || len(a) <= k {
				return ""
			}
			v = a[k]
		}
	}
	s, _ := v.(string)
	return s
}

// otherR4Params are R4 search parameters of each type this server does not take: each must answer
// 400 naming it, so a parameter that is not listed cannot seem to work.
var otherR4Params = map[string][]string{
	fhir.TypeOrganization:      {"type", "partof", "phonetic", "address-country", "address-use", "endpoint", "_text", "_content", "_sort"},
	fhir.TypeLocation:          {"type", "status", "operational-status", "partof", "address-country", "endpoint", "_sort"},
	fhir.TypeHealthcareService: {"characteristic", "coverage-area", "program", "address", "_sort"},
	fhir.TypePractitioner:      {"family", "given", "gender", "communication", "email", "phone", "telecom", "address"},
	fhir.TypePractitionerRole:  {"role", "date", "email", "phone", "telecom", "endpoint", "identifier"},
	fhir.TypeEndpoint:          {"connection-type", "payload-type", "status", "identifier"},
}

// TestFHIRCapabilityStatementListsWhatWorks holds the CapabilityStatement to the server's behaviour:
// every search parameter it lists finds a resource by the value that resource carries (and the
// _include values it lists are accepted, and each _revinclude value includes the resources that
// refer to a match, and only those); every R4 parameter of the type it does not
// list answers 400 naming the parameter, and is ignored, and reported, under Prefer:
// handling=lenient.
func TestFHIRCapabilityStatementListsWhatWorks(t *testing.T) {
	s := newTestServer(t, demoFiles(t)["demo"])
	partner := token(t, grant{dir: "demo", tier: dirsvc.Partner, scopes: "graph:read practitioners:read"})
	fc := newFHIRClient(t, s, caller{"partner", partner, dirsvc.Partner}, "demo", "AU")
	r := fc.get("/metadata")
	if r.status != http.StatusOK {
		t.Fatalf("metadata: %d %s", r.status, r.body)
	}
	var cs struct {
		ResourceType string
		FHIRVersion  string `json:"fhirVersion"`
		Format       []string
		Rest         []struct {
			Resource []struct {
				Type             string
				Profile          string
				SearchParam      []struct{ Name, Type string } `json:"searchParam"`
				SearchInclude    []string                      `json:"searchInclude"`
				SearchRevInclude []string                      `json:"searchRevInclude"`
			}
		}
	}
	if err := json.Unmarshal(r.body, &cs); err != nil {
		t.Fatal(err)
	}
	fc.validate("metadata", r.body)
	if cs.ResourceType != "CapabilityStatement" || cs.FHIRVersion != "4.0.1" || !slices.Contains(cs.Format, "json") || len(cs.Rest) != 1 {
		t.Fatalf("CapabilityStatement: %s", r.body)
	}
	var types []string
	for _, res := range cs.Rest[0].Resource {
		types = append(types, res.Type)
		all := fc.allOf(res.Type)
		if len(all) == 0 {
			t.Errorf("%s: the partner finds none to try the parameters on", res.Type)
			continue
		}
		for _, p := range res.SearchParam {
			fn, ok := paramValue[p.Name]
			if !ok {
				t.Errorf("%s: the test has no value for the listed parameter %s", res.Type, p.Name)
				continue
			}
			var target map[string]any
			var value string
			if res.Type == fhir.TypeHealthcareService && strings.HasPrefix(p.Name, "address-") {
				// A service is found by the address of the location it is at.
				fn = func(r map[string]any) string {
					ref := str(r, "location", 0, "reference")
					if ref == "" {
						return ""
					}
					var loc map[string]any
					json.Unmarshal(fc.get("/"+ref).body, &loc)
					return paramValue[p.Name](loc)
				}
			}
			for _, cand := range all {
				if value = fn(cand); value != "" {
					target = cand
					break
				}
			}
			if target == nil {
				t.Errorf("%s: no resource carries a value of %s to search by", res.Type, p.Name)
				continue
			}
			found := fc.allOf(res.Type + "?" + url.Values{p.Name: {value}}.Encode())
			if !slices.ContainsFunc(found, func(m map[string]any) bool { return m["id"] == target["id"] }) {
				t.Errorf("%s?%s=%s does not find %s/%s (found %d)", res.Type, p.Name, value, res.Type, target["id"], len(found))
			}
		}
		for _, inc := range res.SearchInclude {
			if r := fc.get("/" + res.Type + "?_count=3&_include=" + inc); r.status != http.StatusOK {
				t.Errorf("%s?_include=%s: %d", res.Type, inc, r.status)
			}
		}
		for _, inc := range res.SearchRevInclude {
			if r := fc.get("/" + res.Type + "?_count=3&_revinclude=" + inc); r.status != http.StatusOK {
				t.Errorf("%s?_revinclude=%s: %d", res.Type, inc, r.status)
			}
			// A resource that refers to one of the type is included with it, and only such.
			src, _, _ := strings.Cut(inc, ":")
			var from, target string
			for _, cand := range fc.allOf(src) {
				if refs := referencesTo(cand, res.Type+"/"); len(refs) > 0 {
					from, target = src+"/"+fmt.Sprint(cand["id"]), refs[0]
					break
				}
			}
			if from == "" {
				t.Errorf("%s?_revinclude=%s: no %s refers to a %s to try it on", res.Type, inc, src, res.Type)
				continue
			}
			_, included, ok := fc.search("/" + res.Type + "?_id=" + strings.TrimPrefix(target, res.Type+"/") + "&_revinclude=" + inc)
			var got []string
			for _, b := range included {
				var m map[string]any
				json.Unmarshal(b, &m)
				got = append(got, fmt.Sprint(m["resourceType"], "/", m["id"]))
				if !slices.Contains(referencesTo(m, res.Type+"/"), target) {
					t.Errorf("%s?_revinclude=%s includes %s/%s, which does not refer to %s", res.Type, inc, m["resourceType"], m["id"], target)
				}
			}
			if !ok || !slices.Contains(got, from) {
				t.Errorf("%s?_id=%s&_revinclude=%s includes %v, not %s", res.Type, target, inc, got, from)
			}
		}
		listed := map[string]bool{}
		for _, p := range res.SearchParam {
			listed[p.Name] = true
		}
		for _, name := range otherR4Params[res.Type] {
			if listed[name] {
				continue
			}
			r := fc.get("/" + res.Type + "?" + name + "=x")
			var oo struct {
				ResourceType string
				Issue        []struct{ Expression []string }
			}
			json.Unmarshal(r.body, &oo)
			if r.status != http.StatusBadRequest || oo.ResourceType != "OperationOutcome" || len(oo.Issue) == 0 || !slices.Contains(oo.Issue[0].Expression, name) {
				t.Errorf("%s?%s=x (not listed): %d %s, want 400 naming %s", res.Type, name, r.status, r.body, name)
			}
			r = fc.get("/"+res.Type+"?_count=1&"+name+"=x", "Prefer", "handling=lenient")
			if r.status != http.StatusOK || !strings.Contains(string(r.body), `"mode":"outcome"`) || !strings.Contains(string(r.body), name) {
				t.Errorf("%s?%s=x with handling=lenient: %d %s", res.Type, name, r.status, r.body)
			}
		}
	}
	if !slices.Equal(types, fhir.Types) {
		t.Errorf("CapabilityStatement types %v, want %v", types, fhir.Types)
	}
}

// referencesTo returns the references of a resource to resources of a type (prefix Type/).
func referencesTo(m map[string]any, prefix string) []string {
	b, _ := json.Marshal(m)
	var out []string
	for _, ref := range references(b) {
		if strings.HasPrefix(ref, prefix) {
			out = append(out, ref)
		}
	}
	return out
}

// allOf pages through a search (path after the type, with or without a query) and returns every
// match.
func (fc *fhirClient) allOf(query string) []map[string]any {
	fc.t.Helper()
	if !strings.Contains(query, "?") {
		query += "?"
	}
	matches, _, ok := fc.search("/" + query + "&_count=100")
	if !ok {
		fc.t.Errorf("search %s failed", query)
	}
	var out []map[string]any
	for _, m := range matches {
		var v map[string]any
		json.Unmarshal(m, &v)
		out = append(out, v)
	}
	return out
}
