package fhir

// Version is the FHIR version of every resource.
const Version = "4.0.1"

// The resource types served.
const (
	TypeOrganization      = "Organization"
	TypeLocation          = "Location"
	TypeHealthcareService = "HealthcareService"
	TypePractitioner      = "Practitioner"
	TypePractitionerRole  = "PractitionerRole"
	TypeEndpoint          = "Endpoint"
)

// Types lists the resource types served, in the order the CapabilityStatement gives them.
var Types = []string{TypeOrganization, TypeLocation, TypeHealthcareService, TypePractitioner, TypePractitionerRole, TypeEndpoint}

// auBase is the canonical base of the AU Base profiles.
const auBase = "http://hl7.org.au/fhir/StructureDefinition/"

// AUBaseVersion is the version of the AU Base package whose profiles Australian directories claim.
const AUBaseVersion = "6.0.0"

// auProfiles are the AU Base 6.0.0 profiles claimed by the resources of an Australian directory, by
// resource type. Endpoint has no AU Base profile.
var auProfiles = map[string]string{
	TypeOrganization:      auBase + "au-organization|" + AUBaseVersion,
	TypeLocation:          auBase + "au-location|" + AUBaseVersion,
	TypeHealthcareService: auBase + "au-healthcareservice|" + AUBaseVersion,
	TypePractitioner:      auBase + "au-practitioner|" + AUBaseVersion,
	TypePractitionerRole:  auBase + "au-practitionerrole|" + AUBaseVersion,
}

// Profiles returns the profiles the resources of a directory of country claim (ISO 3166-1 alpha-2),
// in resource type order: the AU Base 6.0.0 profiles for Australia, none elsewhere.
func Profiles(country string) []string {
	out := []string{}
	if country != "AU" {
		return out
	}
	for _, t := range Types {
		if p, ok := auProfiles[t]; ok {
			out = append(out, p)
		}
	}
	return out
}

// profileLists are the Meta.profile lists of the resources by country and type (read only: shared
// by every resource).
var profileLists = func() map[string]map[string][]string {
	au := map[string][]string{}
	for t, p := range auProfiles {
		au[t] = []string{p}
	}
	return map[string]map[string][]string{"AU": au}
}()

// ProfileOf returns the profile a resource of type t claims in a directory of country, or "".
func ProfileOf(country, t string) string {
	if country != "AU" {
		return ""
	}
	return auProfiles[t]
}

// Systems of identifier types and terminologies the mapping uses.
const (
	v20203       = "http://terminology.hl7.org/CodeSystem/v2-0203"
	auV20203     = "http://terminology.hl7.org.au/CodeSystem/v2-0203"
	timezoneURL  = "http://hl7.org/fhir/StructureDefinition/timezone"
	bcp47        = "urn:ietf:bcp:47"
	payloadTypes = "http://terminology.hl7.org/CodeSystem/endpoint-payload-type"
)

// The service's own canonical URLs are under {base URL}/fhir (Canonical).
const (
	// OwnershipPath is where, under the canonical base, the ownership extension is defined.
	OwnershipPath = "/StructureDefinition/ownership-type"
	// OwnershipCodeSystemPath is where, under the canonical base, its code system is defined.
	OwnershipCodeSystemPath = "/CodeSystem/ownership-type"
	// ServiceTypePath, CategoryPath, LocalTypePath and EndpointKindPath name the code systems of
	// platform service types, platform categories, a directory's local types (specialties) and
	// endpoint connection kinds (their codes are those of the taxonomy the REST API serves).
	ServiceTypePath  = "/CodeSystem/service-type"
	CategoryPath     = "/CodeSystem/service-category"
	LocalTypePath    = "/CodeSystem/local-type"
	EndpointKindPath = "/CodeSystem/endpoint-kind"
)

// Canonical returns the canonical base of the service's own FHIR definitions for a service whose
// public address is baseURL.
func Canonical(baseURL string) string { return baseURL + "/fhir" }
