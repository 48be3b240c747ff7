package dirdb

import (
	"cmp"
	"context"
	"encoding/json"
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
	var tax dirsvc.TaxonomyView
	switch p, err := d.Taxonomy(ctx, v.Audience); {
	case err == nil:
		if err := json.Unmarshal(p.Body, &tax); err != nil {
			return nil, fmt.Errorf("decode the taxonomy: %w", err)
		}
	case err != dirsvc.ErrNotFound:
		return nil, err
	}
	if err := d.freshSearch(ctx); err != nil {
		return nil, fmt.Errorf("suggest: %w", err)
	}
	bit := audienceBit(v.Audience)
	types, locals, places, orgs := map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}
	placeNames, orgNames := map[string]string{}, map[string]string{}
	idx := &d.search
	idx.mu.RLock()
	for _, m := range idx.docs {
		if m.audiences&bit == 0 || !insideSearch(m, v.Narrowing) {
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
	idx.mu.RUnlock()
	matches := func(label string) bool {
		have := strings.Fields(dirsvc.FoldName(label))
		return !slices.ContainsFunc(words, func(w string) bool {
			return !slices.ContainsFunc(have, func(h string) bool { return strings.HasPrefix(h, w) })
		})
	}
	var found []dirsvc.Suggestion
	add := func(s []dirsvc.Suggestion) {
		s = slices.DeleteFunc(s, func(x dirsvc.Suggestion) bool { return x.Services == 0 || !matches(x.Label) })
		slices.SortFunc(s, func(a, b dirsvc.Suggestion) int {
			return cmp.Or(b.Services-a.Services, strings.Compare(a.Label, b.Label), strings.Compare(a.Search, b.Search))
		})
		found = append(found, s[:min(len(s), limit)]...)
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
	return append(out, found...), nil
}
