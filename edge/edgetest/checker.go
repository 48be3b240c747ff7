// Package edgetest helps tests of every package check what the edge answers against the service's
// OpenAPI document (edge/openapi.json): a Checker validates responses, directly or as the transport of
// an http.Client, so a handler that drifts from the published contract fails the test that exercised it.
package edgetest

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	valerrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/helpers"
	"github.com/pb33f/libopenapi-validator/paths"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
	lowv3 "github.com/pb33f/libopenapi/datamodel/low/v3"

	"github.com/dirsvc/dirsvc/edge"
)

// RepresentationsExtension is the media-type extension of the document that names, for each value of a
// query parameter, the component schema the body must match. The edge answers one representation per
// request (view=page or view=brief), and the JSON Schema of the response can only say "one of them"
// (anyOf, since a page is also a valid brief representation); the extension lets the checker hold each
// response to the representation its request asked for, so a page missing a page-only field fails.
//
//	"x-dir-representations": {"parameter": "view", "schemas": {"page": "ServicePage", "brief": "ServiceView"}}
//
// A request without the parameter uses the parameter's schema default.
const RepresentationsExtension = "x-dir-representations"

// Checker validates HTTP responses against the service's OpenAPI document. It is safe for concurrent
// use; one Checker may serve a whole test, and several Checkers share one parsed document.
type Checker struct {
	eng *engine

	mu    sync.Mutex
	count int
}

// engine is the parsed document and its validators, shared by every Checker of the process.
type engine struct {
	mu      sync.Mutex // serialises use of the validators and their caches
	doc     libopenapi.Document
	model   *v3.Document
	val     validator.Validator
	schemas schema_validation.SchemaValidator
	opts    *config.ValidationOptions
}

var (
	sharedOnce sync.Once
	shared     *engine
	sharedErrs []string
)

// validationOptions are the options of every validation: formats (date-time, date, uri...) are
// asserted, not just annotations.
func validationOptions() []config.Option {
	return []config.Option{config.WithFormatAssertions()}
}

// load parses and validates the embedded document once.
func load() (*engine, []string) {
	sharedOnce.Do(func() { shared, sharedErrs = parse(edge.OpenAPIDocument()) })
	return shared, sharedErrs
}

// parse parses an OpenAPI document and builds its validators; problems are returned as messages.
func parse(spec []byte) (*engine, []string) {
	doc, err := libopenapi.NewDocument(spec)
	if err != nil {
		return nil, []string{"parse: " + err.Error()}
	}
	if v := doc.GetVersion(); !strings.HasPrefix(v, "3.1.") {
		return nil, []string{fmt.Sprintf("openapi is %q, want a 3.1 document", v)}
	}
	m, err := doc.BuildV3Model()
	if err != nil {
		return nil, []string{"build model: " + err.Error()}
	}
	val, errs := validator.NewValidator(doc, validationOptions()...)
	if len(errs) > 0 {
		var msgs []string
		for _, e := range errs {
			msgs = append(msgs, "validator: "+e.Error())
		}
		return nil, msgs
	}
	if ok, verrs := val.ValidateDocument(); !ok {
		var msgs []string
		for _, e := range verrs {
			msgs = append(msgs, "not a valid OpenAPI 3.1 document: "+describe(e))
		}
		return nil, msgs
	}
	eng := &engine{doc: doc, model: &m.Model, val: val,
		schemas: schema_validation.NewSchemaValidator(validationOptions()...),
		opts:    config.NewValidationOptions(validationOptions()...)}
	if msgs := eng.checkExtensions(); len(msgs) > 0 {
		return nil, msgs
	}
	return eng, nil
}

// NewChecker parses the embedded document (edge.OpenAPIDocument()) and fails tb if it is not a valid
// OpenAPI 3.1 document.
func NewChecker(tb testing.TB) *Checker {
	tb.Helper()
	eng, errs := load()
	if len(errs) > 0 {
		tb.Fatalf("edgetest: the OpenAPI document (edge/openapi.json) is not usable:\n  - %s", strings.Join(errs, "\n  - "))
	}
	return &Checker{eng: eng}
}

// Count returns how many responses were checked.
func (c *Checker) Count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.count
}

