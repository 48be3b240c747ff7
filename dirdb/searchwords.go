package dirdb

import (
	"context"
	"errors"
	"slices"
	"strings"
	"unicode"

	"github.com/dirsvc/dirsvc"
)

// A search's words are read for the viewer who asks: a misspelt word is corrected only to a word that
// a document the viewer may find holds, and a place written at the end of the words is read only
// from the localities of the services the viewer may find. An audience's full-text index, its
// vocabulary and its localities are the audience's; a client the directory narrowed (to areas,
// categories or record kinds) finds a part of them, and what lies outside that part must answer
// exactly as what does not exist. So for a narrowed viewer the tier's vocabulary only proposes the
// candidates, and each is counted over the documents inside the narrowing, through its posting.

// maxQueryWords bounds the words of a search that go to the full-text index.
const maxQueryWords = 12

// queryWords splits a search's text into its words as written, each a list of its parts (a
// hyphenated or dotted word has several), lower-cased; at most maxQueryWords.
func queryWords(text string) [][]string {
	var out [][]string
	for _, chunk := range strings.Fields(strings.ToLower(text)) {
		parts := strings.FieldsFunc(chunk, notWordRune)
		if len(parts) > 0 {
			out = append(out, parts)
		}
		if len(out) == maxQueryWords {
			break
		}
	}
	return out
}

// notWordRune reports whether a character splits words, as the full-text index splits them.
func notWordRune(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }

// placeWords are the words that may come before a place written in a search's words.
var placeWords = []string{"in", "near", "at", "around"}

// peopleSearchable reports whether a viewer may find services by the words of the practitioners who
// practise there (their names, and the specialties of their roles): only when its narrowing lets it
// read both practitioners and the roles that tie them to services.
func peopleSearchable(n dirsvc.Narrowing) bool {
	return n.AllowsKind(dirsvc.KindPractitioner) && n.AllowsKind(dirsvc.KindRole)
}

// placeNarrowed reports whether a narrowing leaves some of its audience's documents out of search.
func placeNarrowed(n dirsvc.Narrowing) bool { return len(n.Areas)+len(n.Categories) > 0 }

// errNotKept is a postingSource's answer for a posting the index does not keep, or keeps behind the
// documents.
var errNotKept = errors.New("the posting is not kept")

// postingSource gives the posting of a key: the one kept (keptPosting), or one read from the file.
type postingSource func(ctx context.Context, key postingKey) (*posting, error)

// keptSource gives the postings the index keeps up to its documents, and errNotKept for others. The
// caller holds the index's lock for reading.
func (idx *searchIndex) keptSource(_ context.Context, key postingKey) (*posting, error) {
	p := idx.keptPosting(key)
	if p == nil || p.upto < idx.lastID {
		return nil, errNotKept
	}
	return p, nil
}

// readSource gives the postings the index keeps up to its documents, reading the others from the
// file (and keeping them). The caller holds the index's lock for reading, and the directory's gate.
func (d *Directory) readSource(ctx context.Context, key postingKey) (*posting, error) {
	p := d.search.keptPosting(key)
	if p == nil || p.upto < d.search.lastID {
		return d.readPosting(ctx, key, p)
	}
	return p, nil
}

// wordReading is what reading a search's words depends on: the viewer's audience and narrowing, and
// where its postings come from.
type wordReading struct {
	bit      int64
	n        dirsvc.Narrowing
	noPeople bool
	source   postingSource
}

// newWordReading returns the reading of the viewer's words from source.
func newWordReading(v dirsvc.Viewer, source postingSource) *wordReading {
	return &wordReading{bit: audienceBit(v.Audience), n: v.Narrowing, noPeople: !peopleSearchable(v.Narrowing), source: source}
}

// key returns the key of the posting of a word (its parts joined by spaces) for the viewer.
func (wr *wordReading) key(phrase string, prefix bool) postingKey {
	return postingKey{bit: wr.bit, phrase: phrase, prefix: prefix, noPeople: wr.noPeople}
}

// exact reports whether the audience's vocabulary counts what the viewer finds: nothing of the
// audience's documents, and none of their words, is outside its narrowing.
func (wr *wordReading) exact() bool { return !placeNarrowed(wr.n) && !wr.noPeople }

