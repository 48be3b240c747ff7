package edge

import (
	"encoding/json"
	"net/http"

	"github.com/dirsvc/dirsvc"
)

// routes registers every read route. It is the one list of what the edge serves.
func (s *Server) routes() {
	s.mux.HandleFunc("GET /v1/d/{dir}/services", s.handleListServices)
	s.mux.HandleFunc("GET /v1/d/{dir}/services/{publicId}", s.handleGetService)
	s.mux.HandleFunc("GET /v1/d/{dir}/locations/{publicId}", s.handleGetLocation)
	s.mux.HandleFunc("GET /v1/d/{dir}/organisations/{publicId}", s.handleGetOrganisation)
	s.mux.HandleFunc("GET /v1/d/{dir}/organisations/{publicId}/leadership", s.handleGetLeadership)
	s.mux.HandleFunc("GET /v1/d/{dir}/practitioners", s.handleListPractitioners)
	s.mux.HandleFunc("GET /v1/d/{dir}/practitioners/{publicId}", s.handleGetPractitioner)
	s.mux.HandleFunc("GET /v1/d/{dir}/roles/{publicId}", s.handleGetRole)
	s.mux.HandleFunc("GET /v1/d/{dir}/identifiers/search", s.handleSearchIdentifiers)
	s.mux.HandleFunc("GET /v1/d/{dir}/developers", s.handleGetDevelopers)
	s.mux.HandleFunc("GET /v1/openapi.json", s.handleGetOpenAPI)
	s.mux.HandleFunc("GET /oauth/jwks.json", s.handleGetJWKS) // JWKSPath
	s.mux.HandleFunc("GET /healthz", s.handleHealth)
	s.mux.HandleFunc("/", s.handleNotFound)
}

// handleHealth reports the node's role and replication state: 200 while healthy, 503 otherwise (an
// edge lagging past its bound), for load balancers and operators. It is not part of the API.
func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	st := dirsvc.NodeStatus{Role: dirsvc.RoleServe, Healthy: true}
	if s.cfg.Status != nil {
		st = s.cfg.Status(r.Context())
	}
	body, err := json.Marshal(st)
	if err != nil {
		s.error(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if !st.Healthy {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	w.Write(body)
}
