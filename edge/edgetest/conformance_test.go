package edgetest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/edge"
	"github.com/dirsvc/dirsvc/edge/edgetest"
	"github.com/dirsvc/dirsvc/fhir"
	"github.com/dirsvc/dirsvc/primary"
	"github.com/dirsvc/dirsvc/primary/export"
	"github.com/dirsvc/dirsvc/primary/federation"
	"github.com/dirsvc/dirsvc/primary/webhook"
)

// transitionBody is the JSON of the admin API's transition body (read into an unnamed struct of
// package primary, with dirsvc.Audiences written as their names).
type transitionBody struct {
	To        dirsvc.State `json:"to"`
	Survivor  string       `json:"survivor,omitempty"`
	VisibleTo []string     `json:"visibleTo,omitempty"`
}

// importRecordHead is what the admin API reads of a record body itself; the rest is the import format.
type importRecordHead struct {
	Kind     dirsvc.Kind `json:"kind"`
	PublicID string      `json:"publicId"`
}

// categoryList and collectionList are the bodies of the category and collection lists.
type categoryList struct {
	Categories []dirsvc.BrowseCategory `json:"categories"`
}

type collectionList struct {
	Items []dirsvc.CollectionSummary `json:"items"`
}

// fhirResourceHead is what every FHIR resource starts with (the fhir package writes each type's own
// members after it).
type fhirResourceHead struct {
	ResourceType string     `json:"resourceType"`
	ID           string     `json:"id,omitempty"`
	Meta         *fhir.Meta `json:"meta,omitempty"`
}

// goTypes are the Go types whose JSON the component schemas describe, by schema name.
var goTypes = map[string]any{
	"FHIRBundle": fhir.Bundle{}, "FHIRLink": fhir.Link{}, "FHIREntry": fhir.Entry{}, "FHIREntrySearch": fhir.EntrySearch{},
	"OperationOutcome": fhir.OperationOutcome{}, "FHIRIssue": fhir.Issue{}, "FHIRCodeableConcept": fhir.CodeableConcept{},
	"FHIRCoding": fhir.Coding{}, "FHIRMeta": fhir.Meta{}, "FHIRResource": fhirResourceHead{},
	"ImportStats": dirsvc.ImportStats{}, "Transition": transitionBody{}, "ImportRecord": importRecordHead{},
	"Ref": dirsvc.Ref{}, "CodeLabel": dirsvc.CodeLabel{}, "LocalTypeRef": dirsvc.LocalTypeRef{}, "Taxonomy": dirsvc.TaxonomyView{},
	"CategoryView": dirsvc.CategoryView{}, "PlatformType": dirsvc.PlatformType{}, "LocalTypeView": dirsvc.LocalTypeView{}, "Term": dirsvc.Term{},
	"BrowseCategory": dirsvc.BrowseCategory{}, "CategoryType": dirsvc.CategoryType{}, "CategoryDetail": dirsvc.CategoryDetail{},
	"CategoryList": categoryList{}, "PlaceCount": dirsvc.PlaceCount{}, "CollectionSummary": dirsvc.CollectionSummary{},
	"CollectionList": collectionList{}, "CollectionDetail": dirsvc.CollectionDetail{}, "SavedSearch": dirsvc.SavedSearch{},
	"ContactView": dirsvc.ContactView{}, "IdentifierView": dirsvc.IdentifierView{},
	"AddressView": dirsvc.AddressView{}, "Point": dirsvc.Point{}, "Ownership": dirsvc.Ownership{},
	"OwnershipCard": dirsvc.OwnershipCard{}, "Interval": dirsvc.Interval{}, "WeeklyHours": dirsvc.WeeklyHours{},
	"DateHours": dirsvc.DateHours{}, "OpeningHours": dirsvc.OpeningHours{}, "Referral": dirsvc.Referral{},
	"Cost": dirsvc.Cost{}, "OpenStatus": dirsvc.OpenStatus{}, "ServiceCard": dirsvc.ServiceCard{},
	"PersonName": dirsvc.PersonName{}, "OrganisationView": OrganisationRead{},
	"LocationView": dirsvc.LocationView{}, "ServiceView": dirsvc.ServiceView{},
	"PractitionerView": dirsvc.PractitionerView{}, "RoleView": dirsvc.RoleView{}, "LeaderView": dirsvc.LeaderView{},
	"ServicePage": dirsvc.ServicePage{}, "LocationPage": dirsvc.LocationPage{},
	"OrganisationLocation": dirsvc.OrganisationLocation{}, "OrganisationPage": OrganisationPageRead{},
	"PractitionerPage": dirsvc.PractitionerPage{}, "Leadership": edge.Leadership{},
	"ServiceList": ServiceList{}, "PractitionerList": PractitionerList{}, "FeedItem": FeedItemRead{}, "FeedPage": edge.FeedPage{},
	"IdentifiedRecord": edge.IdentifiedRecord{}, "IdentifierSearch": IdentifierSearch{},
	"Problem": edge.Problem{}, "DeveloperInfo": edge.DeveloperInfo{}, "FHIRInfo": edge.FHIRInfo{}, "FederationManifest": edge.FederationManifest{}, "ManifestDirectory": edge.ManifestDirectory{}, "FederationEndpoints": edge.FederationEndpoints{}, "CodeSystemRef": edge.CodeSystemRef{}, "JurisdictionPack": dirsvc.JurisdictionPack{},
	"TokenRequest": TokenRequest{}, "TokenResponse": primary.TokenResponse{}, "OAuthError": primary.OAuthError{},
	"JWKSet": JWKSet{}, "JWK": JWK{}, "NearestPlace": edge.NearestPlace{},
	"SearchResults": edge.SearchResults{}, "SearchInterpretation": edge.SearchInterpretation{},
	"OrganisationHit": edge.OrganisationHit{}, "ResultCard": dirsvc.ResultCard{}, "CardLocation": dirsvc.CardLocation{},
	"PractitionerLink": dirsvc.PractitionerLink{}, "SearchFacets": dirsvc.SearchFacets{}, "FacetCount": dirsvc.FacetCount{},
	"Correction": dirsvc.Correction{}, "PlaceRead": dirsvc.PlaceRead{},
	"Suggestions": edge.Suggestions{}, "Suggestion": dirsvc.Suggestion{},
	"OrganisationResults": edge.OrganisationResults{}, "OrganisationItem": edge.OrganisationItem{}, "Offering": edge.Offering{},
	"OrganisationFacets": dirsvc.OrganisationFacets{},
	"WebhookEndpoint":    webhook.EndpointView{}, "WebhookEndpointList": webhook.EndpointList{}, "WebhookSettings": webhook.Settings{},
	"WebhookDelivery": dirsvc.Delivery{}, "WebhookDeliveryList": webhook.DeliveryList{}, "WebhookDeliveryDetail": webhook.DeliveryDetail{},
	"WebhookAttempt": dirsvc.Attempt{}, "WebhookSent": webhook.Sent{}, "WebhookPayloadPreview": webhook.Preview{},
	"WebhookPreviewItem": webhook.PreviewItem{},
	"ExportRequest":      dirsvc.ExportRequest{}, "Export": export.Export{}, "ExportFile": export.File{},
	"ExportList": export.ExportList{}, "BulkManifest": export.Manifest{}, "BulkManifestOutput": export.ManifestOutput{},
	"ForwardedProposal": federation.Proposal{}, "ForwardedIssue": federation.Issue{}, "IssueReporter": federation.IssueReporter{},
	"ForwardedReceipt": federation.Receipt{}, "ModerationItem": dirsvc.ForwardedItem{}, "ProposedChange": dirsvc.ProposedChange{},
	"ModerationAction": dirsvc.ModerationAction{}, "Reporter": dirsvc.Reporter{}, "ModerationQueue": primary.ModerationQueue{},
	"ModerationRequest": primary.ModerationRequest{},
	"SandboxSignupForm": SandboxSignupForm{}, "AccessRequestCreate": primary.AccessRequestBody{}, "AccessRequest": dirsvc.AccessRequest{},
	"ClientJWKSet": dirsvc.JWKS{}, "ClientJWK": dirsvc.JWK{},
	"AuthorizationServerMetadata": edge.AuthorizationServerMetadata{}, "SMARTConfiguration": edge.SMARTConfiguration{},
}

// SandboxSignupForm is the sandbox sign-up form as the portal's page sends it (primary/sandbox.go
// reads these fields).
type SandboxSignupForm struct {
	Name    string `json:"name"`
	Email   string `json:"email"`
	Purpose string `json:"purpose"`
	CSRF    string `json:"csrf"`
}

// The types below mirror JSON the Go code writes without a type of its own. Each is tied to the wire:
// the tests decode real answers into them with unknown fields refused (decodeStrict), or, for
// TokenRequest, compare it with the parameters the token endpoint reads.

// OrganisationRead and OrganisationPageRead are an organisation as its own read writes it: the brief
// or page view, with the leadership member edge/records.go adds (withMember) for a holder of
// leadership:read when senior management is on.
type OrganisationRead struct {
	dirsvc.OrganisationView
	Leadership []dirsvc.LeaderView `json:"leadership,omitempty"`
}

// FeedItemRead is a feed item as a client reads it: its entity (a stored view written as it is) is a
// record's brief representation.
type FeedItemRead struct {
	edge.FeedItem
	Entity map[string]any `json:"entity,omitempty"`
}

type OrganisationPageRead struct {
	dirsvc.OrganisationPage
	Leadership []dirsvc.LeaderView `json:"leadership,omitempty"`
}

// ServiceList and PractitionerList are the pages edge.writeList builds by hand.
type ServiceList struct {
	Items      []dirsvc.ServiceView `json:"items"`
	Limit      int                  `json:"limit"`
	NextCursor *string              `json:"nextCursor"`
}

type PractitionerList struct {
	Items      []dirsvc.PractitionerView `json:"items"`
	Limit      int                       `json:"limit"`
	NextCursor *string                   `json:"nextCursor"`
}

