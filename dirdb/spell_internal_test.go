package dirdb

import (
	"slices"
	"testing"
)

// TestCorrectFindsEveryKindOfOneEdit checks the deletion index: a letter missing, extra, changed or
// two swapped find the term, the most common term wins and ties go to the first in order, words
// of other scripts are taken letter by letter, and words two edits away are left as they are.
func TestCorrectFindsEveryKindOfOneEdit(t *testing.T) {
	v := &vocabulary{count: map[string]int{"clinic": 40, "cynic": 2, "dental": 30, "rental": 30,
		"physio": 9, "ärztin": 3, "café": 5}}
	for term := range v.count {
		v.terms = append(v.terms, term)
	}
	slices.Sort(v.terms)
	v.indexDeletions()
	for _, c := range []struct{ word, want string }{
		{"clinc", "clinic"},   // a letter missing
		{"cliniic", "clinic"}, // a letter extra
		{"clinik", "clinic"},  // a letter changed
		{"cilnic", "clinic"},  // two letters swapped
		{"clinic", "clinic"},  // a term
		{"bental", "dental"},  // two terms one letter away, as common: the first in order
		{"arztin", "ärztin"},  // a letter of another script changed
		{"ärtzin", "ärztin"},  // and swapped
		{"cafe", "café"},
		{"clnk", "clnk"},     // two edits away
		{"phsyoo", "phsyoo"}, // two edits away
	} {
		if got, _ := v.correct(c.word, false, v); got != c.want {
			t.Errorf("correct(%q) = %q, want %q", c.word, got, c.want)
		}
	}
}
