package edge

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// The portal's reference of the API is made from the served OpenAPI document itself, read once, so
// that what the page says about an operation is what the document says.

// apiOperation is one operation of the OpenAPI document as the portal shows it.
type apiOperation struct {
	Method, Path, ID, Summary string
	Description               []string // paragraphs
	Deprecated                bool
	// Anonymous is true when the operation lists the empty security requirement, or none.
	Anonymous bool
	// Scopes are the OAuth scopes a client needs (any one requirement's); Auth names another scheme
	// (basicAuth, adminToken) when the operation takes one instead.
	Scopes []string
	Auth   string
	Params []apiParam
	// HTML is true when the operation answers a page (text/html): it is opened in a browser.
	HTML bool
}

type apiParam struct {
	Name, In, Description string
	Required              bool
}

// apiTag is a tag of the document with its operations, in the document's order.
type apiTag struct {
	Name, Description, Anchor string
	Ops                       []apiOperation
}

// apiReference is the reference of the whole document.
type apiReference struct {
	Title, Version string
	Tags           []apiTag
	// ScopeText describes each OAuth scope, as the document's security scheme does.
	ScopeText map[string]string
}

// openAPIDocument is the part of an OpenAPI 3.1 document the portal reads. Paths keep their order
// through pathOrder (a JSON object's order is not kept by a map).
type openAPIDocument struct {
	Info struct {
		Title   string `json:"title"`
		Version string `json:"version"`
	} `json:"info"`
	Tags []struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	} `json:"tags"`
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Parameters      map[string]openAPIParam `json:"parameters"`
		SecuritySchemes struct {
			OAuth2 struct {
				Flows struct {
					ClientCredentials struct {
						Scopes map[string]string `json:"scopes"`
					} `json:"clientCredentials"`
				} `json:"flows"`
			} `json:"oauth2"`
		} `json:"securitySchemes"`
	} `json:"components"`
}

type openAPIParam struct {
	Ref         string `json:"$ref"`
	Name        string `json:"name"`
	In          string `json:"in"`
	Description string `json:"description"`
	Required    bool   `json:"required"`
}

type openAPIOperation struct {
	OperationID string                `json:"operationId"`
	Summary     string                `json:"summary"`
	Description string                `json:"description"`
	Tags        []string              `json:"tags"`
	Deprecated  bool                  `json:"deprecated"`
	Security    []map[string][]string `json:"security"`
	Parameters  []openAPIParam        `json:"parameters"`
	Responses   map[string]struct {
		Content map[string]json.RawMessage `json:"content"`
	} `json:"responses"`
}

var httpMethods = []string{"get", "put", "post", "patch", "delete"}

// readAPIReference reads the reference from an OpenAPI document.
func readAPIReference(doc []byte) (*apiReference, error) {
	var d openAPIDocument
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, fmt.Errorf("read the OpenAPI document: %w", err)
	}
	order, err := pathOrder(doc)
	if err != nil {
		return nil, err
	}
	ref := &apiReference{Title: d.Info.Title, Version: d.Info.Version,
		ScopeText: d.Components.SecuritySchemes.OAuth2.Flows.ClientCredentials.Scopes}
	byTag := map[string]int{}
	for _, t := range d.Tags {
		byTag[t.Name] = len(ref.Tags)
		ref.Tags = append(ref.Tags, apiTag{Name: t.Name, Description: t.Description, Anchor: "tag-" + anchor(t.Name)})
	}
	resolve := func(p openAPIParam) openAPIParam {
		if name, ok := strings.CutPrefix(p.Ref, "#/components/parameters/"); ok {
			return d.Components.Parameters[name]
		}
		return p
	}
	for _, path := range order {
		item := d.Paths[path]
		var shared []openAPIParam
		if raw, ok := item["parameters"]; ok {
			if err := json.Unmarshal(raw, &shared); err != nil {
				return nil, fmt.Errorf("parameters of %s: %w", path, err)
			}
		}
		for _, m := range httpMethods {
			raw, ok := item[m]
			if !ok {
				continue
			}
			var o openAPIOperation
			if err := json.Unmarshal(raw, &o); err != nil {
				return nil, fmt.Errorf("%s %s: %w", m, path, err)
			}
			op := apiOperation{Method: strings.ToUpper(m), Path: path, ID: o.OperationID, Summary: o.Summary,
				Description: paragraphs(o.Description), Deprecated: o.Deprecated, HTML: answersHTML(o)}
			for _, req := range o.Security {
				if len(req) == 0 {
					op.Anonymous = true
				}
				for scheme, scopes := range req {
					if scheme == "oauth2" {
						if op.Scopes == nil || len(scopes) < len(op.Scopes) {
							op.Scopes = append([]string{}, scopes...)
						}
					} else {
						op.Auth = scheme
					}
				}
			}
			if len(o.Security) == 0 { // none listed, or security: [] (no credentials at all)
				op.Anonymous = true
			}
			for _, p := range append(slices.Clone(shared), o.Parameters...) {
				p = resolve(p)
				op.Params = append(op.Params, apiParam{Name: p.Name, In: p.In, Description: p.Description, Required: p.Required})
			}
			tag := "Other"
			if len(o.Tags) > 0 {
				tag = o.Tags[0]
			}
			i, ok := byTag[tag]
			if !ok {
				i = len(ref.Tags)
				byTag[tag] = i
				ref.Tags = append(ref.Tags, apiTag{Name: tag, Anchor: "tag-" + anchor(tag)})
			}
			ref.Tags[i].Ops = append(ref.Tags[i].Ops, op)
		}
	}
	ref.Tags = slices.DeleteFunc(ref.Tags, func(t apiTag) bool { return len(t.Ops) == 0 })
	return ref, nil
}

// answersHTML reports whether an operation's success answer is a page.
func answersHTML(o openAPIOperation) bool {
	for code, resp := range o.Responses {
		if strings.HasPrefix(code, "2") {
			if _, ok := resp.Content["text/html"]; ok {
				return true
			}
		}
	}
	return false
}

// pathOrder returns the document's paths in the order it lists them.
func pathOrder(doc []byte) ([]string, error) {
	var top struct {
		Paths json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(doc, &top); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(strings.NewReader(string(top.Paths)))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("the OpenAPI document has no paths object")
	}
	var order []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		order = append(order, t.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return order, nil
}

// paragraphs splits a description into its paragraphs.
func paragraphs(s string) []string {
	var out []string
	for _, p := range strings.Split(s, "\n\n") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// anchor makes a fragment identifier of a name: lower-case letters, digits and hyphens.
func anchor(s string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(s) {
		switch {
		case c >= 'a' && c <= 'z' || c >= '0' && c <= '9':
			b.WriteRune(c)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}
