package edge_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/edge"
)

const sitemapNS = "http://www.sitemaps.org/schemas/sitemap/0.9"

type sitemapURLSet struct {
	XMLName xml.Name `xml:"urlset"`
	URLs    []struct {
		Loc     string `xml:"loc"`
		LastMod string `xml:"lastmod"`
	} `xml:"url"`
}

type sitemapIndex struct {
	XMLName  xml.Name `xml:"sitemapindex"`
	Sitemaps []struct {
		Loc string `xml:"loc"`
	} `xml:"sitemap"`
}

// checkSitemapFile checks a sitemap file as the protocol (sitemaps.org 0.9, and its schema
// sitemap.xsd) asks: UTF-8 XML in the protocol's namespace, at most 50,000 entries and 50 MB, each
// loc an absolute http(s) URL under the folder of the sitemap itself, shorter than 2,048
// characters, and each lastmod a W3C datetime. It returns the locs.
func checkSitemapFile(tb testing.TB, r response, sitemapURL string) (locs []string, index bool) {
	tb.Helper()
	if r.status != http.StatusOK {
		tb.Fatalf("%s: status %d\n%s", sitemapURL, r.status, r.body)
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/xml") {
		tb.Fatalf("%s: Content-Type %q", sitemapURL, ct)
	}
	if got := r.header.Get("Cache-Control"); got != "public, s-maxage=300" && got != "private, no-store" {
		tb.Errorf("%s: Cache-Control %q", sitemapURL, got)
	}
	if len(r.body) > 50<<20 {
		tb.Errorf("%s: %d bytes, over 50 MB", sitemapURL, len(r.body))
	}
	if !bytes.HasPrefix(r.body, []byte(`<?xml version="1.0" encoding="UTF-8"?>`)) {
		tb.Errorf("%s: no XML declaration of UTF-8: %.60q", sitemapURL, r.body)
	}
	// Every element is in the protocol's namespace and the root's children are of one kind.
	dec := xml.NewDecoder(bytes.NewReader(r.body))
	depth := 0
	var root string
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		if se, ok := tok.(xml.StartElement); ok {
			depth++
			if se.Name.Space != sitemapNS {
				tb.Fatalf("%s: element %s in namespace %q", sitemapURL, se.Name.Local, se.Name.Space)
			}
			allowed := map[int][]string{1: {"urlset", "sitemapindex"}, 2: {"url", "sitemap"}, 3: {"loc", "lastmod"}}[depth]
			if !slices.Contains(allowed, se.Name.Local) {
				tb.Fatalf("%s: element %s at depth %d", sitemapURL, se.Name.Local, depth)
			}
			if depth == 1 {
				root = se.Name.Local
			}
		}
		if _, ok := tok.(xml.EndElement); ok {
			depth--
		}
	}
	folder := sitemapURL[:strings.LastIndex(sitemapURL, "/")+1]
	checkLoc := func(loc string) {
		u, err := url.Parse(loc)
		if err != nil || !u.IsAbs() || (u.Scheme != "http" && u.Scheme != "https") || len(loc) >= 2048 {
			tb.Errorf("%s: loc %q is not an absolute http(s) URL under 2,048 characters", sitemapURL, loc)
		}
		if !strings.HasPrefix(loc, folder) {
			tb.Errorf("%s: loc %q is outside the sitemap's folder %s", sitemapURL, loc, folder)
		}
		locs = append(locs, loc)
	}
	if root == "sitemapindex" {
		var idx sitemapIndex
		if err := xml.Unmarshal(r.body, &idx); err != nil {
			tb.Fatal(err)
		}
		if n := len(idx.Sitemaps); n == 0 || n > 50000 {
			tb.Errorf("%s: %d sitemaps in the index", sitemapURL, n)
		}
		for _, s := range idx.Sitemaps {
			checkLoc(s.Loc)
		}
		return locs, true
	}
	var set sitemapURLSet
	if err := xml.Unmarshal(r.body, &set); err != nil {
		tb.Fatal(err)
	}
	if len(set.URLs) > 50000 {
		tb.Errorf("%s: %d URLs, over 50,000", sitemapURL, len(set.URLs))
	}
	for _, u := range set.URLs {
		checkLoc(u.Loc)
		if _, err := time.Parse(time.RFC3339, u.LastMod); err != nil {
			tb.Errorf("%s: lastmod %q of %s is not a W3C datetime", sitemapURL, u.LastMod, u.Loc)
		}
	}
	return locs, false
}

