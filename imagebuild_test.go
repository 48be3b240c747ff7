package dirsvc_test

import (
	"bytes"
	"compress/zlib"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	_ "golang.org/x/image/webp" // the WebP decoder CheckImage finds registered, as the dirsvc binary registers it

	"github.com/dirsvc/dirsvc"
)

// pngOf encodes m as a PNG.
func pngOf(tb testing.TB, m image.Image) []byte {
	tb.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, m); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

// jpegOf encodes m as a JPEG (Go's encoder writes no APPn segment: SOI, DQT, SOF0, DHT, SOS, EOI).
func jpegOf(tb testing.TB, m image.Image) []byte {
	tb.Helper()
	var b bytes.Buffer
	if err := jpeg.Encode(&b, m, &jpeg.Options{Quality: 90}); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

// quadrant returns a w×h grey image, black but for its white top-left quadrant: whichever way it
// is turned or mirrored, where the white lands says how.
func quadrant(w, h int) *image.Gray {
	m := image.NewGray(image.Rect(0, 0, w, h))
	for y := 0; y < h/2; y++ {
		for x := 0; x < w/2; x++ {
			m.SetGray(x, y, color.Gray{Y: 255})
		}
	}
	return m
}

// halves returns a 32×16 image whose left half is red and right half blue, as the WebP fixtures.
func halves() *image.NRGBA {
	m := image.NewNRGBA(image.Rect(0, 0, 32, 16))
	for y := 0; y < 16; y++ {
		for x := 0; x < 32; x++ {
			c := color.NRGBA{200, 40, 40, 255}
			if x >= 16 {
				c = color.NRGBA{40, 40, 200, 255}
			}
			m.SetNRGBA(x, y, c)
		}
	}
	return m
}

// The metadata a phone leaves in a photo, which a published copy must not carry.
const (
	xmpNamespace = "http://ns.adobe.com/xap/1.0/"
	xmpPacket    = `<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">` +
		`<rdf:Description xmlns:exif="http://ns.adobe.com/exif/1.0/" exif:GPSLatitude="51,30.4390N"/></rdf:RDF></x:xmpmeta>`
	photoComment = "Taken at 12 Harbour Road, Flat 3, on Jo's phone"
)

// byteOrder is the byte order of an EXIF block, either of TIFF's two.
type byteOrder interface {
	binary.ByteOrder
	binary.AppendByteOrder
}

// gpsLatitude is the GPS latitude exifTIFF writes (51° 30' 26.34" as three rationals), in the byte
// order given: the bytes a published copy must not hold.
func gpsLatitude(order byteOrder) []byte {
	var b []byte
	for _, r := range [][2]uint32{{51, 1}, {30, 1}, {2634, 100}} {
		b = order.AppendUint32(b, r[0])
		b = order.AppendUint32(b, r[1])
	}
	return b
}

// exifTIFF returns an EXIF block (a TIFF header and IFD0) with an Orientation tag (when orientation
// is not 0) and a GPS IFD holding a latitude and a longitude, as a phone camera writes them.
func exifTIFF(order byteOrder, orientation int) []byte {
	type entry struct {
		tag, typ uint16
		count    uint32
		value    []byte // 4 bytes, inline
	}
	short := func(v uint16) []byte { return order.AppendUint16(order.AppendUint16(nil, v), 0) }
	long := func(v uint32) []byte { return order.AppendUint32(nil, v) }
	ifd := func(b []byte, entries []entry) []byte {
		b = order.AppendUint16(b, uint16(len(entries)))
		for _, e := range entries {
			b = order.AppendUint16(b, e.tag)
			b = order.AppendUint16(b, e.typ)
			b = order.AppendUint32(b, e.count)
			b = append(b, e.value...)
		}
		return order.AppendUint32(b, 0)
	}
	ifd0 := []entry{{0x8825, 4, 1, nil}} // GPSInfo: the GPS IFD's offset, filled in below
	if orientation != 0 {
		ifd0 = append([]entry{{0x0112, 3, 1, short(uint16(orientation))}}, ifd0...)
	}
	ifd0Len := 2 + 12*len(ifd0) + 4
	gpsAt := 8 + ifd0Len
	gpsLen := 2 + 12*4 + 4
	latAt, lonAt := gpsAt+gpsLen, gpsAt+gpsLen+24
	ifd0[len(ifd0)-1].value = long(uint32(gpsAt))
	b := []byte("II*\x00")
	if order == binary.BigEndian {
		b = []byte("MM\x00*")
	}
	b = order.AppendUint32(b, 8)
	b = ifd(b, ifd0)
	b = ifd(b, []entry{
		{0x0001, 2, 2, []byte("N\x00\x00\x00")},
		{0x0002, 5, 3, long(uint32(latAt))},
		{0x0003, 2, 2, []byte("W\x00\x00\x00")},
		{0x0004, 5, 3, long(uint32(lonAt))},
	})
	b = append(b, gpsLatitude(order)...)
	for _, r := range [][2]uint32{{0, 1}, {7, 1}, {3972, 100}} {
		b = order.AppendUint32(b, r[0])
		b = order.AppendUint32(b, r[1])
	}
	return b
}

// jpegSegment returns a JPEG marker segment with its length.
func jpegSegment(marker byte, payload []byte) []byte {
	b := []byte{0xff, marker}
	b = binary.BigEndian.AppendUint16(b, uint16(len(payload)+2))
	return append(b, payload...)
}

// withSegments splices segments into a JPEG right after its SOI, where a camera writes them.
func withSegments(jpg []byte, segments ...[]byte) []byte {
	b := append([]byte(nil), jpg[:2]...)
	for _, s := range segments {
		b = append(b, s...)
	}
	return append(b, jpg[2:]...)
}

// phonePhoto returns a JPEG of m as a phone writes it: an EXIF APP1 with a GPS IFD (and the
// orientation given, when not 0), an XMP APP1 and a comment.
func phonePhoto(tb testing.TB, m image.Image, order byteOrder, orientation int) []byte {
	tb.Helper()
	return withSegments(jpegOf(tb, m),
		jpegSegment(0xe1, append([]byte("Exif\x00\x00"), exifTIFF(order, orientation)...)),
		jpegSegment(0xe1, append([]byte(xmpNamespace+"\x00"), xmpPacket...)),
		jpegSegment(0xfe, []byte(photoComment)))
}

// pngChunk returns a PNG chunk with its length and CRC.
func pngChunk(typ string, data []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(data)))
	b = append(b, typ...)
	b = append(b, data...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b[4:]))
}

