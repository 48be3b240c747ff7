package edge

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/fhir"
)

// FederationManifest describes a directory to aggregate directories that harvest it: who it is, what
// it covers, where each of its machine interfaces is, which tiers and code systems it has, where data
// issues go and under what licence its data comes. It names only interfaces this service offers: an
// endpoint is named once its route answers (on an edge, routes the primary serves are those the edge
// forwards to it).
type FederationManifest struct {
	Directory         ManifestDirectory         `json:"directory"`
	Region            string                    `json:"region,omitempty"`
	JurisdictionPacks []dirsvc.JurisdictionPack `json:"jurisdictionPacks"`
	Endpoints         FederationEndpoints       `json:"endpoints"`
	// Tiers are the tiers the directory offers: public, and the partner tiers of its settings.
	Tiers       []string        `json:"tiers"`
	CodeSystems []CodeSystemRef `json:"codeSystems"`
	// DataIssueContact is an email address or an https URL; absent when the directory names none.
	DataIssueContact string `json:"dataIssueContact,omitempty"`
	Licence          string `json:"licence"`
	Attribution      string `json:"attribution"`
}

// ManifestDirectory is a directory's identity in its federation manifest.
type ManifestDirectory struct {
	Slug     string `json:"slug"`
	Name     string `json:"name"`
	Country  string `json:"country"`
	TimeZone string `json:"timeZone"`
	// Manifest is the manifest's own address: the directory's identity across federations.
	Manifest string `json:"manifest"`
}

// FederationEndpoints are the absolute addresses of a directory's interfaces.
type FederationEndpoints struct {
	ReadAPI            string `json:"readApi"`
	OpenAPI            string `json:"openapi"`
	TokenEndpoint      string `json:"tokenEndpoint"`
	Developers         string `json:"developers"`
	ChangeFeed         string `json:"changeFeed,omitempty"`
	Exports            string `json:"exports,omitempty"`
	FHIR               string `json:"fhir,omitempty"`
	FHIRBulkExport     string `json:"fhirBulkExport,omitempty"`
	ForwardedProposals string `json:"forwardedProposals,omitempty"`
	ForwardedIssues    string `json:"forwardedIssues,omitempty"`
}

// CodeSystemRef names a code system the directory's records use: its system URI (as FHIR codings
// carry it) and, where the service serves them, the address of its concepts.
type CodeSystemRef struct {
	Name     string `json:"name"`
	System   string `json:"system"`
	Concepts string `json:"concepts,omitempty"`
}

// FederationManifestPath is where, under a directory's REST base, its manifest is served.
const FederationManifestPath = "/federation/manifest"

// federationManifest makes the manifest of a directory.
func (s *Server) federationManifest(info *dirsvc.Directory) any {
	base := s.cfg.BaseURL
	rest := base + "/v1/d/" + info.Slug
	m := FederationManifest{
		Directory: ManifestDirectory{Slug: info.Slug, Name: info.Name, Country: info.Country, TimeZone: info.TimeZone,
			Manifest: rest + FederationManifestPath},
		Region:            info.Region,
		JurisdictionPacks: dirsvc.JurisdictionPacks(info.Country),
		Endpoints: FederationEndpoints{ReadAPI: rest, OpenAPI: base + OpenAPIPath, TokenEndpoint: base + TokenPath,
			Developers: rest + "/developers"},
		Tiers:            offeredTiers(info.Settings.Tiers),
		DataIssueContact: info.DataIssueContact,
		Licence:          info.Licence,
		Attribution:      info.Attribution,
	}
	e := &m.Endpoints
	for _, ep := range []struct {
		field                *string
		method, route, named string // named: the address given, under the REST base
	}{
		{&e.ChangeFeed, http.MethodGet, "/changes", "/changes"},
		{&e.Exports, http.MethodPost, "/exports", "/exports"},
		{&e.FHIR, http.MethodGet, "/fhir/metadata", "/fhir"},
		{&e.FHIRBulkExport, http.MethodGet, "/fhir/$export", "/fhir/$export"},
		{&e.ForwardedProposals, http.MethodPost, "/federation/forwarded/proposals", "/federation/forwarded/proposals"},
		{&e.ForwardedIssues, http.MethodPost, "/federation/forwarded/issues", "/federation/forwarded/issues"},
	} {
		if s.offers(ep.method, "/v1/d/{dir}"+ep.route, info.Slug) {
			*ep.field = rest + ep.named
		}
	}
	canon := fhir.Canonical(base)
	taxonomy := rest + "/taxonomy"
	m.CodeSystems = []CodeSystemRef{
		{Name: "service-type", System: canon + fhir.ServiceTypePath, Concepts: taxonomy},
		{Name: "service-category", System: canon + fhir.CategoryPath, Concepts: taxonomy},
		{Name: "local-type", System: canon + fhir.LocalTypePath, Concepts: taxonomy},
		{Name: "ownership-type", System: canon + fhir.OwnershipCodeSystemPath},
		{Name: "endpoint-kind", System: canon + fhir.EndpointKindPath},
	}
	if s.offers(http.MethodGet, fhir.Canonical("")+fhir.OwnershipCodeSystemPath, info.Slug) {
		m.CodeSystems[3].Concepts = canon + fhir.OwnershipCodeSystemPath
	}
	return m
}

// offeredTiers returns the tiers a directory offers: public, then the partner tiers its settings
// name (every served tier when they name none), in the order of the tiers.
func offeredTiers(settings []string) []string {
	out := []string{}
	for _, a := range dirsvc.ServedAudiences {
		name := a.String()
		if a == dirsvc.Public || len(settings) == 0 || slices.Contains(settings, name) {
			out = append(out, name)
		}
	}
	return out
}

// offers reports whether the service answers method on the route of the OpenAPI document at
// template (a path with {dir} and other parameters) for directory dir: the document lists it, and the
// node serves it itself (under the same pattern, not only a wider one: fhir/{type} is not
// fhir/$export) or forwards it to the primary (an edge: what it does not serve, and FHIR operations).
func (s *Server) offers(method, template, dir string) bool {
	pattern := method + " " + template
	r := &http.Request{Method: method, URL: &url.URL{Path: strings.ReplaceAll(template, "{dir}", dir)}, Host: "localhost"}
	if _, documented := documentedRoutes().Handler(r); documented != pattern {
		return false
	}
	if s.forwards(r) {
		return true
	}
	_, local := s.mux.Handler(r)
	return local == pattern
}

// documentedRoutes is a mux of the operations of the OpenAPI document, for matching paths against.
var documentedRoutes = sync.OnceValue(func() *http.ServeMux {
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	mux := http.NewServeMux()
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		return mux // the document is checked by the tests; no route is taken as offered
	}
	for path, ops := range doc.Paths {
		for method := range ops {
			if m := strings.ToUpper(method); m == http.MethodGet || m == http.MethodPost || m == http.MethodPut ||
				m == http.MethodPatch || m == http.MethodDelete {
				register(mux, m+" "+path)
			}
		}
	}
	return mux
})

// register adds pattern to mux; a pattern the mux refuses (one that conflicts with another: the tests
// keep the document free of them) is left out rather than failing every manifest.
func register(mux *http.ServeMux, pattern string) {
	defer func() { recover() }()
	mux.HandleFunc(pattern, func(http.ResponseWriter, *http.Request) {})
}
