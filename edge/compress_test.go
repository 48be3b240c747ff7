package edge_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"strconv"
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

// TestCodedFormsAreKeptAndDecodeToTheIdentityBody reads, in each coding and more than once, a stored
// view (kept beside the view in the store's cache), a page and a list (composed at read time, kept
// by the hash of their body): every coded answer decodes to exactly the identity body, says its own
// length (a kept form is sent whole, not streamed), and carries the coding's entity tag, to which
// If-None-Match answers 304.
func TestCodedFormsAreKeptAndDecodeToTheIdentityBody(t *testing.T) {
	s := newTestServer(t, withBigService(t))
	s.client.Transport = checked(t, &http.Transport{DisableCompression: true})
	decode := map[string]func(io.Reader) (io.Reader, error){
		"br":   func(r io.Reader) (io.Reader, error) { return brotli.NewReader(r), nil },
		"gzip": func(r io.Reader) (io.Reader, error) { return gzip.NewReader(r) },
	}
	for _, page := range []string{
		"/v1/d/small/services/svc_big?view=brief",
		"/v1/d/small/organisations/org_harbour",
		"/v1/d/small/services",
		"/v1/d/small/services?limit=2",
	} {
		identity := s.get(t, page, "Accept-Encoding", "identity")
		if identity.status != http.StatusOK || len(identity.body) < 1024 {
			t.Fatalf("%s: %d with %d bytes; the test needs a body of 1 KB or more", page, identity.status, len(identity.body))
		}
		for _, coding := range []string{"br", "gzip"} {
			var first []byte
			for i := range 3 {
				r := s.get(t, page, "Accept-Encoding", coding)
				if got := r.header.Get("Content-Encoding"); got != coding {
					t.Fatalf("%s in %s: Content-Encoding %q", page, coding, got)
				}
				if got := r.header.Get("Content-Length"); got != strconv.Itoa(len(r.body)) {
					t.Errorf("%s in %s, request %d: Content-Length %q for %d bytes", page, coding, i+1, got, len(r.body))
				}
				zr, err := decode[coding](bytes.NewReader(r.body))
				if err != nil {
					t.Fatal(err)
				}
				plain, err := io.ReadAll(zr)
				if err != nil || !bytes.Equal(plain, identity.body) {
					t.Fatalf("%s in %s, request %d: does not decode to the identity body (%v)", page, coding, i+1, err)
				}
				if i == 0 {
					first = r.body
				} else if !bytes.Equal(r.body, first) {
					t.Errorf("%s in %s, request %d: other bytes than the first time", page, coding, i+1)
				}
				tag := r.header.Get("ETag")
				if want := strings.TrimSuffix(identity.header.Get("ETag"), `"`) + "-" + coding + `"`; tag != want {
					t.Errorf("%s in %s: ETag %s, want %s", page, coding, tag, want)
				}
				if !strings.Contains(r.header.Get("Vary"), "Accept-Encoding") {
					t.Errorf("%s in %s: Vary %q", page, coding, r.header.Get("Vary"))
				}
				if nm := s.get(t, page, "Accept-Encoding", coding, "If-None-Match", tag); nm.status != http.StatusNotModified || len(nm.body) != 0 {
					t.Errorf("%s in %s, If-None-Match %s: %d with %d bytes", page, coding, tag, nm.status, len(nm.body))
				}
			}
		}
	}
}

// TestListsAnswerNotModified checks the entity tags of list answers: the same list for the same
// caller has the same tag, a matching If-None-Match answers 304 without a body and with the headers
// of a shareable answer, and another query of the list has another tag.
func TestListsAnswerNotModified(t *testing.T) {
	s := newTestServer(t, smallFixture(t))
	for _, c := range []struct{ list, other string }{
		{"/v1/d/small/services", "/v1/d/small/services?limit=1"},
		{"/v1/d/small/services?type=gp", "/v1/d/small/services?type=dental"},
		{"/v1/d/small/identifiers/search?system=abn&value=51824753556", "/v1/d/small/identifiers/search?system=abn&value=98765432109"},
	} {
		r := s.get(t, c.list, "Accept-Encoding", "identity")
		tag := r.header.Get("ETag")
		if r.status != http.StatusOK || tag == "" {
			t.Fatalf("%s: %d with ETag %q", c.list, r.status, tag)
		}
		if again := s.get(t, c.list, "Accept-Encoding", "identity"); again.header.Get("ETag") != tag {
			t.Errorf("%s: ETag %s, then %s for the same list", c.list, tag, again.header.Get("ETag"))
		}
		nm := s.get(t, c.list, "Accept-Encoding", "identity", "If-None-Match", `"other", `+tag)
		if nm.status != http.StatusNotModified || len(nm.body) != 0 || nm.header.Get("ETag") != tag ||
			nm.header.Get("Cache-Control") != "public, s-maxage=60" || len(nm.header.Values("RateLimit")) > 0 {
			t.Errorf("%s with If-None-Match: %d, %d bytes, ETag %q, Cache-Control %q, RateLimit %q", c.list, nm.status,
				len(nm.body), nm.header.Get("ETag"), nm.header.Get("Cache-Control"), nm.header.Values("RateLimit"))
		}
		if bytes.Equal(s.get(t, c.other, "Accept-Encoding", "identity").body, r.body) {
			t.Fatalf("%s and %s give the same list: the test needs two", c.list, c.other)
		}
		if other := s.get(t, c.other, "Accept-Encoding", "identity", "If-None-Match", tag); other.status != http.StatusOK || other.header.Get("ETag") == tag {
			t.Errorf("%s with the tag of %s: %d, ETag %s", c.other, c.list, other.status, other.header.Get("ETag"))
		}
	}
}

// withBigService returns the small directory with one more service, svc_big, whose brief view is
// over 1 KB (many contacts), so it is compressed.
func withBigService(tb testing.TB) []byte {
	var contacts []string
	for i := range 24 {
		contacts = append(contacts, fmt.Sprintf(`{"kind":"phone","value":"02 9876 54%02d","label":"Intake line %d of the harbour team"}`, i, i))
	}
	line := `{"kind":"service","publicId":"svc_big","organisation":"org_harbour","location":"loc_ultimo","name":"Harbour intake",` +
		`"type":"gp","contacts":[` + strings.Join(contacts, ",") + `]}`
	return append(bytes.TrimRight(smallFixture(tb), "\n"), []byte("\n"+line+"\n")...)
}
