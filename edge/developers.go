package edge

import (
	_ "embed"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/dirsvc/dirsvc"
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
	h.Set("Content-Length", strconv.Itoa(len(openAPIDoc)))
	w.Write(openAPIDoc)
}

// auBaseProfiles are the AU Base 6.0.0 profiles claimed by resources of an Australian directory.
var auBaseProfiles = []string{
	"http://hl7.org.au/fhir/StructureDefinition/au-organization|6.0.0",
	"http://hl7.org.au/fhir/StructureDefinition/au-location|6.0.0",
	"http://hl7.org.au/fhir/StructureDefinition/au-healthcareservice|6.0.0",
	"http://hl7.org.au/fhir/StructureDefinition/au-practitioner|6.0.0",
	"http://hl7.org.au/fhir/StructureDefinition/au-practitionerrole|6.0.0",
}

// DeveloperInfo is the developer information of a directory.
type DeveloperInfo struct {
	Directory       string   `json:"directory"`
	Name            string   `json:"name"`
	Country         string   `json:"country"`
	RestBase        string   `json:"restBase"`
	OpenAPI         string   `json:"openapi"`
	TokenEndpoint   string   `json:"tokenEndpoint"`
	JWKS            string   `json:"jwksUri"`
	FHIR            FHIRInfo `json:"fhir"`
	ChangeFeed      string   `json:"changeFeed"`
	PartnerAccess   string   `json:"partnerAccess"`
	DeveloperPortal string   `json:"developerPortal"`
	Licence         string   `json:"licence"`
	Attribution     string   `json:"attribution"`
	Scopes          []string `json:"scopes"`
}

// FHIRInfo describes a directory's FHIR server.
type FHIRInfo struct {
	Base                string   `json:"base"`
	Version             string   `json:"fhirVersion"`
	CapabilityStatement string   `json:"capabilityStatement"`
	Profiles            []string `json:"profiles"`
}

func (s *Server) handleGetDevelopers(w http.ResponseWriter, r *http.Request) {
	_, info, err := s.directory(r.Context(), r.PathValue("dir"))
	if err != nil {
		s.cacheFor(w, r)
		s.error(w, r, err)
		return
	}
	base := s.cfg.BaseURL
	rest := base + "/v1/d/" + info.Slug
	d := DeveloperInfo{Directory: info.Slug, Name: info.Name, Country: info.Country, RestBase: rest,
		OpenAPI: base + OpenAPIPath, TokenEndpoint: base + TokenPath, JWKS: base + JWKSPath,
		FHIR: FHIRInfo{Base: rest + "/fhir", Version: "4.0.1", CapabilityStatement: rest + "/fhir/metadata",
			Profiles: []string{}},
		ChangeFeed:      rest + "/changes",
		PartnerAccess:   "Ask the directory for partner access; state the scopes you need and, for practitioners:read, why (practitionerListReason).",
		DeveloperPortal: rest + "/developers",
		Licence:         info.Licence, Attribution: info.Attribution, Scopes: dirsvc.AllScopes}
	if info.Country == "AU" {
		d.FHIR.Profiles = auBaseProfiles
	}
	body, err := json.Marshal(d)
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