// Check validates one response to the request: that the operation and status are documented, the
// headers the document requires are present and match their schemas, the content type is one the
// document gives, and the body matches the schema of the operation and status (and, where the
// document names one per query value, the representation the request asked for). A failure is
// reported with tb.Errorf (never Fatalf, so Check may run on any goroutine) naming method, path, status
// and each violation. The body stays readable: Check reads it and replaces resp.Body with a fresh
// reader. A 304 response is only checked to be documented; a HEAD request is checked as GET without
// its body; a 405 to a method the path does not offer is checked against its Allow header and the 405
// response an operation of the path documents.
func (c *Checker) Check(tb testing.TB, req *http.Request, resp *http.Response) {
	tb.Helper()
	if req == nil && resp != nil {
		req = resp.Request
	}
	if req == nil || req.URL == nil || resp == nil {
		tb.Errorf("edgetest: Check needs a request with a URL and a response")
		return
	}
	var raw []byte
	if resp.Body != nil && resp.Body != http.NoBody {
		var err error
		raw, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(raw))
		if err != nil {
			tb.Errorf("edgetest: %s %s -> %d: reading the body: %v", req.Method, req.URL.RequestURI(), resp.StatusCode, err)
			return
		}
	}
	c.mu.Lock()
	c.count++
	c.mu.Unlock()

	violations, notes := c.eng.check(req, resp, raw)
	for _, n := range notes {
		tb.Logf("edgetest: %s %s -> %d: %s", req.Method, req.URL.RequestURI(), resp.StatusCode, n)
	}
	if len(violations) > 0 {
		tb.Errorf("edgetest: %s %s -> %d %s does not match the OpenAPI document (edge/openapi.json):\n  - %s",
			req.Method, req.URL.RequestURI(), resp.StatusCode, http.StatusText(resp.StatusCode),
			strings.Join(violations, "\n  - "))
	}
}

// Transport returns an http.RoundTripper that checks every response it carries, using base as the
// underlying transport (nil means http.DefaultTransport). An http.Client follows redirects by a round
// trip per hop, so each hop's response is checked.
func (c *Checker) Transport(tb testing.TB, base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{c: c, tb: tb, base: base}
}

type transport struct {
	c    *Checker
	tb   testing.TB
	base http.RoundTripper
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	t.c.Check(t.tb, req, resp)
	return resp, nil
}

// check returns the violations of one response, and notes on what could not be checked.
func (e *engine) check(req *http.Request, resp *http.Response, raw []byte) (violations, notes []string) {
	e.mu.Lock()
	defer e.mu.Unlock()

	// A HEAD request is answered as GET without the body (net/http serves HEAD on every GET route):
	// it is checked as GET, except for the body.
	head := req.Method == http.MethodHead
	if head {
		req = req.Clone(req.Context())
		req.Method = http.MethodGet
	}

	// The operation: path template and method.
	pathItem, perrs, tmpl := paths.FindPath(req, e.model, nil)
	if pathItem == nil {
		return []string{fmt.Sprintf("undocumented operation: no path of the document matches %s", req.URL.Path)}, nil
	}
	op := helpers.ExtractOperation(req, pathItem)
	if op == nil && resp.StatusCode == http.StatusMethodNotAllowed {
		return e.checkMethodNotAllowed(req, resp, raw, pathItem, tmpl, head)
	}
	if op == nil || len(perrs) > 0 {
		return []string{fmt.Sprintf("undocumented operation: %s is not documented for %s", req.Method, tmpl)}, nil
	}
	name := op.OperationId
	if name == "" {
		name = req.Method + " " + tmpl
	}

	// The status.
	if responseFor(op, resp.StatusCode) == nil {
		var codes []string
		if op.Responses != nil && op.Responses.Codes != nil {
			for k := range op.Responses.Codes.KeysFromOldest() {
				codes = append(codes, k)
			}
		}
		return []string{fmt.Sprintf("undocumented status %d for %s (%s %s documents %s)", resp.StatusCode, name,
			req.Method, tmpl, strings.Join(codes, ", "))}, nil
	}
	if resp.StatusCode == http.StatusNotModified {
		return nil, nil
	}
	documentedResp := responseFor(op, resp.StatusCode)

	// The content type, when the document gives the status a body.
	contentOK := true
	if documentedResp != nil && documentedResp.Content != nil && documentedResp.Content.Len() > 0 {
		ct := resp.Header.Get("Content-Type")
		mt, _, _ := helpers.ExtractContentType(ct)
		if documentedResp.Content.GetOrZero(mt) == nil {
			contentOK = false
			var types []string
			for k := range documentedResp.Content.KeysFromOldest() {
				types = append(types, k)
			}
			if ct == "" {
				violations = append(violations, fmt.Sprintf("missing Content-Type (the document gives %s)", strings.Join(types, ", ")))
			} else {
				violations = append(violations, fmt.Sprintf("Content-Type %q is not documented for status %d (the document gives %s)",
					ct, resp.StatusCode, strings.Join(types, ", ")))
			}
		}
	}

	if head {
		return append(violations, e.checkHeaders(resp, documentedResp)...), nil
	}

	// Body, by the library, on a copy carrying the decoded body.
	body, note := decodeBody(resp, raw)
	if note != "" {
		notes = append(notes, note)
	}
	vresp := *resp
	vresp.Header = resp.Header.Clone()
	if body != nil {
		vresp.Header.Del("Content-Encoding")
		vresp.Body = io.NopCloser(bytes.NewReader(body))
	} else {
		vresp.Body = http.NoBody
	}
	skipBody := note != "" || !contentOK
	repViolations := e.checkRepresentation(req, resp, op, body, skipBody)
	if _, verrs := e.val.ValidateHttpResponse(req, &vresp); len(verrs) > 0 {
		for _, ve := range verrs {
			switch {
			case ve.IsPathMissingError() || ve.IsOperationMissingError(),
				ve.ValidationType == helpers.ResponseBodyValidation && ve.ValidationSubType == helpers.ResponseBodyResponseCode:
				continue // operation and status are checked above
			case ve.ValidationType == helpers.ResponseBodyValidation && ve.ValidationSubType == helpers.RequestBodyContentType:
				continue // content type is checked above
			case ve.ValidationType == helpers.ResponseBodyValidation &&
				(ve.ValidationSubType == helpers.ParameterValidationHeader || ve.ValidationSubType == lowv3.HeadersLabel):
				continue // checkHeaders checks headers
			case ve.ValidationType == helpers.ResponseBodyValidation && ve.ValidationSubType == helpers.Schema &&
				(skipBody || len(repViolations) > 0):
				continue // not checkable, or the representation check says it more precisely
			}
			violations = append(violations, describe(ve))
		}
	}
	violations = append(violations, repViolations...)
	violations = append(violations, e.checkHeaders(resp, documentedResp)...)
	return violations, notes
}

