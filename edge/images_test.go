package edge_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "golang.org/x/image/webp" // the WebP decoder CheckImage finds registered, as the dirsvc binary registers it

	"github.com/dirsvc/dirsvc"
)

// pngImage returns a w×h PNG of one colour.
func pngImage(tb testing.TB, w, h int, c uint8) []byte {
	tb.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = c
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

func jpegImage(tb testing.TB, w, h int) []byte {
	tb.Helper()
	img := image.NewGray(image.Rect(0, 0, w, h))
	img.Set(0, 0, color.Gray{Y: 200})
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, nil); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

// webpImage reads a lossless WebP of the shared fixtures (Go has no WebP encoder).
func webpImage(tb testing.TB) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "images", "halves.lossless.webp"))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// imageServer serves the small directory with published images: A, the public logo of org_harbour;
// B, prac_jo's photo, which Jo shows to partners only; C, the photo of prac_hidden, whose name the
// public may not see; E, the logo of org_private, an organisation only partners see; D, added but
// named by no record.
type imageServer struct {
	*testServer
	images map[string]*dirsvc.Image
}

func newImageServer(t *testing.T) *imageServer {
	t.Helper()
	imgs := map[string]*dirsvc.Image{}
	for name, body := range map[string][]byte{"A": pngImage(t, 20, 20, 1), "B": jpegImage(t, 8, 8), "C": pngImage(t, 3, 3, 3),
		"D": pngImage(t, 4, 4, 4), "E": webpImage(t)} {
		img, err := dirsvc.CheckImage(body)
		if err != nil {
			t.Fatal(err)
		}
		imgs[name] = img
	}
	path := func(name string) string { return dirsvc.ImagePath("small", imgs[name].SHA256, imgs[name].MediaType) }
	file := string(smallFixture(t))
	for old, repl := range map[string]string{
		`"publicId":"org_harbour",`:   `"publicId":"org_harbour","logo":"` + path("A") + `",`,
		`"publicId":"prac_jo",`:       `"publicId":"prac_jo","photo":"` + path("B") + `",`,
		`"shows":{"bio":["partner"]}`: `"shows":{"bio":["partner"],"photo":["partner"]}`,
		`"publicId":"prac_hidden",`:   `"publicId":"prac_hidden","photo":"` + path("C") + `","shows":{"photo":["public","professional","partner"]},`,
	} {
		if !strings.Contains(file, old) {
			t.Fatalf("the small fixture has no %s", old)
		}
		file = strings.Replace(file, old, repl, 1)
	}
	file += `{"kind":"organisation","publicId":"org_private","name":"Private Partners Org","audiences":["partner"],"logo":"` + path("E") + `"}` + "\n"
	s := newTestServer(t, []byte(file))
	d, err := s.store.Directory(context.Background(), "small")
	if err != nil {
		t.Fatal(err)
	}
	for _, img := range imgs {
		if err := d.AddImage(context.Background(), img); err != nil {
			t.Fatal(err)
		}
	}
	return &imageServer{s, imgs}
}

func (s *imageServer) path(name string) string {
	return dirsvc.ImagePath("small", s.images[name].SHA256, s.images[name].MediaType)
}

func TestPublishedImages(t *testing.T) {
	s := newImageServer(t)
	partner := token(t, grant{dir: "small", tier: dirsvc.Partner, scopes: "graph:read practitioners:read"})

	t.Run("views name the image by its path", func(t *testing.T) {
		if got := s.get(t, "/v1/d/small/organisations/org_harbour?view=brief").json(t)["logo"]; got != s.path("A") {
			t.Errorf("logo %v, want %s", got, s.path("A"))
		}
		if got := s.get(t, "/v1/d/small/practitioners/prac_jo", "Authorization", "Bearer "+partner).json(t)["photo"]; got != s.path("B") {
			t.Errorf("photo for a partner %v, want %s", got, s.path("B"))
		}
	})
	t.Run("an image is served immutable, with its hash as a strong entity tag", func(t *testing.T) {
		r := s.get(t, s.path("A"))
		if r.status != http.StatusOK || !bytes.Equal(r.body, s.images["A"].Body) {
			t.Fatalf("status %d, %d bytes", r.status, len(r.body))
		}
		if sum := sha256.Sum256(r.body); r.header.Get("ETag") != `"`+hex.EncodeToString(sum[:])+`"` || !strings.Contains(s.path("A"), hex.EncodeToString(sum[:])) {
			t.Errorf("ETag %s and path %s are not the hash of the bytes served", r.header.Get("ETag"), s.path("A"))
		}
		for k, want := range map[string]string{"Content-Type": "image/png", "ETag": `"` + s.images["A"].SHA256 + `"`,
			"Cache-Control": "public, max-age=31536000, immutable", "X-Content-Type-Options": "nosniff"} {
			if got := r.header.Get(k); got != want {
				t.Errorf("%s: %q, want %q", k, got, want)
			}
		}
		nm := s.get(t, s.path("A"), "If-None-Match", r.header.Get("ETag"))
		if nm.status != http.StatusNotModified || len(nm.body) != 0 || nm.header.Get("ETag") != r.header.Get("ETag") {
			t.Errorf("If-None-Match: %d, %d bytes, ETag %q", nm.status, len(nm.body), nm.header.Get("ETag"))
		}
		if other := s.get(t, s.path("A"), "If-None-Match", `"`+s.images["D"].SHA256+`"`); other.status != http.StatusOK {
			t.Errorf("If-None-Match of another image: %d", other.status)
		}
		e := s.get(t, s.path("E"), "Authorization", "Bearer "+partner)
		if e.status != http.StatusOK || e.header.Get("Content-Type") != "image/webp" || e.header.Get("Cache-Control") != "private, no-store" {
			t.Errorf("a partner's WebP: %d %q %q", e.status, e.header.Get("Content-Type"), e.header.Get("Cache-Control"))
		}
		b := s.get(t, s.path("B"), "Authorization", "Bearer "+partner)
		if b.status != http.StatusOK || b.header.Get("Content-Type") != "image/jpeg" {
			t.Errorf("a partner's JPEG: %d %q", b.status, b.header.Get("Content-Type"))
		}
	})
}
