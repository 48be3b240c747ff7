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
	count map[string]int
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
	v := &vocabulary{count: map[string]int{}}
	for rows.Next() {
		var term string
		var n int
		if err := rows.Scan(&term, &n); err != nil {
			return nil, err
		}
		v.count[term] = n
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

// wordCounts counts the documents a viewer finds by its words.
type wordCounts interface {
	// docs returns how many documents the viewer finds hold the term.
	docs(term string) (int, error)
	// starts reports whether a document the viewer finds holds a term that starts with word.
	starts(word string) (bool, error)
}

// docs returns how many of the audience's documents hold the term.
func (v *vocabulary) docs(term string) (int, error) { return v.count[term], nil }

// starts reports whether one of the audience's documents holds a term that starts with word.
func (v *vocabulary) starts(word string) (bool, error) {
	i, _ := slices.BinarySearch(v.terms, word)
	return i < len(v.terms) && strings.HasPrefix(v.terms[i], word), nil
}

// correct returns the term a word was most likely meant as, by what counts says the viewer finds:
// the word itself when a document holds it (or, for a word being typed, starts a term), else the
// most common term one edit away, else the word unchanged. The vocabulary gives the candidates, so
// counts must find no term that the vocabulary lacks.
func (v *vocabulary) correct(word string, typing bool, counts wordCounts) (string, error) {
	if utf8.RuneCountInString(word) < minCorrected {
		return word, nil
	}
	if n, err := counts.docs(word); err != nil || n > 0 {
		return word, err
	}
	if typing {
		if ok, err := counts.starts(word); err != nil || ok {
			return word, err
		}
	}
	var candidates []string
	consider := func(t string) {
		if v.count[t] > 0 && oneEdit(word, t) && !slices.Contains(candidates, t) {
			candidates = append(candidates, t)
		}
	}
	v.deletedTo(word, consider) // a letter extra in the word
	for _, del := range deletions(word) {
		consider(del)              // a letter missing in the word
		v.deletedTo(del, consider) // a letter changed, or two swapped
	}
	best, bestDocs := word, 0
	for _, t := range candidates {
		n, err := counts.docs(t)
		if err != nil {
			return word, err
		}
		if n > bestDocs || n == bestDocs && n > 0 && t < best {
			best, bestDocs = t, n
		}
	}
	return best, nil
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
