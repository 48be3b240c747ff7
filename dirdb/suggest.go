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
	list, err := d.suggestions(ctx, v)
	if err != nil {
		return nil, err
	}
	has := func(i int) bool {
		c := &list.cands[i]
		return !slices.ContainsFunc(words, func(w string) bool {
			return !slices.ContainsFunc(c.words, func(h string) bool { return strings.HasPrefix(h, w) })
		})
	}
	ws, all := list.having(words)
	if all {
		// Every candidate in order, each kind until it has enough.
		taken := map[string]int{}
		for i := 0; i < len(list.cands); {
			c := &list.cands[i]
			if taken[c.Kind] >= limit {
				i = list.kindEnd[i]
				continue
			}
			if has(i) {
				out = append(out, c.Suggestion)
				taken[c.Kind]++
			}
			i++
		}
		return out, nil
	}
	// The candidates with a word in the range: the first few of each kind that have every word,
	// by their place in the list (a candidate may stand in the range once for each of its words).
	first := map[string][]int{}
	for _, cw := range ws {
		i := cw.cand
		kind := list.cands[i].Kind
		kept := first[kind]
		if len(kept) == limit && i >= kept[limit-1] || slices.Contains(kept, i) || !has(i) {
			continue
		}
		at, _ := slices.BinarySearch(kept, i)
		kept = slices.Insert(kept, at, i)
		first[kind] = kept[:min(len(kept), limit)]
	}
	var chosen []int
	for _, kept := range first {
		chosen = append(chosen, kept...)
	}
	slices.Sort(chosen) // by kind, the most services first
	for _, i := range chosen {
		out = append(out, list.cands[i].Suggestion)
	}
	return out, nil
}

// suggestList is what a viewer may be suggested (candidates, by kind, the most services first), with
// every word of every candidate in order, so that the candidates with a word starting with some
// letters are found without reading the others.
type suggestList struct {
	cands   []candidate
	kindEnd []int // by candidate, the end of its kind's run
	words   []candidateWord
}

// candidateWord is a word of a candidate's label.
type candidateWord struct {
	word string
	cand int
}

// newSuggestList makes the list of the candidates, in their order; with their words in order when
// it will be kept (a list made for one suggestion reads every candidate rather than sort them).
func newSuggestList(cands []candidate, kept bool) *suggestList {
	l := &suggestList{cands: cands, kindEnd: make([]int, len(cands))}
	for i := len(cands) - 1; i >= 0; i-- {
		if l.kindEnd[i] = len(cands); i+1 < len(cands) && cands[i+1].Kind == cands[i].Kind {
			l.kindEnd[i] = l.kindEnd[i+1]
		} else if i+1 < len(cands) {
			l.kindEnd[i] = i + 1
		}
	}
	if !kept {
		return l
	}
	for i, c := range cands {
		for _, w := range c.words {
			l.words = append(l.words, candidateWord{w, i})
		}
	}
	slices.SortFunc(l.words, func(a, b candidateWord) int { return cmp.Or(strings.Compare(a.word, b.word), a.cand-b.cand) })
	return l
}

// having returns the words of the candidates that start with the longest of the words (the
// others are for the caller to check); all is true instead when reading every candidate in order
// costs less: a list not kept, or a word so short that many candidates have it.
func (l *suggestList) having(words []string) (ws []candidateWord, all bool) {
	if l.words == nil {
		return nil, true
	}
	longest := slices.MaxFunc(words, func(a, b string) int { return len(a) - len(b) })
	from, _ := slices.BinarySearchFunc(l.words, longest, func(c candidateWord, w string) int { return strings.Compare(c.word, w) })
	to := from
	for to < len(l.words) && strings.HasPrefix(l.words[to].word, longest) {
		if to-from > len(l.cands)/8 {
			return nil, true
		}
		to++
	}
	return l.words[from:to], false
}

// candidate is a suggestion with the folded words of its label.
type candidate struct {
	dirsvc.Suggestion
	words []string
}

