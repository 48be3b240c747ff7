package dirdb

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
)

func search(t *testing.T, d *Directory, v dirsvc.Viewer, q dirsvc.SearchQuery) dirsvc.SearchResult {
	t.Helper()
	if q.Limit == 0 {
		q.Limit = 100
	}
	res, err := d.SearchServices(context.Background(), v, q)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func hitIDs(res dirsvc.SearchResult) []string {
	var out []string
	for _, h := range res.Hits {
		out = append(out, h.PublicID)
	}
	return out
}

// allServices returns every service the viewer may find, by a search without words, in pages.
func allServices(t *testing.T, d *Directory, v dirsvc.Viewer) []string {
	var out []string
	for off := 0; ; off += 100 {
		res := search(t, d, v, dirsvc.SearchQuery{Offset: off, Limit: 100})
		out = append(out, hitIDs(res)...)
		if off+100 >= res.Total {
			return out
		}
	}
}

// TestSearchFindsWhatEachAudienceSees checks that a search without words finds, for every served
// audience and narrowing, exactly the services the service list gives (visibility and narrowing as
// inside() decides them), and that the total and facets count those only.
func TestSearchFindsWhatEachAudienceSees(t *testing.T) {
	d := demoDirectory(t)
	ctx := context.Background()
	areas, cats := commonKeys(t, d, keyArea, 3), commonKeys(t, d, keyCat, 2)
	narrowings := []dirsvc.Narrowing{{}, {Areas: areas[:1]}, {Areas: areas}, {Categories: cats[:1]},
		{Areas: areas[1:2], Categories: cats}, {Kinds: []dirsvc.Kind{dirsvc.KindLocation}}}
	for _, a := range dirsvc.ServedAudiences {
		for _, n := range narrowings {
			v := dirsvc.Viewer{Audience: a, Narrowing: n}
			var want []string
			for after := ""; ; {
				page, err := d.Services(ctx, v, dirsvc.ServiceQuery{After: after, Limit: 100})
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range page.Items {
					want = append(want, p.PublicID)
				}
				if !page.More {
					break
				}
				after = page.Items[len(page.Items)-1].PublicID
			}
			got := allServices(t, d, v)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("%s %+v: search finds %d services, the list %d\nonly searched: %v\nonly listed: %v", a, n, len(got), len(want),
					minus(got, want), minus(want, got))
			}
			res := search(t, d, v, dirsvc.SearchQuery{Limit: 1})
			sum := 0
			for _, f := range res.Facets.Type {
				sum += f.Count
			}
			if res.Total != len(want) || sum != len(want) {
				t.Errorf("%s %+v: total %d, type facet counts %d, want %d", a, n, res.Total, sum, len(want))
			}
		}
	}
}

func minus(a, b []string) []string {
	return slices.DeleteFunc(slices.Clone(a), func(s string) bool { return slices.Contains(b, s) })
}

// TestHiddenWordsFindNothing checks every audience's full-text index for the canary markers of the
// demo directory that the audience may not see: a phrase of each finds nothing, and a search by one
// answers exactly as a search by a word that appears nowhere.
func TestHiddenWordsFindNothing(t *testing.T) {
	d := demoDirectory(t)
	markers := map[dirsvc.Audience][]string{
		dirsvc.Public:       {"canary-staff-x", "canary-professional-x", "canary-partner-x", "canary-professional.partner-x"},
		dirsvc.Professional: {"canary-staff-x", "canary-partner-x", "canary-public-x", "canary-public.partner-x"},
		dirsvc.Partner:      {"canary-staff-x", "canary-professional-x", "canary-public-x", "canary-public.professional-x"},
	}
	seen := map[string]bool{}
	for _, a := range dirsvc.ServedAudiences {
		bit := audienceBit(a)
		for _, m := range markers[a] {
			phrase := `"` + strings.NewReplacer("-", " ", ".", " ").Replace(m) + `"`
			var n int
			if err := d.readers.QueryRow(fmt.Sprintf("SELECT count(*) FROM search_text_%d WHERE search_text_%d MATCH ?", bit, bit), phrase).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 0 {
				t.Errorf("%s finds %d services by %s", a, n, m)
			}
			for _, b := range dirsvc.ServedAudiences {
				if b != a && !slices.Contains(markers[b], m) {
					var n int
					d.readers.QueryRow(fmt.Sprintf("SELECT count(*) FROM search_text_%d WHERE search_text_%d MATCH ?", audienceBit(b), audienceBit(b)), phrase).Scan(&n)
					if n > 0 {
						seen[m] = true
					}
				}
			}
			v := dirsvc.Viewer{Audience: a}
			for _, spell := range []bool{false, true} {
				got := search(t, d, v, dirsvc.SearchQuery{Text: m, Spell: spell})
				none := search(t, d, v, dirsvc.SearchQuery{Text: "zzqxnowhere", Spell: spell})
				got.Reading, none.Reading = dirsvc.QueryReading{}, dirsvc.QueryReading{}
				if got.Total != 0 || fmt.Sprint(got) != fmt.Sprint(none) {
					t.Errorf("%s searching %s (spelling corrected: %v): %+v, for a word found nowhere: %+v", a, m, spell, got, none)
				}
			}
		}
	}
	// The check can fail: the markers an audience may see are in its index.
	if !seen["canary-professional.partner-x"] || !seen["canary-partner-x"] {
		t.Errorf("the markers other audiences may see are not in their indexes: %v", seen)
	}
}

