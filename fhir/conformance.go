package fhir

import (
	"encoding/json"
	"slices"
	"time"
)

// ownershipCodes are the platform's ownership types: the concepts of OwnershipCodeSystem. A
// directory's own types ({directory}:{code}) are carried as text only.
var ownershipCodes = map[string]string{
	"public":         "Public",
	"private":        "Private",
	"not_for_profit": "Not for profit",
}

// published is the date the definitions below were written.
const published = "2026-11-23"

// OwnershipStructureDefinition returns the definition of the ownership extension, published at its
// URL (canonical + OwnershipPath).
func OwnershipStructureDefinition(canonical string) ([]byte, error) {
	url := canonical + OwnershipPath
	sd := map[string]any{
		"resourceType": "StructureDefinition", "id": "ownership-type", "url": url, "version": "1.0.0",
		"name": "OwnershipType", "title": "Ownership type", "status": "active", "date": published,
		"description": "Who owns or runs an organisation, location or service: public, private or not for profit (codes of " +
			canonical + OwnershipCodeSystemPath + "), or a directory's own type, given as text only. A service inherits its location's type, a location its organisation's, unless set on the record itself.",
		"fhirVersion": Version, "kind": "complex-type", "abstract": false,
		"context": []map[string]string{
			{"type": "element", "expression": TypeOrganization},
			{"type": "element", "expression": TypeLocation},
			{"type": "element", "expression": TypeHealthcareService},
		},
		"type": "Extension", "baseDefinition": "http://hl7.org/fhir/StructureDefinition/Extension", "derivation": "constraint",
		"differential": map[string]any{"element": []map[string]any{
			{"id": "Extension", "path": "Extension", "short": "Ownership type", "definition": "The ownership type of the record.", "min": 0, "max": "1"},
			{"id": "Extension.extension", "path": "Extension.extension", "max": "0"},
			{"id": "Extension.url", "path": "Extension.url", "fixedUri": url},
			{"id": "Extension.value[x]", "path": "Extension.value[x]", "min": 1, "type": []map[string]string{{"code": "CodeableConcept"}}},
		}},
	}
	return json.Marshal(sd)
}