// IdentifierSearch is the answer of the identifier search (a map in edge/lists.go).
type IdentifierSearch struct {
	Items []edge.IdentifiedRecord `json:"items"`
}

// JWKSet and JWK are the key set of edge's JWKS handler (its jwk type is unexported).
type JWKSet struct {
	Keys []JWK `json:"keys"`
}

type JWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Kid string `json:"kid"`
	Alg string `json:"alg"`
	Use string `json:"use"`
}

// TokenRequest is a token request's parameters (primary/token.go reads them from a form or a JSON
// object of strings; TestTokenRequestMatchesPrimary holds the names to its tokenParams). Only
// grant_type is always needed.
type TokenRequest struct {
	GrantType    string `json:"grant_type"`
	ClientID     string `json:"client_id,omitempty"`
	ClientSecret string `json:"client_secret,omitempty"`
	Scope        string `json:"scope,omitempty"`
	Directory    string `json:"directory,omitempty"`
	// ClientAssertionType and ClientAssertion authenticate the client with a JWT (private_key_jwt).
	ClientAssertionType string `json:"client_assertion_type,omitempty"`
	ClientAssertion     string `json:"client_assertion,omitempty"`
}

// decodeStrict decodes a JSON body into v, refusing members v does not have.
func decodeStrict(tb testing.TB, what string, body []byte, v any) {
	tb.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		tb.Errorf("%s: the body does not decode into %T: %v\n%s", what, v, err, body)
	}
}

// TestTokenRequestMatchesPrimary holds TokenRequest to the parameters primary/token.go reads
// (tokenParams).
func TestTokenRequestMatchesPrimary(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "../../primary/token.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var params []string
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || len(vs.Names) != 1 || vs.Names[0].Name != "tokenParams" || len(vs.Values) != 1 {
			return true
		}
		lit, ok := vs.Values[0].(*ast.CompositeLit)
		if !ok {
			return true
		}
		for _, e := range lit.Elts {
			if b, ok := e.(*ast.BasicLit); ok {
				s, _ := strconv.Unquote(b.Value)
				params = append(params, s)
			}
		}
		return false
	})
	if len(params) == 0 {
		t.Fatalf("found no tokenParams in primary/token.go: has the token request changed?")
	}
	var fields []string
	for name := range jsonFields(reflect.TypeFor[TokenRequest]()) {
		fields = append(fields, name)
	}
	slices.Sort(params)
	slices.Sort(fields)
	if !slices.Equal(params, fields) {
		t.Errorf("the token endpoint reads %v; TokenRequest (and the TokenRequest schema) has %v", params, fields)
	}
}

// goField is a member of a Go type's JSON object.
type goField struct {
	typ   reflect.Type
	omit  bool // omitempty or omitzero: the key may be absent
	depth int
}

// jsonFields returns the members of t's JSON object as encoding/json writes them: embedded structs
// are flattened, and a field at a shallower depth hides one of the same name deeper down.
func jsonFields(t reflect.Type) map[string]goField {
	out := map[string]goField{}
	var walk func(t reflect.Type, depth int)
	walk = func(t reflect.Type, depth int) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
				walk(f.Type, depth+1)
				continue
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			if cur, ok := out[name]; ok && cur.depth <= depth {
				continue
			}
			omit := slices.Contains(strings.Split(opts, ","), "omitempty") || slices.Contains(strings.Split(opts, ","), "omitzero")
			out[name] = goField{typ: f.Type, omit: omit, depth: depth}
		}
	}
	walk(t, 0)
	return out
}

// schemaShape is what a property schema allows: its JSON types other than null, whether null is
// allowed, the component it refers to and its format.
type schemaShape struct {
	types    []string
	nullable bool
	ref      string
	format   string
	items    map[string]any
}