// withChunks inserts chunks into a PNG right after its IHDR (signature 8 bytes, IHDR 25).
func withChunks(p []byte, chunks ...[]byte) []byte {
	b := append([]byte(nil), p[:33]...)
	for _, c := range chunks {
		b = append(b, c...)
	}
	return append(b, p[33:]...)
}

// pngChunkTypes lists the types of a PNG's chunks, in order.
func pngChunkTypes(tb testing.TB, p []byte) []string {
	tb.Helper()
	var types []string
	for p = p[8:]; len(p) >= 12; {
		n := int(binary.BigEndian.Uint32(p))
		if 12+n > len(p) {
			tb.Fatalf("a chunk runs past the end of the PNG")
		}
		types = append(types, string(p[4:8]))
		p = p[12+n:]
	}
	return types
}

// pngHeader returns the signature and IHDR of a w×h PNG of the bit depth and colour type given.
func pngHeader(w, h uint32, depth, colorType, interlace byte) []byte {
	ihdr := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, w), h)
	ihdr = append(ihdr, depth, colorType, 0, 0, interlace)
	return append([]byte("\x89PNG\r\n\x1a\n"), pngChunk("IHDR", ihdr)...)
}

// zlibZeros returns a zlib stream that inflates to n zero bytes (about a thousandth of n).
func zlibZeros(tb testing.TB, n int) []byte {
	tb.Helper()
	var b bytes.Buffer
	zw, err := zlib.NewWriterLevel(&b, zlib.BestCompression)
	if err != nil {
		tb.Fatal(err)
	}
	zeros := make([]byte, 1<<20)
	for ; n > 0; n -= len(zeros) {
		if _, err := zw.Write(zeros[:min(n, len(zeros))]); err != nil {
			tb.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

// webpFixture reads one of the WebP files of testdata/images.
func webpFixture(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "images", name))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// webpChunk is one chunk of a RIFF container.
type webpChunk struct {
	id   string
	data []byte
}

// webpChunks splits a WebP file into its chunks.
func webpChunks(tb testing.TB, b []byte) []webpChunk {
	tb.Helper()
	if len(b) < 12 || string(b[:4]) != "RIFF" || string(b[8:12]) != "WEBP" || int(binary.LittleEndian.Uint32(b[4:]))+8 != len(b) {
		tb.Fatalf("not a whole WebP file")
	}
	var chunks []webpChunk
	for b = b[12:]; len(b) > 0; {
		n := int(binary.LittleEndian.Uint32(b[4:]))
		chunks = append(chunks, webpChunk{string(b[:4]), b[8 : 8+n]})
		b = b[min(len(b), 8+n+n%2):]
	}
	return chunks
}

// riff assembles a WebP file of chunks, each padded to an even length.
func riff(chunks ...webpChunk) []byte {
	b := []byte("RIFF\x00\x00\x00\x00WEBP")
	for _, c := range chunks {
		b = append(b, c.id...)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(c.data)))
		b = append(b, c.data...)
		if len(c.data)%2 == 1 {
			b = append(b, 0)
		}
	}
	binary.LittleEndian.PutUint32(b[4:], uint32(len(b)-8))
	return b
}

