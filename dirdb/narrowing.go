package dirdb

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/dirsvc/dirsvc"
)

// Narrowing keys (schema/directory/0007_narrowing_keys.sql) say where an organisation, a site or a
// practitioner lies for a narrowed client, as its services place it. Without them the check looked
// at each of the record's services, so a record outside a client's narrowing took longer to answer
// not found than a missing one, longer the more services it had; with them it is a fixed set of
// index probes whatever the record. The write path keeps them: every write notes the records whose
// publication changed and, before it commits, makes anew the keys of the records those place.

// Key prefixes of narrowing_keys.
const (
	keyInArea    = "in:a:"
	keyInCat     = "in:c:"
	keyInAreaCat = "in:ac:"
)

// areaCatPairs returns every pair of the areas and the categories, as narrowing values of
// keyInAreaCat.
func areaCatPairs(areas, cats []string) []string {
	out := make([]string, 0, len(areas)*len(cats))
	for _, a := range areas {
		for _, c := range cats {
			out = append(out, a+"|"+c)
		}
	}
	return out
}

// narrowingKey is the condition that the record idExpr carries, for the audience bit, one of the
// narrowing keys prefix+value; true when values is empty.
func narrowingKey(idExpr, prefix string, values []string, bit int64) sqlCond {
	if len(values) == 0 {
		return condTrue
	}
	return keyIn("narrowing_keys", idExpr, prefix, values, bit)
}

// placedInside is the condition that the organisation or practitioner idExpr has a service inside the
// narrowing's areas and categories (one service in both, when it has both).
func placedInside(idExpr string, n dirsvc.Narrowing, bit int64) sqlCond {
	switch {
	case len(n.Categories) == 0:
		return narrowingKey(idExpr, keyInArea, n.Areas, bit)
	case len(n.Areas) == 0:
		return narrowingKey(idExpr, keyInCat, n.Categories, bit)
	}
	return narrowingKey(idExpr, keyInAreaCat, areaCatPairs(n.Areas, n.Categories), bit)
}

// placingSelect is, per kind of record that narrowing keys place, the SELECT of the services
// (owner, id, site, vis) that place records of that kind: the record placed, each service, its
// site, and the audiences through which it places the record: those that see the service and, for
// a practitioner, the role active. Its %s is the condition on the owner's column: one record's
// (oneRecord) or every one's (allRecords).
var placingSelect = map[dirsvc.Kind]string{
	dirsvc.KindOrganisation: `SELECT organisation_id, public_id, COALESCE(location_id, ''), visible_to & 7
    FROM records INDEXED BY records_organisation WHERE organisation_id %s AND kind = 'service'`,
	dirsvc.KindLocation: `SELECT location_id, public_id, '', visible_to & 7
    FROM records INDEXED BY records_location WHERE location_id %s AND kind = 'service'`,
	dirsvc.KindPractitioner: `SELECT ro.practitioner_id, sv.public_id, COALESCE(sv.location_id, ''), sv.visible_to & ra.audiences & 7
    FROM records ro INDEXED BY records_practitioner
    JOIN list_keys ra INDEXED BY sqlite_autoindex_list_keys_1 ON ra.public_id = ro.public_id AND ra.key = '` + keyActive + `'
    JOIN records sv ON sv.public_id = ro.service_id
    WHERE ro.practitioner_id %s AND ro.kind = 'role'`,
}

// areaFacts are the arms of an organisation's or a practitioner's facts for the areas its services
// lie in (their catchment and their site's areas), alone and with the services' categories.
const areaFacts = `
    UNION ALL
    SELECT owner, 'in:a:' || area, aud FROM areas
    UNION ALL
    SELECT a.owner, 'in:ac:' || a.area || '|' || c.cat, a.aud & c.aud FROM areas a JOIN cats c ON c.id = a.id AND c.owner = a.owner`

// ownSites is the arm of an organisation's facts for its own sites' areas, which place it too.
const ownSites = `
    UNION ALL
    SELECT l.organisation_id, 'in:a:' || substr(k.key, 6), k.audiences
    FROM records l INDEXED BY records_organisation
    JOIN list_keys k INDEXED BY sqlite_autoindex_list_keys_1 ON k.public_id = l.public_id AND k.key >= 'area:' AND k.key < 'area;'
    WHERE l.organisation_id %s AND l.kind = 'location'`

// Owners of narrowing keys fillNarrowingKeys makes.
const (
	oneRecord  = "= ?1"        // the record ?1
	allRecords = "IS NOT NULL" // every record of the kind
)

