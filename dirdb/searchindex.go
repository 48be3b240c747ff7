package dirdb

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

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
	resets   uint64 // how often every document was read anew
	lastID   int64
	lastGone int64
	docs     map[int64]*memDoc
	// loaded counts the documents a load held and the removals it applied: a load that gives way to
	// a change keeps them, and they move it on (loadingRead).
	loaded atomic.Uint64
	// The documents by number (memDoc.ord), in the order of their IDs, and beside them what every
	// search reads of each, so that a search through many documents reads a few dense arrays:
	// the audiences that find it (0 once gone), its name's rank, and its facet values' numbers
	// (facetVals[facetAt[n]:facetAt[n+1]]). A gone document's number is not reused until the
	// documents are numbered anew (renumber).
	byOrd     []*memDoc
	aud       []uint8
	rank      []int32
	facetAt   []uint32
	facetVals []uint32
	lat, lon  []float64 // NaN without a position
	org       []int32   // the organisation's number (orgNums)
	opens     []int32   // the hours' number (memDoc.openKey), -1 without hours
	goneOrds  int
	orgNums   map[string]int32 // organisations' public IDs, numbered
	// By audience bit, the documents it finds; the average length of names and organisations' names
	// in words (for the ranking).
	audienceDocs              map[int64]int
	avgNameWords, avgOrgWords float32
	hours                     map[string]*dirsvc.OpeningHours // the documents' hours, one of each
	// The documents' strings and lists of strings, one of each (intern): most are codes and areas
	// that thousands of documents share.
	shared sharedStrings
	// The documents' hours with the state whose holidays they follow, numbered (memDoc.openKey),
	// and by search's OpenKey the answers of its open-state filter so far, by that number.
	openKeys  map[openKey]int32
	omu       sync.Mutex
	openMemos map[string][]atomic.Uint32
	// Every facet value any document held since the index was made, numbered.
	values   []facetValue
	valueIDs map[facetValue]uint32
	// By audience bit, made when first needed after the index moved on: the vocabulary of its
	// full-text index, and the localities of its documents' sites with their postcodes.
	vocab       map[int64]*vocabulary
	localities  map[int64]map[string][]string
	suggestions map[int64]*suggestList // autocomplete's, for viewers without a narrowing
	smu         sync.Mutex             // held while one of them is made
	// The same for narrowed viewers: localities by narrowedKey (at most maxNarrowedLists),
	// suggestions by suggestKey (with at most maxNarrowedCandidates candidates in all).
	narrowedPlaces      map[string]map[string][]string
	narrowedSuggestions map[string]*suggestList
	narrowedCandidates  int
	// The postings kept (postings.go), the documents they hold in all, and their clock.
	pmu            sync.Mutex
	postings       map[postingKey]*posting
	postingEntries int
	clock          uint64
	// The result cards kept (searchcards.go).
	cmu   sync.Mutex
	cards map[cardKey]keptCard
}

