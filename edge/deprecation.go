package edge

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Deprecation marks an operation, or one of its query parameters, that will be removed. Its one
// source is the OpenAPI document the server serves: an operation or parameter with `deprecated:
// true` carries `x-deprecated-at` (the date, YYYY-MM-DD, from which it is deprecated), `x-sunset`
// (the date it stops answering, at least a year later: specification section 9.3) and optionally
// `x-successor` (where to go instead: a path on this service or an absolute URL), so what the
// document says and the headers the server sends cannot disagree.
type Deprecation struct {
	// Pattern is the route's pattern as the server registers it ("GET /v1/d/{dir}/services").
	Pattern string
	// Param is the deprecated query parameter; empty when the whole operation is deprecated.
	Param     string
	Since     time.Time
	Sunset    time.Time
	Successor string
}

// minSunsetNotice is the least time between deprecation and removal (specification section 9.3).
const minSunsetNotice = 12 // months

// deprecations reads the deprecated operations and query parameters of an OpenAPI document.
func deprecations(doc []byte) ([]Deprecation, error) {
	type marks struct {
		Deprecated bool            `json:"deprecated"`
		Since      string          `json:"x-deprecated-at"`
		Sunset     string          `json:"x-sunset"`
		Successor  string          `json:"x-successor"`
		Ref        string          `json:"$ref"`
		Name       string          `json:"name"`
		In         string          `json:"in"`
		Parameters json.RawMessage `json:"parameters"`
	}
	var d struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Parameters map[string]marks `json:"parameters"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, fmt.Errorf("read OpenAPI document: %w", err)
	}
	param := func(p marks) (marks, error) {
		if p.Ref == "" {
			return p, nil
		}
		name, ok := strings.CutPrefix(p.Ref, "#/components/parameters/")
		c, found := d.Components.Parameters[name]
		if !ok || !found {
			return p, fmt.Errorf("parameter %s: not a component", p.Ref)
		}
		return c, nil
	}
	var out []Deprecation
	for path, item := range d.Paths {
		for method, raw := range item {
			switch method {
			case "get", "put", "post", "delete", "patch":
			default:
				continue
			}
			var op marks
			if err := json.Unmarshal(raw, &op); err != nil {
				return nil, fmt.Errorf("%s %s: %w", method, path, err)
			}
			pattern := strings.ToUpper(method) + " " + path
			if op.Deprecated {
				dep, err := deprecation(pattern, "", op.Since, op.Sunset, op.Successor)
				if err != nil {
					return nil, err
				}
				out = append(out, dep)
			}
			var params []marks
			if len(op.Parameters) > 0 {
				if err := json.Unmarshal(op.Parameters, &params); err != nil {
					return nil, fmt.Errorf("%s parameters: %w", pattern, err)
				}
			}
			for _, p := range params {
				p, err := param(p)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", pattern, err)
				}
				if !p.Deprecated {
					continue
				}
				if p.In != "query" {
					return nil, fmt.Errorf("%s: parameter %s in %s: only query parameters may be deprecated", pattern, p.Name, p.In)
				}
				dep, err := deprecation(pattern, p.Name, p.Since, p.Sunset, p.Successor)
				if err != nil {
					return nil, err
				}
				out = append(out, dep)
			}
		}
	}
	return out, nil
}

func deprecation(pattern, param, since, sunset, successor string) (Deprecation, error) {
	what := pattern
	if param != "" {
		what += " parameter " + param
	}
	d := Deprecation{Pattern: pattern, Param: param, Successor: successor}
	var err error
	if d.Since, err = time.Parse(time.DateOnly, since); err != nil {
		return d, fmt.Errorf("%s: x-deprecated-at %q is not a date (YYYY-MM-DD)", what, since)
	}
	if d.Sunset, err = time.Parse(time.DateOnly, sunset); err != nil {
		return d, fmt.Errorf("%s: x-sunset %q is not a date (YYYY-MM-DD)", what, sunset)
	}
	if d.Sunset.Before(d.Since.AddDate(0, minSunsetNotice, 0)) {
		return d, fmt.Errorf("%s: x-sunset %s is less than %d months after x-deprecated-at %s", what, sunset, minSunsetNotice, since)
	}
	if successor != "" {
		u, err := url.Parse(successor)
		if err != nil || (!u.IsAbs() && !strings.HasPrefix(successor, "/")) {
			return d, fmt.Errorf("%s: x-successor %q is neither an absolute URL nor a path", what, successor)
		}
	}
	return d, nil
}

// deprecatedRoutes holds the headers each deprecated route sends, by pattern.
type deprecatedRoutes map[string][]deprecatedHeaders

type deprecatedHeaders struct {
	param  string // the query parameter whose presence calls for the headers; "" always
	header http.Header
}

// newDeprecatedRoutes makes the headers of each deprecation: Deprecation as an RFC 9745
// structured-field date, Sunset as an RFC 8594 HTTP-date, and a Link to the successor (relative
// successors are made absolute on base).
func newDeprecatedRoutes(deps []Deprecation, base string) deprecatedRoutes {
	if len(deps) == 0 {
		return nil
	}
	routes := deprecatedRoutes{}
	for _, d := range deps {
		h := http.Header{}
		h.Set("Deprecation", "@"+strconv.FormatInt(d.Since.Unix(), 10))
		h.Set("Sunset", d.Sunset.UTC().Format(http.TimeFormat))
		if d.Successor != "" {
			link := d.Successor
			if strings.HasPrefix(link, "/") {
				link = base + link
			}
			h.Set("Link", "<"+link+`>; rel="successor-version"`)
		}
		routes[d.Pattern] = append(routes[d.Pattern], deprecatedHeaders{param: d.Param, header: h})
	}
	return routes
}

// deprecate sets the deprecation headers on answers of deprecated routes (and of routes given a
// deprecated parameter) before next answers. Without deprecations it is next itself.
func (s *Server) deprecate(next http.Handler) http.Handler {
	if len(s.deprecated) == 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, pattern := s.mux.Handler(r)
		for _, d := range s.deprecated[pattern] {
			if d.param != "" && !r.URL.Query().Has(d.param) {
				continue
			}
			for k, v := range d.header {
				w.Header()[k] = v
			}
		}
		next.ServeHTTP(w, r)
	})
}