// OwnershipCodeSystem returns the code system of the platform's ownership types, published at its
// URL (canonical + OwnershipCodeSystemPath).
func OwnershipCodeSystem(canonical string) ([]byte, error) {
	codes := make([]string, 0, len(ownershipCodes))
	for c := range ownershipCodes {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	var concepts []map[string]string
	for _, c := range codes {
		concepts = append(concepts, map[string]string{"code": c, "display": ownershipCodes[c]})
	}
	cs := map[string]any{
		"resourceType": "CodeSystem", "id": "ownership-type", "url": canonical + OwnershipCodeSystemPath, "version": "1.0.0",
		"name": "OwnershipType", "title": "Ownership types", "status": "active", "date": published,
		"description":   "The platform's ownership types of organisations, locations and services.",
		"caseSensitive": true, "content": "complete", "count": len(concepts), "concept": concepts,
	}
	return json.Marshal(cs)
}

// Capability describes a directory's FHIR server for its CapabilityStatement.
type Capability struct {
	// Base is the FHIR base of the directory ({base_url}/v1/d/{dir}/fhir); Canonical the service's
	// canonical base; Name the directory's name; Country its country.
	Base, Canonical, Name, Country string
	// Published is when the directory's description last changed.
	Published time.Time
	// TokenURL is the token endpoint partner clients authenticate at (client secret or SMART Backend
	// Services' private_key_jwt); rest.security names it when given.
	TokenURL string
}

// SMART on FHIR's names for a server's OAuth endpoints in its CapabilityStatement: the extension of
// rest.security and the security service code (terminology.hl7.org's restful-security-service).
const (
	OAuthURIsExtension    = "http://fhir-registry.smarthealthit.org/StructureDefinition/oauth-uris"
	SecurityServiceSystem = "http://terminology.hl7.org/CodeSystem/restful-security-service"
)

// security is rest.security of a server whose clients get tokens at tokenURL: the SMART-on-FHIR
// service with the oauth-uris extension naming the token endpoint (there is no authorize endpoint:
// clients are systems, with client credentials). The SMART configuration at the FHIR base's
// .well-known/smart-configuration says the rest.
func security(base, tokenURL string) map[string]any {
	return map[string]any{
		"extension": []map[string]any{{
			"url":       OAuthURIsExtension,
			"extension": []map[string]string{{"url": "token", "valueUri": tokenURL}},
		}},
		"service": []map[string]any{{
			"coding": []map[string]string{{"system": SecurityServiceSystem, "code": "SMART-on-FHIR", "display": "SMART-on-FHIR"}},
			"text":   "OAuth 2.0 client credentials (SMART Backend Services)",
		}},
		"description": "Anonymous callers read the public tier. Partner clients get an access token at " + tokenURL +
			" with OAuth 2.0 client credentials, authenticating with a client secret or, as SMART Backend Services, " +
			"with a JWT signed by a registered key (private_key_jwt, RS384 or ES384), and present it as a Bearer token. " +
			"SMART system scopes (system/*.rs, system/HealthcareService.rs, ...) are taken as aliases of the directory's scopes. " +
			"Discovery: " + base + "/.well-known/smart-configuration.",
	}
}

// CapabilityStatement returns the directory's CapabilityStatement: every type with its read and
// search, every search parameter that works (Params), the _include and _revinclude values, the
// formats, and the claimed profiles.
func CapabilityStatement(c Capability) ([]byte, error) {
	var resources []map[string]any
	for _, t := range Types {
		var params []map[string]string
		for _, p := range Params(t) {
			sp := map[string]string{"name": p.Name, "type": p.Type, "documentation": p.Documentation}
			if p.Definition != "" {
				sp["definition"] = p.Definition
			}
			params = append(params, sp)
		}
		r := map[string]any{
			"type": t, "interaction": []map[string]string{{"code": "read"}, {"code": "search-type"}},
			"versioning": "versioned", "readHistory": false, "updateCreate": false,
			"conditionalRead": "not-supported", "searchParam": params,
		}
		if p := ProfileOf(c.Country, t); p != "" {
			r["profile"] = p
		}
		if inc := Includes[t]; len(inc) > 0 {
			r["searchInclude"] = inc
		}
		if rev := RevIncludes[t]; len(rev) > 0 {
			r["searchRevInclude"] = rev
		}
		resources = append(resources, r)
	}
	cs := map[string]any{
		"resourceType": "CapabilityStatement", "status": "active", "date": c.Published.UTC().Format(time.RFC3339),
		"name": "DirectoryFHIRServer", "title": "FHIR server of " + c.Name, "kind": "instance",
		"publisher":      c.Name,
		"implementation": map[string]string{"description": "Read-only FHIR server of the directory " + c.Name, "url": c.Base},
		"fhirVersion":    Version, "format": []string{"json", "application/fhir+json"},
		"instantiates": []string{"http://hl7.org/fhir/uv/bulkdata/CapabilityStatement/bulk-data"},
		"rest": []map[string]any{{
			"mode": "server",
			"documentation": "Read and search of the directory's records, each projected for the caller's tier and narrowing. " +
				"_count up to 100 (default 20); _page tokens come from next links; _include, _revinclude, _summary=count, " +
				"_total=accurate and _elements are supported; Prefer: handling=lenient ignores unknown parameters. " +
				"A page examines a bounded number of candidates, so a selective search may give pages with fewer " +
				"entries than _count, or none, and a next link: follow next links until a page has none. Each next " +
				"link starts after the last candidate its page examined, so the pages end and together give every match once. " +
				"Bulk Data 2.0 system export ($export, partner clients with export:run): _type, _since, _outputFormat ndjson.",
			"resource":  resources,
			"operation": []map[string]string{{"name": "export", "definition": "http://hl7.org/fhir/uv/bulkdata/OperationDefinition/export"}},
		}},
	}
	if c.TokenURL != "" {
		cs["rest"].([]map[string]any)[0]["security"] = security(c.Base, c.TokenURL)
	}
	return json.Marshal(cs)
}
