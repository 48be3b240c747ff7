package edge_test

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/fhir"
)

// TestDecodeViewAgreesWithEncodingJSON decodes every stored view of the demo directory, for every
// tier, with fhir.DecodeView (the JSON v2 implementation) and with encoding/json into the same type:
// the two must be equal, since the mappers' own decoding, which exports and FHIR write from, is held
// to DecodeView (fhir's TestMapperDecodesWhatTheMappingReads).
func TestDecodeViewAgreesWithEncodingJSON(t *testing.T) {
	ctx := context.Background()
	s := newTestServer(t, demoFiles(t)["demo"])
	rd, err := s.store.Reader(ctx, "demo")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, a := range dirsvc.ServedAudiences {
		snap, err := rd.(dirsvc.ReadSnapshotter).ReadSnapshot(ctx, dirsvc.Viewer{Audience: a})
		if err != nil {
			t.Fatal(err)
		}
		for _, kind := range dirsvc.ExportKinds {
			err := snap.Walk(ctx, kind, func(p dirsvc.Published) error {
				got, err := fhir.DecodeView(kind, p.Body)
				if err != nil {
					t.Fatalf("%s as %s: %v", p.PublicID, a, err)
				}
				want := reflect.New(reflect.TypeOf(got).Elem()).Interface()
				if err := json.Unmarshal(p.Body, want); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s as %s: DecodeView gives\n%+v\nencoding/json gives\n%+v", p.PublicID, a, got, want)
				}
				n++
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		snap.Close()
	}
	if n < 1000 {
		t.Errorf("only %d views compared", n)
	}
}

// BenchmarkDecodeView decodes the service views of the demo directory (partner tier) with
// fhir.DecodeView, with the FHIR server's mapper (what it reads of a view) and, for comparison, with
// encoding/json into the same type:
//
//	go test ./edge -run '^$' -bench DecodeView
func BenchmarkDecodeView(b *testing.B) {
	ctx := context.Background()
	s := newTestServer(b, demoFiles(b)["demo"])
	rd, err := s.store.Reader(ctx, "demo")
	if err != nil {
		b.Fatal(err)
	}
	snap, err := rd.(dirsvc.ReadSnapshotter).ReadSnapshot(ctx, dirsvc.Viewer{Audience: dirsvc.Partner})
	if err != nil {
		b.Fatal(err)
	}
	var bodies [][]byte
	if err := snap.Walk(ctx, dirsvc.KindService, func(p dirsvc.Published) error {
		bodies = append(bodies, bytes.Clone(p.Body))
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	snap.Close()
	b.Run("DecodeView", func(b *testing.B) {
		for i := range b.N {
			if _, err := fhir.DecodeView(dirsvc.KindService, bodies[i%len(bodies)]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("mapper", func(b *testing.B) {
		var m fhir.Mapper
		for i := range b.N {
			if _, err := m.DecodeView(dirsvc.KindService, bodies[i%len(bodies)]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for i := range b.N {
			var v dirsvc.ServiceView
			if err := json.Unmarshal(bodies[i%len(bodies)], &v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
