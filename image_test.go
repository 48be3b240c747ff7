package dirsvc_test

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"image"
	"image/color"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/dirsvc/dirsvc"
)

func TestCheckImage(t *testing.T) {
	paletted := image.NewPaletted(image.Rect(0, 0, 10, 10), color.Palette{color.Black, color.White})
	deep := image.NewNRGBA64(image.Rect(0, 0, 10, 10))
	for _, c := range []struct {
		name      string
		body      []byte
		mediaType string // "" when refused
		refusal   string // what the refusal says
	}{
		{"a PNG", pngOf(t, halves()), "image/png", ""},
		{"a paletted PNG", pngOf(t, paletted), "image/png", ""},
		{"a 16-bit PNG", pngOf(t, deep), "image/png", ""},
		{"a JPEG", jpegOf(t, halves()), "image/jpeg", ""},
		{"a grey JPEG", jpegOf(t, quadrant(16, 16)), "image/jpeg", ""},
		{"a lossless WebP", webpFixture(t, "halves.lossless.webp"), "image/webp", ""},
		{"a lossy WebP", webpFixture(t, "halves.lossy.webp"), "image/webp", ""},
		{"a lossy WebP with alpha", webpFixture(t, "halves-alpha.lossy.webp"), "image/webp", ""},
		{"an SVG, which can carry scripts", []byte(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`), "", "not PNG, JPEG or WebP"},
		{"an SVG that says it is a PNG by its first bytes but for one", append([]byte("\x89PNG\r\n\x1a"), []byte("<svg/>")...), "", "not PNG, JPEG or WebP"},
		{"a GIF", []byte("GIF89a\x01\x00\x01\x00\x00\x00\x00;"), "", "not PNG, JPEG or WebP"},
		{"HTML", []byte("<!doctype html><title>x</title>"), "", "not PNG, JPEG or WebP"},
		{"a PNG signature alone", []byte("\x89PNG\r\n\x1a\n"), "", "truncated"},
		{"a PNG wider than 4096 pixels", pngOf(t, image.NewGray(image.Rect(0, 0, 4097, 1))), "", "4097×1 pixels"},
		{"a WebP taller than 4096 pixels", webpHeaderOnly(10, 5000), "", "10×5000 pixels"},
		{"a WebP whose lossless header promises pixels that are not there", webpHeaderOnly(64, 48), "", "does not decode"},
		{"a WebP whose EXIF says to turn it, which its copy without EXIF could not", riff(webpChunk{"VP8X", vp8x(0x08, 32, 16)},
			webpChunks(t, webpFixture(t, "halves.lossy.webp"))[0], webpChunk{"EXIF", exifTIFF(binary.LittleEndian, 6)}), "", "orientation 6"},
		{"a PNG of more than 2 MiB", append(pngOf(t, halves()), make([]byte, dirsvc.MaxImageBytes)...), "", "the most is 2097152"},
		{"nothing", nil, "", "not PNG, JPEG or WebP"},
	} {
		t.Run(c.name, func(t *testing.T) {
			img, err := dirsvc.CheckImage(c.body)
			switch {
			case c.mediaType == "" && err == nil:
				t.Fatalf("accepted as %s", img.MediaType)
			case c.mediaType == "" && dirsvc.ErrorCode(err) != dirsvc.EInvalid:
				t.Fatalf("refused with %v, want an invalid-parameter error", err)
			case c.mediaType == "" && !strings.Contains(err.Error(), c.refusal):
				t.Fatalf("refused with %q, want it to say %q", err, c.refusal)
			case c.mediaType != "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.mediaType != "" && img.MediaType != c.mediaType:
				t.Fatalf("media type %s, want %s", img.MediaType, c.mediaType)
			}
		})
	}
}

func TestCheckImagePublishesNoMetadata(t *testing.T) {
	t.Run("a phone's JPEG loses its EXIF with the GPS position, its XMP and its comment", func(t *testing.T) {
		for _, order := range []byteOrder{binary.LittleEndian, binary.BigEndian} {
			photo := phonePhoto(t, halves(), order, 0)
			img := checked(t, photo)
			holdsNone(t, img.Body, map[string][]byte{"an EXIF block": []byte("Exif"), "the GPS latitude": gpsLatitude(order),
				"an XMP packet": []byte("http://ns.adobe.com/xap"), "the XMP's GPS": []byte("GPSLatitude"), "the comment": []byte("Harbour Road")})
			m := decoded(t, img.Body)
			if m.Bounds() != image.Rect(0, 0, 32, 16) {
				t.Fatalf("published %v, want 32×16", m.Bounds())
			}
			if !near(m.At(4, 8), color.NRGBA{200, 40, 40, 255}, 24) || !near(m.At(28, 8), color.NRGBA{40, 40, 200, 255}, 24) {
				t.Errorf("the pixels changed: %v %v", m.At(4, 8), m.At(28, 8))
			}
		}
	})
	t.Run("a PNG loses its text chunks, its EXIF, its time and a chunk holding HTML", func(t *testing.T) {
		var ztxt bytes.Buffer
		zw := zlib.NewWriter(&ztxt)
		zw.Write([]byte("a secret description"))
		zw.Close()
		src := withChunks(pngOf(t, halves()),
			pngChunk("tEXt", []byte("Comment\x00"+photoComment)),
			pngChunk("zTXt", append([]byte("Description\x00\x00"), ztxt.Bytes()...)),
			pngChunk("iTXt", []byte("XML:com.adobe.xmp\x00\x00\x00\x00\x00"+xmpPacket)),
			pngChunk("eXIf", exifTIFF(binary.BigEndian, 0)),
			pngChunk("tIME", []byte{0x07, 0xe9, 6, 1, 12, 30, 0}),
			pngChunk("htMl", []byte("<html><script>alert(1)</script>")))
		img := checked(t, src)
		if got := strings.Join(pngChunkTypes(t, img.Body), " "); got != "IHDR IDAT IEND" {
			t.Errorf("published chunks %s, want IHDR IDAT IEND", got)
		}
		holdsNone(t, img.Body, map[string][]byte{"the comment": []byte("Harbour Road"), "an XMP packet": []byte("http://ns.adobe.com/xap"),
			"the GPS latitude": gpsLatitude(binary.BigEndian), "the HTML": []byte("<script>")})
		m := decoded(t, img.Body)
		if !near(m.At(4, 8), color.NRGBA{200, 40, 40, 255}, 0) || !near(m.At(28, 8), color.NRGBA{40, 40, 200, 255}, 0) {
			t.Errorf("the pixels changed: %v %v", m.At(4, 8), m.At(28, 8))
		}
	})
	for _, c := range []struct {
		fixture string
		chunks  string // the published file's chunks
		flags   byte   // its VP8X flags, when it has one
	}{
		{"halves.lossy.webp", "VP8 ", 0},
		{"halves.lossless.webp", "VP8L", 0},
		{"halves-alpha.lossy.webp", "VP8X ALPH VP8 ", 0x10},
	} {
		t.Run("a WebP ("+c.fixture+") loses its EXIF, XMP and ICC chunks and what follows its image", func(t *testing.T) {
			var chunks []webpChunk
			flags := byte(0x20 | 0x08 | 0x04) // ICC profile, EXIF, XMP
			for _, ch := range webpChunks(t, webpFixture(t, c.fixture)) {
				if ch.id == "ALPH" {
					flags |= 0x10
				}
				if ch.id != "VP8X" {
					chunks = append(chunks, ch)
				}
			}
			src := riff(append(append([]webpChunk{{"VP8X", vp8x(flags, 32, 16)}, {"ICCP", []byte("a colour profile, Jo's")}}, chunks...),
				webpChunk{"EXIF", append([]byte("Exif\x00\x00"), exifTIFF(binary.LittleEndian, 1)...)},
				webpChunk{"XMP ", []byte(xmpPacket)},
				webpChunk{"htMl", []byte("<html><script>alert(1)</script>")})...)
			img := checked(t, src)
			var got []string
			for _, ch := range webpChunks(t, img.Body) {
				got = append(got, ch.id)
				if ch.id == "VP8X" && ch.data[0] != c.flags {
					t.Errorf("published VP8X flags %#x, want %#x", ch.data[0], c.flags)
				}
			}
			if strings.Join(got, " ") != c.chunks {
				t.Errorf("published chunks %q, want %q", strings.Join(got, " "), c.chunks)
			}
			holdsNone(t, img.Body, map[string][]byte{"an EXIF block": []byte("Exif"), "the GPS latitude": gpsLatitude(binary.LittleEndian),
				"an XMP packet": []byte("GPSLatitude"), "the colour profile": []byte("Jo's"), "the HTML": []byte("<script>")})
			m := decoded(t, img.Body)
			if m.Bounds() != image.Rect(0, 0, 32, 16) || !near(m.At(4, 4), color.NRGBA{200, 40, 40, 255}, 24) || !near(m.At(28, 4), color.NRGBA{40, 40, 200, 255}, 24) {
				t.Errorf("the image changed: %v, %v %v", m.Bounds(), m.At(4, 4), m.At(28, 4))
			}
		})
	}
}

func TestCheckImageTurnsAnOrientedJPEGUpright(t *testing.T) {
	// The stored image is 64×32 with its top-left quadrant white; EXIF orientation o says how to
	// turn it for display, and the published copy must show it so with no orientation left to read.
	for _, c := range []struct {
		name        string
		orientation int
		order       byteOrder
		w, h        int
		white       image.Point // the quadrant (0 or 1 in x and y) where the white lands
	}{
		{"no orientation tag leaves the image as stored", 0, binary.LittleEndian, 64, 32, image.Pt(0, 0)},
		{"1 (upright) leaves it as stored", 1, binary.LittleEndian, 64, 32, image.Pt(0, 0)},
		{"2 mirrors it left to right", 2, binary.LittleEndian, 64, 32, image.Pt(1, 0)},
		{"3 turns it half round", 3, binary.BigEndian, 64, 32, image.Pt(1, 1)},
		{"4 mirrors it top to bottom", 4, binary.LittleEndian, 64, 32, image.Pt(0, 1)},
		{"5 transposes it", 5, binary.LittleEndian, 32, 64, image.Pt(0, 0)},
		{"6 (a phone held upright) turns it a quarter clockwise", 6, binary.LittleEndian, 32, 64, image.Pt(1, 0)},
		{"6 written big-endian turns it the same", 6, binary.BigEndian, 32, 64, image.Pt(1, 0)},
		{"7 transverses it", 7, binary.LittleEndian, 32, 64, image.Pt(1, 1)},
		{"8 turns it a quarter anticlockwise", 8, binary.LittleEndian, 32, 64, image.Pt(0, 1)},
	} {
		t.Run(c.name, func(t *testing.T) {
			img := checked(t, phonePhoto(t, quadrant(64, 32), c.order, c.orientation))
			if bytes.Contains(img.Body, []byte("Exif")) {
				t.Fatal("the published copy still has an EXIF block")
			}
			m := decoded(t, img.Body)
			if m.Bounds() != image.Rect(0, 0, c.w, c.h) {
				t.Fatalf("published %v, want %d×%d", m.Bounds(), c.w, c.h)
			}
			for _, q := range []image.Point{{0, 0}, {1, 0}, {0, 1}, {1, 1}} {
				at := image.Pt(c.w/4+q.X*c.w/2, c.h/4+q.Y*c.h/2)
				y := color.GrayModel.Convert(m.At(at.X, at.Y)).(color.Gray).Y
				if white := q == c.white; white && y < 200 || !white && y > 55 {
					t.Errorf("the pixel at %v is %d, want it %s", at, y, map[bool]string{true: "white", false: "black"}[white])
				}
			}
		})
	}
}

func TestCheckImageTurnsAnOrientedPNGUpright(t *testing.T) {
	// A PNG's eXIf chunk may say how to turn it too; the published copy, without the chunk, is
	// turned already. The grey image is 64×32 with its top-left quadrant white, the colour one red.
	colour := image.NewNRGBA(image.Rect(0, 0, 64, 32))
	for y := range 32 {
		for x := range 64 {
			c := color.NRGBA{0, 0, 0, 255}
			if x < 32 && y < 16 {
				c = color.NRGBA{255, 0, 0, 255}
			}
			colour.SetNRGBA(x, y, c)
		}
	}
	for _, c := range []struct {
		name        string
		m           image.Image
		orientation int
		white       image.Point
	}{
		{"a grey PNG with orientation 6 is turned a quarter clockwise", quadrant(64, 32), 6, image.Pt(1, 0)},
		{"a colour PNG with orientation 8 is turned a quarter anticlockwise", colour, 8, image.Pt(0, 1)},
	} {
		t.Run(c.name, func(t *testing.T) {
			img := checked(t, withChunks(pngOf(t, c.m), pngChunk("eXIf", exifTIFF(binary.BigEndian, c.orientation))))
			if got := strings.Join(pngChunkTypes(t, img.Body), " "); got != "IHDR IDAT IEND" {
				t.Errorf("published chunks %s, want IHDR IDAT IEND", got)
			}
			m := decoded(t, img.Body)
			if m.Bounds() != image.Rect(0, 0, 32, 64) {
				t.Fatalf("published %v, want 32×64", m.Bounds())
			}
			for _, q := range []image.Point{{0, 0}, {1, 0}, {0, 1}, {1, 1}} {
				at := image.Pt(8+q.X*16, 16+q.Y*32)
				r, _, _, _ := m.At(at.X, at.Y).RGBA()
				if lit := q == c.white; lit != (r>>8 == 255) {
					t.Errorf("the pixel at %v is %v, want it lit: %v", at, m.At(at.X, at.Y), lit)
				}
			}
		})
	}
}

func TestCheckImageRefusesDecompressionBombs(t *testing.T) {
	idat := zlibZeros(t, 200<<20) // pixel data that inflates to 200 MiB
	bomb := func(header []byte) []byte {
		b := append(header, pngChunk("IDAT", idat)...)
		return append(b, pngChunk("IEND", nil)...)
	}
	sof2 := []byte{8, 0x10, 0x00, 0x10, 0x00, 3, 1, 0x11, 0, 2, 0x11, 1, 3, 0x11, 1} // progressive, 4096×4096, three components
	sos := []byte{3, 1, 0x00, 2, 0x11, 3, 0x11, 0, 0, 0}
	vp8 := []byte{0x10, 0, 0, 0x9d, 0x01, 0x2a, 0x00, 0x10, 0x00, 0x10} // a key frame of 4096×4096
	for _, c := range []struct {
		name, refusal string
		body          []byte
	}{
		{"a PNG of 4096×4096 16-bit RGBA, inside the side bounds, whose pixel data would inflate to 200 MiB",
			"to decode; the most is", bomb(pngHeader(4096, 4096, 16, 6, 0))},
		{"an interlaced PNG of 4096×4096 RGBA, inside the side bounds, whose pixel data would inflate to 200 MiB",
			"to decode; the most is", bomb(pngHeader(4096, 4096, 8, 6, 1))},
		{"a PNG of 51200×4096 grey whose pixel data would inflate to 200 MiB",
			"51200×4096 pixels", bomb(pngHeader(51200, 4096, 8, 0, 0))},
		{"a PNG of 64×64 whose pixel data goes on for 200 MiB",
			"does not decode", bomb(pngHeader(64, 64, 8, 0, 0))},
		{"a progressive JPEG of 4096×4096",
			"to decode; the most is", slices.Concat([]byte{0xff, 0xd8}, jpegSegment(0xc2, sof2), jpegSegment(0xda, sos), make([]byte, 4096), []byte{0xff, 0xd9})},
		{"a lossy WebP with alpha of 4096×4096",
			"to decode; the most is", riff(webpChunk{"VP8X", vp8x(0x10, 4096, 4096)}, webpChunk{"ALPH", append([]byte{1}, make([]byte, 4096)...)}, webpChunk{"VP8 ", append(vp8, make([]byte, 4096)...)})},
	} {
		t.Run(c.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			img, err := dirsvc.CheckImage(c.body)
			runtime.ReadMemStats(&after)
			if err == nil {
				t.Fatalf("accepted, %d bytes published", len(img.Body))
			}
			if !strings.Contains(err.Error(), c.refusal) {
				t.Errorf("refused with %q, want it to say %q", err, c.refusal)
			}
			if spent := after.TotalAlloc - before.TotalAlloc; spent > 8<<20 {
				t.Errorf("the check allocated %d MiB before refusing", spent>>20)
			}
		})
	}
}

func TestCheckImageRefusesTruncatedImages(t *testing.T) {
	p, jpg, lossy := pngOf(t, halves()), jpegOf(t, halves()), webpFixture(t, "halves.lossy.webp")
	var pixels bytes.Buffer // half the pixel data of a 32×16 grey PNG, in a whole container
	zw := zlib.NewWriter(&pixels)
	zw.Write(make([]byte, 8*33))
	zw.Close()
	lossless := webpChunks(t, webpFixture(t, "halves.lossless.webp"))[0]
	for _, c := range []struct {
		name, refusal string
		body          []byte
	}{
		{"a PNG cut inside its pixel data", "truncated", p[:len(p)-20]},
		{"a PNG without its IEND", "truncated", p[:len(p)-12]},
		{"a PNG whose pixel data ends half way, in a whole container", "does not decode",
			append(append(pngHeader(32, 16, 8, 0, 0), pngChunk("IDAT", pixels.Bytes())...), pngChunk("IEND", nil)...)},
		{"a JPEG cut inside its scan", "ends inside its image data", jpg[:bytes.Index(jpg, []byte{0xff, 0xda})+20]},
		{"a JPEG without its EOI", "truncated", jpg[:len(jpg)-2]},
		{"a JPEG of its headers alone", "truncated", jpg[:200]},
		{"a WebP cut short of its RIFF size", "truncated", lossy[:len(lossy)-10]},
		{"a WebP whose image chunk runs past its RIFF size", "truncated",
			func() []byte {
				b := bytes.Clone(lossy[:len(lossy)-10])
				binary.LittleEndian.PutUint32(b[4:], uint32(len(b)-8))
				return b
			}()},
		{"a lossless WebP whose bitstream ends half way, in a whole container", "does not decode",
			riff(webpChunk{"VP8L", lossless.data[:len(lossless.data)/2]})},
	} {
		t.Run(c.name, func(t *testing.T) {
			img, err := dirsvc.CheckImage(c.body)
			if err == nil {
				t.Fatalf("accepted, %d bytes published", len(img.Body))
			}
			if dirsvc.ErrorCode(err) != dirsvc.EInvalid || !strings.Contains(err.Error(), c.refusal) {
				t.Fatalf("refused with %q, want an invalid-parameter error saying %q", err, c.refusal)
			}
		})
	}
}

func TestCheckImageRefusesBytesAfterTheImage(t *testing.T) {
	p, jpg, lossy := pngOf(t, halves()), jpegOf(t, halves()), webpFixture(t, "halves.lossy.webp")
	zip := []byte("PK\x03\x04\x14\x00\x00\x00\x08\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x09\x00\x00\x00payload.js")
	for _, c := range []struct {
		name string
		body []byte
	}{
		{"a PNG followed by HTML", append(bytes.Clone(p), "<html><script>alert(document.cookie)</script></html>"...)},
		{"a PNG followed by a second IEND", append(bytes.Clone(p), pngChunk("IEND", nil)...)},
		{"a JPEG followed by a ZIP archive", append(bytes.Clone(jpg), zip...)},
		{"a JPEG followed by a newline", append(bytes.Clone(jpg), '\n')},
		{"a phone's JPEG followed by HTML", append(phonePhoto(t, halves(), binary.LittleEndian, 6), "<html><script>alert(1)</script>"...)},
		{"a WebP followed by HTML past its RIFF size", append(bytes.Clone(lossy), "<html><script>alert(1)</script>"...)},
	} {
		t.Run(c.name, func(t *testing.T) {
			img, err := dirsvc.CheckImage(c.body)
			if err == nil {
				t.Fatalf("accepted, %d bytes published", len(img.Body))
			}
			if dirsvc.ErrorCode(err) != dirsvc.EInvalid || !strings.Contains(err.Error(), "after its end") {
				t.Fatalf("refused with %q, want an invalid-parameter error saying there are bytes after its end", err)
			}
		})
	}
}
