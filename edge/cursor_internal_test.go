package edge

import (
	"testing"
)

// TestASealerSealsAsSealDoes holds the sealer a feed page uses, which keeps its HMACs from one cursor
// to the next, to the cursors seal gives, and those cursors to the positions they name.
func TestASealerSealsAsSealDoes(t *testing.T) {
	k := newCursorKeys([]byte("a secret of the deployment"))
	key := queryKey("demo", "partner", "changes")
	sl := k.sealer(key)
	for _, pos := range []string{"0", "1", "42", "9007199254740991", "svc_gp", "12", "1"} {
		got, want := sl.seal(pos), k.seal(pos, key)
		if got != want {
			t.Fatalf("sealer gives %s for %s, seal %s", got, pos, want)
		}
		if back, ok := k.openPosition(got, key); !ok || back != pos {
			t.Fatalf("the cursor of %s opens to %q, %v", pos, back, ok)
		}
		if _, ok := k.openPosition(got, queryKey("demo", "public", "changes")); ok {
			t.Fatalf("the cursor of %s opens for another reader", pos)
		}
	}
}
