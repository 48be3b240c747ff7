package edge_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
)

func TestCompression(t *testing.T) {
	s := newTestServer(t, smallFixture(t))
	// A transport that leaves compression to the test, so the wire is what the test sees.
	s.client.Transport = checked(t, &http.Transport{DisableCompression: true})
	const page = "/v1/d/small/organisations/org_harbour" // several KB
	identity := s.get(t, page, "Accept-Encoding", "identity")
	if identity.header.Get("Content-Encoding") != "" || len(identity.body) < 1024 {
		t.Fatalf("identity: encoding %q, %d bytes", identity.header.Get("Content-Encoding"), len(identity.body))
	}
	decode := map[string]func(io.Reader) (io.Reader, error){
		"br":   func(r io.Reader) (io.Reader, error) { return brotli.NewReader(r), nil },
		"gzip": func(r io.Reader) (io.Reader, error) { return gzip.NewReader(r) },
	}
	for _, c := range []struct{ accept, want string }{
		{"gzip, deflate, br", "br"},
		{"br;q=0, gzip", "gzip"},
		{"gzip;q=0.5", "gzip"},
		{"*", "br"},
		{"*;q=0", ""},
		{"deflate", ""},
	} {
		r := s.get(t, page, "Accept-Encoding", c.accept)
		if got := r.header.Get("Content-Encoding"); got != c.want {
			t.Errorf("Accept-Encoding %q: Content-Encoding %q, want %q", c.accept, got, c.want)
			continue
		}
		if !strings.Contains(r.header.Get("Vary"), "Accept-Encoding") {
			t.Errorf("Accept-Encoding %q: no Vary", c.accept)
		}
		if c.want == "" {
			continue
		}
		zr, err := decode[c.want](bytes.NewReader(r.body))
		if err != nil {
			t.Fatal(err)
		}
		plain, err := io.ReadAll(zr)
		if err != nil || !bytes.Equal(plain, identity.body) {
			t.Fatalf("%s body does not decode to the identity body: %v", c.want, err)
		}
		if len(r.body) >= len(identity.body) {
			t.Errorf("%s: %d bytes, identity %d", c.want, len(r.body), len(identity.body))
		}
		tag := r.header.Get("ETag")
		if tag == identity.header.Get("ETag") || !strings.HasSuffix(tag, "-"+c.want+`"`) {
			t.Errorf("%s ETag %s, identity %s: each coding needs its own", c.want, tag, identity.header.Get("ETag"))
		}
		if nm := s.get(t, page, "Accept-Encoding", c.accept, "If-None-Match", tag); nm.status != http.StatusNotModified || nm.header.Get("ETag") != tag {
			t.Errorf("If-None-Match %s: %d with ETag %s, want 304 with the same tag", tag, nm.status, nm.header.Get("ETag"))
		}
	}
	small := s.get(t, "/v1/d/small/services/svc_nothere", "Accept-Encoding", "br")
	if small.header.Get("Content-Encoding") != "" || !strings.Contains(small.header.Get("Vary"), "Accept-Encoding") {
		t.Errorf("a small problem body: Content-Encoding %q, Vary %q", small.header.Get("Content-Encoding"), small.header.Get("Vary"))
	}
}
