package dirdb

import (
	"slices"
	"strings"

	"github.com/dirsvc/dirsvc"
)

// listKey is a row of list_keys: a key a record is found by, and the audiences whose view carries it.
// The keys are those of schema/directory/0002_list_keys.sql and, for site:, 0005_list_plans.sql (tc:
// 0006, lt: 0010, pg: and tg: 0015), which fill the table from published views the same way (a test
// holds them to the same result); img: (images.go) came with the images table (0014), before which
// no view could name a published image.
type listKey struct {
	key       string
	audiences int64
}

// Key prefixes of list_keys.
const (
	keyArea = "area:"
	keySite = "site:"
	keyType = "type:"
	keyCat  = "cat:"
	// keyTypeCat is a service's type and category together ("tc:<type>|<category>"): a list
	// filtered by both walks the services that have both, however many have each.
	keyTypeCat = "tc:"
	// keyLocal is a local type (a specialty) a service is tagged with, as the audience sees it: a
	// category made of local types counts exactly the services that carry one of its keys.
	keyLocal = "lt:"
	// keyProgram and keyTargetGroup are a program and a target group of a service, as the audience's
	// view shows them: with type: and lt:, what tells which entries of the taxonomy the services an
	// audience sees use (taxonomy.go).
	keyProgram     = "pg:"
	keyTargetGroup = "tg:"
	keyActive      = "active"
	keyID          = "id:"
)

// typeCat is the keyTypeCat key of a type and a category.
func typeCat(typ, cat string) string { return keyTypeCat + typ + "|" + cat }

// IdentifierValue normalises an identifier value for matching: spaces removed, upper case.
func identifierValue(v string) string { return strings.ToUpper(strings.ReplaceAll(v, " ", "")) }

// keysOfView returns the list keys a view carries.
func keysOfView(v any) []string {
	var out []string
	ids := func(vs []dirsvc.IdentifierView) {
		for _, id := range vs {
			val := identifierValue(id.Value)
			out = append(out, keyID+id.System+"|"+val, keyID+id.Type+"|"+val)
		}
	}
	switch x := v.(type) {
	case *dirsvc.ServiceView:
		// A service's own area keys are its catchment; the areas of its site are the site's keys,
		// which the lists join (seeing the site is what puts its areas in the service's view). The
		// site keys repeat the site's areas on the service, as its view shows them, so the area
		// filter walks one index in service order; they find candidates, and the lists still check
		// the site's own keys.
		for _, a := range x.Catchment {
			out = append(out, keyArea+a)
		}
		for _, a := range x.Areas {
			out = append(out, keySite+a)
		}
		out = append(out, keyType+x.Type.Code)
		if x.CategoryCode != nil {
			out = append(out, keyCat+*x.CategoryCode, typeCat(x.Type.Code, *x.CategoryCode))
		}
		for _, lt := range x.Specialties {
			out = append(out, keyLocal+lt.ID)
		}
		for _, p := range x.Programs {
			out = append(out, keyProgram+p.Code)
		}
		for _, g := range x.TargetGroups {
			out = append(out, keyTargetGroup+g.Code)
		}
		ids(x.Identifiers)
	case *dirsvc.LocationView:
		for _, a := range x.Areas {
			out = append(out, keyArea+a)
		}
		ids(x.Identifiers)
	case *dirsvc.OrganisationView:
		ids(x.Identifiers)
		if sha := dirsvc.ImageNamed(x.Logo); sha != "" {
			out = append(out, keyImage+sha)
		}
	case *dirsvc.PractitionerView:
		ids(x.Identifiers)
		if x.Photo != nil {
			if sha := dirsvc.ImageNamed(*x.Photo); sha != "" {
				out = append(out, keyImage+sha)
			}
		}
	case *dirsvc.RoleView:
		if x.Active {
			out = append(out, keyActive)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// addKeys adds the keys of a view received by the audiences bit to keys.
func addKeys(keys []listKey, v any, bit int64) []listKey {
	for _, k := range keysOfView(v) {
		i := slices.IndexFunc(keys, func(lk listKey) bool { return lk.key == k })
		if i < 0 {
			keys = append(keys, listKey{k, bit})
		} else {
			keys[i].audiences |= bit
		}
	}
	return keys
}
