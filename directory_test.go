package dirsvc

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// TestValidSlugIsItsGrammar holds ValidSlug to the grammar of a slug written as a regular
// expression: the known cases, then random strings over letters, digits, hyphens and a few
// characters a slug may not have, of every length around the bounds.
func TestValidSlugIsItsGrammar(t *testing.T) {
	grammar := regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?$`)
	for _, c := range []struct {
		slug string
		ok   bool
	}{
		{"demo", true}, {"a", true}, {"9", true}, {"ops-directory", true}, {"a-b-c", true}, {strings.Repeat("a", 40), true},
		{"", false}, {"-", false}, {"-a", false}, {"a-", false}, {"Demo", false}, {"a/b", false}, {"a_b", false},
		{"a.b", false}, {strings.Repeat("a", 41), false}, {"é", false}, {"a\x00", false},
	} {
		if got := ValidSlug(c.slug); got != c.ok || grammar.MatchString(c.slug) != c.ok {
			t.Errorf("ValidSlug(%q) = %v, the grammar says %v, want %v", c.slug, got, grammar.MatchString(c.slug), c.ok)
		}
	}
	// Half the strings are made of a slug's characters only, so that many of them are slugs.
	alphabets := []string{"az09-m-5", "az09-m-5A_/.é"}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 20000 {
		alphabet := alphabets[i%2]
		var b strings.Builder
		for range rng.IntN(43) {
			b.WriteByte(alphabet[rng.IntN(len(alphabet))])
		}
		if s := b.String(); ValidSlug(s) != grammar.MatchString(s) {
			t.Fatalf("ValidSlug(%q) = %v, the grammar says otherwise", s, ValidSlug(s))
		}
	}
}