func shapeOf(components map[string]any, s map[string]any) schemaShape {
	var sh schemaShape
	var visit func(s map[string]any)
	visit = func(s map[string]any) {
		if r, ok := s["$ref"].(string); ok {
			name := strings.TrimPrefix(r, "#/components/schemas/")
			sh.ref = name
			if target, ok := components[name].(map[string]any); ok {
				visit(target)
			}
			return
		}
		switch t := s["type"].(type) {
		case string:
			if t == "null" {
				sh.nullable = true
			} else if !slices.Contains(sh.types, t) {
				sh.types = append(sh.types, t)
			}
		case []any:
			for _, x := range t {
				if x == "null" {
					sh.nullable = true
				} else if !slices.Contains(sh.types, x.(string)) {
					sh.types = append(sh.types, x.(string))
				}
			}
		}
		if f, ok := s["format"].(string); ok {
			sh.format = f
		}
		if it, ok := s["items"].(map[string]any); ok {
			sh.items = it
		}
		for _, k := range []string{"oneOf", "anyOf", "allOf"} {
			for _, sub := range asList(s[k]) {
				visit(sub.(map[string]any))
			}
		}
	}
	visit(s)
	sort.Strings(sh.types)
	return sh
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

var timeType = reflect.TypeFor[time.Time]()

// jsonType is the JSON type encoding/json writes for a non-pointer Go type.
// rawType is json.RawMessage, whose JSON type is that of the value it holds.
var rawType = reflect.TypeOf(json.RawMessage(nil))

func jsonType(t reflect.Type) string {
	switch {
	case t == timeType:
		return "string"
	case t.Kind() == reflect.String:
		return "string"
	case t.Kind() == reflect.Bool:
		return "boolean"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		return "integer"
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		return "number"
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		return "array"
	case t.Kind() == reflect.Struct || t.Kind() == reflect.Map:
		return "object"
	}
	return "?" + t.String()
}

// componentOf returns the component schema of a Go type: the one goTypes maps to it, else the one
// of its name.
func componentOf(t reflect.Type) string {
	for name, v := range goTypes {
		if reflect.TypeOf(v) == t {
			return name
		}
	}
	return t.Name()
}

// checkValue checks that a property schema describes values of Go type t.
func checkValue(t *testing.T, where string, components map[string]any, t0 reflect.Type, prop map[string]any) {
	t.Helper()
	sh := shapeOf(components, prop)
	typ := t0
	if typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	if typ == rawType {
		return // a JSON value kept encoded (an expanded entity): the schema says what it holds
	}
	if want := jsonType(typ); !slices.Equal(sh.types, []string{want}) {
		t.Errorf("%s: schema types %v, Go type %s is written as %s", where, sh.types, t0, want)
	}
	if typ == timeType && sh.format != "date-time" {
		t.Errorf("%s: a time.Time is a date-time string; schema format is %q", where, sh.format)
	}
	if want := componentOf(typ); typ.Kind() == reflect.Struct && typ != timeType && sh.ref != want {
		t.Errorf("%s: Go type %s, schema refers to %q; want #/components/schemas/%s", where, typ, sh.ref, want)
	}
	if typ.Kind() == reflect.Slice && sh.items != nil {
		checkValue(t, where+"[]", components, typ.Elem(), sh.items)
	}
}

// TestSchemasMatchGoTypes holds each component schema to the JSON of its Go type: the same members;
// required exactly when always written (no omitempty); null allowed for a pointer written even when
// nil, and for no field that can never be null; JSON types, formats and referenced components.
func TestSchemasMatchGoTypes(t *testing.T) {
	doc := rawDocument(t)
	components := doc["components"].(map[string]any)["schemas"].(map[string]any)
	for name, s := range components {
		if s.(map[string]any)["type"] == "object" && goTypes[name] == nil {
			t.Errorf("component %s has no Go type in goTypes: add it so its schema is checked", name)
		}
	}
	for name, v := range goTypes {
		t.Run(name, func(t *testing.T) {
			s, ok := components[name].(map[string]any)
			if !ok {
				t.Fatalf("no component schema %s", name)
			}
			props, _ := s["properties"].(map[string]any)
			var required []string
			for _, r := range asList(s["required"]) {
				required = append(required, r.(string))
			}
			if ap, ok := s["additionalProperties"]; ok && ap == false {
				t.Errorf("additionalProperties: false breaks the tolerant reader (fields are only added within v1)")
			}
			fields := jsonFields(reflect.TypeOf(v))
			for fname, f := range fields {
				prop, ok := props[fname].(map[string]any)
				if !ok {
					t.Errorf("%s.%s (Go %s) is not a property of the schema", name, fname, f.typ)
					continue
				}
				if req := slices.Contains(required, fname); req == f.omit {
					t.Errorf("%s.%s: required=%v, but the Go field is omitempty=%v", name, fname, req, f.omit)
				}
				sh := shapeOf(components, prop)
				switch {
				case f.typ.Kind() == reflect.Pointer && !f.omit && !sh.nullable:
					t.Errorf("%s.%s: a pointer without omitempty is written as null when nil; the schema must allow null", name, fname)
				case f.typ.Kind() != reflect.Pointer && f.typ.Kind() != reflect.Slice && f.typ.Kind() != reflect.Map && sh.nullable:
					t.Errorf("%s.%s: Go %s is never null; the schema allows null", name, fname, f.typ)
				case f.omit && sh.nullable:
					t.Errorf("%s.%s: omitempty fields are left out, never null; the schema allows null", name, fname)
				}
				checkValue(t, name+"."+fname, components, f.typ, prop)
			}
			for pname := range props {
				if _, ok := fields[pname]; !ok {
					t.Errorf("%s.%s is in the schema but not in the Go type %T", name, pname, v)
				}
			}
		})
	}
}

// enumOf returns the enum of the schema at a path of names below components/schemas, following $ref
// and oneOf/anyOf, without null.
func enumOf(t *testing.T, components map[string]any, path ...string) []string {
	t.Helper()
	s, ok := components[path[0]].(map[string]any)
	if !ok {
		t.Fatalf("no component schema %s", path[0])
	}
	for _, p := range path[1:] {
		if r, ok := s["$ref"].(string); ok {
			s = components[strings.TrimPrefix(r, "#/components/schemas/")].(map[string]any)
		}
		props, _ := s["properties"].(map[string]any)
		if s, ok = props[p].(map[string]any); !ok {
			t.Fatalf("no property %s in %v", p, path)
		}
	}
	var out []string
	var visit func(v any)
	visit = func(v any) {
		m := v.(map[string]any)
		if r, ok := m["$ref"].(string); ok {
			visit(components[strings.TrimPrefix(r, "#/components/schemas/")])
		}
		for _, e := range asList(m["enum"]) {
			if e != nil {
				out = append(out, e.(string))
			}
		}
		for _, k := range []string{"oneOf", "anyOf"} {
			for _, sub := range asList(m[k]) {
				visit(sub)
			}
		}
	}
	visit(s)
	sort.Strings(out)
	return out
}

// TestEnumsMatchGoValues holds each enumeration of the document to the fixed values of the Go code.
func TestEnumsMatchGoValues(t *testing.T) {
	components := rawDocument(t)["components"].(map[string]any)["schemas"].(map[string]any)
	strs := func(vs ...string) []string { sort.Strings(vs); return vs }
	var audiences []string
	for _, a := range dirsvc.ServedAudiences {
		audiences = append(audiences, a.String())
	}
	kinds := []dirsvc.ContactKind{dirsvc.ContactPhone, dirsvc.ContactMobile, dirsvc.ContactFreecall, dirsvc.ContactLocalRate,
		dirsvc.ContactFax, dirsvc.ContactSMS, dirsvc.ContactTTY, dirsvc.ContactEmail, dirsvc.ContactWebsite, dirsvc.ContactOther}
	var kindStrings []string
	for _, k := range dirsvc.Kinds {
		kindStrings = append(kindStrings, string(k))
	}
	var kindNames []string
	for _, k := range kinds {
		kindNames = append(kindNames, string(k))
	}
	for _, k := range enumOf(t, components, "ContactKind") {
		if !dirsvc.ContactKind(k).Valid() {
			t.Errorf("ContactKind enum has %q, which the Go code does not know", k)
		}
	}
	for _, g := range enumOf(t, components, "PractitionerView", "gender") {
		if g == "" || !dirsvc.ValidGender(g) {
			t.Errorf("gender enum has %q, which the Go code does not know", g)
		}
	}
	tests := []struct {
		path []string
		want []string
	}{
		{[]string{"ContactKind"}, strs(kindNames...)},
		{[]string{"Audience"}, strs(audiences...)},
		{[]string{"OpenStatus", "status"}, strs(dirsvc.OpenNow, dirsvc.ClosedNow, dirsvc.OpenUnknown)},
		{[]string{"OrganisationView", "metroRural"}, strs("metro", "rural")},
		{[]string{"LocationView", "metroRural"}, strs("metro", "rural")},
		{[]string{"OwnershipSource"}, strs(dirsvc.SourceService, dirsvc.SourceLocation, dirsvc.SourceOrganisation)},
		{[]string{"ServiceView", "appointment"}, strs(dirsvc.AppointmentRequired, dirsvc.AppointmentNotRequired)},
		{[]string{"LeaderView", "group"}, strs(dirsvc.LeaderExecutive, dirsvc.LeaderBoard)},
		{[]string{"PractitionerView", "gender"}, strs(dirsvc.GenderWoman, dirsvc.GenderMan, dirsvc.GenderNonBinary,
			dirsvc.GenderDifferentTerm, dirsvc.GenderPreferNotToSay)},
		{[]string{"OpeningHours", "publicHolidays"}, strs("closed", "open", "hours")},
		{[]string{"WeeklyHours", "day"}, strs("mon", "tue", "wed", "thu", "fri", "sat", "sun")},
		{[]string{"RecordKind"}, strs(kindStrings...)},
	}
	for _, tt := range tests {
		if got := enumOf(t, components, tt.path...); !slices.Equal(got, tt.want) {
			t.Errorf("enum of %s = %v, want %v", strings.Join(tt.path, "."), got, tt.want)
		}
	}
}

// catalog is an in-memory dirsvc.Catalog of one directory.
type catalog struct {
	info    dirsvc.Directory
	records map[string]dirsvc.RecordStatus
	related map[string][]dirsvc.Published // by kind/ref/refID
	// leadership is every organisation's stored leadership view.
	leadership *dirsvc.Published
	// identified are the public IDs found by identifier, by system|value.
	identified map[string][]string
	// gen counts the changes made by live and tombstone.
	gen uint64
}

func (c *catalog) Reader(_ context.Context, slug string) (dirsvc.DirectoryReader, error) {
	if slug != c.info.Slug {
		return nil, dirsvc.ErrNotFound
	}
	return c, nil
}

// variant returns a directory with the same records under another slug, with other settings.
func (c *catalog) variant(slug string, settings dirsvc.DirectorySettings, seniorManagementAvailable bool) *catalog {
	v := *c
	v.info.Slug, v.info.Settings, v.info.SeniorManagementAvailable = slug, settings, seniorManagementAvailable
	return &v
}

// directories is an in-memory dirsvc.Catalog of several directories.
type directories map[string]*catalog

func (d directories) Reader(_ context.Context, slug string) (dirsvc.DirectoryReader, error) {
	if c, ok := d[slug]; ok {
		return c, nil
	}
	return nil, dirsvc.ErrNotFound
}

func (c *catalog) Info(context.Context) (*dirsvc.Directory, error) { return &c.info, nil }

func (c *catalog) Generation() uint64 { return c.gen }

// Record holds a narrowing to record kinds (areas and categories are not modelled here).
func (c *catalog) Record(_ context.Context, id string, v dirsvc.Viewer) (dirsvc.RecordStatus, error) {
	st, ok := c.records[id]
	if !ok {
		return dirsvc.RecordStatus{}, dirsvc.ErrNotFound
	}
	if !v.Narrowing.AllowsKind(st.Kind) {
		st.View = nil
	}
	return st, nil
}

// Readable answers as Record does.
func (c *catalog) Readable(ctx context.Context, v dirsvc.Viewer, ids []string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, id := range ids {
		if st, err := c.Record(ctx, id, v); err == nil && st.View != nil {
			out[id] = true
		}
	}
	return out, nil
}

func (c *catalog) Related(_ context.Context, v dirsvc.Viewer, kind, ref dirsvc.Kind, id string) ([]dirsvc.Published, error) {
	if !v.Narrowing.AllowsKind(kind) {
		return nil, nil
	}
	return c.related[fmt.Sprintf("%s/%s/%s", kind, ref, id)], nil
}

// publicPages returns the live services, locations and organisations in public-ID order.
func (c *catalog) publicPages() []dirsvc.PublicPage {
	var out []dirsvc.PublicPage
	for id, st := range c.records {
		if st.View != nil && (st.Kind == dirsvc.KindService || st.Kind == dirsvc.KindLocation || st.Kind == dirsvc.KindOrganisation) {
			out = append(out, dirsvc.PublicPage{PublicID: id, Updated: time.Date(2025, 3, 1, 9, 30, 0, 0, time.UTC)})
		}
	}
	slices.SortFunc(out, func(a, b dirsvc.PublicPage) int { return strings.Compare(a.PublicID, b.PublicID) })
	return out
}

// Image: the conformance catalog publishes no image.
func (c *catalog) Image(context.Context, dirsvc.Viewer, string) (*dirsvc.Image, error) {
	return nil, dirsvc.ErrNotFound
}

func (c *catalog) PublicPageCount(context.Context) (int, error) { return len(c.publicPages()), nil }

func (c *catalog) PublicPages(_ context.Context, after string, offset, limit int) ([]dirsvc.PublicPage, error) {
	all := c.publicPages()
	i, _ := slices.BinarySearchFunc(all, after, func(p dirsvc.PublicPage, id string) int { return strings.Compare(p.PublicID, id) })
	for i < len(all) && all[i].PublicID <= after {
		i++
	}
	all = all[min(i+offset, len(all)):]
	return all[:min(limit, len(all))], nil
}

// views returns a page of the views of the live records of kind, in public-ID order, after the
// public ID after.
func (c *catalog) views(kind dirsvc.Kind, after string, limit int) dirsvc.Page {
	var p dirsvc.Page
	for _, st := range c.records {
		if st.Kind == kind && st.View != nil && st.View.PublicID > after {
			p.Items = append(p.Items, *st.View)
		}
	}
	slices.SortFunc(p.Items, func(a, b dirsvc.Published) int { return strings.Compare(a.PublicID, b.PublicID) })
	if limit > 0 && len(p.Items) > limit {
		p.Items, p.More = p.Items[:limit], true
	}
	return p
}

func (c *catalog) Services(_ context.Context, _ dirsvc.Viewer, q dirsvc.ServiceQuery) (dirsvc.Page, error) {
	return c.views(dirsvc.KindService, q.After, q.Limit), nil
}

func (c *catalog) Practitioners(_ context.Context, _ dirsvc.Viewer, after string, limit int) (dirsvc.Page, error) {
	return c.views(dirsvc.KindPractitioner, after, limit), nil
}

func (c *catalog) Records(_ context.Context, _ dirsvc.Viewer, kind dirsvc.Kind, after string, limit int) (dirsvc.Page, error) {
	return c.views(kind, after, limit), nil
}

func (c *catalog) Identified(_ context.Context, v dirsvc.Viewer, system, value string) ([]string, error) {
	var out []string
	for _, id := range c.identified[system+"|"+value] {
		if v.Narrowing.AllowsKind(dirsvc.KindOfID(id)) {
			out = append(out, id)
		}
	}
	return out, nil
}

// Changes gives one created event for each live record the reader may see, in public-ID order, at
// positions 1, 2, ... (kinds, narrowing and practitioners as the reader asks; areas and categories
// are not modelled here).
func (c *catalog) Changes(_ context.Context, fr dirsvc.FeedReader, q dirsvc.ChangeQuery) (dirsvc.ChangePage, error) {
	ids := slices.Sorted(maps.Keys(c.records))
	var p dirsvc.ChangePage
	if !q.Oldest {
		p.Next = q.After
	}
	for i, id := range ids {
		st, seq := c.records[id], int64(i+1)
		if seq <= p.Next || st.View == nil || !fr.Viewer.Narrowing.AllowsKind(st.Kind) ||
			len(q.Kinds) > 0 && !slices.Contains(q.Kinds, st.Kind) || st.Kind == dirsvc.KindPractitioner && !fr.Practitioners {
			continue
		}
		if len(p.Changes) == q.Limit {
			p.More = true
			break
		}
		p.Changes = append(p.Changes, dirsvc.Change{Seq: seq, Kind: st.Kind, PublicID: id, Version: 1, LocalRevision: 1,
			EventType: dirsvc.EventCreated, At: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)})
		p.Next = seq
	}
	return p, nil
}

