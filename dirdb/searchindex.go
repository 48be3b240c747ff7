package dirdb

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/dirsvc/dirsvc"
)

// searchIndex keeps a directory's search documents in memory, as read from its file: the filters,
// facets, distances and orders of a search are worked out here, and only the words go to SQLite's
// full-text index. It follows the file: before a search it reads the documents stored since it last
// looked (IDs are never reused) and drops those search_gone lists, or all of them when the write
// path made every document anew (search_epoch).
type searchIndex struct {
	mu       sync.RWMutex
	vmu      sync.Mutex // vocab, localities and suggestions
	lmu      sync.Mutex // loading and loadErr
	loading  chan struct{}
	loadErr  error
	gen      uint64 // the file's generation it was brought up to (records.gen), plus one
	epoch    int64
	lastID   int64
	lastGone int64
	docs     map[int64]*memDoc
	// Every facet value any document held since the index was made, numbered.
	values   []facetValue
	valueIDs map[facetValue]uint32
	// By audience bit, made when first needed after the index moved on: the vocabulary of its
	// full-text index, and the localities of its documents' sites with their postcodes.
	vocab       map[int64]*vocabulary
	localities  map[int64]map[string][]string
	suggestions map[int64][]candidate // autocomplete's, for viewers without a narrowing
}

// memDoc is one search document held in memory.
type memDoc struct {
	id        int64
	service   string
	audiences int64
	nameKey   string   // the name as sorted
	nameRank  int32    // its place in the order of names (rankNames)
	facets    []uint32 // its facet values' numbers (searchIndex.values)
	searchDoc
}

// freshSearch brings the index up to the file; the caller must not hold the directory's gate. The
// reading is done once for all the searches that wait for it, by a goroutine of its own that no
// request's end or time budget interrupts (loading a large directory's documents takes longer than
// one request may wait); each search waits for it as long as its context allows.
func (d *Directory) freshSearch(ctx context.Context) error {
	idx := &d.search
	for {
		gen := d.records.gen.Load() + 1
		idx.mu.RLock()
		current := idx.gen == gen
		idx.mu.RUnlock()
		if current {
			return nil
		}
		idx.lmu.Lock()
		if idx.loading == nil {
			done := make(chan struct{})
			idx.loading = done
			go func() {
				err := d.longRead(context.Background(), d.loadSearch)
				idx.lmu.Lock()
				idx.loading, idx.loadErr = nil, err
				idx.lmu.Unlock()
				close(done)
			}()
		}
		done := idx.loading
		idx.lmu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
		idx.lmu.Lock()
		err := idx.loadErr
		idx.lmu.Unlock()
		if err != nil {
			return err
		}
	}
}