// TestSearchDocumentsFollowWrites changes the demo directory and checks that searches see each
// change at once: incremental documents equal those a whole refresh makes.
func TestSearchDocumentsFollowWrites(t *testing.T) {
	d := demoDirectory(t)
	ctx := context.Background()
	pub := dirsvc.Viewer{Audience: dirsvc.Public}
	before := allServices(t, d, pub)
	if len(before) == 0 {
		t.Fatal("the public finds no service")
	}
	// A word of one service's name finds it.
	st, err := d.Record(ctx, before[0], pub)
	if err != nil || st.View == nil {
		t.Fatal(err)
	}
	var sv dirsvc.ServiceView
	if err := json.Unmarshal(st.View.Body, &sv); err != nil {
		t.Fatal(err)
	}
	if got := hitIDs(search(t, d, pub, dirsvc.SearchQuery{Text: sv.Name})); !slices.Contains(got, sv.PublicID) {
		t.Fatalf("searching %q does not find %s: %v", sv.Name, sv.PublicID, got)
	}
	// Renaming its organisation: its services are found by the new name at once.
	snap, err := d.loadSnapshotForTest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range snap.Records {
		if o, ok := r.(*dirsvc.Organisation); ok && o.PublicID == sv.Organisation.PublicID {
			o.Name = "Quokkaborough Wellbeing Collective"
		}
	}
	// And a practitioner the public found by name stops showing it to the public: the public no
	// longer finds their service by the name; professionals still do.
	var named *dirsvc.Practitioner
	for _, r := range snap.Records {
		if p, ok := r.(*dirsvc.Practitioner); ok && p.NameVisibleTo.Has(dirsvc.Public) && p.State == dirsvc.StateLive &&
			search(t, d, pub, dirsvc.SearchQuery{Text: p.Given + " " + p.Family}).Total > 0 {
			named = p
			break
		}
	}
	if named == nil {
		t.Fatal("no practitioner the public finds by name")
	}
	name := named.Given + " " + named.Family
	named.NameVisibleTo = dirsvc.AudiencesOf(dirsvc.Professional, dirsvc.Partner, dirsvc.Staff)
	if _, err := d.Import(ctx, snap); err != nil {
		t.Fatal(err)
	}
	byName := func(a dirsvc.Audience) int {
		return search(t, d, dirsvc.Viewer{Audience: a}, dirsvc.SearchQuery{Text: name}).Total
	}
	if n := byName(dirsvc.Public); n != 0 {
		t.Errorf("the public still finds %d services by %s, who no longer shows it their name", n, name)
	}
	if byName(dirsvc.Professional) == 0 {
		t.Errorf("professionals no longer find %s", name)
	}
	got := hitIDs(search(t, d, pub, dirsvc.SearchQuery{Text: "quokkaborough"}))
	if !slices.Contains(got, sv.PublicID) {
		t.Errorf("after renaming its organisation, %s is not found by the new name: %v", sv.PublicID, got)
	}
	// One write that hides the first service (in ID order, so the refresh meets it before the
	// others) and renames every organisation: every other service's documents are made anew.
	var first *dirsvc.Service
	for _, r := range snap.Records {
		if sv, ok := r.(*dirsvc.Service); ok && sv.VisibleTo.Has(dirsvc.Public) && (first == nil || sv.PublicID < first.PublicID) {
			first = sv
		}
	}
	first.VisibleTo = dirsvc.AudiencesOf(dirsvc.Staff)
	for _, r := range snap.Records {
		if o, ok := r.(*dirsvc.Organisation); ok {
			o.Name = "Wombatvale " + o.Name
		}
	}
	if _, err := d.Import(ctx, snap); err != nil {
		t.Fatal(err)
	}
	found := hitIDs(search(t, d, pub, dirsvc.SearchQuery{Text: "wombatvale", Limit: 1000}))
	if slices.Contains(found, first.PublicID) || len(found) != len(allServices(t, d, pub)) {
		t.Errorf("after hiding %s and renaming every organisation, %d of %d services are found by the new name (hidden one among them: %v)",
			first.PublicID, len(found), len(allServices(t, d, pub)), slices.Contains(found, first.PublicID))
	}
	// The incremental documents are those a whole refresh makes.
	incremental := docsForTest(t, d)
	if _, err := d.writer.Exec("UPDATE projection SET search_filled = 0"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Republish(ctx); err != nil {
		t.Fatal(err)
	}
	if whole := docsForTest(t, d); !slices.Equal(incremental, whole) {
		only, missing := minus(incremental, whole), minus(whole, incremental)
		t.Errorf("incremental documents differ from a whole refresh: %d only incremental, %d only whole; first of each:\n%.600v\n%.600v",
			len(only), len(missing), only, missing)
	}
	if got := hitIDs(search(t, d, pub, dirsvc.SearchQuery{Text: "quokkaborough"})); !slices.Contains(got, sv.PublicID) {
		t.Errorf("after a whole refresh, %s is not found: %v", sv.PublicID, got)
	}
}

// docsForTest returns every stored document as "service audiences doc", sorted.
func docsForTest(t *testing.T, d *Directory) []string {
	rows, err := d.readers.Query("SELECT service_id, audiences, doc FROM search_docs")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id, doc string
		var aud int64
		rows.Scan(&id, &aud, &doc)
		out = append(out, fmt.Sprintf("%s %d %s", id, aud, doc))
	}
	slices.Sort(out)
	return out
}

