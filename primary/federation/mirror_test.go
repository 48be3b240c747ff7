package federation

import (
	"testing"

	"github.com/dirsvc/dirsvc"
)

// TestMirroredRecordsReachNoWiderAudience holds the audience rule: by default what a client of a
// tier harvested is published to that tier alone (every tier for a public client), and a configured
// set that reaches a tier below the client's is refused.
func TestMirroredRecordsReachNoWiderAudience(t *testing.T) {
	pub, prof, part := dirsvc.Public, dirsvc.Professional, dirsvc.Partner
	for _, c := range []struct {
		name       string
		configured dirsvc.Audiences
		tier       dirsvc.Audience
		want       dirsvc.Audiences // 0: refused
	}{
		{"a partner harvest is for partners", 0, part, dirsvc.AudiencesOf(part)},
		{"a professional harvest is for professionals", 0, prof, dirsvc.AudiencesOf(prof)},
		{"a public harvest is for everyone", 0, pub, dirsvc.Everyone},
		{"a partner harvest shown to the public is refused", dirsvc.AudiencesOf(pub, part), part, 0},
		{"a partner harvest shown to professionals is refused", dirsvc.AudiencesOf(prof, part), part, 0},
		{"a professional harvest may be shown to partners too", dirsvc.AudiencesOf(prof, part), prof, dirsvc.AudiencesOf(prof, part)},
		{"a public harvest may be kept from the public", dirsvc.AudiencesOf(part), pub, dirsvc.AudiencesOf(part)},
	} {
		got, err := publishedTo(c.configured, c.tier)
		if c.want == 0 {
			if err == nil || dirsvc.ErrorCode(err) != dirsvc.EInvalid {
				t.Errorf("%s: %v, %v; want refused", c.name, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: %v, %v; want %v", c.name, got, err, c.want)
		}
	}
}

// TestCoalesceKeepsEachRecordsLastChange keeps the last change of each record and puts records
// before tombstones, in kind order.
func TestCoalesceKeepsEachRecordsLastChange(t *testing.T) {
	svc := &dirsvc.Service{Meta: dirsvc.Meta{PublicID: "svc_a"}}
	org := &dirsvc.Organisation{Meta: dirsvc.Meta{PublicID: "org_a"}}
	got := coalesce([]dirsvc.MirrorOp{
		{PublicID: "svc_b", Tombstone: dirsvc.EventClosed},
		{PublicID: "svc_a", Tombstone: dirsvc.EventClosed},
		{PublicID: "svc_a", Record: svc},
		{PublicID: "org_a", Record: org},
		{PublicID: "svc_b", Tombstone: dirsvc.EventDeleted},
	})
	want := []string{"org_a record", "svc_a record", "svc_b deleted"}
	if len(got) != len(want) {
		t.Fatalf("coalesce kept %d changes, want %d", len(got), len(want))
	}
	for i, op := range got {
		s := op.PublicID + " " + op.Tombstone
		if op.Record != nil {
			s = op.PublicID + " record"
		}
		if s != want[i] {
			t.Errorf("change %d is %q, want %q", i, s, want[i])
		}
	}
}
