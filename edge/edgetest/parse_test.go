package edgetest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestParseRejectsUnusableDocuments checks what NewChecker fails on, with documents other than the
// embedded one.
func TestParseRejectsUnusableDocuments(t *testing.T) {
	const paths = `"paths":{"/x":{"get":{"operationId":"x","parameters":[{"name":"view","in":"query","schema":{"type":"string"}}],
		"responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"type":"object"},%s}}}}}}}`
	ext := func(e string) string { return strings.Replace(paths, "%s", e, 1) }
	tests := []struct {
		name, doc, want string
	}{
		{"not JSON or YAML", `{"openapi":`, "parse"},
		{"OpenAPI 3.0", `{"openapi":"3.0.3","info":{"title":"x","version":"1"},"paths":{}}`, "3.1"},
		{"no info", `{"openapi":"3.1.0","paths":{}}`, "info"},
		{"extension naming a missing schema", `{"openapi":"3.1.0","info":{"title":"x","version":"1"},` +
			ext(`"x-dir-representations":{"parameter":"view","schemas":{"page":"Nope"}}`) + `}`, "Nope"},
		{"extension naming a missing parameter", `{"openapi":"3.1.0","info":{"title":"x","version":"1"},` +
			ext(`"x-dir-representations":{"parameter":"shape","schemas":{}}`) + `}`, RepresentationsExtension},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eng, errs := parse([]byte(tt.doc))
			if eng != nil || len(errs) == 0 {
				t.Fatalf("parse accepted the document")
			}
			if all := strings.Join(errs, "\n"); !strings.Contains(all, tt.want) {
				t.Errorf("errors do not mention %q:\n%s", tt.want, all)
			}
		})
	}
	if eng, errs := parse([]byte(`{"openapi":"3.1.0","info":{"title":"x","version":"1"},` +
		ext(`"x-y":1`) + `}`)); eng == nil {
		t.Errorf("parse rejected a valid document: %v", errs)
	}
}

// TestCheckFailsA405NoOperationDocuments checks a 405 answer to a path none of whose operations
// documents one (every path of the embedded document does).
func TestCheckFailsA405NoOperationDocuments(t *testing.T) {
	eng, errs := parse([]byte(`{"openapi":"3.1.0","info":{"title":"x","version":"1"},"paths":{"/x":{"get":{"operationId":"x",
		"responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"type":"object"}}}}}}}}}`))
	if eng == nil {
		t.Fatalf("parse rejected the document: %v", errs)
	}
	body := `{"type":"/problems/x","title":"x","status":405,"code":"x"}`
	resp := &http.Response{StatusCode: http.StatusMethodNotAllowed, Body: io.NopCloser(strings.NewReader(body)),
		Header: http.Header{"Content-Type": {"application/problem+json"}, "Allow": {"GET, HEAD"}}}
	violations, _ := eng.check(httptest.NewRequest(http.MethodPost, "/x", nil), resp, []byte(body))
	all := strings.Join(violations, "\n")
	for _, want := range []string{"undocumented operation", "405"} {
		if !strings.Contains(all, want) {
			t.Errorf("violations do not mention %q: %q", want, all)
		}
	}
}