// TestSearchByPlace checks distances against the haversine reference, the radius's edge, withheld
// addresses (never a distance) and distance order.
func TestSearchByPlace(t *testing.T) {
	d := demoDirectory(t)
	pub := dirsvc.Viewer{Audience: dirsvc.Public}
	all := search(t, d, pub, dirsvc.SearchQuery{Limit: 100})
	var near *dirsvc.Point
	d.search.mu.RLock()
	for _, m := range d.search.docs {
		if m.audiences&1 != 0 && m.Point != nil {
			near = m.Point
			break
		}
	}
	d.search.mu.RUnlock()
	if near == nil || all.Total == 0 {
		t.Fatal("no public service has a position")
	}
	res := search(t, d, pub, dirsvc.SearchQuery{Near: near, Sort: dirsvc.SortDistance, Limit: 100})
	last := -1.0
	for _, h := range res.Hits {
		if h.DistanceKm == nil {
			last = math.Inf(1)
			continue
		}
		if *h.DistanceKm < last {
			t.Fatalf("not in distance order: %v after %v", *h.DistanceKm, last)
		}
		last = *h.DistanceKm
	}
	if res.Hits[0].DistanceKm == nil || *res.Hits[0].DistanceKm > 1e-6 {
		t.Errorf("the nearest service is not at the point searched from: %+v", res.Hits[0])
	}
	// Every service within a radius and none beyond it: a radius between two distances found.
	var dists []float64
	for _, h := range res.Hits {
		if h.DistanceKm != nil {
			dists = append(dists, *h.DistanceKm)
		}
	}
	dists = slices.Compact(dists)
	if len(dists) < 3 {
		t.Fatalf("too few distinct distances: %v", dists)
	}
	radius := (dists[1] + dists[2]) / 2
	want := 0
	for _, h := range res.Hits {
		if h.DistanceKm != nil && *h.DistanceKm <= radius {
			want++
		}
	}
	in := search(t, d, pub, dirsvc.SearchQuery{Near: near, RadiusKm: radius, Limit: 100})
	for _, h := range in.Hits {
		if h.DistanceKm == nil || *h.DistanceKm > radius {
			t.Errorf("%s found at %v km, outside %v km", h.PublicID, h.DistanceKm, radius)
		}
	}
	if in.Total != want {
		t.Errorf("within %.3f km: %d found, want %d", radius, in.Total, want)
	}
}

// loadSnapshotForTest reads the directory's canonical records, in a write that changes nothing.
func (d *Directory) loadSnapshotForTest(ctx context.Context) (*dirsvc.Snapshot, error) {
	var snap *dirsvc.Snapshot
	_, err := d.write(ctx, func(w *writeTx) error {
		var err error
		snap, err = w.loadSnapshot()
		return err
	})
	return snap, err
}

