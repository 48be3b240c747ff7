package dirsvc_test

import (
	"testing"

	"github.com/dirsvc/dirsvc"
)

func TestUUIDs(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		id := dirsvc.NewUUID()
		if !dirsvc.ValidUUID(id) || id[14] != '4' || !('8' <= id[19] && id[19] <= '9' || 'a' <= id[19] && id[19] <= 'b') || seen[id] {
			t.Fatalf("NewUUID() = %q", id)
		}
		seen[id] = true
	}
	for _, bad := range []string{"", "0f8fad5b-d9cb-469f-a165-70867728950", "0F8FAD5B-D9CB-469F-A165-70867728950E",
		"0f8fad5bxd9cb-469f-a165-70867728950e", "0f8fad5b-d9cb-469f-a165-70867728950g", "../../../../etc/passwd-aaaaaaaaaaaaaa"} {
		if dirsvc.ValidUUID(bad) {
			t.Errorf("ValidUUID(%q) = true", bad)
		}
	}
}