// vp8x returns the data of a VP8X chunk with the flags and canvas size given.
func vp8x(flags byte, w, h int) []byte {
	return []byte{flags, 0, 0, 0, byte(w - 1), byte((w - 1) >> 8), byte((w - 1) >> 16), byte(h - 1), byte((h - 1) >> 8), byte((h - 1) >> 16)}
}

// webpHeaderOnly returns the RIFF container and VP8L header of a lossless WebP of w×h, with zero
// bytes for its pixels: a header that claims a size, and nothing that decodes.
func webpHeaderOnly(w, h int) []byte {
	bits := uint32(w-1) | uint32(h-1)<<14
	return riff(webpChunk{"VP8L", []byte{0x2f, byte(bits), byte(bits >> 8), byte(bits >> 16), byte(bits >> 24), 0, 0, 0, 0, 0}})
}

// checked runs CheckImage on an image that must be accepted and checks what every published copy
// keeps: its hash names its own bytes, and the same input gives the same bytes again.
func checked(tb testing.TB, body []byte) *dirsvc.Image {
	tb.Helper()
	img, err := dirsvc.CheckImage(body)
	if err != nil {
		tb.Fatalf("refused: %v", err)
	}
	if sum := sha256.Sum256(img.Body); img.SHA256 != hex.EncodeToString(sum[:]) {
		tb.Errorf("SHA256 %s is not the hash of the published bytes", img.SHA256)
	}
	again, err := dirsvc.CheckImage(bytes.Clone(body))
	if err != nil || !bytes.Equal(again.Body, img.Body) || again.SHA256 != img.SHA256 {
		tb.Errorf("the same image checked again gives other bytes (%v)", err)
	}
	return img
}

// decoded decodes published bytes with the standard decoders (and the WebP one), as a browser would.
func decoded(tb testing.TB, b []byte) image.Image {
	tb.Helper()
	m, _, err := image.Decode(bytes.NewReader(b))
	if err != nil {
		tb.Fatalf("the published image does not decode: %v", err)
	}
	return m
}

// holdsNone fails the test for each of the byte strings b holds.
func holdsNone(tb testing.TB, b []byte, what map[string][]byte) {
	tb.Helper()
	for name, s := range what {
		if bytes.Contains(b, s) {
			tb.Errorf("the published image still holds %s", name)
		}
	}
}

// near reports whether two colours are within tol of each other in every channel (8-bit).
func near(a, b color.Color, tol int) bool {
	ar, ag, ab, aa := a.RGBA()
	br, bg, bb, ba := b.RGBA()
	for _, d := range []int{int(ar>>8) - int(br>>8), int(ag>>8) - int(bg>>8), int(ab>>8) - int(bb>>8), int(aa>>8) - int(ba>>8)} {
		if d < -tol || d > tol {
			return false
		}
	}
	return true
}
