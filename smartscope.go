package dirsvc

import (
	"errors"
	"slices"
	"strings"
)

// SMART on FHIR system scopes (SMART App Launch 2.0, for backend services) are taken at the token
// endpoint as aliases of the directory scopes a client holds; they never give more than the grant.
// system/{type}.{permissions} names one FHIR resource type, or * for every type; the permissions are
// r (read), s (search) or rs in SMART v2, and read (both) in SMART v1. The service is read-only, so
// c, u, d, write and * are refused, as are patient/ and user/ scopes and v2 query restrictions.
//
// What each alias needs of the grant, and gives:
//
//   - r or s of any one type needs graph:read, and gives it;
//   - s of Practitioner also needs practitioners:read (searching practitioners is listing them), and
//     gives it;
//   - r or s of * needs graph:read; s of * also gives practitioners:read and export:run where the
//     grant holds them (a Bulk Data export is a search of every type), never leadership:read, which a
//     client asks for by its own name.
//
// An alias whose needs the grant lacks is refused (invalid_scope), as a directory scope the grant
// lacks is: it is never quietly narrowed to a token that cannot do what was asked.

// SystemScope is one SMART system scope the token endpoint takes.
type SystemScope struct {
	// Type is a FHIR resource type, or * for every type.
	Type string
	// Read and Search are the permissions asked (both for a SMART v1 read).
	Read, Search bool
}

// Errors of ParseSystemScope: the scope is no SMART system scope of this service's grammar, or it
// asks for what a read-only service of these types cannot give.
var (
	ErrNotSystemScope         = errors.New("not a SMART system scope")
	ErrUnsupportedSystemScope = errors.New("a SMART scope this service does not give")
)

// ParseSystemScope reads a SMART system scope whose type is * or one of types (the FHIR resource
// types the service serves). ErrNotSystemScope for a text that is not a SMART scope at all;
// ErrUnsupportedSystemScope for a SMART scope of another context (patient/, user/), another type,
// a write permission or a query restriction.
func ParseSystemScope(s string, types []string) (SystemScope, error) {
	rest, ok := strings.CutPrefix(s, "system/")
	if !ok {
		if strings.HasPrefix(s, "patient/") || strings.HasPrefix(s, "user/") {
			return SystemScope{}, ErrUnsupportedSystemScope
		}
		return SystemScope{}, ErrNotSystemScope
	}
	typ, perms, ok := strings.Cut(rest, ".")
	if !ok || typ == "" || perms == "" {
		return SystemScope{}, ErrNotSystemScope
	}
	if typ != "*" && !slices.Contains(types, typ) || strings.Contains(perms, "?") {
		return SystemScope{}, ErrUnsupportedSystemScope
	}
	sc := SystemScope{Type: typ}
	switch perms {
	case "read": // SMART v1
		sc.Read, sc.Search = true, true
	case "rs":
		sc.Read, sc.Search = true, true
	case "r":
		sc.Read = true
	case "s":
		sc.Search = true
	case "write", "*":
		return SystemScope{}, ErrUnsupportedSystemScope
	default:
		if validV2Permissions(perms) {
			return SystemScope{}, ErrUnsupportedSystemScope // asks to create, update or delete
		}
		return SystemScope{}, ErrNotSystemScope
	}
	return sc, nil
}

// validV2Permissions reports whether p is a SMART v2 permission string: some of c, r, u, d, s, in
// that order, each once.
func validV2Permissions(p string) bool {
	i := 0
	for _, c := range p {
		j := strings.IndexRune("cruds"[i:], c)
		if j < 0 {
			return false
		}
		i += j + 1
	}
	return p != ""
}

// Needs returns the directory scopes the alias gives a grant that holds held, or, when the grant
// lacks one the alias needs, the first it lacks.
func (sc SystemScope) Needs(held []string) (gives []string, missing string) {
	if !slices.Contains(held, ScopeGraphRead) {
		return nil, ScopeGraphRead
	}
	gives = []string{ScopeGraphRead}
	switch {
	case sc.Type == "Practitioner" && sc.Search:
		if !slices.Contains(held, ScopePractitionersRead) {
			return nil, ScopePractitionersRead
		}
		gives = append(gives, ScopePractitionersRead)
	case sc.Type == "*" && sc.Search:
		for _, s := range []string{ScopePractitionersRead, ScopeExportRun} {
			if slices.Contains(held, s) {
				gives = append(gives, s)
			}
		}
	}
	return gives, ""
}

// SystemScopes lists the SMART system scopes the token endpoint takes for the resource types, in
// their usual spellings: system/*.rs and system/*.read, then system/{type}.rs and system/{type}.read
// of each type (r and s alone are taken too).
func SystemScopes(types []string) []string {
	out := []string{"system/*.rs", "system/*.read"}
	for _, t := range types {
		out = append(out, "system/"+t+".rs", "system/"+t+".read")
	}
	return out
}