// checkMethodNotAllowed checks a 405 answer to a method the document does not give the path. OpenAPI
// cannot give those methods operations, so the answer is held to HTTP (RFC 9110 section 15.5.6: Allow
// names the methods the path offers, here only documented ones) and to the 405 response an operation
// of the path documents, which must exist: headers, content type and body.
func (e *engine) checkMethodNotAllowed(req *http.Request, resp *http.Response, raw []byte, item *v3.PathItem, tmpl string,
	head bool) (violations, notes []string) {
	var methods []string
	var documented *v3.Response
	for m, op := range item.GetOperations().FromOldest() {
		methods = append(methods, strings.ToUpper(m))
		if documented == nil && op.Responses != nil && op.Responses.Codes != nil {
			documented = op.Responses.Codes.GetOrZero("405")
		}
	}
	if documented == nil {
		return []string{fmt.Sprintf("undocumented operation: %s is not documented for %s, and no operation of the path documents a 405 answer for it",
			req.Method, tmpl)}, nil
	}
	var allow []string
	for _, v := range resp.Header.Values("Allow") {
		for _, m := range strings.Split(v, ",") {
			if m = strings.TrimSpace(m); m != "" {
				allow = append(allow, m)
			}
		}
	}
	if len(allow) == 0 {
		violations = append(violations, fmt.Sprintf("a 405 needs Allow naming the methods of %s (the document gives %s)", tmpl, strings.Join(methods, ", ")))
	}
	for _, m := range allow {
		if !slices.Contains(methods, m) && !(m == http.MethodHead && slices.Contains(methods, http.MethodGet)) {
			violations = append(violations, fmt.Sprintf("Allow names %s, which the document does not give %s (it gives %s)", m, tmpl, strings.Join(methods, ", ")))
		}
	}
	violations = append(violations, e.checkHeaders(resp, documented)...)
	if head || documented.Content == nil || documented.Content.Len() == 0 {
		return violations, nil
	}
	ct := resp.Header.Get("Content-Type")
	mt, _, _ := helpers.ExtractContentType(ct)
	media := documented.Content.GetOrZero(mt)
	if media == nil {
		var types []string
		for k := range documented.Content.KeysFromOldest() {
			types = append(types, k)
		}
		return append(violations, fmt.Sprintf("Content-Type %q is not documented for status 405 of %s (the document gives %s)",
			ct, tmpl, strings.Join(types, ", "))), nil
	}
	body, note := decodeBody(resp, raw)
	if note != "" || media.Schema == nil {
		if note != "" {
			notes = append(notes, note)
		}
		return violations, notes
	}
	sch := media.Schema.Schema()
	if sch == nil {
		return append(violations, fmt.Sprintf("the 405 schema of %s cannot be built: %v", tmpl, media.Schema.GetBuildError())), notes
	}
	if ok, verrs := e.schemas.ValidateSchemaBytesWithVersion(sch, body, 3.1); !ok {
		if len(verrs) == 0 {
			violations = append(violations, "the body does not match the documented 405 response")
		}
		for _, ve := range verrs {
			violations = append(violations, "the body does not match the documented 405 response: "+describe(ve))
		}
	}
	return violations, notes
}

