package dirdb

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/dirsvc/dirsvc"
)

// TestViewsDecodeAsEncodingJSONReadsThem decodes every stored view of the services, sites and
// roles of the demo directory with viewsByBit (the JSON v2 implementation) and with encoding/json
// into the same type: the search documents are made from what viewsByBit gives, so the two must be
// equal.
func TestViewsDecodeAsEncodingJSONReadsThem(t *testing.T) {
	d := demoDirectory(t)
	rows, err := d.readers.Query("SELECT public_id, audiences, body FROM projections ORDER BY public_id, audiences")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var id string
		var v storedView
		if err := rows.Scan(&id, &v.audiences, &v.body); err != nil {
			t.Fatal(err)
		}
		if v.audiences&servedBits == 0 {
			continue
		}
		var got, want any
		switch dirsvc.KindOfID(id) {
		case dirsvc.KindService:
			got, want = decodedAs[dirsvc.ServiceView](t, v), new(dirsvc.ServiceView)
		case dirsvc.KindLocation:
			got, want = decodedAs[dirsvc.LocationView](t, v), new(dirsvc.LocationView)
		case dirsvc.KindRole:
			got, want = decodedAs[dirsvc.RoleView](t, v), new(dirsvc.RoleView)
		default:
			continue
		}
		if err := json.Unmarshal(v.body, want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s (audiences %b): viewsByBit gives\n%+v\nencoding/json gives\n%+v", id, v.audiences, got, want)
		}
		n++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 100 {
		t.Errorf("only %d views compared", n)
	}
}

// decodedAs returns the view viewsByBit decodes from v, the same for each of its served audiences.
func decodedAs[T any](t *testing.T, v storedView) *T {
	t.Helper()
	byBit, err := viewsByBit[T]([]storedView{v})
	if err != nil {
		t.Fatal(err)
	}
	var out *T
	for _, x := range byBit {
		if out != nil && x != out {
			t.Fatalf("one stored view decoded twice")
		}
		out = x
	}
	return out
}
