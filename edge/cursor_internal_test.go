package edge

import (
	"strconv"
	"testing"
)

// TestFeedPositionsOpenForTheirReaderOnly holds the feed's one-block cursors to the positions they
// name, for the query key they were sealed for and no other, and keeps the cursors of the first
// layout (seal of the sequence as text), which feed pages gave before, opening as they did.
func TestFeedPositionsOpenForTheirReaderOnly(t *testing.T) {
	k := newCursorKeys([]byte("a secret of the deployment"))
	key, other := queryKey("demo", "partner", "changes"), queryKey("demo", "public", "changes")
	sl := k.sealer(key)
	seen := map[string]bool{}
	for _, seq := range []int64{0, 1, 42, 9007199254740991, 1<<63 - 1, 12, 1} {
		got := sl.seal(seq)
		if back, ok := k.openSeq(got, key); !ok || back != seq {
			t.Fatalf("the cursor of %d opens to %d, %v", seq, back, ok)
		}
		if _, ok := k.openSeq(got, other); ok {
			t.Fatalf("the cursor of %d opens for another reader", seq)
		}
		if k.sealer(other).seal(seq) == got {
			t.Fatalf("another reader's cursor of %d is the same", seq)
		}
		seen[got] = true
		// Every altered character of the cursor is refused.
		for i := range got {
			b := []byte(got)
			b[i] ^= 1
			if back, ok := k.openSeq(string(b), key); ok {
				t.Fatalf("%s altered at %d opens to %d", got, i, back)
			}
		}
		// The first layout.
		old := k.seal(strconv.FormatInt(seq, 10), key)
		if back, ok := k.openSeq(old, key); !ok || back != seq {
			t.Fatalf("the first layout's cursor of %d opens to %d, %v", seq, back, ok)
		}
		if _, ok := k.openSeq(old, other); ok {
			t.Fatalf("the first layout's cursor of %d opens for another reader", seq)
		}
	}
	if len(seen) != 6 {
		t.Fatalf("%d distinct cursors of 6 positions", len(seen))
	}
	// A list cursor (a public ID) is no feed position.
	if _, ok := k.openSeq(k.seal("svc_gp", key), key); ok {
		t.Fatal("a list cursor opens as a feed position")
	}
	// Another deployment's cursor is refused.
	if _, ok := newCursorKeys([]byte("another secret")).openSeq(sl.seal(7), key); ok {
		t.Fatal("another deployment's cursor opens")
	}
}