// responseFor returns the response the operation documents for a status: the status itself, its range
// (4XX) or the default; nil when none.
func responseFor(op *v3.Operation, status int) *v3.Response {
	if op.Responses == nil {
		return nil
	}
	if op.Responses.Codes != nil {
		if r := op.Responses.Codes.GetOrZero(strconv.Itoa(status)); r != nil {
			return r
		}
		if r := op.Responses.Codes.GetOrZero(fmt.Sprintf("%dXX", status/100)); r != nil {
			return r
		}
	}
	return op.Responses.Default
}

// decodeBody returns the body as the client would read it: a gzip body (from a transport that does not
// decompress) is decompressed. Another content coding cannot be decoded here; the note says so and
// the body is not checked.
func decodeBody(resp *http.Response, raw []byte) ([]byte, string) {
	switch enc := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
		return raw, ""
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return raw, "body not checked: Content-Encoding gzip but not gzip: " + err.Error()
		}
		b, err := io.ReadAll(zr)
		if err != nil {
			return raw, "body not checked: Content-Encoding gzip but not gzip: " + err.Error()
		}
		return b, ""
	default:
		return raw, "body not checked: cannot decode Content-Encoding " + enc
	}
}

// checkRepresentation holds a body to the representation its request asked for (see
// RepresentationsExtension).
func (e *engine) checkRepresentation(req *http.Request, resp *http.Response, op *v3.Operation, body []byte, skip bool) []string {
	if skip {
		return nil
	}
	r := responseFor(op, resp.StatusCode)
	if r == nil || r.Content == nil {
		return nil
	}
	mt, _, _ := helpers.ExtractContentType(resp.Header.Get("Content-Type"))
	media := r.Content.GetOrZero(mt)
	if media == nil {
		return nil // the library reports the content type
	}
	rep, ok := representations(media)
	if !ok {
		return nil
	}
	value := req.URL.Query().Get(rep.Parameter)
	if value == "" {
		value = e.parameterDefault(op, req, rep.Parameter)
	}
	name, ok := rep.Schemas[value]
	if !ok {
		return nil // a value the document does not know: the operation answers 400
	}
	if !json.Valid(body) {
		return []string{fmt.Sprintf("body is not JSON: %.80q", body)}
	}
	proxy := e.model.Components.Schemas.GetOrZero(name)
	if proxy == nil {
		return []string{fmt.Sprintf("the document names schema %q for %s=%s but has no such component", name, rep.Parameter, value)}
	}
	sch := proxy.Schema()
	if sch == nil {
		return []string{fmt.Sprintf("component schema %q cannot be built: %v", name, proxy.GetBuildError())}
	}
	if ok, verrs := e.schemas.ValidateSchemaBytesWithVersion(sch, body, 3.1); !ok {
		var out []string
		for _, ve := range verrs {
			out = append(out, fmt.Sprintf("body is not a %s (%s=%s):\n      %s", name, rep.Parameter, value, describe(ve)))
		}
		if len(out) == 0 {
			out = append(out, fmt.Sprintf("body is not a %s (%s=%s)", name, rep.Parameter, value))
		}
		return out
	}
	return nil
}

type representation struct {
	Parameter string            `yaml:"parameter"`
	Schemas   map[string]string `yaml:"schemas"`
}

func representations(media *v3.MediaType) (representation, bool) {
	var rep representation
	if media.Extensions == nil {
		return rep, false
	}
	node := media.Extensions.GetOrZero(RepresentationsExtension)
	if node == nil {
		return rep, false
	}
	if err := node.Decode(&rep); err != nil || rep.Parameter == "" || len(rep.Schemas) == 0 {
		return representation{}, false
	}
	return rep, true
}