// fixtureIDs returns the public IDs of the services, locations and organisations of an import file.
func fixtureIDs(tb testing.TB, file []byte) []string {
	tb.Helper()
	var ids []string
	sc := bufio.NewScanner(bytes.NewReader(file))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct {
			Kind     string `json:"kind"`
			PublicID string `json:"publicId"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			tb.Fatal(err)
		}
		switch line.Kind {
		case "service", "location", "organisation":
			ids = append(ids, line.PublicID)
		}
	}
	return ids
}

func TestSitemapListsThePublicTiersPagesOnly(t *testing.T) {
	const base = edge.DefaultBaseURL // the issuer the test tokens name
	file := smallFixture(t)
	s := newTestServer(t, file)
	partner := token(t, grant{dir: "small", tier: dirsvc.Partner, scopes: "graph:read practitioners:read"})
	anonymous := s.get(t, "/v1/d/small/sitemap.xml")
	locs, index := checkSitemapFile(t, anonymous, base+"/v1/d/small/sitemap.xml")
	if got, want := anonymous.header.Get("Cache-Control"), "public, s-maxage=300"; got != want {
		t.Errorf("Cache-Control %q, want %q", got, want)
	}
	if index {
		t.Fatal("a directory of a few records has a sitemap index")
	}
	// Exactly the records an anonymous reader can open are listed, each at its page.
	listed := map[string]bool{}
	for _, loc := range locs {
		listed[strings.TrimPrefix(loc, base)] = true
	}
	for _, id := range fixtureIDs(t, file) {
		path := "/v1/d/small/" + map[string]string{"svc": "services", "loc": "locations", "org": "organisations"}[id[:3]] + "/" + id
		open := s.get(t, path).status == http.StatusOK
		if open != listed[path] {
			t.Errorf("%s: the public reads it: %v; the sitemap lists it: %v", path, open, listed[path])
		}
	}
	for _, hidden := range []string{"svc_reduced", "svc_down", "loc_unlisted", "svc_closed", "prac_jo"} {
		if bytes.Contains(anonymous.body, []byte(hidden)) {
			t.Errorf("the sitemap names %s", hidden)
		}
	}
	if len(locs) < 6 {
		t.Errorf("the sitemap lists %d pages: %v", len(locs), locs)
	}
	// A client's token changes nothing: the sitemap is the public tier's.
	withToken := s.get(t, "/v1/d/small/sitemap.xml", "Authorization", "Bearer "+partner)
	if !bytes.Equal(withToken.body, anonymous.body) {
		t.Errorf("a partner's sitemap differs from the public one:\n%s\n%s", withToken.body, anonymous.body)
	}
	checkSitemapFile(t, withToken, base+"/v1/d/small/sitemap.xml")
	if got := withToken.header.Get("Cache-Control"); got != "private, no-store" {
		t.Errorf("Cache-Control of a client's sitemap %q, want private, no-store", got)
	}

	t.Run("the developer information names it", func(t *testing.T) {
		if got, want := s.get(t, "/v1/d/small/developers").json(t)["sitemap"], base+"/v1/d/small/sitemap.xml"; got != want {
			t.Errorf("sitemap %v, want %s", got, want)
		}
	})
	t.Run("bad parts are refused", func(t *testing.T) {
		missing := s.get(t, "/v1/d/small/services/svc_doesnotexist")
		for _, q := range []string{"part=2", "part=1000"} {
			r := s.get(t, "/v1/d/small/sitemap.xml?"+q)
			if r.status != http.StatusNotFound || !bytes.Equal(r.body, missing.body) {
				t.Errorf("%s: %d %s, want the not-found answer", q, r.status, r.body)
			}
		}
		for _, q := range []string{"part=0", "part=x", "part=+1", "part=1001", "part=1&part=1", "page=1"} {
			if r := s.get(t, "/v1/d/small/sitemap.xml?"+q); r.status != http.StatusBadRequest {
				t.Errorf("%s: %d, want 400", q, r.status)
			}
		}
	})
}

func TestSitemapSplitsIntoAnIndexOfParts(t *testing.T) {
	const base = "https://directory.example.org"
	file := smallFixture(t)
	whole := newTestServerWith(t, func(c *edge.Config) { c.BaseURL = base }, file)
	all, _ := checkSitemapFile(t, whole.get(t, "/v1/d/small/sitemap.xml"), base+"/v1/d/small/sitemap.xml")
	for _, per := range []int{1, 2, 3, len(all) - 1} {
		t.Run(fmt.Sprintf("%d a file", per), func(t *testing.T) {
			s := newTestServerWith(t, func(c *edge.Config) { c.BaseURL = base; c.SitemapURLs = per }, file)
			parts, index := checkSitemapFile(t, s.get(t, "/v1/d/small/sitemap.xml"), base+"/v1/d/small/sitemap.xml")
			if !index {
				t.Fatal("no sitemap index")
			}
			if got, want := len(parts), (len(all)+per-1)/per; got != want {
				t.Fatalf("%d parts, want %d", got, want)
			}
			var joined []string
			for i, loc := range parts {
				if want := fmt.Sprintf("%s/v1/d/small/sitemap.xml?part=%d", base, i+1); loc != want {
					t.Errorf("part %d at %s, want %s", i+1, loc, want)
				}
				urls, index := checkSitemapFile(t, s.get(t, strings.TrimPrefix(loc, base)), base+"/v1/d/small/sitemap.xml")
				if index || len(urls) == 0 || len(urls) > per {
					t.Errorf("part %d: index %v, %d URLs", i+1, index, len(urls))
				}
				joined = append(joined, urls...)
			}
			if !slices.Equal(joined, all) {
				t.Errorf("the parts list\n%v\nthe whole sitemap\n%v", joined, all)
			}
		})
	}
}
