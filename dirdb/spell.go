package dirdb

import (
	"cmp"
	"context"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"unicode/utf8"
)

// vocabulary is the terms of one audience's full-text index with how many documents hold each, and
// an index of their one-letter deletions: a word a letter away from a term (a letter missing, extra,
// changed, or two letters swapped) shares a deletion with it.
type vocabulary struct {
	docs  map[string]int
	terms []string // sorted
	// The deletions of the terms of minCorrected letters or more, by their hash (under seed), sorted:
	// an audience's vocabulary is tens of thousands of terms, and its deletions held as strings were
	// hundreds of thousands of small objects that every garbage collection marked. A deletion that
	// shares its hash with another word's only adds a candidate, which correct checks like any other.
	seed    maphash.Seed
	deletes []deletion
}

// deletion is a term (its index in vocabulary.terms) with one of its letters left out (its hash).
type deletion struct {
	hash uint64
	term int32
}

// minCorrected is the shortest word spelling correction changes: shorter words are too often
// another word one letter away.
const minCorrected = 4

// loadVocabulary reads an audience's vocabulary from its index.
func (d *Directory) loadVocabulary(ctx context.Context, bit int64) (*vocabulary, error) {
	rows, err := d.readers.QueryContext(ctx, fmt.Sprintf("SELECT term, doc FROM search_vocab_%d", bit))
	if err != nil {
		return nil, fmt.Errorf("read the vocabulary: %w", err)
	}
	defer rows.Close()
	v := &vocabulary{docs: map[string]int{}}
	for rows.Next() {
		var term string
		var n int
		if err := rows.Scan(&term, &n); err != nil {
			return nil, err
		}
		v.docs[term] = n
		v.terms = append(v.terms, term)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.Sort(v.terms)
	v.indexDeletions()
	return v, nil
}

// indexDeletions makes the index of the terms' deletions.
func (v *vocabulary) indexDeletions() {
	v.seed, v.deletes = maphash.MakeSeed(), v.deletes[:0]
	var del []byte
	for i, t := range v.terms {
		if utf8.RuneCountInString(t) < minCorrected {
			continue
		}
		for at := 0; at < len(t); {
			_, size := utf8.DecodeRuneInString(t[at:])
			del = append(append(del[:0], t[:at]...), t[at+size:]...)
			v.deletes = append(v.deletes, deletion{maphash.Bytes(v.seed, del), int32(i)})
			at += size
		}
	}
	slices.SortFunc(v.deletes, func(a, b deletion) int { return cmp.Compare(a.hash, b.hash) })
}

// deletedTo calls fn with each term that del is a deletion of (and, rarely, a term of a deletion
// with the same hash).
func (v *vocabulary) deletedTo(del string, fn func(term string)) {
	h := maphash.String(v.seed, del)
	i, _ := slices.BinarySearchFunc(v.deletes, h, func(d deletion, h uint64) int { return cmp.Compare(d.hash, h) })
	for ; i < len(v.deletes) && v.deletes[i].hash == h; i++ {
		fn(v.terms[v.deletes[i].term])
	}
}

// deletions returns the word with each one of its letters left out.
func deletions(w string) []string {
	rs := []rune(w)
	out := make([]string, 0, len(rs))
	for i := range rs {
		out = append(out, string(rs[:i])+string(rs[i+1:]))
	}
	return out
}

// correct returns the term of the vocabulary a word was most likely meant as: the word itself when
// a document holds it (or, for a word being typed, starts a term), else the most common term one
// edit away, else the word unchanged.
func (v *vocabulary) correct(word string, typing bool) string {
	if v.docs[word] > 0 || utf8.RuneCountInString(word) < minCorrected {
		return word
	}
	if i, _ := slices.BinarySearch(v.terms, word); typing && i < len(v.terms) && strings.HasPrefix(v.terms[i], word) {
		return word
	}
	best, bestDocs := word, 0
	consider := func(t string) {
		if n := v.docs[t]; n > bestDocs && oneEdit(word, t) || n == bestDocs && n > 0 && t < best && oneEdit(word, t) {
			best, bestDocs = t, n
		}
	}
	consider(word)
	v.deletedTo(word, consider) // a letter extra in the word
	for _, del := range deletions(word) {
		if v.docs[del] > 0 { // a letter missing in the word
			consider(del)
		}
		v.deletedTo(del, consider) // a letter changed, or two swapped
	}
	return best
}

// oneEdit reports whether a and b differ by one letter inserted, deleted or changed, or two adjacent
// letters swapped.
func oneEdit(a, b string) bool {
	x, y := []rune(a), []rune(b)
	if len(x) > len(y) {
		x, y = y, x
	}
	switch len(y) - len(x) {
	case 0:
		var diff []int
		for i := range x {
			if x[i] != y[i] {
				diff = append(diff, i)
			}
		}
		return len(diff) == 1 || len(diff) == 2 && diff[1] == diff[0]+1 && x[diff[0]] == y[diff[1]] && x[diff[1]] == y[diff[0]]
	case 1:
		i := 0
		for i < len(x) && x[i] == y[i] {
			i++
		}
		return string(x[i:]) == string(y[i+1:])
	}
	return false
}