// readWords reads a search's words for the viewer: spelling corrections (when asked) from the
// words the viewer finds, then a place written at their end ("physio in ultimo") from the
// localities of the services the viewer finds. It returns the words left to search for. The caller
// holds the index's lock for reading.
func (d *Directory) readWords(ctx context.Context, wr *wordReading, q *dirsvc.SearchQuery) ([][]string, dirsvc.QueryReading, error) {
	idx := &d.search
	words := queryWords(q.Text)
	r := dirsvc.QueryReading{Words: []string{}, Corrections: []dirsvc.Correction{}}
	if q.Spell && len(words) > 0 {
		v, err := idx.vocabulary(ctx, d, wr.bit)
		if err != nil {
			return nil, r, err
		}
		var counts wordCounts = v
		if !wr.exact() {
			counts = &narrowedCounts{v: v, idx: idx, ctx: ctx, wr: wr}
		}
		for i, w := range words {
			for j, part := range w {
				to, err := v.correct(part, i == len(words)-1 && j == len(w)-1, counts)
				if err != nil {
					return nil, r, err
				}
				if to != part {
					r.Corrections = append(r.Corrections, dirsvc.Correction{From: part, To: to})
					w[j] = to
				}
			}
		}
	}
	places := idx.localitiesOf(wr.bit, wr.n)
	if q.Place != nil {
		// A locality asked for by name: its postcodes in the gazetteer and in the sites seen.
		areas := slices.Clone(q.Place.Areas)
		for _, a := range places[strings.ToLower(q.Place.Name)] {
			if !slices.Contains(areas, a) {
				areas = append(areas, a)
			}
		}
		slices.Sort(areas)
		r.Place = &dirsvc.PlaceRead{Name: q.Place.Name, Areas: areas}
	}
	for n := min(3, len(words)); n >= 1 && q.Place == nil; n-- {
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

// narrowedCounts counts the documents a narrowed viewer finds by a term: none when its audience's
// vocabulary holds no such term, else those of the term's posting inside the narrowing.
type narrowedCounts struct {
	v   *vocabulary
	idx *searchIndex
	ctx context.Context
	wr  *wordReading
}

func (c *narrowedCounts) docs(term string) (int, error) {
	if n, _ := c.v.docs(term); n == 0 {
		return 0, nil
	}
	return c.inside(term, false)
}

func (c *narrowedCounts) starts(word string) (bool, error) {
	if ok, _ := c.v.starts(word); !ok {
		return false, nil
	}
	n, err := c.inside(word, true)
	return n > 0, err
}

// inside counts the documents of a term's posting (a prefix's, for any term it starts) that the
// viewer finds. The caller holds the index's lock for reading.
func (c *narrowedCounts) inside(term string, prefix bool) (int, error) {
	p, err := c.wr.source(c.ctx, c.wr.key(term, prefix))
	if err != nil {
		return 0, err
	}
	n, aud := 0, uint8(c.wr.bit)
	for _, o := range p.ords {
		if c.idx.aud[o]&aud != 0 && insideSearch(c.idx.byOrd[o], c.wr.n) {
			n++
		}
	}
	return n, nil
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

// maxNarrowedLists bounds the narrowings whose localities the index keeps: past it, those kept are
// forgotten.
const maxNarrowedLists = 32

// narrowedKey names what the index keeps for an audience's viewers narrowed to the same areas and
// categories.
func narrowedKey(bit int64, n dirsvc.Narrowing) string {
	var b strings.Builder
	b.WriteByte(byte('0' + bit))
	for _, list := range [][]string{n.Areas, n.Categories} {
		b.WriteByte('|')
		b.WriteString(strings.Join(list, ","))
	}
	return b.String()
}

// localitiesOf returns the localities of the sites of the services the audience's viewers of the
// narrowing find, lower-cased, with the postcode areas each is found in. The caller holds the
// index's lock for reading.
func (idx *searchIndex) localitiesOf(bit int64, n dirsvc.Narrowing) map[string][]string {
	key := ""
	if placeNarrowed(n) {
		key = narrowedKey(bit, n)
	}
	idx.vmu.Lock()
	defer idx.vmu.Unlock()
	if key == "" {
		if m := idx.localities[bit]; m != nil {
			return m
		}
	} else if m := idx.narrowedPlaces[key]; m != nil {
		return m
	}
	m := map[string][]string{}
	for _, doc := range idx.docs {
		if doc.audiences&bit == 0 || doc.Locality == "" || doc.Postcode == "" || !insideSearch(doc, n) {
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
	if key == "" {
		idx.localities[bit] = m
		return m
	}
	if len(idx.narrowedPlaces) >= maxNarrowedLists {
		clear(idx.narrowedPlaces)
	}
	idx.narrowedPlaces[key] = m
	return m
}

// keptWords reads a search's words for the viewer (readWords) from what the index keeps, and
// returns the postings of the words left (the last word also as the start of a longer one); ok is
// false when it keeps too little: the vocabulary (to correct spelling) or a posting, or a posting
// behind the documents. The caller holds the index's lock for reading.
func (d *Directory) keptWords(ctx context.Context, v dirsvc.Viewer, q *dirsvc.SearchQuery) (words [][]string, r dirsvc.QueryReading, ps []*posting, ok bool, err error) {
	idx := &d.search
	wr := newWordReading(v, idx.keptSource)
	if q.Spell && len(queryWords(q.Text)) > 0 {
		idx.vmu.Lock()
		kept := idx.vocab[wr.bit] != nil
		idx.vmu.Unlock()
		if !kept {
			return nil, r, nil, false, nil
		}
	}
	words, r, err = d.readWords(ctx, wr, q)
	if errors.Is(err, errNotKept) {
		return nil, r, nil, false, nil
	} else if err != nil {
		return nil, r, nil, false, err
	}
	for i, w := range words {
		p, err := wr.source(ctx, wr.key(strings.Join(w, " "), i == len(words)-1))
		if errors.Is(err, errNotKept) {
			return nil, r, nil, false, nil
		} else if err != nil {
			return nil, r, nil, false, err
		}
		ps = append(ps, p)
	}
	return words, r, ps, true, nil
}

// keepWords reads from the file what keptWords found missing (the vocabulary, and the postings not
// kept or behind the documents), under the directory's gate.
func (d *Directory) keepWords(ctx context.Context, v dirsvc.Viewer, q *dirsvc.SearchQuery) error {
	idx := &d.search
	return d.longRead(ctx, func(ctx context.Context) error {
		idx.mu.RLock()
		defer idx.mu.RUnlock()
		wr := newWordReading(v, d.readSource)
		words, _, err := d.readWords(ctx, wr, q)
		if err != nil {
			return err
		}
		for i, w := range words {
			if _, err := wr.source(ctx, wr.key(strings.Join(w, " "), i == len(words)-1)); err != nil {
				return err
			}
		}
		return nil
	})
}