// maxNarrowedCandidates bounds the candidates of the lists the index keeps for narrowed viewers
// (about as many as a few audiences' lists of a national directory hold): past it, those kept are
// forgotten.
const maxNarrowedCandidates = 1 << 18

// suggestKey names the list a viewer is suggested from: "" for its audience's own, when its
// narrowing leaves it every service and organisation; else its areas and categories, and whether
// it may read organisations.
func suggestKey(bit int64, n dirsvc.Narrowing) string {
	organisations := n.AllowsKind(dirsvc.KindOrganisation)
	switch {
	case !placeNarrowed(n) && organisations:
		return ""
	case organisations:
		return narrowedKey(bit, n)
	}
	return narrowedKey(bit, n) + "|no organisations"
}

// suggestions returns everything the viewer may be suggested, by kind (types, places, and
// organisations when its narrowing lets it read them), the most services first: its audience's
// list, or for a narrowed viewer its narrowing's, made once for the index's state.
func (d *Directory) suggestions(ctx context.Context, v dirsvc.Viewer) (*suggestList, error) {
	if err := d.freshSearch(ctx); err != nil {
		return nil, fmt.Errorf("suggest: %w", err)
	}
	bit := audienceBit(v.Audience)
	key := suggestKey(bit, v.Narrowing)
	idx := &d.search
	kept := func() (*suggestList, uint64) {
		idx.mu.RLock()
		defer idx.mu.RUnlock()
		idx.vmu.Lock()
		defer idx.vmu.Unlock()
		if key == "" {
			return idx.suggestions[bit], idx.gen
		}
		return idx.narrowedSuggestions[key], idx.gen
	}
	if list, _ := kept(); list != nil {
		return list, nil
	}
	// One list is made by one request at a time; the others wait for it.
	idx.smu.Lock()
	defer idx.smu.Unlock()
	list, gen := kept()
	if list != nil {
		return list, nil
	}
	// The taxonomy is read before the index's lock is taken (the index's lock is never held while
	// waiting for the directory's gate); the list made is kept only if the index did not move on
	// meanwhile (it would then be the list of a taxonomy older than the index).
	tax, err := d.taxonomyView(ctx, v.Audience)
	if err != nil {
		return nil, err
	}
	idx.mu.RLock()
	defer idx.mu.RUnlock()
	organisations := v.Narrowing.AllowsKind(dirsvc.KindOrganisation)
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
		if m.OrgName != "" && organisations {
			orgs[m.Organisation]++
			orgNames[m.Organisation] = m.OrgName
		}
	}
	// A kept list lives as long as the index's state, and every garbage collection marks it: each
	// candidate's search and folded label are one string, and the candidates' words one array.
	var out []candidate
	var words []string
	var wordsEnd []int
	add := func(s []dirsvc.Suggestion) {
		s = slices.DeleteFunc(s, func(x dirsvc.Suggestion) bool { return x.Services == 0 })
		slices.SortFunc(s, func(a, b dirsvc.Suggestion) int {
			return cmp.Or(b.Services-a.Services, strings.Compare(a.Label, b.Label), strings.Compare(a.Search, b.Search))
		})
		for _, x := range s {
			text := x.Search + dirsvc.FoldName(x.Label)
			x.Search = text[:len(x.Search)]
			words = append(words, strings.Fields(text[len(x.Search):])...)
			out, wordsEnd = append(out, candidate{Suggestion: x}), append(wordsEnd, len(words))
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
	for i := range out {
		start := 0
		if i > 0 {
			start = wordsEnd[i-1]
		}
		out[i].words = words[start:wordsEnd[i]:wordsEnd[i]]
	}
	list = newSuggestList(out, true)
	if idx.gen == gen {
		idx.vmu.Lock()
		if key == "" {
			idx.suggestions[bit] = list
		} else {
			if idx.narrowedCandidates+len(list.cands) > maxNarrowedCandidates {
				clear(idx.narrowedSuggestions)
				idx.narrowedCandidates = 0
			}
			idx.narrowedSuggestions[key] = list
			idx.narrowedCandidates += len(list.cands)
		}
		idx.vmu.Unlock()
	}
	return list, nil
}
