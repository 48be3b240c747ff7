package edge_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/edge"
	"github.com/dirsvc/dirsvc/fhir"
)

// TestFHIRCapabilityStatementNamesTheTokenEndpoint: rest.security of the CapabilityStatement is
// valid R4 and names the token endpoint as SMART on FHIR does (the oauth-uris extension, the
// SMART-on-FHIR service code), as an edge alone serves it.
func TestFHIRCapabilityStatementNamesTheTokenEndpoint(t *testing.T) {
	s := newTestServer(t, smallFixture(t))
	fc := newFHIRClient(t, s, caller{name: "anonymous", aud: dirsvc.Public}, "small", "AU")
	r := fc.get("/metadata")
	if r.status != 200 {
		t.Fatalf("metadata: %d %s", r.status, r.body)
	}
	fc.validate("metadata", r.body)
	var cs struct {
		Rest []struct {
			Security struct {
				Extension []struct {
					URL       string
					Extension []struct{ URL, ValueURI string } `json:"extension"`
				}
				Service     []fhir.CodeableConcept
				Description string
			}
		}
	}
	if err := json.Unmarshal(r.body, &cs); err != nil || len(cs.Rest) != 1 {
		t.Fatalf("CapabilityStatement: %v\n%s", err, r.body)
	}
	sec := cs.Rest[0].Security
	want := edge.DefaultBaseURL + edge.TokenPath
	if len(sec.Extension) != 1 || sec.Extension[0].URL != fhir.OAuthURIsExtension || len(sec.Extension[0].Extension) != 1 ||
		sec.Extension[0].Extension[0].URL != "token" || sec.Extension[0].Extension[0].ValueURI != want {
		t.Errorf("rest.security.extension %+v, want oauth-uris with token %s", sec.Extension, want)
	}
	if len(sec.Service) != 1 || !slices.Contains(sec.Service[0].Coding, fhir.Coding{System: fhir.SecurityServiceSystem, Code: "SMART-on-FHIR", Display: "SMART-on-FHIR"}) {
		t.Errorf("rest.security.service %+v", sec.Service)
	}
}

// TestDiscoveryDocumentsAreServedByEdges: an edge serves both documents itself; the SMART
// configuration is a directory's read (a client of the directory gets it privately, a client of
// another directory 403, a missing directory 404) and the metadata the same for everyone.
func TestDiscoveryDocumentsAreServedByEdges(t *testing.T) {
	s := newTestServer(t, smallFixture(t))
	path := edge.SMARTConfigurationPath("small")
	anon := s.get(t, path)
	if anon.status != 200 || anon.header.Get("Cache-Control") != "public, max-age=300" {
		t.Fatalf("anonymous: %d %q %s", anon.status, anon.header.Get("Cache-Control"), anon.body)
	}
	own := s.getAs(t, token(t, grant{dir: "small", tier: dirsvc.Partner, scopes: "graph:read"}), path)
	if own.status != 200 || own.header.Get("Cache-Control") != "private, no-store" || string(own.body) != string(anon.body) {
		t.Errorf("a client of the directory: %d %q", own.status, own.header.Get("Cache-Control"))
	}
	if r := s.getAs(t, token(t, grant{dir: "other", tier: dirsvc.Partner, scopes: "graph:read"}), path); r.status != 403 {
		t.Errorf("a client of another directory: %d", r.status)
	}
	if r := s.get(t, edge.SMARTConfigurationPath("missing")); r.status != 404 {
		t.Errorf("a missing directory: %d", r.status)
	}
	var smart edge.SMARTConfiguration
	if err := json.Unmarshal(anon.body, &smart); err != nil || smart.TokenEndpoint != edge.DefaultBaseURL+edge.TokenPath {
		t.Errorf("SMART configuration: %v %s", err, anon.body)
	}
	md := s.get(t, edge.AuthorizationServerMetadataPath)
	var meta edge.AuthorizationServerMetadata
	if err := json.Unmarshal(md.body, &meta); err != nil || md.status != 200 || meta.Issuer != edge.DefaultBaseURL ||
		meta.TokenEndpoint != smart.TokenEndpoint || !slices.Equal(meta.ScopesSupported, smart.ScopesSupported) {
		t.Errorf("metadata: %d %v %s", md.status, err, md.body)
	}
}
