package primary_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/edge"
	"github.com/dirsvc/dirsvc/edge/edgetest"
	"github.com/dirsvc/dirsvc/fhir"
	"github.com/dirsvc/dirsvc/primary"
)

// newSelfService is the primary's token endpoint and the edge's reads, as newAuthService, whose base
// URL is its own address: the addresses its discovery documents give are the ones a client can call.
func newSelfService(tb testing.TB) *authService {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	base := "http://" + l.Addr().String()
	store, _, access := smallPrimary(tb, nil)
	access.Issuer = base
	srv := edge.New(edge.Config{Catalog: store, Keys: store, BaseURL: base, AnonymousLimits: edge.Limits{PerMinute: 1 << 20, PerDay: 1 << 20}})
	if err := (&primary.Server{Edge: srv, Access: access}).Mount(); err != nil {
		tb.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(srv)
	ts.Listener.Close()
	ts.Listener = l
	ts.Start()
	tb.Cleanup(ts.Close)
	return &authService{Server: ts, store: store, access: access}
}

// getJSON reads a JSON document through a client that checks the answer against the OpenAPI
// document, into v.
func getJSON(tb testing.TB, address string, v any) *http.Response {
	tb.Helper()
	resp, err := (&http.Client{Transport: edgetest.NewChecker(tb).Transport(tb, http.DefaultTransport)}).Get(address)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK && v != nil {
		if err := json.Unmarshal(body, v); err != nil {
			tb.Fatalf("GET %s: %v\n%s", address, err, body)
		}
	}
	return resp
}

// rfc8414 is an authorization server's metadata as an OAuth library reads it (RFC 8414 section 2).
type rfc8414 struct {
	Issuer                                     string    `json:"issuer"`
	AuthorizationEndpoint                      string    `json:"authorization_endpoint"`
	TokenEndpoint                              string    `json:"token_endpoint"`
	JWKSURI                                    string    `json:"jwks_uri"`
	ScopesSupported                            []string  `json:"scopes_supported"`
	ResponseTypesSupported                     *[]string `json:"response_types_supported"`
	GrantTypesSupported                        []string  `json:"grant_types_supported"`
	TokenEndpointAuthMethodsSupported          []string  `json:"token_endpoint_auth_methods_supported"`
	TokenEndpointAuthSigningAlgValuesSupported []string  `json:"token_endpoint_auth_signing_alg_values_supported"`
	ServiceDocumentation                       string    `json:"service_documentation"`
}

// smartConfiguration is a SMART configuration as a Bulk Data client reads it.
type smartConfiguration struct {
	TokenEndpoint                              string   `json:"token_endpoint"`
	GrantTypesSupported                        []string `json:"grant_types_supported"`
	TokenEndpointAuthMethodsSupported          []string `json:"token_endpoint_auth_methods_supported"`
	TokenEndpointAuthSigningAlgValuesSupported []string `json:"token_endpoint_auth_signing_alg_values_supported"`
	ScopesSupported                            []string `json:"scopes_supported"`
	Capabilities                               []string `json:"capabilities"`
}

// TestDiscoveryDocumentsConfigureStandardClients configures x/oauth2's client credentials from the
// RFC 8414 metadata and from a directory's SMART configuration alone, gets tokens with a secret and
// with a signed assertion, and reads with them; the metadata's JWKS verifies the tokens, and the
// CapabilityStatement names the same token endpoint.
func TestDiscoveryDocumentsConfigureStandardClients(t *testing.T) {
	a := newSelfService(t)
	base, err := url.Parse(a.URL)
	if err != nil {
		t.Fatal(err)
	}
	// RFC 8414 section 3: the metadata is at the issuer's host, /.well-known/oauth-authorization-server
	// and then the issuer's path (none here).
	var md rfc8414
	resp := getJSON(t, a.URL+"/.well-known/oauth-authorization-server", &md)
	if resp.StatusCode != 200 || resp.Header.Get("Cache-Control") != "public, max-age=300" {
		t.Fatalf("metadata: %d, Cache-Control %q", resp.StatusCode, resp.Header.Get("Cache-Control"))
	}
	issuer, err := url.Parse(md.Issuer)
	if err != nil || issuer.Host != base.Host || strings.TrimSuffix(issuer.Path, "/") != "" || issuer.RawQuery != "" || issuer.Fragment != "" {
		t.Errorf("issuer %q is not the base URL %s", md.Issuer, a.URL)
	}
	switch {
	case md.ResponseTypesSupported == nil || len(*md.ResponseTypesSupported) != 0 || md.AuthorizationEndpoint != "":
		t.Errorf("a server with no authorization endpoint: response_types_supported %v, authorization_endpoint %q",
			md.ResponseTypesSupported, md.AuthorizationEndpoint)
	case !slices.Equal(md.GrantTypesSupported, []string{"client_credentials"}):
		t.Errorf("grant_types_supported %v", md.GrantTypesSupported)
	case !slices.Contains(md.TokenEndpointAuthMethodsSupported, "private_key_jwt") || !slices.Contains(md.TokenEndpointAuthMethodsSupported, "client_secret_basic"):
		t.Errorf("token_endpoint_auth_methods_supported %v", md.TokenEndpointAuthMethodsSupported)
	case !slices.Contains(md.TokenEndpointAuthSigningAlgValuesSupported, "RS384") || !slices.Contains(md.TokenEndpointAuthSigningAlgValuesSupported, "ES384") ||
		slices.ContainsFunc(md.TokenEndpointAuthSigningAlgValuesSupported, func(alg string) bool { return alg == "none" || strings.HasPrefix(alg, "HS") }):
		t.Errorf("token_endpoint_auth_signing_alg_values_supported %v", md.TokenEndpointAuthSigningAlgValuesSupported)
	case !slices.Contains(md.ScopesSupported, "system/*.rs") || !slices.Contains(md.ScopesSupported, dirsvc.ScopeGraphRead):
		t.Errorf("scopes_supported %v", md.ScopesSupported)
	}
	if r := getJSON(t, md.ServiceDocumentation, nil); r.StatusCode != 200 {
		t.Errorf("service_documentation %s: %d", md.ServiceDocumentation, r.StatusCode)
	}

	// A client with a secret, configured from the metadata alone.
	id, secret := a.client(t, dirsvc.ScopeGraphRead, dirsvc.ScopeSearchRead)
	cc := clientcredentials.Config{ClientID: id, ClientSecret: secret, TokenURL: md.TokenEndpoint, AuthStyle: oauth2.AuthStyleInHeader,
		EndpointParams: url.Values{"directory": {"small"}}}
	tok, err := cc.Token(httpContext(t))
	if err != nil {
		t.Fatal(err)
	}
	// The metadata's JWKS verifies the token, whose issuer is the metadata's.
	var set struct {
		Keys []struct{ Kid, X string }
	}
	getJSON(t, md.JWKSURI, &set)
	keys := dirsvc.KeySet{}
	for _, k := range set.Keys {
		x, _ := base64.RawURLEncoding.DecodeString(k.X)
		keys[k.Kid] = ed25519.PublicKey(x)
	}
	if claims, err := dirsvc.VerifyToken(tok.AccessToken, keys, md.Issuer, time.Now()); err != nil || claims.ClientID != id {
		t.Errorf("the token does not verify with the metadata's JWKS and issuer: %v", err)
	}

	// A SMART Backend Services client, configured from the directory's SMART configuration.
	var smart smartConfiguration
	if resp := getJSON(t, a.URL+edge.SMARTConfigurationPath("small"), &smart); resp.StatusCode != 200 || resp.Header.Get("Cache-Control") != "public, max-age=300" {
		t.Fatalf("SMART configuration: %d, Cache-Control %q", resp.StatusCode, resp.Header.Get("Cache-Control"))
	}
	for _, want := range []string{"client-confidential-asymmetric", "permission-v2"} {
		if !slices.Contains(smart.Capabilities, want) {
			t.Errorf("capabilities %v lack %s", smart.Capabilities, want)
		}
	}
	for _, c := range smart.Capabilities {
		if strings.HasPrefix(c, "launch-") || strings.HasPrefix(c, "context-") || c == "sso-openid-connect" {
			t.Errorf("capability %s: there is no authorization endpoint", c)
		}
	}
	if smart.TokenEndpoint != md.TokenEndpoint || !slices.Contains(smart.TokenEndpointAuthMethodsSupported, "private_key_jwt") ||
		!slices.Contains(smart.TokenEndpointAuthSigningAlgValuesSupported, "ES384") || !slices.Contains(smart.GrantTypesSupported, "client_credentials") ||
		!slices.Contains(smart.ScopesSupported, "system/HealthcareService.rs") {
		t.Errorf("SMART configuration %+v", smart)
	}
	key := newClientKey(t, "ES384", "bulk-1", false)
	backend := a.keyClient(t, jwks(t, key), dirsvc.ScopeGraphRead)
	bulk := clientcredentials.Config{ClientID: backend, TokenURL: smart.TokenEndpoint, AuthStyle: oauth2.AuthStyleInParams,
		Scopes: []string{"system/*.rs"}, EndpointParams: url.Values{"client_assertion_type": {dirsvc.ClientAssertionType},
			"client_assertion": {key.sign(t, nil, claims(backend, smart.TokenEndpoint))}, "directory": {"small"}}}
	btok, err := bulk.Token(httpContext(t))
	if err != nil {
		t.Fatal(err)
	}
	if resp := readFHIR(t, a.URL, btok.AccessToken, "Organization?_count=2"); resp.StatusCode != 200 {
		t.Errorf("a FHIR search with the SMART client's token: %d", resp.StatusCode)
	}

	// The CapabilityStatement names the token endpoint, as SMART on FHIR says.
	var cs struct {
		Rest []struct {
			Security struct {
				Extension []struct {
					URL       string `json:"url"`
					Extension []struct {
						URL      string `json:"url"`
						ValueURI string `json:"valueUri"`
					} `json:"extension"`
				} `json:"extension"`
				Service []fhir.CodeableConcept `json:"service"`
			} `json:"security"`
		} `json:"rest"`
	}
	getJSON(t, a.URL+"/v1/d/small/fhir/metadata", &cs)
	if len(cs.Rest) != 1 {
		t.Fatalf("CapabilityStatement rest: %+v", cs.Rest)
	}
	sec := cs.Rest[0].Security
	var token string
	for _, e := range sec.Extension {
		for _, sub := range e.Extension {
			if e.URL == fhir.OAuthURIsExtension && sub.URL == "token" {
				token = sub.ValueURI
			}
		}
	}
	if token != md.TokenEndpoint {
		t.Errorf("rest.security oauth-uris token %q, want %q", token, md.TokenEndpoint)
	}
	if len(sec.Service) != 1 || len(sec.Service[0].Coding) != 1 || sec.Service[0].Coding[0].System != fhir.SecurityServiceSystem ||
		sec.Service[0].Coding[0].Code != "SMART-on-FHIR" {
		t.Errorf("rest.security.service %+v", sec.Service)
	}

	// A directory the service does not publish has no SMART configuration: the same answer as its
	// FHIR base gives.
	missing, metadata := getRaw(t, a.URL+edge.SMARTConfigurationPath("nope")), getRaw(t, a.URL+"/v1/d/nope/fhir/metadata")
	if missing.status != 404 || string(missing.body) != string(metadata.body) {
		t.Errorf("an unknown directory's SMART configuration: %d %s; its metadata: %d %s", missing.status, missing.body, metadata.status, metadata.body)
	}
}

type rawAnswer struct {
	status int
	body   []byte
}

func getRaw(tb testing.TB, address string) rawAnswer {
	tb.Helper()
	resp, err := (&http.Client{Transport: edgetest.NewChecker(tb).Transport(tb, http.DefaultTransport)}).Get(address)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return rawAnswer{resp.StatusCode, body}
}
