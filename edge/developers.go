package edge

import (
	_ "embed"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/fhir"
)

//go:embed openapi.json
var openAPIDoc []byte

// OpenAPIDocument returns the service's OpenAPI 3.1.0 document.
func OpenAPIDocument() []byte { return openAPIDoc }

// OpenAPIPath is where the OpenAPI document is served.
const OpenAPIPath = "/v1/openapi.json"

func (s *Server) handleGetOpenAPI(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "public, max-age=300")
	h.Set("Content-Length", strconv.Itoa(len(s.openapi)))
	w.Write(s.openapi)
}

// DeveloperInfo is the developer information of a directory. It names only addresses this server
// answers: the FHIR server, the change feed and the developer portal appear once their routes do.
type DeveloperInfo struct {
	Directory     string    `json:"directory"`
	Name          string    `json:"name"`
	Country       string    `json:"country"`
	RestBase      string    `json:"restBase"`
	OpenAPI       string    `json:"openapi"`
	TokenEndpoint string    `json:"tokenEndpoint"`
	JWKS          string    `json:"jwksUri"`
	FHIR          *FHIRInfo `json:"fhir,omitempty"`
	ChangeFeed    string    `json:"changeFeed,omitempty"`
	// ChangeFeedAccess says who may read the change feed: "client" (a client with feed:read) or
	// "public" (also callers without a client, at the public tier).
	ChangeFeedAccess string   `json:"changeFeedAccess,omitempty"`
	PartnerAccess    string   `json:"partnerAccess"`
	DeveloperPortal  string   `json:"developerPortal,omitempty"`
	Licence          string   `json:"licence"`
	Attribution      string   `json:"attribution"`
	Scopes           []string `json:"scopes"`
	// Sitemap is the address of the directory's sitemap (sitemap.go).
	Sitemap string `json:"sitemap,omitempty"`
}

// FHIRInfo describes a directory's FHIR server.
type FHIRInfo struct {
	Base                string   `json:"base"`
	Version             string   `json:"fhirVersion"`
	CapabilityStatement string   `json:"capabilityStatement"`
	Profiles            []string `json:"profiles"`
}

// developerInfo makes the developer information of a directory.
func (s *Server) developerInfo(info *dirsvc.Directory) any { return s.devInfo(info) }

func (s *Server) devInfo(info *dirsvc.Directory) DeveloperInfo {
	base := s.cfg.BaseURL
	restPath := "/v1/d/" + info.Slug
	d := DeveloperInfo{Directory: info.Slug, Name: info.Name, Country: info.Country, RestBase: base + restPath,
		OpenAPI: base + OpenAPIPath, TokenEndpoint: base + TokenPath, JWKS: base + JWKSPath,
		PartnerAccess: "Ask the directory for partner access with your client's credentials at " + base + AccessRequestsPath +
			"; state the scopes you need and, for practitioners:read, why (practitionerListReason).",
		Licence: info.Licence, Attribution: info.Attribution, Scopes: dirsvc.AllScopes}
	if s.answers(restPath + "/fhir/metadata") {
		d.FHIR = &FHIRInfo{Base: base + restPath + "/fhir", Version: fhir.Version, CapabilityStatement: base + restPath + "/fhir/metadata",
			Profiles: fhir.Profiles(info.Country)}
	}
	if s.answers(restPath + "/changes") {
		d.ChangeFeed, d.ChangeFeedAccess = base+restPath+"/changes", "client"
		if info.Settings.PublicFeed {
			d.ChangeFeedAccess = "public"
		}
	}
	if s.answers(restPath + "/sitemap.xml") {
		d.Sitemap = base + restPath + "/sitemap.xml"
	}
	if s.answers(PortalPath(info.Slug)) {
		d.DeveloperPortal = base + PortalPath(info.Slug)
	}
	return d
}

// directoryDocument serves a document about a directory that is the same for every caller (the
// developer information, the federation manifest), made by doc: it takes no parameter, and an
// anonymous answer may be kept five minutes by any cache.
func (s *Server) directoryDocument(doc func(*dirsvc.Directory) any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if _, err := readQuery(r); err != nil {
			s.error(w, r, err)
			return
		}
		_, info, err := s.directory(r.Context(), r.PathValue("dir"))
		if err != nil {
			s.cacheFor(w, r)
			s.error(w, r, err)
			return
		}
		s.writeDirectoryDocument(w, r, doc(info))
	}
}

func (s *Server) writeDirectoryDocument(w http.ResponseWriter, r *http.Request, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		s.error(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	// The body is the same for every audience, but the answer names the one the caller is served
	// as, as every answer to a read does.
	setAudience(w, audience(r))
	if tokenFrom(r.Context()) == nil {
		h.Set("Cache-Control", "public, max-age=300")
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.Write(body)
}

// answers reports whether the server has a GET route of its own for path (an absolute path on this
// server), not only the catch-all that answers unknown routes.
func (s *Server) answers(path string) bool {
	_, pattern := s.mux.Handler(&http.Request{Method: http.MethodGet, URL: &url.URL{Path: path}, Host: "localhost"})
	return pattern != "" && pattern != "/"
}