// SearchOrganisations finds one organisation, of every live service (filters are not modelled here).
func (c *catalog) SearchOrganisations(context.Context, dirsvc.Viewer, dirsvc.OrganisationQuery) (dirsvc.OrganisationResult, error) {
	return dirsvc.OrganisationResult{Total: 1, Items: []dirsvc.OrganisationFound{{PublicID: "org_full", Name: "Full", Services: 1,
		Types: []string{"gp"}, Places: []string{"Ultimo NSW 2007"}}}}, nil
}

// Suggest suggests the type gp for any text (suggestions are not modelled here).
func (c *catalog) Suggest(context.Context, dirsvc.Viewer, string, int) ([]dirsvc.Suggestion, error) {
	return []dirsvc.Suggestion{{Kind: dirsvc.SuggestType, Label: "GP", Search: "type=gp", Services: 1}}, nil
}

// SearchServices finds every live service the viewer may see, by organisation when asked (words,
// places and filters are not modelled here).
func (c *catalog) SearchServices(_ context.Context, v dirsvc.Viewer, q dirsvc.SearchQuery) (dirsvc.SearchResult, error) {
	var res dirsvc.SearchResult
	var ids []string
	for id, st := range c.records {
		if st.Kind == dirsvc.KindService && st.State == dirsvc.StateLive && st.View != nil && v.Narrowing.AllowsKind(st.Kind) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	km := 1.25
	for _, id := range ids {
		res.Hits = append(res.Hits, dirsvc.SearchHit{PublicID: id, DistanceKm: &km})
		res.Facets.Type = append(res.Facets.Type, dirsvc.FacetCount{Value: "gp", Count: 1})
	}
	res.Total = len(ids)
	if q.ByOrganisation {
		res.ServiceTotal, res.Total = len(ids), 1
		res.Organisations = []dirsvc.SearchOrganisation{{PublicID: "org_full", Name: "Full organisation", Services: len(ids)}}
	}
	return res, nil
}

func (c *catalog) Leadership(_ context.Context, id string) (*dirsvc.Published, error) {
	if c.leadership == nil || id != "org_full" {
		return nil, dirsvc.ErrNotFound
	}
	return c.leadership, nil
}

// Taxonomy: the conformance catalog holds none (no route reads it yet).
func (c *catalog) Taxonomy(context.Context, dirsvc.Audience) (*dirsvc.Published, error) {
	return nil, dirsvc.ErrNotFound
}

// CountServices: the conformance catalog counts nothing (it holds no taxonomy).
func (c *catalog) CountServices(_ context.Context, _ dirsvc.Viewer, cats []dirsvc.CategoryServices) ([]int, error) {
	return make([]int, len(cats)), nil
}

// Places: none.
func (c *catalog) Places(context.Context, dirsvc.Viewer, dirsvc.CategoryServices) ([]dirsvc.PlaceCount, error) {
	return []dirsvc.PlaceCount{}, nil
}

// Collections: none.
func (c *catalog) Collections(context.Context, dirsvc.Audience) ([]dirsvc.CollectionView, error) {
	return []dirsvc.CollectionView{}, nil
}

// live adds a live record with its view.
func (c *catalog) live(t *testing.T, kind dirsvc.Kind, id string, view any, relatedTo ...string) {
	t.Helper()
	body, err := json.Marshal(view)
	if err != nil {
		t.Fatal(err)
	}
	p := dirsvc.Published{PublicID: id, Body: body, ETag: fmt.Sprintf(`"%s-v3"`, id)}
	c.gen++
	c.records[id] = dirsvc.RecordStatus{Kind: kind, State: dirsvc.StateLive, SeenBy: dirsvc.Everyone, View: &p}
	for _, r := range relatedTo { // "kind/id" of the records it refers to
		key := string(kind) + "/" + r
		c.related[key] = append(c.related[key], p)
	}
}

func (c *catalog) tombstone(kind dirsvc.Kind, id string, state dirsvc.State, survivor string) {
	c.gen++
	c.records[id] = dirsvc.RecordStatus{Kind: kind, State: state, Survivor: survivor, SeenBy: dirsvc.Everyone}
}

// fullHours are opening hours with every field set.
func fullHours() *dirsvc.OpeningHours {
	return &dirsvc.OpeningHours{TimeZone: "Australia/Sydney",
		Weekly: []dirsvc.WeeklyHours{{Day: "mon", Intervals: []dirsvc.Interval{{Open: "08:30", Close: "17:00"}}},
			{Day: "sat", Intervals: []dirsvc.Interval{{Open: "09:00", Close: "24:00"}}}},
		PublicHolidays: "hours", HolidayIntervals: []dirsvc.Interval{{Open: "10:00", Close: "14:00"}},
		Exceptions: []dirsvc.DateHours{{Date: "2025-12-25", Closed: true, Note: "Christmas"},
			{Date: "2025-12-24", Intervals: []dirsvc.Interval{{Open: "08:00", Close: "12:00"}}}},
		AfterHours: "Call 13 SICK", Always: false}
}

// demoCatalog holds records with every field set and records with every optional field left out and
// every nullable one null, and tombstones.
func demoCatalog(t *testing.T) *catalog {
	c := &catalog{info: dirsvc.Directory{Slug: "demo", Name: "Demo directory", Country: "AU", TimeZone: "Australia/Sydney",
		Licence: "CC BY 4.0", Attribution: "Incorporates or developed using G-NAF © Geoscape Australia licensed by the Commonwealth of Australia under the Open G-NAF End User Licence Agreement.",
		Settings:                  dirsvc.DirectorySettings{AnyoneMayListPractitioners: true, SeniorManagement: true},
		SeniorManagementAvailable: true},
		records: map[string]dirsvc.RecordStatus{}, related: map[string][]dirsvc.Published{},
		identified: map[string][]string{"abn|51824753556": {"org_full", "svc_full"}}}
	own := &dirsvc.Ownership{Code: "not_for_profit", Display: "Not for profit"}
	ids := []dirsvc.IdentifierView{{Type: "abn", System: "http://hl7.org.au/id/abn", Value: "51824753556"}}
	contacts := []dirsvc.ContactView{{Kind: dirsvc.ContactPhone, Value: "+61290000000", Label: "Reception"},
		{Kind: dirsvc.ContactEmail, Value: "hello@example.org"}, {Kind: dirsvc.ContactWebsite, Value: "https://example.org"}}
	addr := &dirsvc.AddressView{Lines: []string{"1 Harbour St"}, Locality: "Sydney", State: "NSW", Postcode: "2000", Country: "AU"}
	lt := dirsvc.LocalTypeRef{ID: "skin", Slug: "skin-checks", Label: "Skin checks", Icon: "stethoscope"}
	cat := "primary_care"

	org := dirsvc.OrganisationView{RecordHead: head("org_full"), Name: "Harbour Health", Description: "A health service.",
		Logo: "https://example.org/logo.png", Website: "https://example.org", OwnershipType: own,
		OwnershipSource: dirsvc.SourceOrganisation, Identifiers: ids, Contacts: contacts,
		PostalAddress: &dirsvc.AddressView{Lines: nil, Locality: "Sydney", Country: "AU"}, MetroRural: "metro"}
	org.Origin = "https://other.example/v1/d/nsw"
	c.live(t, dirsvc.KindOrganisation, "org_full", org)
	c.live(t, dirsvc.KindOrganisation, "org_min", dirsvc.OrganisationView{RecordHead: head("org_min"), Name: "Small org"})

	loc := dirsvc.LocationView{RecordHead: head("loc_full"), Name: "Harbour clinic", Description: "Ground floor.",
		Organisation: dirsvc.Ref{PublicID: "org_full", Name: "Harbour Health"}, Address: addr,
		Point: &dirsvc.Point{Lat: -33.86, Lon: 151.21}, Area: "Sydney NSW 2000", Areas: []string{"postcode:2000", "state:nsw"},
		MetroRural: "metro", OwnershipType: own, OwnershipSource: dirsvc.SourceOrganisation, Hours: fullHours(),
		Contacts: contacts, Identifiers: ids, Facilities: []string{"wheelchair_access"}}
	c.live(t, dirsvc.KindLocation, "loc_full", loc, "organisation/org_full")
	c.live(t, dirsvc.KindLocation, "loc_min", dirsvc.LocationView{RecordHead: head("loc_min"), Name: "Refuge",
		Organisation: dirsvc.Ref{PublicID: "org_min"}, AddressWithheld: true, Area: "Parramatta NSW"}, "organisation/org_min")

	svc := dirsvc.ServiceView{RecordHead: head("svc_full"), Name: "Skin clinic", Slug: "skin-clinic",
		Description: "Skin checks.", Organisation: dirsvc.Ref{PublicID: "org_full", Name: "Harbour Health"},
		Location: &dirsvc.Ref{PublicID: "loc_full", Name: "Harbour clinic"}, Area: "Sydney NSW 2000",
		Areas: []string{"postcode:2000"}, Type: dirsvc.CodeLabel{Code: "general_practice", Label: "General practice"},
		TypeDisplay: "Skin checks", PlatformTypeDisplay: "General practice", LocalType: &lt,
		Specialties: []dirsvc.LocalTypeRef{lt}, CategoryCode: &cat, CategoryIcon: "stethoscope", OwnershipType: own,
		OwnershipSource: dirsvc.SourceOrganisation,
		Ownership:       &dirsvc.OwnershipCard{Code: own.Code, Label: own.Display, Source: dirsvc.SourceOrganisation},
		Programs:        []dirsvc.CodeLabel{{Code: "mbs", Label: "Medicare"}}, TargetGroups: []dirsvc.CodeLabel{{Code: "youth", Label: "Young people"}},
		Catchment: []string{"state:nsw"}, Hours: fullHours(), Contacts: contacts, Identifiers: ids,
		Website:                    "https://example.org/skin",
		Referral:                   &dirsvc.Referral{Required: true, From: []string{"gp"}, Notes: "Ask your GP."},
		ReferralRequiredFromLabels: []string{"General practitioner"}, Appointment: dirsvc.AppointmentRequired,
		Cost:     &dirsvc.Cost{Kind: "bulk_billed", Notes: "For concession card holders."},
		Delivery: []string{"in_person", "telehealth"}, Languages: []string{"en", "vi"}}
	c.live(t, dirsvc.KindService, "svc_full", svc, "location/loc_full", "organisation/org_full")
	c.live(t, dirsvc.KindService, "svc_min", dirsvc.ServiceView{RecordHead: head("svc_min"), Name: "Drop-in", Slug: "drop-in",
		Organisation: dirsvc.Ref{PublicID: "org_min"}, Type: dirsvc.CodeLabel{Code: "x", Label: "x"}, TypeDisplay: "x",
		PlatformTypeDisplay: "x", CategoryIcon: dirsvc.DefaultIcon, ReferralRequiredFromLabels: []string{}},
		"organisation/org_min")
	// A service whose organisation the caller may not see: the page shows organisation null.
	c.live(t, dirsvc.KindService, "svc_orphan", dirsvc.ServiceView{RecordHead: head("svc_orphan"), Name: "Orphan",
		Slug: "orphan", Organisation: dirsvc.Ref{PublicID: "org_hidden"}, Type: dirsvc.CodeLabel{Code: "x", Label: "x"},
		TypeDisplay: "x", PlatformTypeDisplay: "x", CategoryIcon: dirsvc.DefaultIcon, ReferralRequiredFromLabels: []string{}})

	c.live(t, dirsvc.KindRole, "role_full", dirsvc.RoleView{RecordHead: head("role_full"),
		Practitioner: dirsvc.Ref{PublicID: "prac_a", Name: "Dr Ann Lee"}, Service: dirsvc.Ref{PublicID: "svc_full", Name: "Skin clinic"},
		Location: &dirsvc.Ref{PublicID: "loc_full"}, Organisation: dirsvc.Ref{PublicID: "org_full"}, Title: "GP",
		Specialties: []dirsvc.LocalTypeRef{lt}, Contacts: contacts, Active: true, StartDate: "2020-01-01", EndDate: "2030-01-01"},
		"service/svc_full", "practitioner/prac_a")
	c.live(t, dirsvc.KindRole, "role_min", dirsvc.RoleView{RecordHead: head("role_min"), Practitioner: dirsvc.Ref{PublicID: "prac_b"},
		Service: dirsvc.Ref{PublicID: "svc_full"}, Organisation: dirsvc.Ref{PublicID: "org_full"}, Title: "Nurse", Active: true},
		"service/svc_full", "practitioner/prac_b")
	// A past role, and a role at a service the caller may not see: neither reaches a page's services.
	c.live(t, dirsvc.KindRole, "role_past", dirsvc.RoleView{RecordHead: head("role_past"), Practitioner: dirsvc.Ref{PublicID: "prac_a"},
		Service: dirsvc.Ref{PublicID: "svc_min"}, Organisation: dirsvc.Ref{PublicID: "org_min"}, Title: "Locum", Active: false,
		EndDate: "2024-01-01"}, "service/svc_min", "practitioner/prac_a")
	c.live(t, dirsvc.KindRole, "role_elsewhere", dirsvc.RoleView{RecordHead: head("role_elsewhere"), Practitioner: dirsvc.Ref{PublicID: "prac_a"},
		Service: dirsvc.Ref{PublicID: "svc_hidden"}, Organisation: dirsvc.Ref{PublicID: "org_hidden"}, Title: "GP", Active: true},
		"practitioner/prac_a")

	gender, bio, photo := dirsvc.GenderDifferentTerm, "Skin cancer medicine.", "https://example.org/ann.jpg"
	c.live(t, dirsvc.KindPractitioner, "prac_a", dirsvc.PractitionerView{RecordHead: head("prac_a"),
		Name:   dirsvc.PersonName{Prefix: "Dr", Given: "Ann", Family: "Lee", Text: "Dr Ann Lee"},
		Gender: &gender, GenderOwnTerm: "Genderfluid", Qualifications: []string{"MBBS", "FRACGP"}, Languages: []string{"en", "ko"},
		Bio: &bio, Photo: &photo, Identifiers: []dirsvc.IdentifierView{{Type: "hpii", System: "http://ns.electronichealth.net.au/id/hi/hpii/1.0", Value: "8003610000000000"}},
		Contacts: []dirsvc.ContactView{{Kind: dirsvc.ContactMobile, Value: "+61400000000", Restricted: true}, {Kind: dirsvc.ContactEmail, Value: "ann@example.org"}}})
	// Every field the practitioner keeps private is null.
	c.live(t, dirsvc.KindPractitioner, "prac_b", dirsvc.PractitionerView{RecordHead: head("prac_b"),
		Name: dirsvc.PersonName{Given: "Bo", Family: "Ng", Text: "Bo Ng"}})

	leaders := []dirsvc.LeaderView{
		{Name: "Kim Tran", Group: dirsvc.LeaderExecutive, Title: "Chief executive", StartDate: "2021-02-01", EndDate: "2026-01-31",
			Bio: "Runs the service.", Contacts: []dirsvc.ContactView{{Kind: dirsvc.ContactEmail, Value: "ceo@example.org"}}},
		{Name: "Sam Roe", Group: dirsvc.LeaderBoard, Title: "Chair"},
		{Name: "Former Chair", Group: dirsvc.LeaderBoard, Title: "Chair", StartDate: "2015-01-01", EndDate: "2024-12-31"}, // ended
	}
	lb, err := json.Marshal(leaders)
	if err != nil {
		t.Fatal(err)
	}
	c.leadership = &dirsvc.Published{PublicID: "org_full", Body: lb, ETag: `"lead-v1"`}

	c.tombstone(dirsvc.KindService, "svc_closed", dirsvc.StateClosed, "")
	c.tombstone(dirsvc.KindService, "svc_merged", dirsvc.StateMerged, "svc_full")
	c.tombstone(dirsvc.KindLocation, "loc_merged", dirsvc.StateMerged, "loc_min")
	c.tombstone(dirsvc.KindOrganisation, "org_removed", dirsvc.StateRemoved, "")
	c.tombstone(dirsvc.KindOrganisation, "org_merged", dirsvc.StateMerged, "org_min")
	c.tombstone(dirsvc.KindPractitioner, "prac_merged", dirsvc.StateMerged, "prac_a")
	c.tombstone(dirsvc.KindPractitioner, "prac_closed", dirsvc.StateClosed, "")
	c.tombstone(dirsvc.KindRole, "role_merged", dirsvc.StateMerged, "role_full")
	c.tombstone(dirsvc.KindRole, "role_removed", dirsvc.StateRemoved, "")
	return c
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// unlimited are anonymous limits no test reaches: the clock of these servers stands still.
var unlimited = edge.Limits{PerMinute: 1 << 20, PerDay: 1 << 20}

// demoDirectories are the demo directory and quiet, the same records in a directory that lets no one
// list practitioners without the scope and has senior management switched off.
func demoDirectories(t *testing.T) directories {
	demo := demoCatalog(t)
	return directories{"demo": demo, "quiet": demo.variant("quiet", dirsvc.DirectorySettings{}, true)}
}

// TestEdgeAnswersMatchDocument serves every documented operation from the real edge handler, over
// records with every field and records with none of the optional ones, through a checking client.
func TestEdgeAnswersMatchDocument(t *testing.T) {
	now := time.Date(2025, 3, 3, 10, 0, 0, 0, time.UTC) // a Monday, 21:00 in Sydney
	// The server's base URL is its own address, so the client follows a 301's absolute Location to it.
	srv := httptest.NewUnstartedServer(nil)
	srv.Config.Handler = edge.New(edge.Config{Catalog: demoDirectories(t), Logger: discard(),
		BaseURL: "http://" + srv.Listener.Addr().String(), Now: func() time.Time { return now }, AnonymousLimits: unlimited})
	srv.Start()
	defer srv.Close()
	c := edgetest.NewChecker(t)
	client := &http.Client{Transport: c.Transport(t, nil)}

	type test struct {
		path   string
		status int
		header []string
	}
	tests := []test{
		{"/v1/openapi.json", 200, nil},
		{"/oauth/jwks.json", 200, nil},
		{"/.well-known/oauth-authorization-server", 200, nil},
		{"/v1/d/demo/fhir/.well-known/smart-configuration", 200, nil},
		{"/v1/d/nope/fhir/.well-known/smart-configuration", 404, nil},
		{"/v1/d/demo/fhir/.well-known/smart-configuration?x=1", 400, nil},
		{"/v1/d/demo/developers", 200, nil},
		{"/v1/d/nope/developers", 404, nil},
		{"/v1/d/demo/federation/manifest", 200, nil},
		{"/v1/d/nope/federation/manifest", 404, nil},
		{"/v1/d/demo/federation/manifest?x=1", 400, nil},
		{"/v1/d/Not_A_Slug/developers", 404, nil},
		{"/v1/d/demo/services/svc_x", 404, nil},
		{"/v1/d/demo/services/loc_full", 404, nil},
		{"/v1/d/demo/services/svc_full?view=bogus", 400, nil},
		{"/v1/d/demo/services/svc_closed", 410, nil},
		{"/v1/d/demo/organisations/org_removed", 410, nil},
		{"/v1/d/demo/services/svc_merged", 200, nil}, // 301, then the survivor
		{"/v1/d/demo/services/svc_merged?view=brief", 200, nil},
		{"/v1/d/demo/locations/loc_merged", 200, nil},
		{"/v1/d/demo/organisations/org_merged", 200, nil},
		{"/v1/d/demo/services/svc_full?view=brief", 304, []string{"If-None-Match", `"svc_full-v3"`}},
		{"/v1/d/demo/services/svc_orphan", 200, nil},
		{"/healthz", 200, nil},

		// The sitemap (one urlset: the catalog holds fewer pages than a split).
		{"/v1/d/demo/sitemap.xml", 200, nil},
		{"/v1/d/demo/sitemap.xml?part=1", 200, nil},
		{"/v1/d/demo/sitemap.xml?part=2", 404, nil},
		{"/v1/d/demo/sitemap.xml?part=x", 400, nil},
		{"/v1/d/nope/sitemap.xml", 404, nil},

		// Published images: the catalog publishes none, so every name answers as a missing one.
		{"/v1/d/demo/images/" + strings.Repeat("ab", 32) + ".png", 404, nil},
		{"/v1/d/demo/images/logo.svg", 404, nil},
		{"/v1/d/demo/images/" + strings.Repeat("ab", 32) + ".png?x=1", 400, nil},

		// The service list.
		{"/v1/d/demo/services", 200, nil},
		{"/v1/d/demo/services?limit=1", 200, nil},
		{"/v1/d/demo/services?updatedSince=2025-01-01T00:00:00Z&area=state:nsw,postcode:2000&area=lga:17200&type=general_practice" +
			"&category=primary_care&organisation=org_full,org_min&limit=100", 200, nil},
		{"/v1/d/demo/services?area=nsw", 400, nil},
		{"/v1/d/demo/services?type=", 400, nil},
		{"/v1/d/demo/services?organisation=loc_full", 400, nil},
		{"/v1/d/demo/services?updatedSince=yesterday", 400, nil},
		{"/v1/d/demo/services?limit=0", 400, nil},
		{"/v1/d/demo/services?limit=101", 400, nil},
		{"/v1/d/demo/services?limit=1&limit=2", 400, nil},
		{"/v1/d/demo/services?cursor=bogus", 400, nil},
		{"/v1/d/demo/services?q=clinic", 400, nil},     // an unknown parameter is refused, never ignored
		{"/v1/d/demo/services?limit=%2B5", 400, nil},   // digits only
		{"/v1/d/demo/services/svc_full?x=1", 400, nil}, // every endpoint knows its parameters
		{"/v1/d/demo/developers?x=1", 400, nil},
		{"/v1/d/demo/services?cursor=" + strings.Repeat("x", 201), 400, nil},
		{"/v1/d/nope/services", 404, nil},

		// The practitioner list: demo lets anyone list practitioners, quiet does not.
		{"/v1/d/demo/practitioners", 200, nil},
		{"/v1/d/demo/practitioners?limit=1", 200, nil},
		{"/v1/d/demo/practitioners?limit=x", 400, nil},
		{"/v1/d/quiet/practitioners", 403, nil},
		{"/v1/d/nope/practitioners", 404, nil},

		// Practitioners (brief by default) and roles.
		{"/v1/d/demo/practitioners/prac_x", 404, nil},
		{"/v1/d/demo/practitioners/svc_full", 404, nil},
		{"/v1/d/demo/practitioners/prac_a?view=bogus", 400, nil},
		{"/v1/d/demo/practitioners/prac_a?view=page&view=page", 400, nil},
		{"/v1/d/demo/practitioners/prac_closed", 410, nil},
		{"/v1/d/demo/practitioners/prac_merged?view=page", 200, nil}, // 301, then the survivor
		{"/v1/d/demo/practitioners/prac_a", 304, []string{"If-None-Match", `"prac_a-v3"`}},
		{"/v1/d/demo/roles/role_full", 200, nil},
		{"/v1/d/demo/roles/role_min", 200, nil},
		{"/v1/d/demo/roles/role_full?view=page", 400, nil}, // a role has one representation and takes no view
		{"/v1/d/demo/roles/role_full?view=bogus", 400, nil},
		{"/v1/d/demo/roles/role_x", 404, nil},
		{"/v1/d/demo/roles/role_removed", 410, nil},
		{"/v1/d/demo/roles/role_merged", 200, nil}, // 301, then the survivor
		{"/v1/d/demo/roles/role_full", 304, []string{"If-None-Match", `"role_full-v3"`}},

		// Identifier search.
		{"/v1/d/demo/identifiers/search?system=abn&value=51824753556", 200, nil},
		{"/v1/d/demo/identifiers/search?system=hpio&value=8003620000000000", 200, nil},
		{"/v1/d/demo/identifiers/search?system=abn", 400, nil},
		{"/v1/d/demo/identifiers/search?value=51824753556", 400, nil},
		{"/v1/d/demo/identifiers/search?system=abn&value=%20", 400, nil},
		{"/v1/d/demo/identifiers/search?system=abn&value=" + strings.Repeat("1", 101), 400, nil},
		{"/v1/d/nope/identifiers/search?system=abn&value=1", 404, nil},

		// Leadership needs a client with leadership:read.
		{"/v1/d/demo/organisations/org_full/leadership", 403, nil},

		// Service search: result cards of every shape (a full and a minimal service), by organisation
		// too, and bad parameters.
		{"/v1/d/demo/search/services", 200, nil},
		{"/v1/d/demo/autocomplete?q=g", 200, nil},
		{"/v1/d/demo/search/organisations?q=full&letter=F&type=gp&postcode=2007&limit=5&offset=0", 200, nil},
		{"/v1/d/demo/search/organisations?letter=f", 400, nil},
		{"/v1/d/demo/autocomplete", 400, nil},
		{"/v1/d/demo/autocomplete?q=" + strings.Repeat("a", 101), 400, nil},
		{"/v1/d/demo/search/services?q=clinic&near=-33.87,151.2&radiusKm=25&sort=distance&limit=5&offset=0", 200, nil},
		{"/v1/d/demo/search/services?group=organisation&openNow=true&openOn=weekdays&openFrom=09:00&openTo=17:00", 200, nil},
		{"/v1/d/demo/search/services?radiusKm=5", 400, nil},
		{"/v1/d/demo/search/services?limit=101", 400, nil},
		{"/v1/d/demo/search/services?offset=10001", 400, nil},
		{"/v1/d/demo/search/services?near=91,0", 400, nil},
		{"/v1/d/demo/search/services?q=" + strings.Repeat("a", 201), 400, nil},
		{"/v1/d/nope/search/services", 404, nil},

		// A presented token that is not valid, under any scheme, on every operation of a directory.
		{"/v1/d/demo/services/svc_full", 401, []string{"Authorization", "Bearer not-a-token"}},
		{"/v1/d/demo/services", 401, []string{"Authorization", "Bearer not-a-token"}},
		{"/v1/d/demo/developers", 401, []string{"Authorization", "Basic ZGlycF94OnNlY3JldA=="}},
		{"/v1/d/demo/organisations/org_full/leadership", 401, []string{"Authorization", "Bearer a.b.c"}},
	}
	for _, kind := range []string{"services/svc", "locations/loc", "organisations/org", "practitioners/prac"} {
		for _, id := range []string{"_full", "_min"} {
			if kind == "practitioners/prac" {
				id = map[string]string{"_full": "_a", "_min": "_b"}[id]
			}
			for _, q := range []string{"", "?view=page", "?view=brief"} {
				tests = append(tests, test{"/v1/d/demo/" + kind + id + q, 200, nil})
			}
		}
	}
	const redirects = 6 // svc_merged twice, loc_merged, org_merged, prac_merged, role_merged

	for _, tt := range tests {
		req, err := http.NewRequest("GET", srv.URL+tt.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(tt.header); i += 2 {
			req.Header.Set(tt.header[i], tt.header[i+1])
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", tt.path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.status {
			t.Errorf("GET %s = %d, want %d: %s", tt.path, resp.StatusCode, tt.status, body)
		}
	}
	checked := len(tests) + redirects // every request and each redirect hop

	// A page's entity tag is the hash of the page.
	resp, err := client.Get(srv.URL + "/v1/d/demo/locations/loc_full")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	req, _ := http.NewRequest("GET", srv.URL+"/v1/d/demo/locations/loc_full", nil)
	req.Header.Set("If-None-Match", resp.Header.Get("ETag"))
	if resp, err = client.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotModified {
		t.Errorf("GET a page with its entity tag = %d, want 304", resp.StatusCode)
	}
	checked += 2

	get := func(path string, v any) http.Header {
		t.Helper()
		resp, err := client.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		checked++
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s = %d: %s", path, resp.StatusCode, body)
		}
		decodeStrict(t, "GET "+path, body, v)
		return resp.Header
	}

	// The lists page through every item; anonymous answers carry cache tags.
	var ids []string
	for path := "/v1/d/demo/services?limit=2"; ; {
		var page ServiceList
		h := get(path, &page)
		if page.Limit != 2 || len(page.Items) > 2 {
			t.Errorf("GET %s: limit %d, %d items", path, page.Limit, len(page.Items))
		}
		if h.Get("Cache-Tag") != "dir:demo,demo:services" || h.Get("Surrogate-Key") != "" {
			t.Errorf("GET %s: cache tags %q, Surrogate-Key %q", path, h.Get("Cache-Tag"), h.Get("Surrogate-Key"))
		}
		for _, it := range page.Items {
			ids = append(ids, it.PublicID)
		}
		if page.NextCursor == nil {
			break
		}
		path = "/v1/d/demo/services?limit=2&cursor=" + url.QueryEscape(*page.NextCursor)
	}
	if want := []string{"svc_full", "svc_min", "svc_orphan"}; !slices.Equal(ids, want) {
		t.Errorf("the service list pages through %v, want %v", ids, want)
	}
	var prac PractitionerList
	if get("/v1/d/demo/practitioners?limit=1", &prac); len(prac.Items) != 1 || prac.NextCursor == nil {
		t.Errorf("practitioners, limit 1: %d items, next %v", len(prac.Items), prac.NextCursor)
	} else if get("/v1/d/demo/practitioners?limit=1&cursor="+url.QueryEscape(*prac.NextCursor), &prac); len(prac.Items) != 1 ||
		prac.Items[0].PublicID != "prac_b" || prac.NextCursor != nil {
		t.Errorf("practitioners, second page: %+v", prac)
	}
	var found IdentifierSearch
	get("/v1/d/demo/identifiers/search?system=abn&value=51824753556", &found)
	if want := []edge.IdentifiedRecord{{EntityType: dirsvc.KindOrganisation, PublicID: "org_full"},
		{EntityType: dirsvc.KindService, PublicID: "svc_full"}}; !slices.Equal(found.Items, want) {
		t.Errorf("identifier search found %v, want %v", found.Items, want)
	}
	var none IdentifierSearch
	get("/v1/d/demo/identifiers/search?system=abn&value=1", &none)
	if none.Items == nil || len(none.Items) != 0 {
		t.Errorf("identifier search without a match: %v, want an empty list", none.Items)
	}
	var page dirsvc.PractitionerPage
	get("/v1/d/demo/practitioners/prac_a?view=page", &page)
	if len(page.Roles) != 2 || len(page.Services) != 1 || page.Services[0].PublicID != "svc_full" {
		t.Errorf("practitioner page: roles %v, services %v; want the two active roles and the one service the caller sees", page.Roles, page.Services)
	}
	var keys JWKSet
	if get("/oauth/jwks.json", &keys); keys.Keys == nil {
		t.Errorf("JWKS without keys: keys is null, want []")
	}

	if c.Count() != checked {
		t.Errorf("Count = %d, want %d", c.Count(), checked)
	}
}

// clientServer is the edge with the primary's token endpoint mounted, as dirsvc serve runs them, over
// the demo directories, with the clients and keys of a real store, on a clock a test moves.
type clientServer struct {
	*httptest.Server
	access *primary.Access
	clock  atomic.Int64 // Unix nanoseconds
	client *http.Client // checks every response
}

func newClientServer(t *testing.T, c *edgetest.Checker, anonymous edge.Limits) *clientServer {
	t.Helper()
	ctx := context.Background()
	store, err := dirdb.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	s := &clientServer{}
	s.clock.Store(time.Date(2025, 3, 3, 10, 0, 0, 0, time.UTC).UnixNano())
	now := func() time.Time { return time.Unix(0, s.clock.Load()).UTC() }
	if s.access, err = primary.NewAccess(ctx, store, bytes.Repeat([]byte{7}, primary.ServerKeySize), now); err != nil {
		t.Fatal(err)
	}
	srv := edge.New(edge.Config{Catalog: demoDirectories(t), Logger: discard(), Now: now, AnonymousLimits: anonymous, Keys: store})
	if err := (&primary.Server{Edge: srv, Access: s.access, Log: discard()}).Mount(); err != nil {
		t.Fatal(err)
	}
	s.Server = httptest.NewServer(srv)
	t.Cleanup(s.Close)
	s.client = &http.Client{Transport: c.Transport(t, nil),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return s
}

// newClient creates a partner client with grants and returns its ID and secret.
func (s *clientServer) newClient(t *testing.T, grants ...dirsvc.Grant) (string, string) {
	t.Helper()
	for i := range grants {
		if grants[i].Limit == (dirsvc.RateLimit{}) {
			grants[i].Limit = dirsvc.RateLimit{PerMinute: 1 << 20, PerDay: 1 << 20}
		}
	}
	c, secret, err := s.access.CreateClient(context.Background(), primary.NewClient{Name: "Test client", Grants: grants})
	if err != nil {
		t.Fatal(err)
	}
	return c.ID, secret
}

// do sends a request and returns the status, headers and body of the answer.
func (s *clientServer) do(t *testing.T, method, path, contentType, body string, header ...string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

const formType = "application/x-www-form-urlencoded"

// basic returns the HTTP Basic credentials of a client (RFC 6749 section 2.3.1).
func basic(id, secret string) string {
	req, _ := http.NewRequest("POST", "/", nil)
	req.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret))
	return req.Header.Get("Authorization")
}

// token gets an access token for the client in a directory.
func (s *clientServer) token(t *testing.T, id, secret, dir string) string {
	t.Helper()
	status, _, body := s.do(t, "POST", edge.TokenPath, formType, "grant_type=client_credentials&directory="+dir,
		"Authorization", basic(id, secret))
	if status != 200 {
		t.Fatalf("token for %s in %s: %d %s", id, dir, status, body)
	}
	var tr primary.TokenResponse
	decodeStrict(t, "token response", body, &tr)
	return tr.AccessToken
}

// TestClientAnswersMatchDocument serves the token endpoint and the reads of partner clients holding
// its tokens through a checking client.
func TestClientAnswersMatchDocument(t *testing.T) {
	c := edgetest.NewChecker(t)
	s := newClientServer(t, c, unlimited)
	scopes := []string{dirsvc.ScopeGraphRead, dirsvc.ScopePractitionersRead, dirsvc.ScopeLeadershipRead}
	fullID, fullSecret := s.newClient(t, dirsvc.Grant{Directory: "demo", Tier: dirsvc.Partner, Scopes: scopes},
		dirsvc.Grant{Directory: "quiet", Tier: dirsvc.Professional, Scopes: scopes})
	readerID, readerSecret := s.newClient(t, dirsvc.Grant{Directory: "demo", Tier: dirsvc.Partner, Scopes: []string{dirsvc.ScopeGraphRead}})
	narrowID, narrowSecret := s.newClient(t, dirsvc.Grant{Directory: "demo", Tier: dirsvc.Partner, Scopes: []string{dirsvc.ScopeGraphRead},
		Narrowing: dirsvc.Narrowing{Kinds: []dirsvc.Kind{dirsvc.KindService}}})
	searchID, searchSecret := s.newClient(t, dirsvc.Grant{Directory: "demo", Tier: dirsvc.Professional, Scopes: []string{dirsvc.ScopeSearchRead}})
	limitedID, limitedSecret := s.newClient(t, dirsvc.Grant{Directory: "demo", Tier: dirsvc.Partner, Scopes: []string{dirsvc.ScopeGraphRead},
		Limit: dirsvc.RateLimit{PerMinute: 1, PerDay: 100}})

	// The token endpoint.
	jsonBody := func(m map[string]string) string { b, _ := json.Marshal(m); return string(b) }
	for _, tt := range []struct {
		name, contentType, body, auth string
		status                        int
		oauthError                    string
	}{
		{"form and HTTP Basic", formType, "grant_type=client_credentials&directory=demo", basic(fullID, fullSecret), 200, ""},
		{"JSON with the credentials in the body", "application/json", jsonBody(map[string]string{"grant_type": "client_credentials",
			"client_id": fullID, "client_secret": fullSecret, "directory": "quiet", "scope": "graph:read leadership:read"}), "", 200, ""},
		{"a client of one directory needs none named", formType, "grant_type=client_credentials", basic(readerID, readerSecret), 200, ""},
		{"another grant type", formType, "grant_type=password&directory=demo", basic(fullID, fullSecret), 400, "unsupported_grant_type"},
		{"no grant type", formType, "directory=demo", basic(fullID, fullSecret), 400, "invalid_request"},
		{"an unknown scope", formType, "grant_type=client_credentials&directory=demo&scope=everything", basic(fullID, fullSecret), 400, "invalid_scope"},
		{"a scope not granted", formType, "grant_type=client_credentials&scope=export:run", basic(readerID, readerSecret), 400, "invalid_scope"},
		{"a directory without access", formType, "grant_type=client_credentials&directory=nowhere", basic(fullID, fullSecret), 400, "invalid_request"},
		{"two directories, none named", formType, "grant_type=client_credentials", basic(fullID, fullSecret), 400, "invalid_request"},
		{"a long client_id", formType, "grant_type=client_credentials&client_secret=x&client_id=" + strings.Repeat("x", 101), "", 400, "invalid_request"},
		{"a text body", "text/plain", "grant_type=client_credentials", basic(fullID, fullSecret), 400, "invalid_request"},
		{"a wrong secret", formType, "grant_type=client_credentials&directory=demo", basic(fullID, "wrong"), 401, "invalid_client"},
		{"no credentials", formType, "grant_type=client_credentials&directory=demo", "", 401, "invalid_client"},
		{"a bearer token", formType, "grant_type=client_credentials&directory=demo", "Bearer x", 401, "invalid_client"},
	} {
		var header []string
		if tt.auth != "" {
			header = []string{"Authorization", tt.auth}
		}
		status, h, body := s.do(t, "POST", edge.TokenPath, tt.contentType, tt.body, header...)
		if status != tt.status {
			t.Errorf("token, %s: %d %s, want %d", tt.name, status, body, tt.status)
			continue
		}
		if status == 200 {
			var tr primary.TokenResponse
			decodeStrict(t, "token, "+tt.name, body, &tr)
			if tr.TokenType != "Bearer" || tr.AccessToken == "" || tr.Directory == "" || tr.Sandbox {
				t.Errorf("token, %s: %+v", tt.name, tr)
			}
			continue
		}
		var e primary.OAuthError
		if decodeStrict(t, "token, "+tt.name, body, &e); e.Error != tt.oauthError {
			t.Errorf("token, %s: error %q, want %q", tt.name, e.Error, tt.oauthError)
		}
		if status == 401 && !strings.HasPrefix(h.Get("WWW-Authenticate"), "Basic ") {
			t.Errorf("token, %s: WWW-Authenticate %q", tt.name, h.Get("WWW-Authenticate"))
		}
	}
	// Other methods answer 405, as the document says on POST (the one operation of the path).
	for _, method := range []string{"GET", "PUT", "DELETE"} {
		status, h, body := s.do(t, method, edge.TokenPath, "", "")
		var e primary.OAuthError
		if decodeStrict(t, method+" token", body, &e); status != 405 || h.Get("Allow") != "POST" || e.Error != "invalid_request" {
			t.Errorf("%s %s: %d Allow %q %s", method, edge.TokenPath, status, h.Get("Allow"), body)
		}
	}

	full := s.token(t, fullID, fullSecret, "demo")
	quiet := s.token(t, fullID, fullSecret, "quiet")
	reader := s.token(t, readerID, readerSecret, "demo")
	narrowed := s.token(t, narrowID, narrowSecret, "demo")
	limited := s.token(t, limitedID, limitedSecret, "demo")
	search := s.token(t, searchID, searchSecret, "demo") // no graph:read
	get := func(tok, path string, header ...string) (int, http.Header, []byte) {
		t.Helper()
		return s.do(t, "GET", path, "", "", append([]string{"Authorization", "Bearer " + tok}, header...)...)
	}

	for _, tt := range []struct {
		tok, path string
		status    int
	}{
		{full, "/v1/d/demo/services", 200},
		{full, "/v1/d/demo/services?limit=1", 200},
		{full, "/v1/d/demo/services/svc_full", 200},
		{full, "/v1/d/demo/services/svc_merged", 301},
		{full, "/v1/d/demo/services/svc_closed", 410},
		{full, "/v1/d/demo/locations/loc_full", 200},
		{full, "/v1/d/demo/practitioners", 200},
		{full, "/v1/d/demo/practitioners/prac_a?view=page", 200},
		{full, "/v1/d/demo/practitioners/prac_b", 200},
		{full, "/v1/d/demo/roles/role_full", 200},
		{full, "/v1/d/demo/identifiers/search?system=abn&value=51824753556", 200},
		{full, "/v1/d/demo/developers", 200},
		{full, "/v1/d/demo/organisations/org_merged/leadership", 404},
		{full, "/v1/d/demo/organisations/org_removed/leadership", 404},
		{full, "/v1/d/demo/organisations/org_nope/leadership", 404},
		{full, "/v1/d/demo/organisations/loc_full/leadership", 404},
		{full, "/v1/d/quiet/services", 403},     // another directory's token
		{full, "/v1/d/nowhere/developers", 403}, // another directory's token, wherever
		{quiet, "/v1/d/quiet/practitioners", 200},
		{quiet, "/v1/d/quiet/organisations/org_full/leadership", 404}, // senior management is off
		{reader, "/v1/d/demo/practitioners", 403},
		{reader, "/v1/d/demo/organisations/org_full/leadership", 403},
		{reader, "/v1/d/demo/developers", 200},
		{narrowed, "/v1/d/demo/locations/loc_full", 404},
		{narrowed, "/v1/d/demo/practitioners/prac_a", 404},
		{narrowed, "/v1/d/demo/services", 200},
		{narrowed, "/v1/d/demo/identifiers/search?system=abn&value=51824753556", 200},
		{narrowed, "/v1/d/demo/organisations/org_full/leadership", 403},
		{search, "/v1/d/demo/services", 403},
		{search, "/v1/d/demo/services/svc_full", 403},
		{search, "/v1/d/demo/locations/loc_full", 403},
		{search, "/v1/d/demo/organisations/org_full", 403},
		{search, "/v1/d/demo/practitioners/prac_a", 403},
		{search, "/v1/d/demo/roles/role_full", 403},
		{search, "/v1/d/demo/identifiers/search?system=abn&value=1", 403},
		{search, "/v1/d/demo/developers", 200}, // no scope needed
	} {
		status, h, body := get(tt.tok, tt.path)
		if status != tt.status {
			t.Errorf("GET %s as a client: %d, want %d: %s", tt.path, status, tt.status, body)
		}
		if status < 500 && h.Get("Cache-Control") != "private, no-store" && h.Get("Cache-Control") != "no-store" ||
			h.Get("Cache-Tag") != "" {
			t.Errorf("GET %s as a client: Cache-Control %q, cache tags %q", tt.path, h.Get("Cache-Control"), h.Get("Cache-Tag"))
		}
	}

	// Leadership: the current leaders, on its own route and in the organisation's reads.
	status, h, body := get(full, "/v1/d/demo/organisations/org_full/leadership")
	var lead edge.Leadership
	if decodeStrict(t, "leadership", body, &lead); status != 200 || lead.PublicID != "org_full" || len(lead.Leadership) != 2 {
		t.Errorf("leadership: %d %s; want the two current leaders", status, body)
	}
	if status, _, _ := get(full, "/v1/d/demo/organisations/org_full/leadership", "If-None-Match", h.Get("ETag")); status != 304 {
		t.Errorf("leadership with its entity tag: %d, want 304", status)
	}
	if status, _, body := get(full, "/v1/d/demo/organisations/org_min/leadership"); status != 200 || !strings.Contains(string(body), `"leadership":[]`) {
		t.Errorf("leadership of an organisation without any: %d %s", status, body)
	}
	for _, q := range []string{"", "?view=page"} {
		var org OrganisationPageRead
		_, _, body := get(full, "/v1/d/demo/organisations/org_full"+q)
		if decodeStrict(t, "organisation"+q, body, &org); len(org.Leadership) != 2 {
			t.Errorf("organisation%s read with leadership:read: leadership %v", q, org.Leadership)
		}
	}
	var brief OrganisationRead
	_, _, body = get(full, "/v1/d/demo/organisations/org_full?view=brief")
	if decodeStrict(t, "organisation brief", body, &brief); len(brief.Leadership) != 2 {
		t.Errorf("organisation brief read with leadership:read: leadership %v", brief.Leadership)
	}
	for name, path := range map[string][2]string{
		"without leadership:read": {reader, "/v1/d/demo/organisations/org_full"},
		"senior management off":   {quiet, "/v1/d/quiet/organisations/org_full?view=brief"},
		"anonymous":               {"", "/v1/d/demo/organisations/org_full"},
	} {
		header := []string{}
		if path[0] != "" {
			header = []string{"Authorization", "Bearer " + path[0]}
		}
		if _, _, body := s.do(t, "GET", path[1], "", "", header...); strings.Contains(string(body), `"leadership"`) {
			t.Errorf("organisation read %s carries leadership: %s", name, body)
		}
	}

	// A client narrowed to services reads a service page without its organisation and location.
	if _, _, body := get(narrowed, "/v1/d/demo/services/svc_full"); !strings.Contains(string(body), `"organisation":null`) ||
		strings.Contains(string(body), `"location":`) {
		t.Errorf("service page for a client narrowed to services: %s", body)
	}
	var keys JWKSet
	_, _, body = s.do(t, "GET", "/oauth/jwks.json", "", "")
	if decodeStrict(t, "JWKS", body, &keys); len(keys.Keys) != 1 {
		t.Errorf("JWKS: %+v, want the one signing key", keys)
	}

	// A client over its limit.
	if status, _, _ := get(limited, "/v1/d/demo/services/svc_full"); status != 200 {
		t.Errorf("first request of a limited client: %d", status)
	}
	if status, h, _ := get(limited, "/v1/d/demo/services/svc_full"); status != 429 || h.Get("Retry-After") == "" {
		t.Errorf("second request of a client limited to one a minute: %d", status)
	}

	// Tokens expire.
	s.clock.Add(int64(primary.TokenLifetime + time.Second))
	if status, h, _ := get(full, "/v1/d/demo/services/svc_full"); status != 401 || !strings.Contains(h.Get("WWW-Authenticate"), `error="invalid_token"`) {
		t.Errorf("an expired token: %d %q", status, h.Get("WWW-Authenticate"))
	}
	if c.Count() == 0 {
		t.Fatal("no response was checked")
	}
}

// TestTokenEndpointLimitMatchesDocument checks the token endpoint's 429: requests are limited per
// client address, as anonymous reads are, and refused with an OAuth error body, as every error of
// the token endpoint is (specification section 7, item 2).
func TestTokenEndpointLimitMatchesDocument(t *testing.T) {
	c := edgetest.NewChecker(t)
	s := newClientServer(t, c, edge.Limits{PerMinute: 1, PerDay: 100})
	for i, want := range []int{401, 429} {
		if status, h, body := s.do(t, "POST", edge.TokenPath, formType, "grant_type=client_credentials"); status != want ||
			want == 429 && (h.Get("Content-Type") != "application/json" || h.Get("Retry-After") == "" ||
				!strings.Contains(string(body), `"error":"temporarily_unavailable"`)) {
			t.Errorf("token request %d: %d %s, want %d", i+1, status, body, want)
		}
	}
	if c.Count() != 2 {
		t.Errorf("Count = %d, want 2", c.Count())
	}
}

// TestTransportFailsUndocumentedAnswers checks that a client through Transport fails the test on a
// route the document does not describe and on a view the document does not allow.
func TestTransportFailsUndocumentedAnswers(t *testing.T) {
	cat := demoCatalog(t)
	// A stored brief view missing a required field.
	cat.records["svc_bad"] = dirsvc.RecordStatus{Kind: dirsvc.KindService, State: dirsvc.StateLive, SeenBy: dirsvc.Everyone,
		View: &dirsvc.Published{PublicID: "svc_bad", ETag: `"bad"`, Body: []byte(jsonWithout(t, serviceView(), "slug"))}}
	srv := httptest.NewServer(edge.New(edge.Config{Catalog: cat, Logger: discard()}))
	defer srv.Close()
	c := edgetest.NewChecker(t)
	for _, tt := range []struct{ path, want string }{
		{"/v1/d/demo/widgets", "undocumented operation"},
		{"/v1/d/demo/services/svc_bad?view=brief", "slug"},
	} {
		failures := capture(t, func(tb testing.TB) {
			client := &http.Client{Transport: c.Transport(tb, nil)}
			resp, err := client.Get(srv.URL + tt.path)
			if err != nil {
				tb.Fatalf("GET %s: %v", tt.path, err)
			}
			resp.Body.Close()
		})
		if all := strings.Join(failures, "\n"); !strings.Contains(all, tt.want) || !strings.Contains(all, "GET "+tt.path) {
			t.Errorf("GET %s: failures %q, want one about %q naming the request", tt.path, failures, tt.want)
		}
	}
}
