package edge_test

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/dirsvc/dirsvc"
)

// TestTaxonomyIsThePublicsForEveryCaller reads the taxonomy anonymously and as a professional and a
// partner client: the same bytes, the public's (the local type only professionals and partners may
// see is left out, no entry says whom it is for), with cache tags for shared caches only, a 304 for
// a matching If-None-Match, a 400 for a parameter and a 404 for an unknown directory.
func TestTaxonomyIsThePublicsForEveryCaller(t *testing.T) {
	s := newTestServer(t, smallFixture(t))
	anon := s.get(t, "/v1/d/small/taxonomy")
	if anon.status != http.StatusOK || anon.header.Get("X-DIR-Audience") != "public" || anon.header.Get("ETag") == "" ||
		anon.header.Get("Cache-Tag") != "dir:small,small:taxonomy" {
		t.Fatalf("anonymous: %d %v %s", anon.status, anon.header, anon.body)
	}
	for _, bad := range []string{"clinical-only", "canary", `"audiences"`} {
		if bytes.Contains(anon.body, []byte(bad)) {
			t.Errorf("the taxonomy holds %q: %s", bad, anon.body)
		}
	}
	if !bytes.Contains(anon.body, []byte(`"primary_care"`)) || !bytes.Contains(anon.body, []byte(`"stethoscope"`)) {
		t.Errorf("the taxonomy lacks its category and icon: %s", anon.body)
	}
	for _, tier := range []dirsvc.Audience{dirsvc.Professional, dirsvc.Partner} {
		tok := token(t, grant{dir: "small", tier: tier, scopes: "graph:read"})
		r := s.get(t, "/v1/d/small/taxonomy", "Authorization", "Bearer "+tok)
		if r.status != http.StatusOK || !bytes.Equal(r.body, anon.body) || r.header.Get("X-DIR-Audience") != "public" ||
			r.header.Get("Cache-Control") != "private, no-store" || r.header.Get("Cache-Tag") != "" {
			t.Errorf("%s: %d %v\n%s", tier, r.status, r.header, r.body)
		}
	}
	if r := s.get(t, "/v1/d/small/taxonomy", "If-None-Match", anon.header.Get("ETag")); r.status != http.StatusNotModified {
		t.Errorf("If-None-Match: %d", r.status)
	}
	if r := s.get(t, "/v1/d/small/taxonomy?view=page"); r.status != http.StatusBadRequest {
		t.Errorf("a parameter: %d %s", r.status, r.body)
	}
	if r := s.get(t, "/v1/d/nowhere/taxonomy"); r.status != http.StatusNotFound {
		t.Errorf("an unknown directory: %d %s", r.status, r.body)
	}
}