// TestSearchReadsPlacesAndSpelling checks that a locality written at the end of the words is read
// as a place (its postcodes), and that a misspelt word is read as the most common term one letter
// away in the audience's own vocabulary, unless spelling correction is off.
func TestSearchReadsPlacesAndSpelling(t *testing.T) {
	d := demoDirectory(t)
	pub := dirsvc.Viewer{Audience: dirsvc.Public}
	all := search(t, d, pub, dirsvc.SearchQuery{Limit: 1})
	var locality, postcode string
	d.search.mu.RLock()
	for _, m := range d.search.docs {
		if m.audiences&1 != 0 && m.Locality != "" && !strings.Contains(m.Locality, " ") {
			locality, postcode = m.Locality, m.Postcode
			break
		}
	}
	d.search.mu.RUnlock()
	if locality == "" || all.Total == 0 {
		t.Fatal("no public service has a locality")
	}
	res := search(t, d, pub, dirsvc.SearchQuery{Text: "gp in " + strings.ToLower(locality)})
	if p := res.Reading.Place; p == nil || !slices.Contains(p.Areas, "postcode:"+postcode) || !slices.Equal(res.Reading.Words, []string{"gp"}) {
		t.Fatalf("gp in %s read as %+v", locality, res.Reading)
	}
	whole := search(t, d, pub, dirsvc.SearchQuery{Text: locality})
	if whole.Total == 0 || len(whole.Reading.Words) != 0 {
		t.Errorf("%s alone: %d found, read as %+v", locality, whole.Total, whole.Reading)
	}
	// A letter dropped from a word of a service's name.
	word := ""
	for _, w := range strings.Fields(strings.ToLower(locality + " clinic pharmacy medical")) {
		if len(w) >= 6 {
			word = w
		}
	}
	typo := word[:2] + word[3:]
	fixed := search(t, d, pub, dirsvc.SearchQuery{Text: typo + " x", Spell: true})
	if !slices.ContainsFunc(fixed.Reading.Corrections, func(c dirsvc.Correction) bool { return c.From == typo && c.To == word }) {
		t.Errorf("%s not corrected to %s: %+v", typo, word, fixed.Reading)
	}
	asTyped := search(t, d, pub, dirsvc.SearchQuery{Text: typo + " x"})
	if len(asTyped.Reading.Corrections) != 0 {
		t.Errorf("corrected without spelling correction: %+v", asTyped.Reading)
	}
	for _, c := range []struct{ a, b string }{{"clinic", "clinc"}, {"clinic", "cilnic"}, {"clinic", "clinics"}, {"clinic", "clonic"}} {
		if !oneEdit(c.a, c.b) {
			t.Errorf("%s and %s are one edit apart", c.a, c.b)
		}
	}
	for _, c := range []struct{ a, b string }{{"clinic", "cnilic"}, {"clinic", "clinicss"}, {"clinic", "clinic"}} {
		if oneEdit(c.a, c.b) {
			t.Errorf("%s and %s are not one edit apart", c.a, c.b)
		}
	}
}

// TestTopKIsTheSortedPrefix compares topK with a whole sort, for every k.
func TestTopKIsTheSortedPrefix(t *testing.T) {
	xs := make([]int, 500)
	for i := range xs {
		xs[i] = (i * 7919) % 211 // repeats, in no order
	}
	want := slices.Clone(xs)
	slices.Sort(want)
	for k := 0; k <= len(xs)+1; k++ {
		first := newTopK(k, func(a, b int) int { return a - b })
		for _, x := range xs {
			first.add(x)
		}
		got := first.sorted()
		if !slices.Equal(got, want[:min(k, len(want))]) {
			t.Fatalf("k=%d: %v", k, got)
		}
	}
}

// TestSearchesDuringWrites searches while writes change the documents (run it with -race): every
// search answers, and each answer's page is in order.
func TestSearchesDuringWrites(t *testing.T) {
	d := demoDirectory(t)
	ctx := context.Background()
	snap, err := d.loadSnapshotForTest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	errs := make(chan error, 1)
	go func() {
		defer close(errs)
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			q := dirsvc.SearchQuery{Text: []string{"", "clinic", "health"}[i%3], Sort: []string{"", dirsvc.SortName}[i%2], Limit: 10, Spell: true}
			if _, err := d.SearchServices(ctx, dirsvc.Viewer{Audience: dirsvc.Public}, q); err != nil {
				errs <- err
				return
			}
		}
	}()
	for i := range 5 {
		for _, r := range snap.Records {
			if o, ok := r.(*dirsvc.Organisation); ok {
				o.Name = fmt.Sprintf("Renamed %d %s", i, o.Name)
			}
		}
		if _, err := d.Import(ctx, snap); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	res := search(t, d, dirsvc.Viewer{Audience: dirsvc.Public}, dirsvc.SearchQuery{Text: "renamed 4", Limit: 1})
	if res.Total == 0 {
		all := search(t, d, dirsvc.Viewer{Audience: dirsvc.Public}, dirsvc.SearchQuery{Limit: 3, Sort: dirsvc.SortName})
		t.Errorf("the last write's names are not found: %+v; some: %+v", res.Reading, all.Hits)
	}
}

