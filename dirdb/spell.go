package dirdb

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// vocabulary is the terms of one audience's full-text index with how many documents hold each, and
// an index of their one-letter deletions: a word a letter away from a term (a letter missing, extra,
// changed, or two letters swapped) shares a deletion with it.
type vocabulary struct {
	docs    map[string]int
	terms   []string // sorted
	deletes map[string][]string
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
	v := &vocabulary{docs: map[string]int{}, deletes: map[string][]string{}}
	for rows.Next() {
		var term string
		var n int
		if err := rows.Scan(&term, &n); err != nil {
			return nil, err
		}
		v.docs[term] = n
		v.terms = append(v.terms, term)
		if utf8.RuneCountInString(term) >= minCorrected {
			for _, del := range deletions(term) {
				v.deletes[del] = append(v.deletes[del], term)
			}
		}
	}
	slices.Sort(v.terms)
	return v, rows.Err()
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
	for _, t := range v.deletes[word] { // a letter extra in the word
		consider(t)
	}
	for _, del := range deletions(word) {
		if v.docs[del] > 0 { // a letter missing in the word
			consider(del)
		}
		for _, t := range v.deletes[del] { // a letter changed, or two swapped
			consider(t)
		}
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
