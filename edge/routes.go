package edge

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/fhir"
)

// routes registers every read route. It is the one list of what the edge serves.
func (s *Server) routes() {
	// Lists and searches are expensive (see admission); every other read is admitted as a read.
	s.handleExpensive("GET /v1/d/{dir}/services", s.handleListServices)
	s.mux.HandleFunc("GET /v1/d/{dir}/services/{publicId}", s.record(serviceRoute, s.handleGetService))
	s.mux.HandleFunc("GET /v1/d/{dir}/locations/{publicId}", s.record(locationRoute, s.handleGetLocation))
	s.mux.HandleFunc("GET /v1/d/{dir}/organisations/{publicId}", s.record(organisationRoute, s.handleGetOrganisation))
	s.mux.HandleFunc("GET /v1/d/{dir}/organisations/{publicId}/leadership", s.read(s.handleGetLeadership))
	s.handleExpensive("GET /v1/d/{dir}/practitioners", s.handleListPractitioners)
	s.mux.HandleFunc("GET /v1/d/{dir}/practitioners/{publicId}", s.record(practitionerRoute, s.handleGetPractitioner))
	s.mux.HandleFunc("GET /v1/d/{dir}/roles/{publicId}", s.read(s.handleGetRole))
	s.handleExpensive("GET /v1/d/{dir}/identifiers/search", s.handleSearchIdentifiers)
	// A feed page reads at most a bounded number of change-log rows and one view per item.
	s.handleExpensive("GET /v1/d/{dir}/changes", s.handleListChanges)
	s.handleExpensive("GET /v1/d/{dir}/search/services", s.handleSearchServices)
	s.mux.HandleFunc("GET /v1/d/{dir}/autocomplete", s.read(s.handleAutocomplete))
	s.handleExpensive("GET /v1/d/{dir}/search/organisations", s.handleSearchOrganisations)
	s.mux.HandleFunc("GET /v1/d/{dir}/developers", s.read(s.directoryDocument(s.developerInfo)))
	s.mux.HandleFunc("GET /v1/d/{dir}/portal", s.read(s.handleGetPortal))
	s.mux.HandleFunc("GET /v1/d/{dir}/federation/manifest", s.read(s.directoryDocument(s.federationManifest)))
	s.mux.HandleFunc("GET /v1/d/{dir}/taxonomy", s.read(s.handleGetTaxonomy))
	// A sitemap reads the public tier's page index a thousand entries at a time (edge/sitemap.go).
	s.handleExpensive("GET /v1/d/{dir}/sitemap.xml", s.handleGetSitemap)
	// A published image: one row by its hash and the records naming it (edge/images.go).
	s.mux.HandleFunc("GET /v1/d/{dir}/images/{image}", s.read(s.handleGetImage))
	// A read with a body (the position must stay out of URLs and logs): served here, never forwarded.
	s.handleCopyFree("POST /v1/d/{dir}/localities/nearest", s.read(s.handleNearestLocality))
	// Category counts read list_keys_key alone (dirdb/browse.go); a category's places and a
	// collection's cards read a row or a few per service, up to a category's or a collection's size.
	s.mux.HandleFunc("GET /v1/d/{dir}/categories", s.read(s.handleListCategories))
	s.handleExpensive("GET /v1/d/{dir}/categories/{code}", s.handleGetCategory)
	s.mux.HandleFunc("GET /v1/d/{dir}/collections", s.read(s.handleListCollections))
	s.mux.HandleFunc("GET /v1/d/{dir}/collections/{slug}", s.read(s.handleGetCollection))
	// FHIR: a read is a record read; a search walks pages of views as the lists do.
	s.mux.HandleFunc("GET /v1/d/{dir}/fhir/metadata", s.read(s.handleFHIRMetadata))
	s.mux.HandleFunc("GET /v1/d/{dir}/fhir/.well-known/smart-configuration", s.read(s.directoryDocument(s.smartConfiguration)))
	s.handleExpensive("GET /v1/d/{dir}/fhir/{type}", s.handleFHIRSearch)
	s.mux.HandleFunc("GET /v1/d/{dir}/fhir/{type}/{id}", s.read(s.handleFHIRRead))
	s.mux.HandleFunc("GET /fhir/StructureDefinition/ownership-type", s.read(s.handleFHIRDefinition(fhir.OwnershipStructureDefinition)))
	s.mux.HandleFunc("GET /fhir/CodeSystem/ownership-type", s.read(s.handleFHIRDefinition(fhir.OwnershipCodeSystem)))
	s.mux.HandleFunc("GET /v1/openapi.json", s.read(s.handleGetOpenAPI))
	s.mux.HandleFunc("GET /oauth/jwks.json", s.read(s.handleGetJWKS)) // JWKSPath
	s.mux.HandleFunc("GET /.well-known/oauth-authorization-server", s.read(s.handleGetAuthorizationServerMetadata))
	s.mux.HandleFunc("GET /healthz", s.handleHealth)
	s.mux.HandleFunc("/", s.handleNotFound)
}

// handleCopyFree registers a read route whose answer does not come from the directory's copy (the
// gazetteer's): an edge serves it whatever position a reader asks for (PositionHeader), so it never
// sends it to the primary.
func (s *Server) handleCopyFree(pattern string, h http.HandlerFunc) {
	s.copyFreeRoutes[pattern] = true
	s.mux.HandleFunc(pattern, h)
}

// handleHealth answers a load balancer: the node's role and whether it is healthy and ready (503
// when not), nothing more. The full report, with the data folder's files and replication, is
// served on the private metrics address (Report).
func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	st := s.status(r.Context())
	s.writeHealth(w, r, dirsvc.NodeStatus{Role: st.Role, Healthy: st.Healthy, Ready: st.Ready})
}

// Report is the node's full health report: its role, each replicated or followed file's position and
// lag, and, on a primary, its replicas' state. It names the data folder's files, so it is served on
// the private metrics address, never the public one.
func (s *Server) Report() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.writeHealth(w, r, s.status(r.Context()))
	})
}

func (s *Server) status(ctx context.Context) dirsvc.NodeStatus {
	st := dirsvc.NodeStatus{Role: dirsvc.RoleServe, Healthy: true}
	if s.cfg.Status != nil {
		st = s.cfg.Status(ctx)
	}
	if s.storage.refusing(ctx, s.cfg.StorageProbe, s.cfg.Now()) {
		st.Healthy, st.StorageFull = false, true
	}
	st.Ready, st.Warming = true, nil
	if s.cfg.Ready != nil {
		st.Ready, st.Warming = s.cfg.Ready()
	}
	return st
}

func (s *Server) writeHealth(w http.ResponseWriter, r *http.Request, st dirsvc.NodeStatus) {
	body, err := json.Marshal(st)
	if err != nil {
		s.error(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if !st.Healthy || !st.Ready {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	w.Write(body)
}