// TestSearchFollowsWritesPastForgottenRemovals keeps only the latest removal of a search document
// in the file, so an index that read the documents before several writes is behind the first one
// kept: it reads every document again, and searches find what the list does.
func TestSearchFollowsWritesPastForgottenRemovals(t *testing.T) {
	defer func(n int) { goneKept = n }(goneKept)
	goneKept = 1
	d := demoDirectory(t)
	ctx := context.Background()
	pub := dirsvc.Viewer{Audience: dirsvc.Public}
	allServices(t, d, pub) // the index reads the documents now
	snap, err := d.loadSnapshotForTest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var hidden []string
	for _, r := range snap.Records {
		if sv, ok := r.(*dirsvc.Service); ok && sv.VisibleTo.Has(dirsvc.Public) && len(hidden) < 3 {
			sv.VisibleTo = dirsvc.AudiencesOf(dirsvc.Partner, dirsvc.Staff)
			hidden = append(hidden, sv.PublicID)
			if _, err := d.Import(ctx, snap); err != nil {
				t.Fatal(err)
			}
		}
	}
	var n int
	if err := d.readers.QueryRow("SELECT count(*) FROM search_gone").Scan(&n); err != nil || n > 2 {
		t.Fatalf("the file keeps %d removals (%v), want at most 2", n, err)
	}
	found := allServices(t, d, pub)
	for _, id := range hidden {
		if slices.Contains(found, id) {
			t.Errorf("the public still finds %s, hidden from it", id)
		}
	}
	var listed []string
	for after := ""; ; {
		page, err := d.Services(ctx, pub, dirsvc.ServiceQuery{After: after, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range page.Items {
			listed = append(listed, p.PublicID)
		}
		if !page.More {
			break
		}
		after = page.Items[len(page.Items)-1].PublicID
	}
	slices.Sort(found)
	if !slices.Equal(found, listed) {
		t.Errorf("search finds %d services, the list %d", len(found), len(listed))
	}
}

// TestKeptPostingsFollowWrites searches a word, so that its posting is kept, then moves the word
// from one organisation's services to another's: the next search finds exactly the other's, as a
// search with no posting kept does; also when the write numbers the documents anew.
func TestKeptPostingsFollowWrites(t *testing.T) {
	for _, renumbered := range []bool{false, true} {
		t.Run(fmt.Sprintf("renumbered=%v", renumbered), func(t *testing.T) {
			if renumbered {
				defer func(n int) { minRenumbered = n }(minRenumbered)
				minRenumbered = 0
			}
			d := demoDirectory(t)
			ctx := context.Background()
			pub := dirsvc.Viewer{Audience: dirsvc.Public}
			snap, err := d.loadSnapshotForTest(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var orgs []*dirsvc.Organisation
			for _, r := range snap.Records {
				if o, ok := r.(*dirsvc.Organisation); ok && o.State == dirsvc.StateLive {
					orgs = append(orgs, o)
				}
			}
			named := func(o *dirsvc.Organisation, name string) {
				t.Helper()
				old := o.Name
				o.Name = name
				if _, err := d.Import(ctx, snap); err != nil {
					t.Fatal(err)
				}
				o.Name = old
			}
			// The services found by a word, and that they are those a search without kept postings finds.
			find := func(text string) map[string]bool {
				t.Helper()
				res := search(t, d, pub, dirsvc.SearchQuery{Text: text, Limit: 1000})
				// The same search with none kept, leaving those kept as they were.
				idx := &d.search
				idx.mu.Lock()
				kept, entries := idx.postings, idx.postingEntries
				idx.forgetPostings()
				idx.mu.Unlock()
				again := search(t, d, pub, dirsvc.SearchQuery{Text: text, Limit: 1000})
				idx.mu.Lock()
				idx.postings, idx.postingEntries = kept, entries
				idx.mu.Unlock()
				if !reflect.DeepEqual(res, again) {
					t.Fatalf("searching %q with kept postings finds %v; without, %v", text, hitIDs(res), hitIDs(again))
				}
				orgsFound := map[string]bool{}
				for _, h := range res.Hits {
					orgsFound[h.Organisation] = true
				}
				return orgsFound
			}
			resets := d.search.resets
			moved := 0
			for i, o := range orgs[:min(len(orgs), 4)] {
				named(o, "Quokkaborough Care "+o.Name)
				got := find("quokkaborough")
				prefix := find("quokkab")
				if !reflect.DeepEqual(got, prefix) {
					t.Errorf("step %d: quokkaborough finds %v, quokkab %v", i, got, prefix)
				}
				if len(got) > 0 {
					moved++
				}
				if len(got) > 1 || len(got) == 1 && !got[o.PublicID] {
					t.Errorf("step %d: quokkaborough finds the services of %v, not only of %s", i, got, o.PublicID)
				}
			}
			if moved < 2 {
				t.Fatalf("the word was found in %d organisations' services: the test moved nothing", moved)
			}
			if renumbered && d.search.resets == resets {
				t.Error("the documents were never numbered anew")
			}
		})
	}
}

// TestKeptCardsFollowWrites keeps the result cards of every service for each audience, then changes
// what only the cards show (a role's title, a site's name, an organisation's name) and hides a
// service's site: every card a search then answers with is the card made afresh from the views.
func TestKeptCardsFollowWrites(t *testing.T) {
	d := demoDirectory(t)
	ctx := context.Background()
	viewers := []dirsvc.Viewer{{Audience: dirsvc.Public}, {Audience: dirsvc.Professional}, {Audience: dirsvc.Partner}}
	everything := func() {
		t.Helper()
		for _, v := range viewers {
			res := search(t, d, v, dirsvc.SearchQuery{Limit: 1000})
			if len(res.Hits) == 0 {
				t.Fatalf("%s finds no service", v.Audience)
			}
			for _, h := range res.Hits {
				want, err := d.cardOf(ctx, v, h.PublicID)
				if err != nil || want == nil {
					t.Fatalf("%s: the card of %s: %v, %v", v.Audience, h.PublicID, want, err)
				}
				if !reflect.DeepEqual(h.Card, want) {
					t.Errorf("%s: the kept card of %s is\n%+v\nnot\n%+v", v.Audience, h.PublicID, h.Card, want)
				}
			}
		}
	}
	everything()
	snap, err := d.loadSnapshotForTest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	changed := map[dirsvc.Kind]bool{}
	for _, r := range snap.Records {
		switch r := r.(type) {
		case *dirsvc.PractitionerRole:
			if !changed[dirsvc.KindRole] && r.Active {
				r.Title, changed[dirsvc.KindRole] = "Chief Quokka Officer", true
			}
		case *dirsvc.Location:
			if !changed[dirsvc.KindLocation] {
				r.Name, changed[dirsvc.KindLocation] = "Quokka House", true
			}
		case *dirsvc.Organisation:
			if !changed[dirsvc.KindOrganisation] {
				r.Name, changed[dirsvc.KindOrganisation] = "Quokka Collective", true
			}
		case *dirsvc.Service:
			if !changed[dirsvc.KindService] && r.Location != "" && r.VisibleTo.Has(dirsvc.Public) {
				r.Location, changed[dirsvc.KindService] = "", true
			}
		}
	}
	if len(changed) != 4 {
		t.Fatalf("changed only %v", changed)
	}
	if _, err := d.Import(ctx, snap); err != nil {
		t.Fatal(err)
	}
	everything()
}

// TestNearnessBoxHoldsTheCircle checks, for positions all over the sphere and radii from a few
// metres to half the world, that no position within the radius is passed over by the box.
func TestNearnessBoxHoldsTheCircle(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		from := dirsvc.Point{Lat: r.Float64()*180 - 90, Lon: r.Float64()*360 - 180}
		radius := math.Pow(10, r.Float64()*7-2) // 0.01 to 100,000 km
		n := newNearness(from, radius)
		// A position near the circle's edge, in any direction, and one anywhere.
		for _, p := range []dirsvc.Point{pointAt(from, radius*(0.9+0.2*r.Float64()), r.Float64()*360), {Lat: r.Float64()*180 - 90, Lon: r.Float64()*360 - 180}} {
			want := dirsvc.HaversineKm(from.Lat, from.Lon, p.Lat, p.Lon)
			got := n.km(p.Lat, p.Lon)
			if want <= radius && got != want {
				t.Fatalf("from %v, radius %g km: %v is %g km away, but the box gives %g", from, radius, p, want, got)
			}
		}
	}
}

// pointAt returns the position km away from p on the initial bearing (degrees).
func pointAt(p dirsvc.Point, km, bearing float64) dirsvc.Point {
	const rad = math.Pi / 180
	d, b, lat, lon := km/dirsvc.EarthRadiusKm, bearing*rad, p.Lat*rad, p.Lon*rad
	lat2 := math.Asin(math.Sin(lat)*math.Cos(d) + math.Cos(lat)*math.Sin(d)*math.Cos(b))
	lon2 := lon + math.Atan2(math.Sin(b)*math.Sin(d)*math.Cos(lat), math.Cos(d)-math.Sin(lat)*math.Sin(lat2))
	lon2 = math.Mod(lon2/rad+540, 360) - 180
	return dirsvc.Point{Lat: lat2 / rad, Lon: lon2}
}

// TestSearchByOrganisationIsTheServicesGrouped answers searches by organisation and checks them
// against the same searches' services: organisations in the order of their best service, with their
// numbers of services, paged, and the services of the page's organisations in order.
func TestSearchByOrganisationIsTheServicesGrouped(t *testing.T) {
	d := demoDirectory(t)
	for _, q := range []dirsvc.SearchQuery{{}, {Text: "health"}, {Text: "clinic", Sort: dirsvc.SortName},
		{Near: &dirsvc.Point{Lat: -33.87, Lon: 151.21}, Sort: dirsvc.SortDistance}, {Text: "gp", Costs: []string{"bulk_billed"}}} {
		for _, page := range [][2]int{{5, 0}, {3, 2}, {100, 0}} {
			v := dirsvc.Viewer{Audience: dirsvc.Public}
			q.Limit, q.Offset = 1000, 0
			services := search(t, d, v, q)
			var orgs []dirsvc.SearchOrganisation
			at := map[string]int{}
			for _, h := range services.Hits {
				if _, ok := at[h.Organisation]; !ok {
					at[h.Organisation] = len(orgs)
					orgs = append(orgs, dirsvc.SearchOrganisation{PublicID: h.Organisation})
				}
				orgs[at[h.Organisation]].Services++
			}
			q.ByOrganisation, q.Limit, q.Offset = true, page[0], page[1]
			grouped := search(t, d, v, q)
			q.ByOrganisation = false
			if grouped.Total != len(orgs) || grouped.ServiceTotal != services.Total {
				t.Fatalf("%+v: %d organisations and %d services, not %d and %d", q, grouped.Total, grouped.ServiceTotal, len(orgs), services.Total)
			}
			want := orgs[min(len(orgs), page[1]):min(len(orgs), page[1]+page[0])]
			var wantHits []string
			for _, h := range services.Hits {
				if i := at[h.Organisation]; i >= page[1] && i < page[1]+page[0] {
					wantHits = append(wantHits, h.PublicID)
				}
			}
			for i := range grouped.Organisations {
				grouped.Organisations[i].Name = ""
			}
			if !reflect.DeepEqual(grouped.Organisations, want) || !slices.Equal(hitIDs(grouped), wantHits) {
				t.Errorf("%+v page %v:\n%v\n%v\nnot\n%v\n%v", q, page, grouped.Organisations, hitIDs(grouped), want, wantHits)
			}
		}
	}
}

// TestSuggestionsByWordAreTheScan checks the kept suggestion lists' word order against reading every
// candidate, for the first letters of every word the candidates hold and for pairs of them.
func TestSuggestionsByWordAreTheScan(t *testing.T) {
	d := demoDirectory(t)
	ctx := context.Background()
	for _, a := range dirsvc.ServedAudiences {
		list, err := d.suggestions(ctx, dirsvc.Viewer{Audience: a})
		if err != nil {
			t.Fatal(err)
		}
		scan := newSuggestList(list.cands, false)
		var queries [][]string
		for _, c := range list.cands {
			for i, w := range c.words {
				for rs, n := []rune(w), 1; n <= len(rs); n += 2 {
					queries = append(queries, []string{string(rs[:n])}, []string{c.words[(i+1)%len(c.words)], string(rs[:n])})
				}
			}
		}
		if len(queries) < 100 {
			t.Fatalf("%s: %d queries", a, len(queries))
		}
		for _, q := range queries {
			have := func(l *suggestList) []int {
				var some []int
				ws, all := l.having(q)
				for _, cw := range ws {
					some = append(some, cw.cand)
				}
				if all {
					some = nil
					for i := range l.cands {
						some = append(some, i)
					}
				}
				slices.Sort(some)
				some = slices.Compact(some)
				return slices.DeleteFunc(some, func(i int) bool {
					return slices.ContainsFunc(q, func(w string) bool {
						return !slices.ContainsFunc(l.cands[i].words, func(h string) bool { return strings.HasPrefix(h, w) })
					})
				})
			}
			if got, want := have(list), have(scan); !slices.Equal(got, want) {
				t.Fatalf("%s %q: %v, not %v", a, q, got, want)
			}
			// And Suggest answers the first of each kind that have the words, in order.
			for _, limit := range []int{1, 5} {
				got, err := d.Suggest(ctx, dirsvc.Viewer{Audience: a}, strings.Join(q, " "), limit)
				if err != nil {
					t.Fatal(err)
				}
				want := []dirsvc.Suggestion{}
				taken := map[string]int{}
				for _, i := range have(scan) {
					if c := scan.cands[i]; taken[c.Kind] < limit {
						want = append(want, c.Suggestion)
						taken[c.Kind]++
					}
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%s %q limit %d: %v, not %v", a, q, limit, got, want)
				}
			}
		}
	}
}

// TestOneWordSummaryIsTheWalk compares the searches for one word alone, which a posting's summary
// answers, with the same searches walked (a filter that every service passes): the same total,
// facets and pages, for every audience, before and after a write.
func TestOneWordSummaryIsTheWalk(t *testing.T) {
	d := demoDirectory(t)
	ctx := context.Background()
	compare := func() {
		t.Helper()
		for _, a := range dirsvc.ServedAudiences {
			v := dirsvc.Viewer{Audience: a}
			var types []string
			for _, f := range search(t, d, v, dirsvc.SearchQuery{}).Facets.Type {
				types = append(types, f.Value)
			}
			// Every word of the documents' names, organisations and places, and their first letters.
			words := map[string]bool{}
			d.search.mu.RLock()
			for _, m := range d.search.docs {
				for _, w := range queryWords(m.Name + " " + m.OrgName + " " + m.Locality) {
					words[strings.Join(w, " ")] = true
					words[w[0][:min(len(w[0]), 3)]] = true
				}
			}
			d.search.mu.RUnlock()
			for w := range words {
				for _, page := range [][2]int{{10, 0}, {5, 3}} {
					for _, grouped := range []bool{false, true} {
						q := dirsvc.SearchQuery{Text: w, Limit: page[0], Offset: page[1], ByOrganisation: grouped}
						alone := search(t, d, v, q)
						q.Types = types
						walked := search(t, d, v, q)
						if !reflect.DeepEqual(alone, walked) {
							t.Fatalf("%s %q %v by organisation %v: alone %d %v %v, walked %d %v %v", a, w, page, grouped,
								alone.Total, alone.Organisations, hitIDs(alone), walked.Total, walked.Organisations, hitIDs(walked))
						}
					}
				}
			}
		}
	}
	compare()
	snap, err := d.loadSnapshotForTest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range snap.Records {
		if o, ok := r.(*dirsvc.Organisation); ok {
			o.Name += " Clinic"
			break
		}
	}
	if _, err := d.Import(ctx, snap); err != nil {
		t.Fatal(err)
	}
	compare()
	// A write that removes documents and adds none: the postings kept are not read again.
	hidden := 0
	for _, r := range snap.Records {
		if sv, ok := r.(*dirsvc.Service); ok && sv.VisibleTo.Has(dirsvc.Public) && hidden < 3 {
			sv.VisibleTo = dirsvc.AudiencesOf(dirsvc.Staff)
			hidden++
		}
	}
	last := d.search.lastID
	if _, err := d.Import(ctx, snap); err != nil {
		t.Fatal(err)
	}
	compare()
	if d.search.lastID != last {
		t.Errorf("hiding services added documents (%d, then %d)", last, d.search.lastID)
	}
}

// TestWarmSearchLoadsBeforeTheFirstSearch opens a directory from a store that warms the directories
// it opens: before any search, the index holds the documents, and every audience's vocabulary and
// autocomplete list are made.
func TestWarmSearchLoadsBeforeTheFirstSearch(t *testing.T) {
	made := demoDirectory(t)
	ctx := context.Background()
	s, err := Open(ctx, made.store.root)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.SetWarmSearch(true)
	d, err := s.Directory(ctx, "demo")
	if err != nil {
		t.Fatal(err)
	}
	if d.warmed == nil {
		t.Fatal("the directory was opened without warming")
	}
	select {
	case <-d.warmed:
	case <-time.After(time.Minute):
		t.Fatal("warming did not end within a minute")
	}
	idx := &d.search
	idx.mu.RLock()
	defer idx.mu.RUnlock()
	if idx.gen != d.records.gen.Load()+1 || len(idx.docs) == 0 {
		t.Fatalf("the index is at %d with %d documents; the file at %d", idx.gen, len(idx.docs), d.records.gen.Load())
	}
	for _, a := range dirsvc.ServedAudiences {
		if bit := audienceBit(a); idx.vocab[bit] == nil || idx.suggestions[bit] == nil {
			t.Errorf("%s: vocabulary %v, autocomplete list %v", a, idx.vocab[bit] != nil, idx.suggestions[bit] != nil)
		}
	}
}
