package dirdb

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dirsvc/dirsvc"
)

// SearchOrganisations finds the organisations with at least one service the viewer may find (its
// tier, inside its narrowing) that is of the categories and types asked for and in the areas asked
// for, whose name has a word starting with each word asked for and starts with the letter asked for;
// A to Z by name, with facets over all of them. A viewer whose narrowing leaves out organisations or
// services finds none.
func (d *Directory) SearchOrganisations(ctx context.Context, v dirsvc.Viewer, q dirsvc.OrganisationQuery) (dirsvc.OrganisationResult, error) {
	res := dirsvc.OrganisationResult{Items: []dirsvc.OrganisationFound{}}
	if !v.Narrowing.AllowsKind(dirsvc.KindService) || !v.Narrowing.AllowsKind(dirsvc.KindOrganisation) {
		res.Facets = orgFacets(nil)
		return res, nil
	}
	match, err := d.categoryMatcher(ctx, v.Audience, q.Categories)
	if err != nil {
		return res, err
	}
	if err := d.freshSearch(ctx); err != nil {
		return res, fmt.Errorf("search organisations: %w", err)
	}
	words := strings.Fields(dirsvc.FoldName(q.Words))
	bit := audienceBit(v.Audience)
	type org struct {
		found          dirsvc.OrganisationFound
		key, letter    string
		types, locals  map[string]int
		places, states map[string]int
		cats           map[string]bool
	}
	orgs := map[string]*org{}
	idx := &d.search
	idx.mu.RLock()
	for _, m := range idx.byOrd {
		if m == nil {
			continue
		}
		if m.audiences&bit == 0 || m.OrgName == "" || !insideSearch(m, v.Narrowing) ||
			len(q.Types) > 0 && !slices.Contains(q.Types, m.Type) || match != nil && !match.has(m) ||
			slices.ContainsFunc(q.Areas, func(a string) bool { return !inArea(m, a, false) }) {
			continue
		}
		o := orgs[m.Organisation]
		if o == nil {
			key := dirsvc.FoldName(m.OrgName)
			if !nameHasWords(key, words) || q.Letter != "" && letterOf(key) != q.Letter {
				continue
			}
			o = &org{found: dirsvc.OrganisationFound{PublicID: m.Organisation, Name: m.OrgName}, key: key, letter: letterOf(key),
				types: map[string]int{}, locals: map[string]int{}, places: map[string]int{}, states: map[string]int{}, cats: map[string]bool{}}
			orgs[m.Organisation] = o
		}
		o.found.Services++
		o.types[m.Type]++
		for _, lt := range m.LocalTypes {
			o.locals[lt]++
		}
		if m.Locality != "" {
			o.places[strings.TrimSpace(m.Locality+" "+m.State+" "+m.Postcode)]++
		}
		if m.State != "" {
			o.states[m.State]++
		}
		if m.Category != "" {
			o.cats[m.Category] = true
		}
	}
	idx.mu.RUnlock()
	all := make([]*org, 0, len(orgs))
	for _, o := range orgs {
		all = append(all, o)
	}
	slices.SortFunc(all, func(a, b *org) int {
		return cmp.Or(strings.Compare(a.key, b.key), strings.Compare(a.found.PublicID, b.found.PublicID))
	})
	counts := [4]map[string]int{{}, {}, {}, {}}
	for _, o := range all {
		counts[0][o.letter]++
		for c := range o.cats {
			counts[1][c]++
		}
		for s := range o.states {
			counts[2][s]++
		}
		for p := range o.places {
			counts[3][p]++
		}
	}
	res.Total, res.Facets = len(all), orgFacets(&counts)
	for _, o := range all[min(q.Offset, len(all)):min(len(all), q.Offset+q.Limit)] {
		o.found.LocalTypes, o.found.Types, o.found.Places = mostFirst(o.locals), mostFirst(o.types), mostFirst(o.places)
		res.Items = append(res.Items, o.found)
	}
	return res, nil
}

// nameHasWords reports whether each word starts a word of the folded name.
func nameHasWords(name string, words []string) bool {
	have := strings.Fields(name)
	return !slices.ContainsFunc(words, func(w string) bool {
		return !slices.ContainsFunc(have, func(h string) bool { return strings.HasPrefix(h, w) })
	})
}

// letterOf returns the letter a folded name is listed under: its first letter, A to Z, else #.
func letterOf(name string) string {
	r, _ := utf8.DecodeRuneInString(name)
	if r >= 'a' && r <= 'z' {
		return string(unicode.ToUpper(r))
	}
	return "#"
}

// mostFirst returns the keys of counts, the most counted first (then in order), at most maxOfferings.
func mostFirst(counts map[string]int) []string {
	out := make([]string, 0, len(counts))
	for k := range counts {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b string) int { return cmp.Or(counts[b]-counts[a], strings.Compare(a, b)) })
	return out[:min(len(out), maxOfferings)]
}

// maxOfferings bounds the types, specialties and places an organisation found lists.
const maxOfferings = 10

// orgFacets lists the counts of an organisation search's facets (letter, category, region, place).
func orgFacets(counts *[4]map[string]int) dirsvc.OrganisationFacets {
	lists := [4][]dirsvc.FacetCount{{}, {}, {}, {}}
	for i := range lists {
		if counts == nil {
			continue
		}
		for v, n := range counts[i] {
			lists[i] = append(lists[i], dirsvc.FacetCount{Value: v, Count: n})
		}
		order := func(a, b dirsvc.FacetCount) int { return cmp.Or(b.Count-a.Count, strings.Compare(a.Value, b.Value)) }
		if i == 0 {
			order = func(a, b dirsvc.FacetCount) int { return strings.Compare(a.Value, b.Value) } // A to Z
		}
		slices.SortFunc(lists[i], order)
		lists[i] = lists[i][:min(len(lists[i]), maxFacetValues)]
	}
	return dirsvc.OrganisationFacets{Letter: lists[0], Category: lists[1], Region: lists[2], Place: lists[3]}
}
