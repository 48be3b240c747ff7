package dirdb

import (
	"bytes"
	"context"
	"testing"

	"github.com/dirsvc/dirsvc"
)

// TestImportCounterIsToldOfEachImport: a directory's first import (built aside, then registered)
// and a later one into it are each told once, with what they wrote; an import that fails is not.
func TestImportCounterIsToldOfEachImport(t *testing.T) {
	ctx := context.Background()
	s, _, small := smallStore(t)
	var told []dirsvc.ImportStats
	s.SetImportCounter(func(st dirsvc.ImportStats) { told = append(told, st) })
	first, err := s.ImportNew(ctx, parseForTest(t, small))
	if err != nil {
		t.Fatal(err)
	}
	if len(told) != 1 || told[0].Created != first.Created || first.Created == 0 {
		t.Fatalf("after the first import: told %+v, want its stats once (%d created)", told, first.Created)
	}
	changed := parseForTest(t, bytes.Replace(small, []byte(`"name":"Harbour GP"`), []byte(`"name":"Harbour General Practice"`), 1))
	again, err := s.ImportNew(ctx, changed)
	if err != nil {
		t.Fatal(err)
	}
	if len(told) != 2 || told[1].Updated == 0 || told[1].Updated != again.Updated || told[1].Unchanged != again.Unchanged || told[1].Created != 0 {
		t.Fatalf("after a second import that changes a record: told %+v, want its stats (%d updated)", told, again.Updated)
	}
	bad := parseForTest(t, small)
	bad.Directory.Slug = "other"
	d, err := s.Directory(ctx, "small")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Import(ctx, bad); err == nil {
		t.Fatal("an import of another directory's file succeeded")
	}
	if len(told) != 2 {
		t.Errorf("an import that failed was told: %+v", told[2:])
	}
}
