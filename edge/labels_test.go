package edge_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/primary"
)

// TestEveryCodeOfTheDemoIsLabelledInEveryLanguage takes the label codes from the demo directories
// (the platform types and their categories, the programs and target groups of their taxonomies, the
// referral sources and platform ownership types of their records) and the referral sources the
// platform labels, and finds a label of each in every shipped language.
func TestEveryCodeOfTheDemoIsLabelledInEveryLanguage(t *testing.T) {
	codes := map[string]map[string]bool{}
	add := func(family, code string) {
		if codes[family] == nil {
			codes[family] = map[string]bool{}
		}
		codes[family][code] = true
	}
	for code := range dirsvc.ReferralSourceLabels {
		add(dirsvc.LabelReferralSources, code)
	}
	for slug, file := range demoFiles(t) {
		snap, err := primary.ParseImport(bytes.NewReader(file))
		if err != nil {
			t.Fatalf("%s: %v", slug, err)
		}
		for _, pt := range snap.Taxonomy.PlatformTypes {
			add(dirsvc.LabelTypes, pt.Code)
			add(dirsvc.LabelCategories, pt.Category)
		}
		for _, p := range snap.Taxonomy.Programs {
			add(dirsvc.LabelPrograms, p.Code)
		}
		for _, g := range snap.Taxonomy.TargetGroups {
			add(dirsvc.LabelTargetGroups, g.Code)
		}
		for _, rec := range snap.Records {
			var own *dirsvc.Ownership
			switch r := rec.(type) {
			case *dirsvc.Service:
				own = r.OwnershipType
				if r.Referral != nil {
					for _, f := range r.Referral.From {
						add(dirsvc.LabelReferralSources, f)
					}
				}
			case *dirsvc.Location:
				own = r.OwnershipType
			case *dirsvc.Organisation:
				own = r.OwnershipType
			}
			if own != nil && !strings.Contains(own.Code, ":") { // a directory's own code is labelled by it
				add(dirsvc.LabelOwnership, own.Code)
			}
		}
	}
	for _, family := range []string{dirsvc.LabelTypes, dirsvc.LabelCategories, dirsvc.LabelPrograms,
		dirsvc.LabelTargetGroups, dirsvc.LabelReferralSources, dirsvc.LabelOwnership} {
		if len(codes[family]) == 0 {
			t.Fatalf("the demo holds no code of %s: the test would prove nothing", family)
		}
	}
	for _, lang := range dirsvc.Languages() {
		l := dirsvc.LabelsOf(lang)
		for family, cs := range codes {
			for code := range cs {
				if text, ok := l.Label(family, code); !ok || text == "" {
					t.Errorf("%s has no label of %s %s", lang, family, code)
				}
			}
		}
	}
}

// labelTexts returns every English text of the platform's labels but the open status words with
// slots (those are looked for in openStatus details).
func labelTexts() map[string]bool {
	out := map[string]bool{}
	en := dirsvc.LabelsOf(dirsvc.DirectoryLanguage)
	for _, family := range dirsvc.LabelFamilies {
		for _, code := range en.Codes(family) {
			if s, _ := en.Label(family, code); !strings.Contains(s, "{") {
				out[s] = true
			}
		}
	}
	return out
}

// jsonString is a string of a JSON body with the name of the member it is the value of (or in).
type jsonString struct{ key, text string }

func jsonStrings(tb testing.TB, body []byte) []jsonString {
	tb.Helper()
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		tb.Fatalf("not JSON: %v\n%s", err, body)
	}
	var out []jsonString
	var walk func(key string, v any)
	walk = func(key string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				walk(k, x)
			}
		case []any:
			for _, x := range v {
				walk(key, x)
			}
		case string:
			out = append(out, jsonString{key, v})
		}
	}
	walk("", v)
	return out
}

// labelPaths returns answers of the demo directory that carry platform labels: a service page whose
// referral names who it must come from, its location's and organisation's pages, lists, searches,
// categories, the taxonomy, a collection and suggestions.
func labelPaths(tb testing.TB, file []byte) []string {
	tb.Helper()
	snap, err := primary.ParseImport(bytes.NewReader(file))
	if err != nil {
		tb.Fatal(err)
	}
	var svc *dirsvc.Service
	for _, r := range snap.Records {
		if s, ok := r.(*dirsvc.Service); ok && s.State == dirsvc.StateLive && !s.VisibleTo.Restricted() &&
			s.Referral != nil && s.Referral.Required && len(s.Programs) > 0 && !strings.Contains(s.Name, "canary-") {
			svc = s
			break
		}
	}
	if svc == nil {
		tb.Fatal("the demo holds no public service whose referral is required and that has a program")
	}
	base := "/v1/d/demo"
	return []string{base + "/services/" + svc.PublicID, base + "/locations/" + svc.Location,
		base + "/organisations/" + svc.Organisation, base + "/services?limit=50",
		base + "/search/services?limit=50", base + "/search/services?group=organisation&limit=20",
		base + "/search/organisations?limit=50", base + "/categories", base + "/categories/primary_care",
		base + "/taxonomy", base + "/collections/mental-health-support", base + "/autocomplete?q=gen"}
}

