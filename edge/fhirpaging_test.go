package edge_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"testing"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/fhir"
	"github.com/dirsvc/dirsvc/primary"
	"github.com/dirsvc/dirsvc/primary/demo"
)

// TestFHIRSelectiveSearchesPageToTheirEnd pages a search that few of many services match (a page
// examines a bounded number of candidates, so its pages are short, some empty, while more
// candidates follow) with several page sizes: every next link starts further on than the page it
// came from, the pages end within the number the budget allows, and together they give every match
// once. Pages shorter than _count with a next link do occur, so the test takes that path.
func TestFHIRSelectiveSearchesPageToTheirEnd(t *testing.T) {
	ctx := context.Background()
	var gen bytes.Buffer
	if err := demo.Generate(&gen, demo.Options{Slug: "gen", Country: "AU", Services: 1200, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	snap, err := primary.ParseImport(bytes.NewReader(gen.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var renamed []string
	services := 0
	for _, r := range snap.Records {
		if sv, ok := r.(*dirsvc.Service); ok {
			if services++; services%97 == 0 {
				sv.Name = fmt.Sprintf("Zebrafinch Clinic %d", services)
				renamed = append(renamed, sv.PublicID)
			}
		}
	}
	s := newTestServer(t)
	w, err := s.store.Create(ctx, "gen")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Import(ctx, snap); err != nil {
		t.Fatal(err)
	}
	const base = "/v1/d/gen/fhir"
	want := map[string]bool{}
	for _, id := range renamed {
		if r := s.get(t, base+"/HealthcareService/"+fhir.ResourceID(id)); r.status == http.StatusOK {
			want[fhir.ResourceID(id)] = true
		}
	}
	if len(want) < 3 {
		t.Fatalf("the public reads %d of the services renamed: the test would prove little", len(want))
	}
	for _, count := range []int{1, 5, 20} {
		t.Run(fmt.Sprintf("_count=%d", count), func(t *testing.T) {
			got := map[string]bool{}
			path := fmt.Sprintf("%s/HealthcareService?name=zebrafinch&_count=%d", base, count)
			// Each page examines at least fhirScanBudget candidates unless it fills or ends.
			maxPages := services/max(8*(count+1), 400) + len(want) + 2
			pages, shortWithNext := 0, 0
			for path != "" {
				if pages++; pages > maxPages {
					t.Fatalf("more than %d pages", maxPages)
				}
				page := readFHIRPage(t, s, "", path)
				for _, id := range page.ids {
					if got[id] {
						t.Errorf("%s is on two pages", id)
					}
					got[id] = true
				}
				matches, next := len(page.ids), page.next
				if matches > count {
					t.Errorf("%d matches on a page of %d", matches, count)
				}
				if next == path {
					t.Fatalf("the next link of %s is the page itself", path)
				}
				if next != "" && matches < count {
					shortWithNext++
				}
				path = next
			}
			if !maps.Equal(got, want) {
				t.Errorf("paging gives %v, want %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
			}
			// With a match every 97 services, the 400 candidates a page examines hold about four:
			// pages of 5 and 20 run out of budget before they fill; pages of 1 fill.
			if count >= 5 && shortWithNext == 0 {
				t.Errorf("no page was short with a next link in %d pages: the budget was never reached", pages)
			}
		})
	}
}
