package edge

import "net/http"

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

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write([]byte("ok\n"))
}