// checkExtensions checks that every representations extension names a query parameter of its
// operation and existing component schemas.
func (e *engine) checkExtensions() []string {
	var msgs []string
	for tmpl, item := range e.model.Paths.PathItems.FromOldest() {
		for method, op := range item.GetOperations().FromOldest() {
			if op.Responses == nil || op.Responses.Codes == nil {
				continue
			}
			for code, r := range op.Responses.Codes.FromOldest() {
				if r.Content == nil {
					continue
				}
				for mt, media := range r.Content.FromOldest() {
					if media.Extensions == nil || media.Extensions.GetOrZero(RepresentationsExtension) == nil {
						continue
					}
					where := fmt.Sprintf("%s %s %s %s", strings.ToUpper(method), tmpl, code, mt)
					rep, ok := representations(media)
					if !ok {
						msgs = append(msgs, where+": "+RepresentationsExtension+" wants {parameter, schemas}")
						continue
					}
					if !slices.ContainsFunc(append(slices.Clone(item.Parameters), op.Parameters...), func(p *v3.Parameter) bool {
						return p.Name == rep.Parameter && p.In == "query"
					}) {
						msgs = append(msgs, fmt.Sprintf("%s: %s names query parameter %q, which the operation does not have", where, RepresentationsExtension, rep.Parameter))
					}
					for _, name := range rep.Schemas {
						if e.model.Components == nil || e.model.Components.Schemas.GetOrZero(name) == nil {
							msgs = append(msgs, fmt.Sprintf("%s: %s names schema %q, which is not a component", where, RepresentationsExtension, name))
						}
					}
				}
			}
		}
	}
	return msgs
}

// parameterDefault returns the default of the operation's query parameter name, as a string.
func (e *engine) parameterDefault(op *v3.Operation, req *http.Request, name string) string {
	item, _, _ := paths.FindPath(req, e.model, nil)
	var params []*v3.Parameter
	if item != nil {
		params = append(params, item.Parameters...)
	}
	params = append(params, op.Parameters...)
	for _, p := range slices.Backward(params) {
		if p.Name != name || p.In != "query" || p.Schema == nil {
			continue
		}
		if s := p.Schema.Schema(); s != nil && s.Default != nil {
			return s.Default.Value
		}
	}
	return ""
}

// checkHeaders checks the headers the document gives for the status: each required one is present,
// and each present one matches its schema. The library's own header check is not used: it validates
// the schema of required headers only, and reads each value as URL-query-escaped JSON, so the quoted
// entity tag "abc" is seen as abc and a + in a value as a space.
func (e *engine) checkHeaders(resp *http.Response, r *v3.Response) []string {
	if r == nil || r.Headers == nil {
		return nil
	}
	var out []string
	for name, h := range r.Headers.FromOldest() {
		values := resp.Header.Values(name)
		if len(values) == 0 {
			if h.Required {
				out = append(out, fmt.Sprintf("missing required header %s", name))
			}
			continue
		}
		if h.Schema == nil {
			continue
		}
		sch := h.Schema.Schema()
		if sch == nil {
			out = append(out, fmt.Sprintf("header %s: schema cannot be built: %v", name, h.Schema.GetBuildError()))
			continue
		}
		for _, v := range values {
			if ok, verrs := e.schemas.ValidateSchemaObjectWithVersion(sch, headerValue(sch.Type, v), 3.1); !ok {
				if len(verrs) == 0 {
					out = append(out, fmt.Sprintf("header %s: %q does not match its schema", name, v))
				}
				for _, ve := range verrs {
					out = append(out, fmt.Sprintf("header %s: %q does not match its schema: %s", name, v, describe(ve)))
				}
			}
		}
	}
	return out
}

// headerValue returns a header value as the JSON value its schema types expect: a number or boolean
// when the schema asks for one and the text is one, otherwise the text itself.
func headerValue(types []string, v string) any {
	for _, t := range types {
		switch t {
		case "integer", "number":
			if n, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
				return n
			}
		case "boolean":
			if b, err := strconv.ParseBool(strings.TrimSpace(v)); err == nil {
				return b
			}
		}
	}
	return v
}

// describe renders a library validation error: each schema failure with where it is, or else the
// message and reason.
func describe(e *valerrors.ValidationError) string {
	var b strings.Builder
	if len(e.SchemaValidationErrors) == 0 || !strings.Contains(e.Reason, "contract requirements") {
		b.WriteString(e.Message)
		if e.Reason != "" && e.Reason != e.Message {
			b.WriteString(": ")
			b.WriteString(e.Reason)
		}
	}
	for i, f := range e.SchemaValidationErrors {
		if i > 0 || b.Len() > 0 {
			b.WriteString("\n      ")
		}
		where := f.FieldPath
		if where == "" {
			where = "$"
		}
		b.WriteString(where)
		b.WriteString(": ")
		b.WriteString(f.Reason)
		if f.KeywordLocation != "" {
			b.WriteString(" [schema ")
			b.WriteString(f.KeywordLocation)
			b.WriteString("]")
		}
	}
	return b.String()
}