// fillNarrowingKeys returns the statement that inserts the narrowing keys of the records of kind
// that owners names (oneRecord or allRecords): a site's in:c keys, an organisation's or a
// practitioner's every key. A key's audiences are the union of its facts' (SQLite has no bitwise OR
// of a column: one max per served audience's bit).
func fillNarrowingKeys(kind dirsvc.Kind, owners string) string {
	arms := ""
	switch kind {
	case dirsvc.KindOrganisation:
		arms = areaFacts + fmt.Sprintf(ownSites, owners)
	case dirsvc.KindPractitioner:
		arms = areaFacts
	}
	return `WITH s (owner, id, site, vis) AS MATERIALIZED (` + fmt.Sprintf(placingSelect[kind], owners) + `),
areas (owner, id, area, aud) AS MATERIALIZED (
    SELECT s.owner, s.id, substr(k.key, 6), k.audiences & s.vis
    FROM s JOIN list_keys k INDEXED BY sqlite_autoindex_list_keys_1 ON k.public_id = s.id AND k.key >= 'area:' AND k.key < 'area;'
    UNION ALL
    SELECT s.owner, s.id, substr(k.key, 6), k.audiences & s.vis
    FROM s JOIN list_keys k INDEXED BY sqlite_autoindex_list_keys_1 ON k.public_id = s.site AND k.key >= 'area:' AND k.key < 'area;'
),
cats (owner, id, cat, aud) AS MATERIALIZED (
    SELECT s.owner, s.id, substr(k.key, 5), k.audiences & s.vis
    FROM s JOIN list_keys k INDEXED BY sqlite_autoindex_list_keys_1 ON k.public_id = s.id AND k.key >= 'cat:' AND k.key < 'cat;'
),
facts (owner, key, aud) AS (
    SELECT owner, 'in:c:' || cat, aud FROM cats` + arms + `
)
INSERT INTO narrowing_keys (public_id, key, audiences)
SELECT owner, key, max(aud & 1) | max(aud & 2) | max(aud & 4) FROM facts WHERE aud & 7 != 0 GROUP BY owner, key`
}

// placed are the kinds of record that narrowing keys place, in the order a refresh makes them.
var placed = []dirsvc.Kind{dirsvc.KindOrganisation, dirsvc.KindLocation, dirsvc.KindPractitioner}

// touched notes a record whose publication changed (its references before and after) for the
// refresh of the narrowing keys that depend on it.
func (w *writeTx) touched(kind dirsvc.Kind, id string, before, after [4]string) {
	if w.placeAll {
		return
	}
	if w.placing == nil {
		w.placing = map[string]bool{}
	}
	add := func(ids ...string) {
		for _, id := range ids {
			if id != "" {
				w.placing[id] = true
			}
		}
	}
	switch kind {
	case dirsvc.KindOrganisation, dirsvc.KindLocation, dirsvc.KindPractitioner:
		add(id)
		if kind == dirsvc.KindLocation {
			add(before[0], after[0]) // its organisation, placed by its sites
		}
	case dirsvc.KindService:
		add(before[0], after[0], before[1], after[1])
		w.placingServices = append(w.placingServices, id) // the practitioners of its roles
	case dirsvc.KindRole:
		add(before[3], after[3])
	}
	if len(w.placing)+len(w.placingServices) >= wholeRefresh {
		w.placeAll, w.placing, w.placingServices = true, nil, nil // an import need not keep them all
	}
}

// wholeRefresh is the number of records placed from which a write makes every record's narrowing
// keys anew rather than each one's: an import's first write, or one that changed most records.
var wholeRefresh = 2000 // a variable so a test can take the whole path with a small directory

