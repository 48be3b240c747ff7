package dirsvc_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/dirsvc/dirsvc"
)

// An audience set is encoded as the JSON array of its List, whatever bits it holds, and reads back
// as the same tiers.
func TestAudiencesMarshalJSON(t *testing.T) {
	for s := range dirsvc.Audiences(1 << 6) {
		want, err := json.Marshal(s.List())
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.Marshal(s)
		if err != nil || string(got) != string(want) {
			t.Errorf("%b: %s, %v; want %s", s, got, err, want)
		}
		var back dirsvc.Audiences
		if err := json.Unmarshal(got, &back); err != nil || !slices.Equal(back.List(), s.List()) {
			t.Errorf("%b: read back as %v, %v", s, back.List(), err)
		}
	}
}