// loadSearch reads the documents stored since the index last looked, under the directory's gate.
func (d *Directory) loadSearch(ctx context.Context) error {
	idx := &d.search
	gen := d.records.gen.Load() + 1
	idx.mu.Lock()
	defer idx.mu.Unlock()
	if idx.gen == gen {
		return nil
	}
	tx, err := d.readers.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var epoch int64
	if err := tx.QueryRowContext(ctx, "SELECT search_epoch FROM projection WHERE id = 1").Scan(&epoch); err != nil {
		return fmt.Errorf("read the search documents' state: %w", err)
	}
	// Removals before the first the file keeps are forgotten: an index older than that reads every
	// document again.
	var firstGone sql.NullInt64
	if err := tx.QueryRowContext(ctx, "SELECT min(seq) FROM search_gone").Scan(&firstGone); err != nil {
		return fmt.Errorf("read removed search documents: %w", err)
	}
	behind := firstGone.Valid && firstGone.Int64 > idx.lastGone+1
	if epoch != idx.epoch || idx.docs == nil || behind {
		idx.docs, idx.lastID, idx.lastGone, idx.epoch = map[int64]*memDoc{}, 0, 0, epoch
		idx.values, idx.valueIDs = nil, map[facetValue]uint32{}
		if err := tx.QueryRowContext(ctx, "SELECT COALESCE(max(seq), 0) FROM search_gone").Scan(&idx.lastGone); err != nil {
			return fmt.Errorf("read removed search documents: %w", err)
		}
	} else {
		rows, err := tx.QueryContext(ctx, "SELECT seq, id FROM search_gone WHERE seq > ? ORDER BY seq", idx.lastGone)
		if err != nil {
			return fmt.Errorf("read removed search documents: %w", err)
		}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&idx.lastGone, &id); err != nil {
				rows.Close()
				return err
			}
			delete(idx.docs, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	rows, err := tx.QueryContext(ctx, "SELECT id, service_id, audiences, doc FROM search_docs WHERE id > ? ORDER BY id", idx.lastID)
	if err != nil {
		return fmt.Errorf("read search documents: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		m := &memDoc{}
		var raw []byte
		if err := rows.Scan(&m.id, &m.service, &m.audiences, &raw); err != nil {
			return err
		}
		if err := json.Unmarshal(raw, &m.searchDoc); err != nil {
			return fmt.Errorf("decode the search document %d: %w", m.id, err)
		}
		m.nameKey = strings.ToLower(m.Name)
		m.facets = idx.facetsOfDoc(m)
		idx.docs[m.id] = m
		idx.lastID = max(idx.lastID, m.id)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	idx.rankNames()
	idx.gen, idx.vocab, idx.localities = gen, map[int64]*vocabulary{}, map[int64]map[string][]string{}
	idx.suggestions = map[int64][]candidate{}
	return nil
}

// rankNames numbers the documents in the order of their names (then services), so that sorting a
// match set by name compares numbers. The caller holds the index's lock for writing.
func (idx *searchIndex) rankNames() {
	all := make([]*memDoc, 0, len(idx.docs))
	for _, m := range idx.docs {
		all = append(all, m)
	}
	slices.SortFunc(all, func(a, b *memDoc) int {
		return cmp.Or(strings.Compare(a.nameKey, b.nameKey), strings.Compare(a.service, b.service), cmp.Compare(a.id, b.id))
	})
	for i, m := range all {
		m.nameRank = int32(i)
	}
}

// The weights of the full-text columns in a search's ranking (bm25), in the tables' column order:
// name, specialties, organisation, place, practitioners, description.
const textWeights = "10.0, 6.0, 4.0, 3.0, 4.0, 1.0"

// maxQueryWords bounds the words of a search that go to the full-text index.
const maxQueryWords = 12

// queryWords splits a search's text into its words as written, each a list of its parts (a
// hyphenated or dotted word has several), lower-cased; at most maxQueryWords.
func queryWords(text string) [][]string {
	var out [][]string
	for _, chunk := range strings.Fields(strings.ToLower(text)) {
		parts := strings.FieldsFunc(chunk, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
		if len(parts) > 0 {
			out = append(out, parts)
		}
		if len(out) == maxQueryWords {
			break
		}
	}
	return out
}

// textQuery returns the full-text query of a search's words: each word (a hyphenated or dotted one
// as the phrase of its parts), all of them required, the last also as the start of a longer word
// (one being typed); "" when there is no word.
func textQuery(words [][]string) string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = `"` + strings.Join(w, " ") + `"`
	}
	if len(out) > 0 {
		out[len(out)-1] += "*"
	}
	return strings.Join(out, " ")
}

// placeWords are the words that may come before a place written in a search's words.
var placeWords = []string{"in", "near", "at", "around"}

// readWords reads a search's words for the audience bit: spelling corrections (when asked) from the
// audience's own vocabulary, then a place written at their end ("physio in ultimo") from the
// localities of the audience's own documents. It returns the words left to search for. The caller
// holds the index's lock for reading.
func (d *Directory) readWords(ctx context.Context, bit int64, text string, spell bool, place *dirsvc.PlaceRead) ([][]string, dirsvc.QueryReading, error) {
	idx := &d.search
	words := queryWords(text)
	r := dirsvc.QueryReading{Words: []string{}, Corrections: []dirsvc.Correction{}}
	if spell && len(words) > 0 {
		v, err := idx.vocabulary(ctx, d, bit)
		if err != nil {
			return nil, r, err
		}
		for i, w := range words {
			for j, part := range w {
				if to := v.correct(part, i == len(words)-1 && j == len(w)-1); to != part {
					r.Corrections = append(r.Corrections, dirsvc.Correction{From: part, To: to})
					w[j] = to
				}
			}
		}
	}
	places := idx.localitiesOf(bit)
	if place != nil {
		// A locality asked for by name: its postcodes in the gazetteer and in the sites seen.
		areas := slices.Clone(place.Areas)
		for _, a := range places[strings.ToLower(place.Name)] {
			if !slices.Contains(areas, a) {
				areas = append(areas, a)
			}
		}
		slices.Sort(areas)
		r.Place = &dirsvc.PlaceRead{Name: place.Name, Areas: areas}
	}
	for n := min(3, len(words)); n >= 1 && place == nil; n-- {
		var name []string
		for _, w := range words[len(words)-n:] {
			name = append(name, strings.Join(w, " "))
		}
		postcodes, ok := places[strings.Join(name, " ")]
		if !ok {
			continue
		}
		r.Place = &dirsvc.PlaceRead{Name: strings.Join(name, " "), Areas: postcodes}
		words = words[:len(words)-n]
		if k := len(words); k > 0 && len(words[k-1]) == 1 && slices.Contains(placeWords, words[k-1][0]) {
			words = words[:k-1]
		}
		break
	}
	// Words that only join others ("gp in ultimo" when ultimo is not a place known) are not required.
	if len(words) > 1 {
		words = slices.DeleteFunc(words, func(w []string) bool { return len(w) == 1 && slices.Contains(placeWords, w[0]) })
	}
	for _, w := range words {
		r.Words = append(r.Words, strings.Join(w, " "))
	}
	return words, r, nil
}

// vocabulary returns the audience's vocabulary, reading it once for the index's state. The caller
// holds the index's lock for reading.
func (idx *searchIndex) vocabulary(ctx context.Context, d *Directory, bit int64) (*vocabulary, error) {
	idx.vmu.Lock()
	defer idx.vmu.Unlock()
	if v := idx.vocab[bit]; v != nil {
		return v, nil
	}
	v, err := d.loadVocabulary(ctx, bit)
	if err == nil {
		idx.vocab[bit] = v
	}
	return v, err
}

// localitiesOf returns the localities of the sites of the audience's documents, lower-cased, with
// the postcode areas each is found in. The caller holds the index's lock for reading.
func (idx *searchIndex) localitiesOf(bit int64) map[string][]string {
	idx.vmu.Lock()
	defer idx.vmu.Unlock()
	if m := idx.localities[bit]; m != nil {
		return m
	}
	m := map[string][]string{}
	for _, doc := range idx.docs {
		if doc.audiences&bit == 0 || doc.Locality == "" || doc.Postcode == "" {
			continue
		}
		name, area := strings.ToLower(doc.Locality), "postcode:"+doc.Postcode
		if !slices.Contains(m[name], area) {
			m[name] = append(m[name], area)
		}
	}
	for _, areas := range m {
		slices.Sort(areas)
	}
	idx.localities[bit] = m
	return m
}

// textMatches returns the documents the audience's full-text index matches for the words, with
// their scores (lower ranks first).
func (d *Directory) textMatches(ctx context.Context, bit int64, query string) (map[int64]float64, error) {
	table := fmt.Sprintf("search_text_%d", bit)
	rows, err := d.readers.QueryContext(ctx, "SELECT rowid, bm25("+table+", "+textWeights+") FROM "+table+" WHERE "+table+" MATCH ?", query)
	if err != nil {
		return nil, fmt.Errorf("search the words: %w", err)
	}
	defer rows.Close()
	out := map[int64]float64{}
	for rows.Next() {
		var id int64
		var score float64
		if err := rows.Scan(&id, &score); err != nil {
			return nil, err
		}
		out[id] = score
	}
	return out, rows.Err()
}

// SearchServices finds the services the viewer may find that match the query (see
// dirsvc.SearchQuery): its page of them, their total and their facets.
func (d *Directory) SearchServices(ctx context.Context, v dirsvc.Viewer, q dirsvc.SearchQuery) (dirsvc.SearchResult, error) {
	var res dirsvc.SearchResult
	if !v.Narrowing.AllowsKind(dirsvc.KindService) {
		res.Facets = dirsvc.SearchFacets{}.Listed()
		return res, nil
	}
	bit := audienceBit(v.Audience)
	match, err := d.categoryMatcher(ctx, v.Audience, q.Categories)
	if err != nil {
		return res, err
	}
	var scores map[int64]float64
	var words [][]string
	if err := d.freshSearch(ctx); err != nil {
		return res, fmt.Errorf("search services: %w", err)
	}
	err = d.longRead(ctx, func(ctx context.Context) error {
		d.search.mu.RLock()
		defer d.search.mu.RUnlock()
		var err error
		if words, res.Reading, err = d.readWords(ctx, bit, q.Text, q.Spell, q.Place); err != nil {
			return err
		}
		scores = nil
		if tq := textQuery(words); tq != "" {
			scores, err = d.textMatches(ctx, bit, tq)
		}
		return err
	})
	if err != nil {
		return res, fmt.Errorf("search services: %w", err)
	}
	// A match, with what it is ordered by read under the index's lock: a refresh numbers names
	// anew (a document's other fields never change once read).
	type found struct {
		doc   *memDoc
		rank  int32
		score float64
		km    float64 // NaN when unknown
	}
	var hits []found
	idx := &d.search
	idx.mu.RLock()
	consider := func(m *memDoc, score float64) {
		if m.audiences&bit == 0 || !insideSearch(m, v.Narrowing) || !matchesFilters(&q, m, match) {
			return
		}
		if p := res.Reading.Place; p != nil && !slices.ContainsFunc(p.Areas, func(a string) bool { return inArea(m, a, q.LocatedOnly) }) {
			return
		}
		km := math.NaN()
		if q.Near != nil && m.Point != nil {
			km = dirsvc.HaversineKm(q.Near.Lat, q.Near.Lon, m.Point.Lat, m.Point.Lon)
		}
		if q.RadiusKm > 0 && !(km <= q.RadiusKm) {
			return
		}
		hits = append(hits, found{m, m.nameRank, score, km})
	}
	if scores != nil {
		for id, s := range scores {
			if m := idx.docs[id]; m != nil {
				consider(m, s)
			}
		}
	} else if len(words) == 0 {
		for _, m := range idx.docs {
			consider(m, 0)
		}
	}
	docs := make([]*memDoc, len(hits))
	for i, h := range hits {
		docs[i] = h.doc
	}
	res.Total, res.Facets = len(hits), idx.facetsOf(docs)
	idx.mu.RUnlock()
	byName := func(a, b found) int { return cmp.Compare(a.rank, b.rank) }
	byDistance := func(a, b found) int {
		an, bn := math.IsNaN(a.km), math.IsNaN(b.km)
		switch {
		case an && bn:
			return byName(a, b)
		case an:
			return 1
		case bn:
			return -1
		}
		return cmp.Or(cmp.Compare(a.km, b.km), byName(a, b))
	}
	order := func(a, b found) int { return cmp.Or(cmp.Compare(a.score, b.score), byName(a, b)) }
	switch {
	case q.Sort == dirsvc.SortDistance && q.Near != nil:
		order = byDistance
	case q.Sort == dirsvc.SortName || scores == nil:
		order = byName
	}
	if q.ByOrganisation {
		slices.SortFunc(hits, order)
	} else {
		hits = firstInOrder(hits, q.Offset+q.Limit, order)
	}
	hitOf := func(h found) dirsvc.SearchHit {
		hit := dirsvc.SearchHit{PublicID: h.doc.service, Organisation: h.doc.Organisation}
		if !math.IsNaN(h.km) {
			km := h.km
			hit.DistanceKm = &km
		}
		return hit
	}
	if q.ByOrganisation {
		// Organisations in the order of their best service; the services of the page's ones.
		var orgs []dirsvc.SearchOrganisation
		at := map[string]int{}
		for _, h := range hits {
			i, ok := at[h.doc.Organisation]
			if !ok {
				i = len(orgs)
				at[h.doc.Organisation] = i
				orgs = append(orgs, dirsvc.SearchOrganisation{PublicID: h.doc.Organisation, Name: h.doc.OrgName})
			}
			orgs[i].Services++
		}
		res.ServiceTotal, res.Total = len(hits), len(orgs)
		page := orgs[min(q.Offset, len(orgs)):min(len(orgs), q.Offset+q.Limit)]
		res.Organisations = page
		for _, h := range hits {
			if i := at[h.doc.Organisation]; i >= q.Offset && i < q.Offset+len(page) && len(res.Hits) < maxGroupedHits {
				res.Hits = append(res.Hits, hitOf(h))
			}
		}
		return res, nil
	}
	for _, h := range hits[min(q.Offset, len(hits)):min(len(hits), q.Offset+q.Limit)] {
		res.Hits = append(res.Hits, hitOf(h))
	}
	return res, nil
}

// firstInOrder returns the first k of xs in the order cmp gives, sorted, keeping a heap of the k
// best seen: a page of a large match set costs about one comparison a match rather than a sort.
func firstInOrder[T any](xs []T, k int, cmp func(a, b T) int) []T {
	if k >= len(xs)/4 {
		slices.SortFunc(xs, cmp)
		return xs[:min(k, len(xs))]
	}
	h := make([]T, 0, k) // a max-heap by cmp: h[0] is the worst kept
	down := func(i int) {
		for {
			l, r, w := 2*i+1, 2*i+2, i
			if l < len(h) && cmp(h[l], h[w]) > 0 {
				w = l
			}
			if r < len(h) && cmp(h[r], h[w]) > 0 {
				w = r
			}
			if w == i {
				return
			}
			h[i], h[w] = h[w], h[i]
			i = w
		}
	}
	for _, x := range xs {
		switch {
		case len(h) < k:
			h = append(h, x)
			for i := len(h) - 1; i > 0 && cmp(h[i], h[(i-1)/2]) > 0; i = (i - 1) / 2 {
				h[i], h[(i-1)/2] = h[(i-1)/2], h[i]
			}
		case k > 0 && cmp(x, h[0]) < 0:
			h[0] = x
			down(0)
		}
	}
	slices.SortFunc(h, cmp)
	return h
}

// maxGroupedHits bounds the services a search by organisation returns with its page.
const maxGroupedHits = 500

// insideSearch reports whether a document's service lies inside a narrowing, as inside() decides
// for a service: located in (or, by its catchment, serving) one of its areas, and of one of its
// categories.
func insideSearch(m *memDoc, n dirsvc.Narrowing) bool {
	if len(n.Areas) > 0 && !slices.ContainsFunc(n.Areas, func(a string) bool {
		return slices.Contains(m.Areas, a) || slices.Contains(m.Catchment, a)
	}) {
		return false
	}
	return len(n.Categories) == 0 || m.Category != "" && slices.Contains(n.Categories, m.Category)
}

// categoryMatch finds the services of the categories a search asks for.
type categoryMatch func(m *memDoc) bool

// categoryMatcher resolves the categories a search names against the audience's taxonomy: a
// directory category finds the services of its platform types and those tagged with its local
// types (a category of local types, exactly those tagged); a local type's code or slug finds those
// tagged with it; anything else is taken as a platform category code.
func (d *Directory) categoryMatcher(ctx context.Context, a dirsvc.Audience, cats []string) (categoryMatch, error) {
	if len(cats) == 0 {
		return nil, nil
	}
	tax, err := d.taxonomyView(ctx, a)
	if err != nil {
		return nil, err
	}
	types, locals, platform := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, c := range cats {
		if i := slices.IndexFunc(tax.Categories, func(cv dirsvc.CategoryView) bool { return cv.Code == c }); i >= 0 {
			for _, t := range tax.Categories[i].Types {
				types[t] = true
			}
			for _, lt := range tax.Categories[i].LocalTypes {
				locals[lt] = true
			}
		} else if i := slices.IndexFunc(tax.LocalTypes, func(lt dirsvc.LocalTypeView) bool { return lt.Code == c || lt.Slug == c }); i >= 0 {
			locals[tax.LocalTypes[i].Code] = true
		} else {
			platform[c] = true
		}
	}
	return func(m *memDoc) bool {
		return types[m.Type] || platform[m.Category] || slices.ContainsFunc(m.LocalTypes, func(lt string) bool { return locals[lt] })
	}, nil
}

// matchesFilters reports whether a document meets the query's filters (the words, place and
// narrowing apart).
func matchesFilters(q *dirsvc.SearchQuery, m *memDoc, cat categoryMatch) bool {
	one := func(want []string, have string) bool { return len(want) == 0 || slices.Contains(want, have) }
	some := func(want, have []string) bool {
		return len(want) == 0 || slices.ContainsFunc(want, func(w string) bool { return slices.Contains(have, w) })
	}
	return one(q.Types, m.Type) && (cat == nil || cat(m)) && one(q.Costs, m.Cost) && one(q.Ownership, m.Ownership) &&
		some(q.Delivery, m.Delivery) && some(q.Facilities, m.Facilities) && some(q.Languages, m.Languages) &&
		some(q.TargetGroups, m.TargetGroups) && some(q.Programs, m.Programs) &&
		(q.Appointment == "" || q.Appointment == m.Appointment) && (!q.SelfReferral || m.SelfReferral) &&
		!slices.ContainsFunc(q.Areas, func(a string) bool { return !inArea(m, a, q.LocatedOnly) }) &&
		(q.Open == nil || q.Open(m.Hours, m.Areas))
}

// inArea reports whether a document's service is located in the area, or (unless located alone
// counts) its catchment reaches it or it serves the whole country.
func inArea(m *memDoc, area string, located bool) bool {
	return slices.Contains(m.Areas, area) || !located && slices.ContainsFunc(m.Catchment, func(c string) bool {
		return c == area || strings.HasPrefix(c, "country:")
	})
}

// The facets of a search, in the order of dirsvc.SearchFacets' fields.
const (
	facetType = iota
	facetCategory
	facetOwnership
	facetLocalTypes
	facetCost
	facetDelivery
	facetLanguage
	facetTargetGroup
	facetProgram
	facetCount
)

// facetValue is a facet's value, interned: documents hold their values' numbers, so counting a
// match set's facets is adding to a slice.
type facetValue struct {
	facet int
	value string
}

// facetsOfDoc returns the numbers of a document's facet values, interning new ones. The caller
// holds the index's lock for writing.
func (idx *searchIndex) facetsOfDoc(m *memDoc) []uint32 {
	var out []uint32
	add := func(facet int, vs ...string) {
		for _, v := range vs {
			if v == "" {
				continue
			}
			k := facetValue{facet, v}
			n, ok := idx.valueIDs[k]
			if !ok {
				n = uint32(len(idx.values))
				idx.values = append(idx.values, k)
				idx.valueIDs[k] = n
			}
			out = append(out, n)
		}
	}
	add(facetType, m.Type)
	add(facetCategory, m.Category)
	add(facetOwnership, m.Ownership)
	add(facetLocalTypes, m.LocalTypes...)
	add(facetCost, m.Cost)
	add(facetDelivery, m.Delivery...)
	add(facetLanguage, m.Languages...)
	add(facetTargetGroup, m.TargetGroups...)
	add(facetProgram, m.Programs...)
	slices.Sort(out)
	return slices.Compact(out)
}

// facetsOf counts the values of each facet among the documents. The caller holds the index's lock
// for reading.
func (idx *searchIndex) facetsOf(docs []*memDoc) dirsvc.SearchFacets {
	counts := make([]int, len(idx.values))
	for _, m := range docs {
		for _, n := range m.facets {
			counts[n]++
		}
	}
	lists := make([][]dirsvc.FacetCount, facetCount)
	for n, c := range counts {
		if c > 0 {
			v := idx.values[n]
			lists[v.facet] = append(lists[v.facet], dirsvc.FacetCount{Value: v.value, Count: c})
		}
	}
	for i, l := range lists {
		slices.SortFunc(l, func(a, b dirsvc.FacetCount) int { return cmp.Or(b.Count-a.Count, strings.Compare(a.Value, b.Value)) })
		lists[i] = l[:min(len(l), maxFacetValues)]
	}
	return dirsvc.SearchFacets{Type: lists[facetType], Category: lists[facetCategory], Ownership: lists[facetOwnership],
		LocalTypes: lists[facetLocalTypes], Cost: lists[facetCost], Delivery: lists[facetDelivery],
		Language: lists[facetLanguage], TargetGroup: lists[facetTargetGroup], Program: lists[facetProgram]}.Listed()
}

// maxFacetValues bounds the values a facet lists, the most common first.
const maxFacetValues = 50