// refreshNarrowing makes anew the narrowing keys of every record that the write's changes place,
// or of every record when they are many or the file's keys were never filled.
func (w *writeTx) refreshNarrowing() error {
	var filled int
	if err := w.pub.QueryRowContext(w.ctx, "SELECT narrowing_filled FROM projection WHERE id = 1").Scan(&filled); err != nil {
		return fmt.Errorf("read the narrowing keys' state: %w", err)
	}
	if filled != 0 && !w.placeAll && len(w.placing) == 0 && len(w.placingServices) == 0 {
		return nil
	}
	if filled == 0 || w.placeAll {
		if err := w.exec(w.pub, "DELETE FROM narrowing_keys"); err != nil {
			return fmt.Errorf("clear the narrowing keys: %w", err)
		}
		if err := w.allNarrowingKeys(); err != nil {
			return err
		}
	} else {
		for _, s := range w.placingServices {
			ps, err := queryStrings(w.ctx, w.pub, "SELECT DISTINCT practitioner_id FROM records INDEXED BY records_service WHERE service_id = ? AND kind = 'role'", s)
			if err != nil {
				return fmt.Errorf("find the practitioners of %s: %w", s, err)
			}
			for _, p := range ps {
				w.placing[p] = true
			}
		}
		ids := make([]string, 0, len(w.placing))
		for id := range w.placing {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids {
			kind := dirsvc.KindOfID(id)
			if !slices.Contains(placed, kind) {
				continue
			}
			if err := w.exec(w.pub, "DELETE FROM narrowing_keys WHERE public_id = ?", id); err != nil {
				return fmt.Errorf("clear the narrowing keys of %s: %w", id, err)
			}
			if err := w.exec(w.pub, fillNarrowingKeys(kind, oneRecord), id); err != nil {
				return fmt.Errorf("make the narrowing keys of %s: %w", id, err)
			}
		}
	}
	if filled == 0 || w.placeAll {
		w.feedAll = true
	} else {
		if w.feedPlaced == nil {
			w.feedPlaced = map[string]bool{}
		}
		maps.Copy(w.feedPlaced, w.placing)
	}
	w.placing, w.placingServices, w.placeAll = nil, nil, false
	if filled == 0 {
		if _, err := w.pub.ExecContext(w.ctx, "UPDATE projection SET narrowing_filled = 1 WHERE id = 1"); err != nil {
			return fmt.Errorf("record the narrowing keys' state: %w", err)
		}
	}
	return nil
}

// allNarrowingKeys makes the narrowing keys of every record, as fillNarrowingKeys(kind, allRecords)
// does for each kind, but from one read of the services, sites, roles and keys, in memory: on a
// directory of 100,000 services that takes SQLite 12 s and this 4. A test holds the two to the same
// keys. The table is empty when it starts.
func (w *writeTx) allNarrowingKeys() error {
	type keyAud struct {
		key string
		aud int64
	}
	type service struct {
		org, site string
		vis       int64
	}
	services := map[string]service{}
	areas, cats := map[string][]keyAud{}, map[string][]keyAud{} // of services and sites, of services
	siteOrgs := map[string]string{}
	type role struct {
		practitioner, service string
		active                int64
	}
	var roles []role
	// The area and category keys read here and the narrowing keys made are those the feed's
	// placements of every record are made from next (logFeed), which then need not read them again.
	seed := newPlaceSource()
	r := kindRange("public_id", dirsvc.KindService)
	err := w.eachRow(w.pub, "SELECT public_id, COALESCE(organisation_id, ''), COALESCE(location_id, ''), visible_to & 7 FROM records WHERE "+r.sql, r.args, func(sc scanner) error {
		var id string
		var sv service
		err := sc.Scan(&id, &sv.org, &sv.site, &sv.vis)
		services[id] = sv
		return err
	})
	if err == nil {
		r = kindRange("public_id", dirsvc.KindLocation)
		err = w.eachRow(w.pub, "SELECT public_id, COALESCE(organisation_id, '') FROM records WHERE "+r.sql, r.args, func(sc scanner) error {
			var id, org string
			err := sc.Scan(&id, &org)
			siteOrgs[id] = org
			return err
		})
	}
	for prefix, into := range map[string]map[string][]keyAud{keyArea: areas, keyCat: cats} {
		if err != nil {
			break
		}
		kr := prefixRange("key", prefix)
		err = w.eachRow(w.pub, "SELECT public_id, key, audiences FROM list_keys INDEXED BY list_keys_key WHERE "+kr.sql,
			kr.args, func(sc scanner) error {
				var id, key string
				var aud int64
				err := sc.Scan(&id, &key, &aud)
				into[id] = append(into[id], keyAud{key[len(prefix):], aud})
				seed.keys[id] = append(seed.keys[id], listKey{key, aud})
				return err
			})
	}
	if err == nil {
		err = w.eachRow(w.pub, `SELECT ro.practitioner_id, ro.service_id, ra.audiences FROM list_keys ra INDEXED BY list_keys_key
JOIN records ro ON ro.public_id = ra.public_id WHERE ra.key = '`+keyActive+`' AND ro.kind = 'role'`, nil, func(sc scanner) error {
			var ro role
			err := sc.Scan(&ro.practitioner, &ro.service, &ro.active)
			roles = append(roles, ro)
			return err
		})
	}
	if err != nil {
		return fmt.Errorf("read the keys of every record: %w", err)
	}

	// What places each owner: its services (each through some audiences, with its areas or not)
	// and, for an organisation, its sites.
	type placement struct {
		service   string
		vis       int64
		withAreas bool
	}
	placements := map[string][]placement{}
	ownSites := map[string][]string{}
	for id, sv := range services {
		if sv.org != "" {
			placements[sv.org] = append(placements[sv.org], placement{id, sv.vis, true})
		}
		if sv.site != "" {
			placements[sv.site] = append(placements[sv.site], placement{id, sv.vis, false})
		}
	}
	for site, org := range siteOrgs {
		if org != "" {
			ownSites[org] = append(ownSites[org], site)
		}
	}
	for _, ro := range roles {
		if sv, ok := services[ro.service]; ok && ro.practitioner != "" {
			placements[ro.practitioner] = append(placements[ro.practitioner], placement{ro.service, sv.vis & ro.active, true})
		}
	}
	owners := make([]string, 0, len(placements)+len(ownSites))
	for o := range placements {
		owners = append(owners, o)
	}
	for o := range ownSites {
		if _, ok := placements[o]; !ok {
			owners = append(owners, o)
		}
	}
	slices.Sort(owners)

	// Each owner's keys, in order, are made on a goroutine of their own while this one writes them,
	// maxKeysPerInsert at a time: the maps they are made from are only read from here on.
	owned := make(chan []ownerKeys, 4)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		defer close(owned)
		keys := map[string]int64{}
		add := func(key string, aud int64) {
			if aud&7 != 0 {
				keys[key] |= aud & 7
			}
		}
		batch := make([]ownerKeys, 0, ownersPerBatch)
		for i, owner := range owners {
			clear(keys)
			for _, p := range placements[owner] {
				for _, c := range cats[p.service] {
					add(keyInCat+c.key, c.aud&p.vis)
				}
				if !p.withAreas {
					continue
				}
				for _, as := range [][]keyAud{areas[p.service], areas[services[p.service].site]} {
					for _, a := range as {
						add(keyInArea+a.key, a.aud&p.vis)
						for _, c := range cats[p.service] {
							add(keyInAreaCat+a.key+"|"+c.key, a.aud&c.aud&p.vis)
						}
					}
				}
			}
			for _, site := range ownSites[owner] {
				for _, a := range areas[site] {
					add(keyInArea+a.key, a.aud)
				}
			}
			made := ownerKeys{owner: owner, keys: make([]listKey, 0, len(keys))}
			for _, k := range slices.Sorted(maps.Keys(keys)) {
				made.keys = append(made.keys, listKey{k, keys[k]})
			}
			if batch = append(batch, made); len(batch) == cap(batch) || i == len(owners)-1 {
				select {
				case owned <- batch:
				case <-stop:
					return
				}
				batch = make([]ownerKeys, 0, ownersPerBatch)
			}
		}
	}()
	args := make([]any, 0, 3*maxKeysPerInsert)
	flush := func() error {
		if len(args) == 0 {
			return nil
		}
		err := w.exec(w.pub, insertNarrowingKeys(len(args)/3), args...)
		args = args[:0]
		return err
	}
	for batch := range owned {
		for _, o := range batch {
			if len(o.keys) > 0 {
				seed.nkeys[o.owner] = o.keys
			}
			for _, k := range o.keys {
				if args = append(args, o.owner, k.key, k.audiences); len(args) == cap(args) {
					if err := flush(); err != nil {
						return fmt.Errorf("write the narrowing keys: %w", err)
					}
				}
			}
		}
	}
	if err := flush(); err != nil {
		return fmt.Errorf("write the narrowing keys: %w", err)
	}
	w.placeSeed = seed
	return nil
}

// ownerKeys are the narrowing keys of an owner, in key order.
type ownerKeys struct {
	owner string
	keys  []listKey
}

// ownersPerBatch is how many owners' keys go to the writer at a time.
const ownersPerBatch = 256

// insertNarrowingKeys returns the statement that inserts n narrowing keys.
func insertNarrowingKeys(n int) string {
	return "INSERT INTO narrowing_keys (public_id, key, audiences) VALUES " + strings.TrimSuffix(strings.Repeat("(?, ?, ?), ", n), ", ")
}
