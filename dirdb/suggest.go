package dirdb

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/dirsvc/dirsvc"
)

// Suggest returns autocomplete suggestions for the viewer: service types (platform types and the
// local types the viewer's tier sees), places (the localities of the sites it sees) and
// organisations, each with a word starting with each of the text's words, counted over the services
// the viewer may find (its tier, inside its narrowing), the most services first.
func (d *Directory) Suggest(ctx context.Context, v dirsvc.Viewer, text string, limit int) ([]dirsvc.Suggestion, error) {
	out := []dirsvc.Suggestion{}
	words := strings.Fields(dirsvc.FoldName(text))
	if len(words) == 0 || !v.Narrowing.AllowsKind(dirsvc.KindService) {
		return out, nil
	}
	cands, err := d.suggestions(ctx, v)
	if err != nil {
		return nil, err
	}
	taken := map[string]int{}
	for _, c := range cands { // by kind, the most services first
		if taken[c.Kind] < limit && !slices.ContainsFunc(words, func(w string) bool {
			return !slices.ContainsFunc(c.words, func(h string) bool { return strings.HasPrefix(h, w) })
		}) {
			out = append(out, c.Suggestion)
			taken[c.Kind]++
		}
	}
	return out, nil
}

// candidate is a suggestion with the folded words of its label.
type candidate struct {
	dirsvc.Suggestion
	words []string
}

// suggestions returns everything the viewer may be suggested, by kind (types, places,
// organisations), the most services first. A viewer without a narrowing gets its audience's list,
// made once for the index's state; a narrowed one, a list of its own.
func (d *Directory) suggestions(ctx context.Context, v dirsvc.Viewer) ([]candidate, error) {
	tax, err := d.taxonomyView(ctx, v.Audience)
	if err != nil {
		return nil, err
	}
	if err := d.freshSearch(ctx); err != nil {
		return nil, fmt.Errorf("suggest: %w", err)
	}
	bit := audienceBit(v.Audience)
	idx := &d.search
	idx.mu.RLock()
	defer idx.mu.RUnlock()
	if !v.Narrowing.Narrowed() {
		idx.vmu.Lock()
		cands, ok := idx.suggestions[bit]
		idx.vmu.Unlock()
		if ok {
			return cands, nil
		}
	}
	types, locals, places, orgs := map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}
	placeNames, orgNames := map[string]string{}, map[string]string{}
	for _, m := range idx.byOrd {
		if m == nil || m.audiences&bit == 0 || !insideSearch(m, v.Narrowing) {
			continue
		}
		types[m.Type]++
		for _, lt := range m.LocalTypes {
			locals[lt]++
		}
		if m.Postcode != "" && m.Locality != "" {
			places[m.Postcode]++
			placeNames[m.Postcode+"|"+m.Locality] = strings.TrimSpace(m.Locality + " " + m.State + " " + m.Postcode)
		}
		if m.OrgName != "" {
			orgs[m.Organisation]++
			orgNames[m.Organisation] = m.OrgName
		}
	}
	var out []candidate
	add := func(s []dirsvc.Suggestion) {
		s = slices.DeleteFunc(s, func(x dirsvc.Suggestion) bool { return x.Services == 0 })
		slices.SortFunc(s, func(a, b dirsvc.Suggestion) int {
			return cmp.Or(b.Services-a.Services, strings.Compare(a.Label, b.Label), strings.Compare(a.Search, b.Search))
		})
		for _, x := range s {
			out = append(out, candidate{x, strings.Fields(dirsvc.FoldName(x.Label))})
		}
	}
	var ts []dirsvc.Suggestion
	for _, pt := range tax.PlatformTypes {
		ts = append(ts, dirsvc.Suggestion{Kind: dirsvc.SuggestType, Label: pt.Label, Search: "type=" + url.QueryEscape(pt.Code), Services: types[pt.Code]})
	}
	for _, lt := range tax.LocalTypes {
		ts = append(ts, dirsvc.Suggestion{Kind: dirsvc.SuggestType, Label: lt.Label, Search: "category=" + url.QueryEscape(lt.Slug), Services: locals[lt.Code]})
	}
	add(ts)
	var ps []dirsvc.Suggestion
	for key, label := range placeNames {
		pc, _, _ := strings.Cut(key, "|")
		ps = append(ps, dirsvc.Suggestion{Kind: dirsvc.SuggestPlace, Label: label, Search: "postcode=" + pc, Services: places[pc]})
	}
	add(ps)
	var orgList []dirsvc.Suggestion
	for id, name := range orgNames {
		orgList = append(orgList, dirsvc.Suggestion{Kind: dirsvc.SuggestOrganisation, Label: name, PublicID: id,
			Search: "q=" + url.QueryEscape(name), Services: orgs[id]})
	}
	add(orgList)
	if !v.Narrowing.Narrowed() {
		idx.vmu.Lock()
		idx.suggestions[bit] = out
		idx.vmu.Unlock()
	}
	return out, nil
}