// memDoc is one search document held in memory.
type memDoc struct {
	id                  int64
	service             string
	audiences           int64
	nameKey             string   // the name as sorted
	nameWords, orgWords uint16   // the lengths of its name and its organisation's, in words
	facets              []uint32 // its facet values' numbers (searchIndex.values)
	ord                 int32    // its number (searchIndex.byOrd)
	openKey             int32    // its hours' and state's number (searchIndex.openKeys); -1 without hours
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
				err := d.loadingRead(context.Background(), d.loadSearch, idx.loaded.Load)
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

// warmSearch brings the search index up to the file, reads the vocabulary of each audience and
// makes its autocomplete list, as the first searches would. A directory closed meanwhile ends it
// with an error, which is dropped: the next search reads what it needs.
func (d *Directory) warmSearch() {
	ctx := context.Background()
	if d.freshSearch(ctx) != nil {
		return
	}
	idx := &d.search
	for _, a := range dirsvc.ServedAudiences {
		err := d.longRead(ctx, func(ctx context.Context) error {
			idx.mu.RLock()
			defer idx.mu.RUnlock()
			_, err := idx.vocabulary(ctx, d, audienceBit(a))
			return err
		})
		if err == nil {
			_, err = d.suggestions(ctx, dirsvc.Viewer{Audience: a})
		}
		if err != nil {
			return
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
		idx.values, idx.valueIDs, idx.hours = nil, map[facetValue]uint32{}, map[string]*dirsvc.OpeningHours{}
		idx.shared = sharedStrings{}
		idx.openKeys, idx.orgNums = map[openKey]int32{}, map[string]int32{}
		idx.renumber()
		idx.forgetCards()
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
			if m := idx.docs[id]; m != nil {
				idx.byOrd[m.ord], idx.aud[m.ord] = nil, 0
				idx.goneOrds++
				delete(idx.docs, id)
			}
			idx.loaded.Add(1)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if idx.goneOrds > minRenumbered && idx.goneOrds > len(idx.byOrd)/2 {
			idx.renumber()
		}
	}
	rows, err := tx.QueryContext(ctx, "SELECT id, service_id, audiences, doc FROM search_docs WHERE id > ? ORDER BY id", idx.lastID)
	if err != nil {
		return fmt.Errorf("read search documents: %w", err)
	}
	defer rows.Close()
	// Decoding the documents is most of reading them: it is done a batch at a time on every CPU,
	// and the documents are held in the order read.
	type read struct {
		m   *memDoc
		raw []byte
	}
	var batch []read
	hold := func() error {
		_, err := decodeAll(batch, func(r read) (struct{}, error) {
			if err := json.Unmarshal(r.raw, &r.m.searchDoc); err != nil {
				return struct{}{}, fmt.Errorf("decode the search document %d: %w", r.m.id, err)
			}
			return struct{}{}, nil
		})
		if err != nil {
			return err
		}
		for _, r := range batch {
			if err := idx.add(r.m); err != nil {
				return err
			}
			idx.lastID = max(idx.lastID, r.m.id)
		}
		idx.loaded.Add(uint64(len(batch)))
		batch = batch[:0]
		return nil
	}
	for rows.Next() {
		r := read{m: &memDoc{}}
		if err := rows.Scan(&r.m.id, &r.m.service, &r.m.audiences, &r.raw); err != nil {
			return err
		}
		if batch = append(batch, r); len(batch) == docsPerBatch {
			if err := hold(); err != nil {
				return err
			}
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if err := hold(); err != nil {
		return err
	}
	idx.rankNames()
	idx.count()
	idx.omu.Lock()
	idx.openMemos = nil
	idx.omu.Unlock()
	idx.gen, idx.vocab, idx.localities = gen, map[int64]*vocabulary{}, map[int64]map[string][]string{}
	idx.suggestions, idx.narrowedPlaces, idx.narrowedSuggestions = map[int64]*suggestList{}, map[string]map[string][]string{}, map[string]*suggestList{}
	idx.narrowedCandidates = 0
	return nil
}

// minRenumbered is the fewest gone documents for which the documents are numbered anew (when they
// are also more than half of the numbers given); a variable for tests.
var minRenumbered = 4096

// add numbers a document newer than those held and holds it. The caller holds the index's lock for
// writing.
func (idx *searchIndex) add(m *memDoc) error {
	idx.shared.intern(&m.searchDoc)
	m.nameKey = strings.ToLower(m.Name)
	m.nameWords, m.orgWords = wordCount(m.Name), wordCount(m.OrgName)
	m.facets = idx.facetsOfDoc(m)
	if m.Hours != nil {
		// Documents with the same hours share them, so that an open-state filter works out each
		// week of hours once (openFilter).
		key, err := json.Marshal(m.Hours)
		if err != nil {
			return fmt.Errorf("encode the hours of search document %d: %w", m.id, err)
		}
		if h, ok := idx.hours[string(key)]; ok {
			m.Hours = h
		} else {
			idx.hours[string(key)] = m.Hours
		}
		k := openKey{m.Hours, stateArea(m.Areas)}
		n, ok := idx.openKeys[k]
		if !ok {
			n = int32(len(idx.openKeys))
			idx.openKeys[k] = n
		}
		m.openKey = n
	}
	if m.Hours == nil {
		m.openKey = -1
	}
	idx.docs[m.id] = m
	idx.number(m)
	return nil
}

// number gives a document the next number. The caller holds the index's lock for writing.
func (idx *searchIndex) number(m *memDoc) {
	m.ord = int32(len(idx.byOrd))
	idx.byOrd = append(idx.byOrd, m)
	idx.aud = append(idx.aud, uint8(m.audiences))
	idx.rank = append(idx.rank, 0) // rankNames
	if len(idx.facetAt) == 0 {
		idx.facetAt = append(idx.facetAt, 0)
	}
	idx.facetVals = append(idx.facetVals, m.facets...)
	idx.facetAt = append(idx.facetAt, uint32(len(idx.facetVals)))
	lat, lon := math.NaN(), math.NaN()
	if m.Point != nil {
		lat, lon = m.Point.Lat, m.Point.Lon
	}
	idx.lat, idx.lon = append(idx.lat, lat), append(idx.lon, lon)
	g, ok := idx.orgNums[m.Organisation]
	if !ok {
		g = int32(len(idx.orgNums))
		idx.orgNums[m.Organisation] = g
	}
	idx.org, idx.opens = append(idx.org, g), append(idx.opens, m.openKey)
}

// renumber numbers the documents held anew, in the order of their IDs, and forgets the postings
// (which hold the old numbers); a search that took postings before sees resets move and takes
// them again. The caller holds the index's lock for writing.
func (idx *searchIndex) renumber() {
	held := make([]*memDoc, 0, len(idx.docs))
	for _, m := range idx.byOrd {
		if m != nil && idx.docs[m.id] == m {
			held = append(held, m)
		}
	}
	idx.byOrd, idx.aud, idx.rank, idx.facetAt, idx.facetVals, idx.goneOrds = nil, nil, nil, nil, nil, 0
	idx.lat, idx.lon, idx.org, idx.opens = nil, nil, nil, nil
	for _, m := range held {
		idx.number(m)
	}
	idx.resets++
	idx.forgetPostings()
}

// count counts the documents each audience finds and averages the lengths of their names. The
// caller holds the index's lock for writing.
func (idx *searchIndex) count() {
	idx.audienceDocs = map[int64]int{}
	var names, orgs int
	for _, m := range idx.docs {
		for _, a := range dirsvc.ServedAudiences {
			if bit := audienceBit(a); m.audiences&bit != 0 {
				idx.audienceDocs[bit]++
			}
		}
		names, orgs = names+int(m.nameWords), orgs+int(m.orgWords)
	}
	if n := len(idx.docs); n > 0 {
		idx.avgNameWords, idx.avgOrgWords = float32(names)/float32(n), float32(orgs)/float32(n)
	}
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
		idx.rank[m.ord] = int32(i)
	}
}

// eachMatch calls fn with each document (by number) that every posting holds, and its score: the
// sum over the words of their weight in it times their rarity (BM25's inverse document frequency
// among the n documents of the audience). It walks the shortest posting and seeks in the others.
func eachMatch(ps []*posting, n int, fn func(o int32, score float32)) {
	order := make([]int, len(ps))
	idf := make([]float32, len(ps))
	for i, p := range ps {
		order[i] = i
		idf[i] = idfOf(len(p.ords), n)
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(len(ps[a].ords), len(ps[b].ords)) })
	at := make([]int, len(ps))
	first := ps[order[0]]
next:
	for i, o := range first.ords {
		score := idf[order[0]] * first.weights[i]
		for _, j := range order[1:] {
			p := ps[j]
			k := at[j]
			for step := 1; k+step < len(p.ords) && p.ords[k+step] <= o; step *= 2 {
				k += step // gallop
			}
			k += sort.Search(len(p.ords)-k, func(x int) bool { return p.ords[k+x] >= o })
			at[j] = k
			if k == len(p.ords) {
				return
			}
			if p.ords[k] != o {
				continue next
			}
			score += idf[j] * p.weights[k]
		}
		fn(o, score)
	}
}

// idfOf is BM25's inverse document frequency of a word that df of n documents hold.
func idfOf(df, n int) float32 {
	return float32(math.Log(1 + (float64(n)-float64(df)+0.5)/(float64(df)+0.5)))
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
	cats, err := d.categoryMatcher(ctx, v.Audience, q.Categories)
	if err != nil {
		return res, err
	}
	if err := d.freshSearch(ctx); err != nil {
		return res, fmt.Errorf("search services: %w", err)
	}
	// The postings are looked up and used under one hold of the index's lock, so that their
	// documents' numbers are the index's. When some must be read from the file first, they are,
	// and the search begins again (a change to the documents meanwhile may call for more).
	idx := &d.search
	for range maxSearchTries {
		idx.mu.RLock()
		words, reading, ps, ok, err := d.keptWords(ctx, v, &q)
		var docs []int64
		if ok && err == nil {
			res, docs = idx.findServices(v, &q, bit, cats, words, reading, ps)
		}
		idx.mu.RUnlock()
		if err == nil && ok {
			res.Hits, err = d.withCards(ctx, v, res.Hits, docs)
		}
		if err != nil || ok {
			return res, err
		}
		if err := d.keepWords(ctx, v, &q); err != nil {
			return res, fmt.Errorf("search services: %w", err)
		}
	}
	// The words' postings were forgotten each time before they could be used (the documents changed,
	// or other searches filled the postings' room): a busy directory, worth asking again.
	return res, dirsvc.Errorf(dirsvc.EUnavailable, "The directory changed while it was searched: try again in 1 second.")
}

// maxSearchTries bounds how often a search reads what it needs from the file and begins again.
const maxSearchTries = 4

// found is a match of a search, with what it is ordered by: its score (higher first), distance and
// name's rank.
type found struct {
	ord, rank int32
	score     float32
	km        float64 // NaN when unknown
}

// foundPool keeps the lists of matches searches by organisation gather, for the next ones.
var foundPool = sync.Pool{New: func() any { return new([]found) }}

// maxPooledFound bounds the matches a list kept in foundPool may hold room for.
const maxPooledFound = 1 << 17

// findServices works out a search from the postings of its words; it returns with the hits their
// documents' IDs. The caller holds the index's lock for reading.
func (idx *searchIndex) findServices(v dirsvc.Viewer, q *dirsvc.SearchQuery, bit int64, cats *categorySet, words [][]string, reading dirsvc.QueryReading, ps []*posting) (dirsvc.SearchResult, []int64) {
	res := dirsvc.SearchResult{Reading: reading}
	byName := func(a, b found) int { return cmp.Compare(a.rank, b.rank) }
	order := func(a, b found) int { return cmp.Or(cmp.Compare(b.score, a.score), byName(a, b)) }
	switch {
	case q.Sort == dirsvc.SortDistance && q.Near != nil:
		order = func(a, b found) int {
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
	case q.Sort == dirsvc.SortName || len(words) == 0:
		order = byName
	}
	groups, none := idx.facetGroups(q, cats)
	if none {
		res.Facets = dirsvc.SearchFacets{}.Listed()
		return res, nil
	}
	// The filters read from the document itself rather than the arrays beside it.
	byDoc := v.Narrowing.Narrowed() || len(q.Facilities) > 0 || q.Appointment != "" || q.SelfReferral ||
		len(q.Areas) > 0 || reading.Place != nil
	open := idx.openFilter(q)
	var near *nearness
	if q.Near != nil {
		near = newNearness(*q.Near, q.RadiusKm)
	}
	// One word alone, by relevance: its posting's summary answers.
	if len(ps) == 1 && len(groups) == 0 && !byDoc && open == nil && near == nil && q.Sort != dirsvc.SortName {
		return idx.summaryAnswer(q, ps[0], res)
	}
	// match tells whether a document the words find passes the filters, and how it is ordered.
	match := func(o int32, score float32) (found, bool) {
		if idx.aud[o]&uint8(bit) == 0 {
			return found{}, false
		}
		facets := idx.facetVals[idx.facetAt[o]:idx.facetAt[o+1]]
		for _, g := range groups {
			if !sharesOne(facets, g) {
				return found{}, false
			}
		}
		km := math.NaN()
		if near != nil {
			if km = near.km(idx.lat[o], idx.lon[o]); q.RadiusKm > 0 && !(km <= q.RadiusKm) {
				return found{}, false
			}
		}
		if byDoc {
			m := idx.byOrd[o]
			if !insideSearch(m, v.Narrowing) || !matchesDoc(q, m) {
				return found{}, false
			}
			if p := reading.Place; p != nil && !slices.ContainsFunc(p.Areas, func(a string) bool { return inArea(m, a, q.LocatedOnly) }) {
				return found{}, false
			}
		}
		if open != nil && !open(o) {
			return found{}, false
		}
		return found{o, idx.rank[o], score, km}, true
	}
	// each calls fn with every match.
	each := func(fn func(f found)) {
		consider := func(o int32, score float32) {
			if f, ok := match(o, score); ok {
				fn(f)
			}
		}
		if len(ps) > 0 {
			eachMatch(ps, idx.audienceDocs[bit], consider)
		} else if len(words) == 0 {
			for o := range idx.byOrd {
				consider(int32(o), 0)
			}
		}
	}
	counts := make([]int, len(idx.values))
	first := newTopK(q.Offset+q.Limit, order)
	// By organisation: each organisation's best match and number of matches.
	type orgFound struct {
		org      int32
		best     found
		services int
	}
	var orgs []orgFound
	var slot []int32 // by organisation number: its place in orgs plus one
	var all *[]found // by organisation: every match, for the page's organisations' services
	if q.ByOrganisation {
		slot = make([]int32, len(idx.orgNums))
		all = foundPool.Get().(*[]found)
		*all = (*all)[:0]
		defer func() {
			if cap(*all) <= maxPooledFound {
				foundPool.Put(all)
			}
		}()
	}
	each(func(f found) {
		res.Total++
		for _, n := range idx.facetVals[idx.facetAt[f.ord]:idx.facetAt[f.ord+1]] {
			counts[n]++
		}
		if !q.ByOrganisation {
			first.add(f)
			return
		}
		*all = append(*all, f)
		g := idx.org[f.ord]
		if i := slot[g]; i == 0 {
			orgs = append(orgs, orgFound{g, f, 1})
			slot[g] = int32(len(orgs))
		} else if of := &orgs[i-1]; order(f, of.best) < 0 {
			of.best, of.services = f, of.services+1
		} else {
			of.services++
		}
	})
	res.Facets = idx.facetsOf(counts)
	var docs []int64
	hitOf := func(h found) dirsvc.SearchHit {
		m := idx.byOrd[h.ord]
		docs = append(docs, m.id)
		hit := dirsvc.SearchHit{PublicID: m.service, Organisation: m.Organisation, Hours: m.Hours, Areas: m.Areas}
		if !math.IsNaN(h.km) {
			km := h.km
			hit.DistanceKm = &km
		}
		return hit
	}
	if !q.ByOrganisation {
		hits := first.sorted()
		for _, h := range hits[min(q.Offset, len(hits)):] {
			res.Hits = append(res.Hits, hitOf(h))
		}
		return res, docs
	}
	if !v.Narrowing.AllowsKind(dirsvc.KindOrganisation) {
		// A viewer that may not read organisations is told of none: it counts the services alone.
		res.ServiceTotal, res.Total = res.Total, 0
		return res, nil
	}
	// Organisations in the order of their best service; the services of the page's ones, in order.
	firstOrgs := newTopK(q.Offset+q.Limit, func(a, b orgFound) int { return order(a.best, b.best) })
	for _, of := range orgs {
		firstOrgs.add(of)
	}
	page := firstOrgs.sorted()
	page = page[min(q.Offset, len(page)):]
	res.ServiceTotal, res.Total = res.Total, len(orgs)
	clear(slot)
	for i, of := range page {
		m := idx.byOrd[of.best.ord]
		res.Organisations = append(res.Organisations, dirsvc.SearchOrganisation{PublicID: m.Organisation, Name: m.OrgName, Services: of.services})
		slot[of.org] = int32(i + 1)
	}
	// The services of the page's organisations.
	hits := newTopK(maxGroupedHits, order)
	for _, f := range *all {
		if slot[idx.org[f.ord]] != 0 {
			hits.add(f)
		}
	}
	for _, h := range hits.sorted() {
		res.Hits = append(res.Hits, hitOf(h))
	}
	return res, docs
}

// nearness works out distances from a position, passing over positions outside the radius (when
// there is one) by a box of latitudes and longitudes that holds the whole circle before working
// them out.
type nearness struct {
	from           dirsvc.Point
	radius         float64
	minLat, maxLat float64
	maxLon         float64 // the most a longitude inside the circle may differ from the centre's
}

func newNearness(from dirsvc.Point, radiusKm float64) *nearness {
	n := &nearness{from: from, radius: radiusKm, minLat: -90, maxLat: 90, maxLon: 180}
	if radiusKm > 0 {
		// The circle's angular radius, and the box around it on the sphere (the longitudes'
		// bound is where the circle touches a meridian), widened by a margin for rounding.
		const margin = 1e-6
		delta := radiusKm / dirsvc.EarthRadiusKm
		lat := from.Lat * math.Pi / 180
		n.minLat = (lat-delta)*180/math.Pi - margin
		n.maxLat = (lat+delta)*180/math.Pi + margin
		if n.minLat > -90 && n.maxLat < 90 {
			n.maxLon = math.Asin(math.Min(1, math.Sin(delta)/math.Cos(lat)))*180/math.Pi + margin
		}
	}
	return n
}

// km returns the distance to a position; NaN without one (a NaN latitude), and +Inf when it lies
// outside the box around the circle.
func (n *nearness) km(lat, lon float64) float64 {
	if math.IsNaN(lat) {
		return math.NaN()
	}
	if n.radius > 0 {
		d := math.Abs(lon - n.from.Lon)
		if d = math.Min(d, 360-d); lat < n.minLat || lat > n.maxLat || d > n.maxLon {
			return math.Inf(1)
		}
	}
	return dirsvc.HaversineKm(n.from.Lat, n.from.Lon, lat, lon)
}

// summaryAnswer answers a search for one word alone, by relevance, from its posting's summary (and
// organisations): as findServices would walking the posting. The caller holds the index's lock for
// reading.
func (idx *searchIndex) summaryAnswer(q *dirsvc.SearchQuery, p *posting, res dirsvc.SearchResult) (dirsvc.SearchResult, []int64) {
	sum := idx.summarised(p)
	res.Total, res.Facets = sum.total, idx.facetsOf(sum.counts)
	var docs []int64
	hit := func(o int32) {
		m := idx.byOrd[o]
		docs = append(docs, m.id)
		res.Hits = append(res.Hits, dirsvc.SearchHit{PublicID: m.service, Organisation: m.Organisation, Hours: m.Hours, Areas: m.Areas})
	}
	if !q.ByOrganisation {
		for _, o := range sum.order[min(q.Offset, len(sum.order)):min(len(sum.order), q.Offset+q.Limit)] {
			hit(o)
		}
		return res, docs
	}
	g := idx.groupsOf(p, sum)
	res.ServiceTotal, res.Total = sum.total, len(g.orgs)
	from, to := min(q.Offset, len(g.orgs)), min(len(g.orgs), q.Offset+q.Limit)
	for i := from; i < to; i++ {
		m := idx.byOrd[g.best[i]]
		res.Organisations = append(res.Organisations, dirsvc.SearchOrganisation{PublicID: m.Organisation, Name: m.OrgName, Services: g.services[i]})
	}
	// The page's organisations' services, in order, all of them or the first maxGroupedHits.
	for _, place := range g.onPage(from, to, maxGroupedHits) {
		hit(sum.order[place])
	}
	return res, docs
}

// sharesOne reports whether two sorted lists of numbers share one.
func sharesOne(a, b []uint32) bool {
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] == b[j]:
			return true
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return false
}

// openKey is what an open-state filter's answer depends on: the hours (shared by the documents
// that have the same, see searchIndex.add) and the state whose public holidays they follow.
type openKey struct {
	hours *dirsvc.OpeningHours
	state string
}

// maxOpenMemos bounds the open-state filters whose answers are kept (past it, all are forgotten):
// one a filter and minute asked.
const maxOpenMemos = 64

// openFilter returns the query's open-state filter over documents by number, which asks Open once
// for each hours and state: once a search, or, for searches with the same OpenKey, once for them
// all (until the index moves on); nil when the query has none. The caller holds the index's lock
// for reading.
func (idx *searchIndex) openFilter(q *dirsvc.SearchQuery) func(o int32) bool {
	if q.Open == nil {
		return nil
	}
	var memo []atomic.Uint32 // 0 not asked yet, 1 open, 2 not
	idx.omu.Lock()
	if q.OpenKey != "" {
		memo = idx.openMemos[q.OpenKey]
	}
	if memo == nil {
		memo = make([]atomic.Uint32, len(idx.openKeys))
		if q.OpenKey != "" {
			if len(idx.openMemos) >= maxOpenMemos || idx.openMemos == nil {
				idx.openMemos = map[string][]atomic.Uint32{}
			}
			idx.openMemos[q.OpenKey] = memo
		}
	}
	idx.omu.Unlock()
	return func(o int32) bool {
		k := idx.opens[o]
		switch {
		case k < 0: // no hours: never open
			return false
		case int(k) >= len(memo): // numbered since the memo was made
			m := idx.byOrd[o]
			return q.Open(m.Hours, m.Areas)
		}
		switch memo[k].Load() {
		case 1:
			return true
		case 2:
			return false
		}
		m := idx.byOrd[o]
		open := q.Open(m.Hours, m.Areas)
		answer := uint32(2)
		if open {
			answer = 1
		}
		memo[k].Store(answer)
		return open
	}
}

// stateArea returns the first state area (state:<code>) of areas, the one public holidays follow;
// "" when there is none.
func stateArea(areas []string) string {
	for _, a := range areas {
		if strings.HasPrefix(a, "state:") {
			return a
		}
	}
	return ""
}

// topK keeps the first k of what it is given in the order cmp gives, in a heap of the k best seen:
// a page of a large match set costs about one comparison a match rather than a sort.
type topK[T any] struct {
	k   int
	cmp func(a, b T) int
	h   []T // a max-heap by cmp: h[0] is the worst kept
}

func newTopK[T any](k int, cmp func(a, b T) int) *topK[T] {
	return &topK[T]{k: k, cmp: cmp, h: make([]T, 0, min(k, 1024))}
}

// add offers x.
func (t *topK[T]) add(x T) {
	h := t.h
	switch {
	case len(h) < t.k:
		h = append(h, x)
		for i := len(h) - 1; i > 0 && t.cmp(h[i], h[(i-1)/2]) > 0; i = (i - 1) / 2 {
			h[i], h[(i-1)/2] = h[(i-1)/2], h[i]
		}
		t.h = h
	case t.k > 0 && t.cmp(x, h[0]) < 0:
		h[0] = x
		for i := 0; ; {
			l, r, w := 2*i+1, 2*i+2, i
			if l < len(h) && t.cmp(h[l], h[w]) > 0 {
				w = l
			}
			if r < len(h) && t.cmp(h[r], h[w]) > 0 {
				w = r
			}
			if w == i {
				return
			}
			h[i], h[w] = h[w], h[i]
			i = w
		}
	}
}

// sorted returns the first k offered, in order.
func (t *topK[T]) sorted() []T {
	slices.SortFunc(t.h, t.cmp)
	return t.h
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

// categorySet is the categories a search asks for, resolved: the services of its platform types,
// of its platform categories, or tagged with one of its local types.
type categorySet struct {
	types, locals, platform map[string]bool
}

// has reports whether a document's service is of the categories.
func (c *categorySet) has(m *memDoc) bool {
	return c.types[m.Type] || c.platform[m.Category] || slices.ContainsFunc(m.LocalTypes, func(lt string) bool { return c.locals[lt] })
}

// categoryMatcher resolves the categories a search names against the audience's taxonomy: a
// directory category finds the services of its platform types and those tagged with its local
// types (a category of local types, exactly those tagged); a local type's code or slug finds those
// tagged with it; anything else is taken as a platform category code. It returns nil when the
// search names none.
func (d *Directory) categoryMatcher(ctx context.Context, a dirsvc.Audience, cats []string) (*categorySet, error) {
	if len(cats) == 0 {
		return nil, nil
	}
	tax, err := d.taxonomyView(ctx, a)
	if err != nil {
		return nil, err
	}
	set := &categorySet{types: map[string]bool{}, locals: map[string]bool{}, platform: map[string]bool{}}
	for _, c := range cats {
		if i := slices.IndexFunc(tax.Categories, func(cv dirsvc.CategoryView) bool { return cv.Code == c }); i >= 0 {
			for _, t := range tax.Categories[i].Types {
				set.types[t] = true
			}
			for _, lt := range tax.Categories[i].LocalTypes {
				set.locals[lt] = true
			}
		} else if i := slices.IndexFunc(tax.LocalTypes, func(lt dirsvc.LocalTypeView) bool { return lt.Code == c || lt.Slug == c }); i >= 0 {
			set.locals[tax.LocalTypes[i].Code] = true
		} else {
			set.platform[c] = true
		}
	}
	return set, nil
}

// facetGroups returns the filters of a search that facet values decide, each as the sorted numbers
// of the values it accepts (a document passes one when it holds one of them): its types, categories,
// costs, ownership, delivery, languages, target groups and programs. none is true when a filter
// accepts no value any document holds (nothing can match). The caller holds the index's lock for
// reading.
func (idx *searchIndex) facetGroups(q *dirsvc.SearchQuery, cats *categorySet) (groups [][]uint32, none bool) {
	group := func(pairs ...facetValue) {
		var g []uint32
		for _, p := range pairs {
			if n, ok := idx.valueIDs[p]; ok {
				g = append(g, n)
			}
		}
		if len(g) == 0 {
			none = true
		}
		slices.Sort(g)
		groups = append(groups, g)
	}
	of := func(facet int, values []string) {
		if len(values) > 0 {
			pairs := make([]facetValue, len(values))
			for i, v := range values {
				pairs[i] = facetValue{facet, v}
			}
			group(pairs...)
		}
	}
	of(facetType, q.Types)
	of(facetCost, q.Costs)
	of(facetOwnership, q.Ownership)
	of(facetDelivery, q.Delivery)
	of(facetLanguage, q.Languages)
	of(facetTargetGroup, q.TargetGroups)
	of(facetProgram, q.Programs)
	if cats != nil {
		var pairs []facetValue
		for t := range cats.types {
			pairs = append(pairs, facetValue{facetType, t})
		}
		for c := range cats.platform {
			pairs = append(pairs, facetValue{facetCategory, c})
		}
		for lt := range cats.locals {
			pairs = append(pairs, facetValue{facetLocalTypes, lt})
		}
		group(pairs...)
	}
	return groups, none
}

// matchesDoc reports whether a document meets the query's filters that facet values do not decide
// (facilities, appointment, referral and areas; the words, place, position, open state and
// narrowing apart).
func matchesDoc(q *dirsvc.SearchQuery, m *memDoc) bool {
	return (len(q.Facilities) == 0 || slices.ContainsFunc(q.Facilities, func(f string) bool { return slices.Contains(m.Facilities, f) })) &&
		(q.Appointment == "" || q.Appointment == m.Appointment) && (!q.SelfReferral || m.SelfReferral) &&
		!slices.ContainsFunc(q.Areas, func(a string) bool { return !inArea(m, a, q.LocatedOnly) })
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

// facetsOf lists the facets of a match set from the counts of its facet values (by number). The
// caller holds the index's lock for reading.
func (idx *searchIndex) facetsOf(counts []int) dirsvc.SearchFacets {
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

// sharedStrings holds one copy of each string and list of strings of the documents held. Held
// documents are read by every garbage collection: decoded as they are, 100,000 services' documents
// are millions of small strings and lists, most of them the same codes and areas again, and marking
// them took about a third of a second of CPU in every cycle under load.
type sharedStrings struct {
	strs  map[string]string
	lists map[string][]string
}

// intern makes the document's strings and lists the copies held (the first of each seen). A list
// is shared with its length as its capacity, so that appending to it can never write into another
// document's.
func (sh *sharedStrings) intern(d *searchDoc) {
	if sh.strs == nil {
		sh.strs, sh.lists = map[string]string{}, map[string][]string{}
	}
	for _, s := range []*string{&d.Organisation, &d.OrgName, &d.Type, &d.Category, &d.Ownership, &d.Cost,
		&d.Appointment, &d.State, &d.Locality, &d.Postcode} {
		*s = sh.str(*s)
	}
	for _, l := range []*[]string{&d.LocalTypes, &d.Delivery, &d.Languages, &d.TargetGroups, &d.Programs,
		&d.Facilities, &d.Areas, &d.Catchment} {
		*l = sh.list(*l)
	}
}

func (sh *sharedStrings) str(s string) string {
	if s == "" {
		return ""
	}
	if kept, ok := sh.strs[s]; ok {
		return kept
	}
	sh.strs[s] = s
	return s
}

func (sh *sharedStrings) list(l []string) []string {
	if len(l) == 0 {
		return l
	}
	key := strings.Join(l, "\x00")
	if kept, ok := sh.lists[key]; ok {
		return kept
	}
	for i := range l {
		l[i] = sh.str(l[i])
	}
	l = l[:len(l):len(l)]
	sh.lists[key] = l
	return l
}
