package dirdb

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
)

// A search's words are found by the audience's full-text index (FTS5): it splits the documents into
// words and keeps, for each word, the documents that hold it. Asking it costs more than the rest of
// a search (tens of milliseconds for a word that most documents hold), so the documents it answers
// for a word are kept in memory as a posting, with the weight of the columns they hold the word in,
// and a later search for the word uses them from there. A posting follows the documents: when the
// index in memory has read documents newer than a posting, the full-text index is asked again for
// those alone; documents since removed are passed over (and dropped when the posting is next read);
// when the documents are numbered anew, the postings are forgotten.

// textColumns are the full-text tables' columns, in their order, with their weights in a search's
// ranking: a word in a service's name counts most, one in its description least.
var textColumns = [...]struct {
	name   string
	weight float32
}{{"name", 10}, {"specialties", 6}, {"organisation", 4}, {"place", 3}, {"practitioners", 4}, {"description", 1}}

// peopleColumn is the number of the practitioners' column in textColumns.
const peopleColumn = 4

// The parameters of the ranking's length normalisation (BM25's k1 and b), applied to the columns
// whose length the documents in memory know: the service's name and its organisation's.
const (
	rankK1 = 1.2
	rankB  = 0.75
)

// maxPostingEntries bounds the documents the kept postings hold in all (about 16 bytes each):
// beyond it, the postings used least recently are forgotten.
const maxPostingEntries = 4 << 20

// postingKey names a posting: the audience's index, the word (its parts joined by spaces),
// whether longer words it starts count too (the last word of a search, perhaps still being typed),
// and whether the practitioners' column is left out (for a viewer that may not read them, see
// peopleSearchable).
type postingKey struct {
	bit      int64
	phrase   string
	prefix   bool
	noPeople bool
}

// posting is the documents of one audience's full-text index that hold a word, by number
// (memDoc.ord) in the order of their IDs, each with the weight of the columns that hold it
// (textColumns, length-normalised). It is never changed once made (reading newer documents makes
// another), so searches share it freely.
type posting struct {
	bit     int64 // the audience's
	ords    []int32
	weights []float32
	upto    int64  // the documents with IDs up to this were read
	used    uint64 // when a search last used it (searchIndex.clock); under searchIndex.pmu
	summary atomic.Pointer[postingSummary]
	grouped atomic.Pointer[postingGroups]
}

// postingGroups is what a search for a posting's word alone, without filters, answers by
// organisation: the organisations (by number) in the order of their best service, with the number
// of that service and how many of their services hold the word. Like the summary, it holds for
// the index's state it was made at.
type postingGroups struct {
	gen      uint64
	orgs     []int32
	best     []int32
	services []int
	// Each organisation's services, as places in the summary's order (ascending), one organisation
	// after another: organisation i's are members[memberAt[i]:memberAt[i+1]].
	members  []int32
	memberAt []int32
}

// onPage returns, in the summary's order, the places of the first want services of organisations
// from to to (the grouped answer's page): each organisation gives at most want of its own, in order,
// so the first want of them all are among those.
func (g *postingGroups) onPage(from, to, want int) []int32 {
	var places []int32
	for i := from; i < to; i++ {
		own := g.members[g.memberAt[i]:g.memberAt[i+1]]
		places = append(places, own[:min(len(own), want)]...)
	}
	slices.Sort(places)
	return places[:min(len(places), want)]
}

