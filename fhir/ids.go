package fhir

import (
	"strings"

	"github.com/dirsvc/dirsvc"
)

// ResourceID returns the resource id of a record: its public ID with each underscore a hyphen.
func ResourceID(publicID string) string { return strings.ReplaceAll(publicID, "_", "-") }

// typeOfKind is the resource type of each record kind.
var typeOfKind = map[dirsvc.Kind]string{
	dirsvc.KindOrganisation: TypeOrganization, dirsvc.KindLocation: TypeLocation,
	dirsvc.KindService: TypeHealthcareService, dirsvc.KindPractitioner: TypePractitioner,
	dirsvc.KindRole: TypePractitionerRole,
}

// TypeOf returns the resource type of a record kind.
func TypeOf(k dirsvc.Kind) string {
	switch k { // as typeOfKind, without a map lookup: the mapping asks for every reference
	case dirsvc.KindOrganisation:
		return TypeOrganization
	case dirsvc.KindLocation:
		return TypeLocation
	case dirsvc.KindService:
		return TypeHealthcareService
	case dirsvc.KindPractitioner:
		return TypePractitioner
	case dirsvc.KindRole:
		return TypePractitionerRole
	}
	return ""
}

// KindOf returns the record kind whose records a resource type stands for; for an Endpoint, the
// service's. ok is false for a type this server does not serve.
func KindOf(t string) (dirsvc.Kind, bool) {
	if t == TypeEndpoint {
		return dirsvc.KindService, true
	}
	for k, rt := range typeOfKind {
		if rt == t {
			return k, true
		}
	}
	return "", false
}

// PublicID returns the public ID of the record of kind whose resource id is id, or "" when id is not
// one. Public IDs of the service are lower-case letters, digits and underscores after the prefix
// (hyphens never appear in the ones it makes), so the mapping back is one to one for them.
func PublicID(kind dirsvc.Kind, id string) string {
	if len(id) > 64+8 {
		return ""
	}
	p := strings.ReplaceAll(id, "-", "_")
	if !dirsvc.ValidPublicID(kind, p) {
		return ""
	}
	return p
}

// EndpointID returns the id of the n-th endpoint (from 1) of the service serviceID.
func EndpointID(serviceID string, n int) string {
	return ResourceID(serviceID) + "-ep" + itoa(n)
}

// ParseEndpointID returns the service public ID and position of an Endpoint's id; ok false when id
// is not one.
func ParseEndpointID(id string) (serviceID string, n int, ok bool) {
	i := strings.LastIndex(id, "-ep")
	if i <= 0 {
		return "", 0, false
	}
	digits := id[i+3:]
	if len(digits) == 0 || len(digits) > 3 || digits[0] == '0' {
		return "", 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return "", 0, false
		}
		n = n*10 + int(c-'0')
	}
	if serviceID = PublicID(dirsvc.KindService, id[:i]); serviceID == "" {
		return "", 0, false
	}
	return serviceID, n, true
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}
