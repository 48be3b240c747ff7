package edge_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/primary"
	"github.com/dirsvc/dirsvc/primary/demo"
)

// demoFiles returns the two demo directories in the import format.
func demoFiles(tb testing.TB) map[string][]byte {
	tb.Helper()
	files := map[string][]byte{}
	for slug, gen := range map[string]func(*bytes.Buffer) error{
		"demo":    func(b *bytes.Buffer) error { return demo.Demo(b) },
		"demo-nz": func(b *bytes.Buffer) error { return demo.DemoNZ(b) },
	} {
		var b bytes.Buffer
		if err := gen(&b); err != nil {
			tb.Fatal(err)
		}
		files[slug] = b.Bytes()
	}
	return files
}

// TestPublicOutputsOfTheDemoLeakNothing reads every record of the demo directories as an anonymous
// caller, in every representation, and scans every byte of every answer, headers included, for a
// canary the public may not see, in the directory's language and in the pseudo-locale. Records hidden
// from the public must answer exactly as missing ones.
func TestPublicOutputsOfTheDemoLeakNothing(t *testing.T) {
	files := demoFiles(t)
	s := newTestServer(t, files["demo"], files["demo-nz"])
	paths := map[dirsvc.Kind]string{dirsvc.KindService: "services", dirsvc.KindLocation: "locations", dirsvc.KindOrganisation: "organisations"}
	statuses := map[int]int{}
	for slug, file := range files {
		snap, err := primary.ParseImport(bytes.NewReader(file))
		if err != nil {
			t.Fatal(err)
		}
		if len(demo.Canaries(file)) == 0 {
			t.Fatalf("%s holds no canary: the scan would prove nothing", slug)
		}
		closeAndMerge(t, s, slug, snap)
		missing := map[dirsvc.Kind]string{}
		for kind, p := range paths {
			missing[kind] = s.get(t, "/v1/d/"+slug+"/"+p+"/"+kind.IDPrefix()+"missing").wire()
		}
		// scan reads path in the directory's language and in the pseudo-locale, whose labels are
		// rewritten: neither may leak, and a record hidden in one is hidden in the other.
		scan := func(path string) response {
			var r response
			for _, lang := range []string{"", dirsvc.PseudoLanguage} {
				got := s.get(t, path, "Accept-Language", lang)
				var head strings.Builder
				for k, vs := range got.header {
					head.WriteString(k + ": " + strings.Join(vs, " ") + "\n")
				}
				if leaks := demo.Leaks(append([]byte(head.String()), got.body...), dirsvc.Public); len(leaks) > 0 {
					t.Errorf("GET %s (Accept-Language %q) leaks %v to the public", path, lang, leaks)
				}
				if lang == "" {
					r = got
					statuses[r.status]++
				} else if got.status != r.status || got.status == http.StatusNotFound && got.wire() != r.wire() {
					t.Errorf("GET %s answers %d in %s, %d in the directory's language:\n%s", path, got.status, lang, r.status, got.wire())
				}
			}
			return r
		}
		scan("/v1/d/" + slug + "/developers")
		if r := scan("/v1/d/" + slug + "/sitemap.xml"); r.status != http.StatusOK {
			t.Errorf("the sitemap of %s: %d", slug, r.status)
		}
		if r := scan("/v1/d/" + slug + "/portal"); r.status != http.StatusOK {
			t.Errorf("the portal of %s: %d", slug, r.status)
		}
		if r := scan("/v1/d/" + slug + "/taxonomy"); r.status != http.StatusOK {
			t.Errorf("the taxonomy of %s: %d", slug, r.status)
		}
		scanBrowse(t, slug, snap, scan)
		for _, q := range []string{"", "&group=organisation", "&q=health&sort=name"} {
			for off := 0; ; off += 100 {
				r := scan(fmt.Sprintf("/v1/d/%s/search/services?limit=100&offset=%d%s", slug, off, q))
				if r.status != http.StatusOK {
					t.Fatalf("search of %s: %d %s", slug, r.status, r.body)
				}
				if off+100 >= int(r.json(t)["total"].(float64)) {
					break
				}
			}
		}
		for _, rec := range snap.Records {
			p, ok := paths[rec.Kind()]
			if !ok {
				continue
			}
			id := rec.Base().PublicID
			for _, q := range []string{"", "?view=brief"} {
				r := scan("/v1/d/" + slug + "/" + p + "/" + id + q)
				if r.status == http.StatusNotFound && q == "" && r.wire() != missing[rec.Kind()] {
					t.Errorf("hidden %s %s answers differently from a missing one:\n%s", rec.Kind(), id, r.wire())
				}
			}
		}
	}
	// The demo holds visible and hidden records, and closeAndMerge closed and merged some that were
	// live (those imported closed or merged were never published and answer 404): each answer must
	// have been seen.
	for _, st := range []int{200, 301, 404, 410} {
		if statuses[st] == 0 {
			t.Errorf("no %d answer among the demo's records; statuses %v", st, statuses)
		}
	}
}