// TestLabelsFollowTheReadersLanguage reads answers that carry labels in English and in the
// pseudo-locale: each says its language and varies by Accept-Language; the English one shows
// English labels and the pseudo-locale one none, its labels and open status words all rewritten.
func TestLabelsFollowTheReadersLanguage(t *testing.T) {
	file := demoFiles(t)["demo"]
	s := newTestServer(t, file)
	english := labelTexts()
	for _, path := range labelPaths(t, file) {
		en, xa := s.get(t, path), s.get(t, path, "Accept-Language", "en-XA")
		for _, c := range []struct {
			r    response
			lang string
		}{{en, "en"}, {xa, "en-XA"}} {
			if c.r.status != http.StatusOK || c.r.header.Get("Content-Language") != c.lang ||
				!strings.Contains(strings.Join(c.r.header.Values("Vary"), ","), "Accept-Language") ||
				!strings.Contains(strings.Join(c.r.header.Values("Vary"), ","), "Accept-Encoding") {
				t.Fatalf("GET %s in %s: %d %v\n%s", path, c.lang, c.r.status, c.r.header, c.r.body)
			}
		}
		shown, pseudo := 0, 0
		for _, s := range jsonStrings(t, en.body) {
			if english[s.text] {
				shown++
			}
		}
		for _, s := range jsonStrings(t, xa.body) {
			if english[s.text] && s.key != "title" { // a practitioner's title is the directory's words
				t.Errorf("GET %s in en-XA shows the English label %q (%s)", path, s.text, s.key)
			}
			if s.key == "detail" && !strings.HasPrefix(s.text, "[") {
				t.Errorf("GET %s in en-XA shows the open status %q", path, s.text)
			}
			if strings.HasPrefix(s.text, "[") && strings.HasSuffix(s.text, "]") {
				pseudo++
			}
		}
		if shown == 0 || pseudo == 0 {
			t.Errorf("GET %s: %d English labels, %d in en-XA; the answer should carry labels", path, shown, pseudo)
		}
		if strings.Contains(path, "/services/") {
			var page struct {
				Labels []string `json:"referralRequiredFromLabels"`
			}
			if err := json.Unmarshal(xa.body, &page); err != nil || len(page.Labels) == 0 {
				t.Fatalf("the service page names no referral source: %v %s", err, xa.body)
			}
			for _, l := range page.Labels {
				if !strings.HasPrefix(l, "[") {
					t.Errorf("the referral source %q is not in en-XA", l)
				}
			}
		}
	}
}

// TestUnknownLanguagesFallBack asks for languages the platform does not ship and gets the very
// answer of a request that asks for none, in the directory's language.
func TestUnknownLanguagesFallBack(t *testing.T) {
	file := demoFiles(t)["demo"]
	s := newTestServer(t, file)
	for _, path := range labelPaths(t, file)[:5] {
		plain := s.get(t, path)
		for _, header := range []string{"xx", "fr-CA, de;q=0.5", "en-AU,en;q=0.9", "en-XA;q=0, *;q=0.1"} {
			r := s.get(t, path, "Accept-Language", header)
			if r.status != plain.status || !bytes.Equal(r.body, plain.body) || r.header.Get("ETag") != plain.header.Get("ETag") ||
				r.header.Get("Content-Language") != dirsvc.DirectoryLanguage {
				t.Errorf("GET %s with Accept-Language %q: %d %s %q, want the plain answer", path, header, r.status,
					r.header.Get("Content-Language"), r.header.Get("ETag"))
			}
		}
	}
}

// TestEachLanguageHasItsOwnEntityTag checks conditional and compressed reads across languages: a
// tag of one language never gives 304 in another, and a compressed body is the one of its language
// whichever language was compressed first.
func TestEachLanguageHasItsOwnEntityTag(t *testing.T) {
	file := demoFiles(t)["demo"]
	s := newTestServer(t, file)
	for _, path := range []string{labelPaths(t, file)[0], "/v1/d/demo/taxonomy", "/v1/d/demo/search/services?limit=20"} {
		en, xa := s.get(t, path, "Accept-Encoding", "identity"), s.get(t, path, "Accept-Encoding", "identity", "Accept-Language", "en-XA")
		enTag, xaTag := en.header.Get("ETag"), xa.header.Get("ETag")
		if enTag == "" || xaTag == "" || enTag == xaTag || bytes.Equal(en.body, xa.body) {
			t.Fatalf("GET %s: tags %s and %s", path, enTag, xaTag)
		}
		if r := s.get(t, path, "Accept-Language", "en-XA", "If-None-Match", enTag); r.status != http.StatusOK {
			t.Errorf("GET %s in en-XA with the English tag: %d", path, r.status)
		}
		if r := s.get(t, path, "If-None-Match", xaTag); r.status != http.StatusOK {
			t.Errorf("GET %s in English with the en-XA tag: %d", path, r.status)
		}
		r := s.get(t, path, "Accept-Language", "en-XA", "If-None-Match", xaTag)
		if r.status != http.StatusNotModified || r.header.Get("Content-Language") != "en-XA" ||
			!strings.Contains(strings.Join(r.header.Values("Vary"), ","), "Accept-Language") {
			t.Errorf("GET %s in en-XA with its own tag: %d %v", path, r.status, r.header)
		}
		for _, lang := range []string{"en-XA", "", "en-XA", ""} {
			r := s.get(t, path, "Accept-Encoding", "gzip", "Accept-Language", lang)
			want, tag := en, enTag
			if lang != "" {
				want, tag = xa, xaTag
			}
			if r.header.Get("Content-Encoding") != "gzip" || r.header.Get("ETag") != strings.TrimSuffix(tag, `"`)+`-gzip"` {
				t.Fatalf("GET %s gzip in %q: %v", path, lang, r.header)
			}
			zr, err := gzip.NewReader(bytes.NewReader(r.body))
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(zr)
			if err != nil || !bytes.Equal(got, want.body) {
				t.Errorf("GET %s gzip in %q is not the body of its language (%v)", path, lang, err)
			}
		}
	}
}
