package dirsvc_test

import (
	"testing"

	"github.com/dirsvc/dirsvc"
)

func TestCheckSecret(t *testing.T) {
	for _, c := range []struct {
		name, secret string
		ok           bool
	}{
		{"a random base64 secret passes", "q8Vd0wR3Lk1bZ9xT4mNc7sPa2yEu6hJf", true},
		{"a phrase of many letters passes", "a-replication-token-for-tests", true},
		{"a short secret fails", "q8Vd0wR3Lk1bZ9x", false},
		{"one repeated letter fails", "aaaaaaaaaaaaaaaa", false},
		{"few distinct characters fail", "abababababcdcdcdcdcd", false},
		{"a run fails", "0123456789abcdefghij", false},
		{"a descending run fails", "zyxwvutsrqponmlkjihg", false},
		{"a repetition fails", "qwertyuiopqwertyuiop", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := dirsvc.CheckSecret(c.secret)
			if got := err == nil; got != c.ok {
				t.Fatalf("CheckSecret(%q)=%v, want ok=%v", c.secret, err, c.ok)
			}
		})
	}
}
