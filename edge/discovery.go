package edge

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/fhir"
)

// Discovery documents: OAuth libraries find the token endpoint through the authorization server's
// metadata (RFC 8414), SMART and Bulk Data clients through each FHIR base's SMART configuration
// (SMART App Launch 2.0). Both say only what the token endpoint does: client credentials, with a
// client secret (HTTP Basic or the body) or a JWT signed by a registered key (private_key_jwt).

// AuthorizationServerMetadataPath is where the authorization server's metadata is published.
const AuthorizationServerMetadataPath = "/.well-known/oauth-authorization-server"

// SMARTConfigurationPath returns where a directory's SMART configuration is published: under its
// FHIR base.
func SMARTConfigurationPath(dir string) string {
	return "/v1/d/" + dir + "/fhir/.well-known/smart-configuration"
}

// tokenAuthMethods are the ways a client authenticates at the token endpoint.
var tokenAuthMethods = []string{"client_secret_basic", "client_secret_post", "private_key_jwt"}

// AuthorizationServerMetadata is the authorization server's metadata (RFC 8414 section 2). There is
// no authorization endpoint (clients are systems, with client credentials), so no response type is
// supported: response_types_supported, which the RFC requires, is empty.
type AuthorizationServerMetadata struct {
	Issuer                                     string   `json:"issuer"`
	TokenEndpoint                              string   `json:"token_endpoint"`
	JWKSURI                                    string   `json:"jwks_uri"`
	ScopesSupported                            []string `json:"scopes_supported"`
	ResponseTypesSupported                     []string `json:"response_types_supported"`
	GrantTypesSupported                        []string `json:"grant_types_supported"`
	TokenEndpointAuthMethodsSupported          []string `json:"token_endpoint_auth_methods_supported"`
	TokenEndpointAuthSigningAlgValuesSupported []string `json:"token_endpoint_auth_signing_alg_values_supported"`
	ServiceDocumentation                       string   `json:"service_documentation"`
}

// SMARTConfiguration is a directory's SMART configuration (SMART App Launch 2.0, "Conformance"), for
// backend services: the token endpoint and how to authenticate there, the scopes, and the
// capabilities that hold. There is no authorization endpoint, so no launch, PKCE or OpenID Connect
// capability and none of their fields.
type SMARTConfiguration struct {
	Issuer                                     string   `json:"issuer"`
	JWKSURI                                    string   `json:"jwks_uri"`
	TokenEndpoint                              string   `json:"token_endpoint"`
	GrantTypesSupported                        []string `json:"grant_types_supported"`
	TokenEndpointAuthMethodsSupported          []string `json:"token_endpoint_auth_methods_supported"`
	TokenEndpointAuthSigningAlgValuesSupported []string `json:"token_endpoint_auth_signing_alg_values_supported"`
	ScopesSupported                            []string `json:"scopes_supported"`
	Capabilities                               []string `json:"capabilities"`
}

// smartCapabilities are what a client may count on: asymmetric (private_key_jwt) and symmetric
// (client secret) confidential clients, and SMART v1 (.read) and v2 (.rs) scope syntax.
var smartCapabilities = []string{"client-confidential-asymmetric", "client-confidential-symmetric", "permission-v1", "permission-v2"}

// discoveryScopes are the scopes the token endpoint takes: SMART system scopes of the FHIR types,
// then the directory scopes.
func discoveryScopes() []string {
	return slices.Concat(dirsvc.SystemScopes(fhir.Types), dirsvc.AllScopes)
}

// authorizationServerMetadata makes the service's metadata; its service documentation is the OpenAPI
// document, which describes the token endpoint.
func (s *Server) authorizationServerMetadata() AuthorizationServerMetadata {
	base := s.cfg.BaseURL
	return AuthorizationServerMetadata{Issuer: base, TokenEndpoint: base + TokenPath, JWKSURI: base + JWKSPath,
		ScopesSupported: discoveryScopes(), ResponseTypesSupported: []string{}, GrantTypesSupported: []string{"client_credentials"},
		TokenEndpointAuthMethodsSupported:          tokenAuthMethods,
		TokenEndpointAuthSigningAlgValuesSupported: dirsvc.ClientAssertionAlgorithms,
		ServiceDocumentation:                       base + OpenAPIPath}
}

// handleGetAuthorizationServerMetadata serves the metadata, the same for every caller: any cache may
// keep it five minutes.
func (s *Server) handleGetAuthorizationServerMetadata(w http.ResponseWriter, r *http.Request) {
	body, err := json.Marshal(s.authorizationServerMetadata())
	if err != nil {
		s.error(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "public, max-age=300")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.Write(body)
}

// smartConfiguration makes a directory's SMART configuration (served by directoryDocument: a missing
// or hidden directory answers as any other).
func (s *Server) smartConfiguration(*dirsvc.Directory) any {
	base := s.cfg.BaseURL
	return SMARTConfiguration{Issuer: base, JWKSURI: base + JWKSPath, TokenEndpoint: base + TokenPath,
		GrantTypesSupported:                        []string{"client_credentials"},
		TokenEndpointAuthMethodsSupported:          tokenAuthMethods,
		TokenEndpointAuthSigningAlgValuesSupported: dirsvc.ClientAssertionAlgorithms,
		ScopesSupported:                            discoveryScopes(),
		Capabilities:                               smartCapabilities}
}
