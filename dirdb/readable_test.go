package dirdb_test

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
	"testing"

	"github.com/dirsvc/dirsvc"
)

// TestReadableAgreesWithRecord: for every record of the small directory, and ids it does not hold,
// Readable says an id is readable exactly when a read of it (Record) gives the viewer a view, for
// every audience served and for narrowed viewers, whether asked about all at once, one by one or
// many times over.
func TestReadableAgreesWithRecord(t *testing.T) {
	s := MustOpenStore(t)
	MustImport(t, s, readFixture(t))
	ctx := context.Background()
	d, err := s.Directory(ctx, "small")
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{"svc_missing", "org_missing", "nokind", "", "xyz_1"}
	for _, line := range strings.Split(readFixtureString(t), "\n") {
		var r struct {
			PublicID string `json:"publicId"`
		}
		if json.Unmarshal([]byte(line), &r) == nil && r.PublicID != "" {
			ids = append(ids, r.PublicID)
		}
	}
	var viewers []dirsvc.Viewer
	for _, a := range dirsvc.ServedAudiences {
		viewers = append(viewers, dirsvc.Viewer{Audience: a})
	}
	viewers = append(viewers,
		dirsvc.Viewer{Audience: dirsvc.Partner, Narrowing: dirsvc.Narrowing{Areas: []string{"postcode:2250"}}},
		dirsvc.Viewer{Audience: dirsvc.Partner, Narrowing: dirsvc.Narrowing{Categories: []string{"mental_health"}}},
		dirsvc.Viewer{Audience: dirsvc.Partner, Narrowing: dirsvc.Narrowing{Kinds: []dirsvc.Kind{dirsvc.KindOrganisation}}})
	for _, v := range viewers {
		all, err := d.Readable(ctx, v, ids)
		if err != nil {
			t.Fatal(err)
		}
		readable, hidden := 0, 0
		for _, id := range ids {
			want := false
			st, err := d.Record(ctx, id, v)
			if err == nil {
				want = st.View != nil
			} else if dirsvc.ErrorCode(err) != dirsvc.ENotFound {
				t.Fatal(err)
			}
			one, err := d.Readable(ctx, v, []string{id})
			if err != nil {
				t.Fatal(err)
			}
			if all[id] != want || one[id] != want {
				t.Errorf("%+v: %s readable %v asked with all, %v alone; a read gives a view: %v", v, id, all[id], one[id], want)
			}
			if want {
				readable++
			} else {
				hidden++
			}
		}
		if len(all) != readable {
			t.Errorf("%+v: Readable answered %d ids, %d are readable", v, len(all), readable)
		}
		// Many ids (more than one statement takes), the same ones again and again.
		var many []string
		for len(many) < 1000 {
			many = append(many, ids...)
		}
		again, err := d.Readable(ctx, v, many)
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(again, all) {
			t.Errorf("%+v: asked about %d ids, Readable answers %v, not %v", v, len(many), again, all)
		}
		if readable == 0 || hidden == 0 {
			t.Errorf("%+v: %d readable and %d not: the test tells nothing", v, readable, hidden)
		}
	}
}