// groupsOf returns the posting's organisations for the index's state, making them the first time
// from its summary. The caller holds the index's lock for reading.
func (idx *searchIndex) groupsOf(p *posting, sum *postingSummary) *postingGroups {
	if g := p.grouped.Load(); g != nil && g.gen == sum.gen {
		return g
	}
	g := &postingGroups{gen: sum.gen}
	at := map[int32]int{}
	group := make([]int32, len(sum.order)) // by place, its organisation's index in g.orgs
	for place, o := range sum.order {
		org := idx.org[o]
		i, ok := at[org]
		if !ok {
			i = len(g.orgs)
			at[org] = i
			g.orgs, g.best, g.services = append(g.orgs, org), append(g.best, o), append(g.services, 0)
		}
		g.services[i]++
		group[place] = int32(i)
	}
	g.memberAt = make([]int32, len(g.orgs)+1)
	for i, n := range g.services {
		g.memberAt[i+1] = g.memberAt[i] + int32(n)
	}
	g.members = make([]int32, len(sum.order))
	next := slices.Clone(g.memberAt[:len(g.orgs)])
	for place, i := range group {
		g.members[next[i]] = int32(place)
		next[i]++
	}
	p.grouped.Store(g)
	return g
}

// postingSummary is what a search for a posting's word alone, without filters, answers: how many
// of its documents are not gone, their facet values' counts, and their numbers in the order of
// relevance (the word's weight, then the name). It holds for the index's state it was made at (the
// names' ranks and the gone documents change with it).
type postingSummary struct {
	gen    uint64
	total  int
	counts []int
	order  []int32
}

// summarised returns the posting's summary for the index's state, making it the first time. The
// caller holds the index's lock for reading.
func (idx *searchIndex) summarised(p *posting) *postingSummary {
	if sum := p.summary.Load(); sum != nil && sum.gen == idx.gen {
		return sum
	}
	sum := &postingSummary{gen: idx.gen, counts: make([]int, len(idx.values))}
	at := make([]int, 0, len(p.ords))
	for i, o := range p.ords {
		if idx.aud[o]&uint8(p.bit) == 0 { // gone
			continue
		}
		at = append(at, i)
		for _, n := range idx.facetVals[idx.facetAt[o]:idx.facetAt[o+1]] {
			sum.counts[n]++
		}
	}
	// Ordered as a search walking the posting orders it (eachMatch's score, then the name).
	idf := idfOf(len(p.ords), idx.audienceDocs[p.bit])
	slices.SortFunc(at, func(a, b int) int {
		return cmp.Or(cmp.Compare(idf*p.weights[b], idf*p.weights[a]), cmp.Compare(idx.rank[p.ords[a]], idx.rank[p.ords[b]]))
	})
	sum.total, sum.order = len(at), make([]int32, len(at))
	for i, a := range at {
		sum.order[i] = p.ords[a]
	}
	p.summary.Store(sum)
	return sum
}

// ftsQuery returns the full-text query of a posting's word in one column: the word (a hyphenated or
// dotted one as the phrase of its parts, which hold letters and digits alone), and for a prefix
// posting any word it starts.
func (k postingKey) ftsQuery(column string) string {
	q := column + ` : "` + k.phrase + `"`
	if k.prefix {
		q += "*"
	}
	return q
}

// keptPosting returns the posting kept for the key, or nil. The caller holds the index's lock for
// reading.
func (idx *searchIndex) keptPosting(key postingKey) *posting {
	idx.pmu.Lock()
	defer idx.pmu.Unlock()
	p := idx.postings[key]
	if p != nil {
		idx.clock++
		p.used = idx.clock
	}
	return p
}

// keepPosting keeps a posting read for the key in place of the one before, forgetting the postings
// used least recently when the kept ones hold more than maxPostingEntries documents. The caller holds
// the index's lock for reading.
func (idx *searchIndex) keepPosting(key postingKey, p *posting) {
	idx.pmu.Lock()
	defer idx.pmu.Unlock()
	if old := idx.postings[key]; old != nil {
		idx.postingEntries -= len(old.ords)
	}
	idx.clock++
	p.used = idx.clock
	idx.postings[key] = p
	idx.postingEntries += len(p.ords)
	if idx.postingEntries <= maxPostingEntries {
		return
	}
	keys := make([]postingKey, 0, len(idx.postings))
	for k := range idx.postings {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b postingKey) int { return cmp.Compare(idx.postings[a].used, idx.postings[b].used) })
	for _, k := range keys {
		if idx.postingEntries <= maxPostingEntries*3/4 || k == key {
			break
		}
		idx.postingEntries -= len(idx.postings[k].ords)
		delete(idx.postings, k)
	}
}