// closeAndMerge closes one live service every tier sees and merges another into a third, so the
// demo holds records that answer 410 and 301 (records imported closed or merged never were
// published, and answer as missing ones).
func closeAndMerge(tb testing.TB, s *testServer, slug string, snap *dirsvc.Snapshot) {
	tb.Helper()
	var ids []string
	for _, r := range snap.Records {
		if sv, ok := r.(*dirsvc.Service); ok && sv.State == dirsvc.StateLive && !sv.VisibleTo.Restricted() &&
			!strings.Contains(sv.Name, "canary-") {
			ids = append(ids, sv.PublicID)
		}
	}
	if len(ids) < 3 {
		tb.Fatalf("%s: %d live services", slug, len(ids))
	}
	ctx := context.Background()
	w, err := s.store.Writer(ctx, slug)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := w.Transition(ctx, ids[0], dirsvc.Transition{To: dirsvc.StateClosed}); err != nil {
		tb.Fatal(err)
	}
	if _, err := w.Transition(ctx, ids[1], dirsvc.Transition{To: dirsvc.StateMerged, Survivor: ids[2]}); err != nil {
		tb.Fatal(err)
	}
}

// scanBrowse reads the categories and collections of a demo directory as the public, each category
// and each collection the directory holds, hidden ones included: those hidden from the public must
// answer exactly as missing ones, and no answer may hold a canary the public may not see. A
// collection that starts later carries no marker (it is published for everyone), so it is looked
// for by slug: it must be in no list and answer as a missing one.
func scanBrowse(t *testing.T, slug string, snap *dirsvc.Snapshot, scan func(string) response) {
	t.Helper()
	base := "/v1/d/" + slug
	today := dirsvc.Today(time.Now(), snap.Directory.TimeZone)
	var later []string
	for _, c := range snap.Collections {
		if c.StartDate > today {
			later = append(later, c.Slug)
		}
	}
	if len(later) == 0 {
		t.Errorf("%s holds no collection that starts later", slug)
	}
	for _, p := range []string{"/categories", "/collections", "/collections?home=true"} {
		r := scan(base + p)
		if r.status != http.StatusOK {
			t.Errorf("GET %s%s: %d", base, p, r.status)
		}
		for _, s := range later {
			if bytes.Contains(r.body, []byte(`"`+s+`"`)) {
				t.Errorf("GET %s%s shows %s before its start date", base, p, s)
			}
		}
	}
	shown := map[int]int{}
	missing := scan(base + "/categories/no_such_category").wire()
	for _, c := range snap.Taxonomy.Categories {
		r := scan(base + "/categories/" + c.Code)
		shown[r.status]++
		if r.status == http.StatusNotFound && r.wire() != missing {
			t.Errorf("the hidden category %s answers differently from a missing one:\n%s", c.Code, r.wire())
		}
	}
	missing = scan(base + "/collections/no-such-collection").wire()
	for _, c := range snap.Collections {
		r := scan(base + "/collections/" + c.Slug)
		shown[r.status]++
		if (r.status == http.StatusNotFound || slices.Contains(later, c.Slug)) && r.wire() != missing {
			t.Errorf("the hidden collection %s answers differently from a missing one:\n%s", c.Slug, r.wire())
		}
	}
	if shown[http.StatusOK] == 0 || shown[http.StatusNotFound] == 0 {
		t.Errorf("%s: categories and collections answered %v; the scan needs shown and hidden ones", slug, shown)
	}
}

// TestImagesHiddenFromATierAnswerAsMissing reads every published image of the image server as every
// tier, plainly and conditionally (If-None-Match with the image's own tag), and as a narrowed
// client: each image a tier's views do not name answers exactly (status, headers, body) as a hash
// never published, and as a name of the right form with another extension.
func TestImagesHiddenFromATierAnswerAsMissing(t *testing.T) {
	s := newImageServer(t)
	callers := map[string]string{
		"public":       "",
		"professional": token(t, grant{dir: "small", tier: dirsvc.Professional, scopes: "graph:read"}),
		"partner":      token(t, grant{dir: "small", tier: dirsvc.Partner, scopes: "graph:read"}),
		"partner narrowed to services": token(t, grant{dir: "small", tier: dirsvc.Partner, scopes: "graph:read",
			narrowing: dirsvc.Narrowing{Kinds: []dirsvc.Kind{dirsvc.KindService}}}),
	}
	sees := map[string]string{"public": "A", "professional": "AC", "partner": "ABCE", "partner narrowed to services": ""}
	never := "/v1/d/small/images/" + strings.Repeat("0", 64) + ".png"
	for who, tok := range callers {
		var auth []string
		if tok != "" {
			auth = []string{"Authorization", "Bearer " + tok}
		}
		missing := s.get(t, never, auth...)
		if missing.status != http.StatusNotFound {
			t.Fatalf("%s: an unknown image answers %d", who, missing.status)
		}
		for _, name := range []string{"A", "B", "C", "D", "E"} {
			path := s.path(name)
			r := s.get(t, path, auth...)
			if strings.Contains(sees[who], name) {
				if r.status != http.StatusOK {
					t.Errorf("%s: image %s answers %d, want 200", who, name, r.status)
				}
				wrongExt := strings.TrimSuffix(path, path[strings.LastIndex(path, "."):]) + map[bool]string{true: ".jpg", false: ".png"}[strings.HasSuffix(path, ".png")]
				if got := s.get(t, wrongExt, auth...); got.wire() != missing.wire() {
					t.Errorf("%s: image %s under another extension answers\n%s\nnot as a missing one\n%s", who, name, got.wire(), missing.wire())
				}
				continue
			}
			if r.wire() != missing.wire() {
				t.Errorf("%s: hidden image %s answers\n%s\nnot as a missing one\n%s", who, name, r.wire(), missing.wire())
			}
			cond := s.get(t, path, append(auth, "If-None-Match", `"`+s.images[name].SHA256+`"`)...)
			if cond.wire() != missing.wire() {
				t.Errorf("%s: hidden image %s with If-None-Match answers %d, not as a missing one", who, name, cond.status)
			}
		}
	}
}
