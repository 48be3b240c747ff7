package federation_test

import (
	"net/http"
	"testing"

	"github.com/dirsvc/dirsvc"
)

// BenchmarkForwardProposal forwards proposals to the primary's handler over loopback HTTP, as an
// aggregator does: each checks the client's sight of the record, its canonical form and the text,
// and stores the item with its first history step.
func BenchmarkForwardProposal(b *testing.B) {
	s := newFedService(b)
	c, _ := s.clientOver(b, dirsvc.Grant{Tier: dirsvc.Partner, Scopes: []string{dirsvc.ScopeFederationHarvest},
		Limit: dirsvc.RateLimit{PerMinute: 1 << 30, PerDay: 1 << 30}}, http.DefaultTransport)
	body := map[string]any{"publicId": "svc_counsel", "changes": map[string]string{"description": "Counselling for families."},
		"message": "From the state directory."}
	for b.Loop() {
		if a := send(b, c, "POST", s.proposals(), body); a.status != http.StatusCreated {
			b.Fatalf("%d %s", a.status, a.body)
		}
	}
}