// forgetPostings forgets every posting kept. The caller holds the index's lock for writing.
func (idx *searchIndex) forgetPostings() {
	idx.pmu.Lock()
	defer idx.pmu.Unlock()
	idx.postings, idx.postingEntries = map[postingKey]*posting{}, 0
}

// readPosting reads from the audience's full-text index the documents that hold the key's word and
// that the index in memory has read since the old posting was (all of them when old is nil), and
// keeps the posting they make with old's documents that are not gone. The caller holds the index's
// lock for reading (and the directory's gate).
func (d *Directory) readPosting(ctx context.Context, key postingKey, old *posting) (*posting, error) {
	idx := &d.search
	var from int64
	if old != nil {
		from = old.upto
	}
	tx, err := d.readers.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	table := fmt.Sprintf("search_text_%d", key.bit)
	var found []int64 // each document's ID times 8 plus the number of a column that holds the word
	for c, col := range textColumns {
		if key.noPeople && c == peopleColumn {
			continue
		}
		rows, err := tx.QueryContext(ctx, "SELECT rowid FROM "+table+" WHERE "+table+" MATCH ? AND rowid > ? AND rowid <= ?",
			key.ftsQuery(col.name), from, idx.lastID)
		if err != nil {
			return nil, fmt.Errorf("search the words: %w", err)
		}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, err
			}
			found = append(found, id<<3|int64(c))
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("search the words: %w", err)
		}
	}
	slices.Sort(found)
	p := &posting{bit: key.bit, upto: idx.lastID}
	if old != nil {
		n := len(old.ords) + len(found)
		p.ords, p.weights = make([]int32, 0, n), make([]float32, 0, n)
		for i, o := range old.ords {
			if idx.aud[o] != 0 {
				p.ords, p.weights = append(p.ords, o), append(p.weights, old.weights[i])
			}
		}
	}
	for i := 0; i < len(found); {
		id, columns := found[i]>>3, uint8(0)
		for ; i < len(found) && found[i]>>3 == id; i++ {
			columns |= 1 << (found[i] & 7)
		}
		if m := idx.docs[id]; m != nil {
			p.ords, p.weights = append(p.ords, m.ord), append(p.weights, idx.weightOf(m, columns))
		}
	}
	idx.keepPosting(key, p)
	return p, nil
}

// weightOf returns the weight of a word in a document that holds it in the columns given (a bit a
// column): the columns' weights, those of the name and the organisation's name normalised by their
// length against the average (a word in a short name counts more than one in a long name). The
// caller holds the index's lock for reading.
func (idx *searchIndex) weightOf(m *memDoc, columns uint8) float32 {
	var w float32
	for c, col := range textColumns {
		if columns&(1<<c) == 0 {
			continue
		}
		norm := float32(1)
		switch c {
		case 0:
			norm = lengthNorm(m.nameWords, idx.avgNameWords)
		case 2:
			norm = lengthNorm(m.orgWords, idx.avgOrgWords)
		}
		w += col.weight * norm
	}
	return w
}

// lengthNorm is BM25's weight of a word held once in a column of n words, where columns average avg.
func lengthNorm(n uint16, avg float32) float32 {
	if avg <= 0 {
		return 1
	}
	return (rankK1 + 1) / (1 + rankK1*(1-rankB+rankB*float32(n)/avg))
}

// wordCount returns the number of words in a text as the full-text index splits it (runs of letters
// and digits), at most 65,535.
func wordCount(text string) uint16 {
	return uint16(min(len(strings.FieldsFunc(text, notWordRune)), 1<<16-1))
}
