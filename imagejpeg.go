package dirsvc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
)

// jpegQuality is the quality a published JPEG is encoded again at: high enough that a second
// generation shows no loss a viewer would see at a logo's or a photo's size.
const jpegQuality = 90

// jpegHeader is what a JPEG's segments say of its pixels and of the way up to show them.
type jpegHeader struct {
	width, height int
	components    int
	progressive   bool
	orientation   int // EXIF Orientation, 1 to 8; 1 when there is none
}

// bytesPerPixel is what Go's JPEG decoder allocates for each pixel, an upper bound: a sample per
// component (a CMYK image is decoded as YCbCr and a black plane, then converted: 8), plus, for a
// progressive image, the 4-byte coefficients of every component it keeps until the last scan; and
// one more for the turned copy of a grey image (CheckImage turns other images as it encodes them).
func (h jpegHeader) bytesPerPixel() int64 {
	n := int64(h.components)
	if h.components == 4 {
		n = 8
	}
	if h.progressive {
		n += 4 * int64(h.components)
	}
	if h.orientation != 1 && h.components == 1 {
		n++
	}
	return n
}

// publishJPEG returns the copy of a JPEG to publish: its segments walked to its EOI (which must end
// the file), its size checked from its frame header, its pixels decoded fully, turned as its EXIF
// orientation says, and encoded again, which drops every APPn segment (EXIF with GPS, XMP, IPTC,
// ICC, thumbnails) and comment.
func publishJPEG(b []byte) ([]byte, error) {
	h, err := walkJPEG(b)
	if err != nil {
		return nil, err
	}
	if err := checkImageSize("JPEG", h.width, h.height, h.bytesPerPixel()); err != nil {
		return nil, err
	}
	m, err := jpeg.Decode(bytes.NewReader(b))
	if err != nil {
		return nil, imageUndecodable("JPEG", err)
	}
	if m.Bounds().Dx() != h.width || m.Bounds().Dy() != h.height {
		return nil, imageUndecodable("JPEG", errors.New("its pixels are not the size of its frame header"))
	}
	var out bytes.Buffer
	if err := jpeg.Encode(&out, orient(m, h.orientation), &jpeg.Options{Quality: jpegQuality}); err != nil {
		return nil, imageUndecodable("JPEG", err)
	}
	return out.Bytes(), nil
}

// walkJPEG walks a JPEG's marker segments and entropy-coded scans from its SOI to its EOI and
// returns what its first frame header (SOFn) and EXIF block say. Like Go's decoder (and libjpeg),
// it passes over stray bytes between segments.
func walkJPEG(b []byte) (jpegHeader, error) {
	h := jpegHeader{orientation: 1}
	seenSOF, seenExif := false, false
	for at := 2; ; {
		for at < len(b) && b[at] != 0xff {
			at++
		}
		for at < len(b) && b[at] == 0xff {
			at++ // fill bytes before a marker
		}
		if at >= len(b) {
			return h, imageTruncated("JPEG", "it ends before its end marker (EOI)")
		}
		marker := b[at]
		at++
		switch {
		case marker == 0xd9: // EOI
			if at != len(b) {
				return h, imageAfterEnd("JPEG", "its end marker, EOI", len(b)-at)
			}
			if !seenSOF {
				return h, imageUndecodable("JPEG", errors.New("it has no frame header (SOF)"))
			}
			return h, nil
		case marker == 0x00, marker == 0x01, marker == 0xd8, marker >= 0xd0 && marker <= 0xd7:
			continue // a stuffed byte, TEM, SOI, RSTn: no length follows
		}
		if len(b)-at < 2 || int(binary.BigEndian.Uint16(b[at:])) < 2 || int(binary.BigEndian.Uint16(b[at:])) > len(b)-at {
			return h, imageTruncated("JPEG", "a segment runs past the end of the file")
		}
		payload := b[at+2 : at+int(binary.BigEndian.Uint16(b[at:]))]
		at += 2 + len(payload)
		switch {
		case marker >= 0xc0 && marker <= 0xcf && marker != 0xc4 && marker != 0xc8 && marker != 0xcc && !seenSOF: // SOFn
			if len(payload) < 6 {
				return h, imageUndecodable("JPEG", errors.New("its frame header is short"))
			}
			seenSOF = true
			h.height, h.width = int(binary.BigEndian.Uint16(payload[1:])), int(binary.BigEndian.Uint16(payload[3:]))
			h.components = int(payload[5])
			h.progressive = marker == 0xc2 || marker == 0xc6 || marker == 0xca || marker == 0xce
		case marker == 0xe1 && !seenExif && bytes.HasPrefix(payload, []byte("Exif\x00\x00")): // the first EXIF block, as viewers read
			seenExif = true
			h.orientation = exifOrientation(payload[6:])
		case marker == 0xda: // SOS: its entropy-coded data runs to the next marker
			if at = scanEnd(b, at); at < 0 {
				return h, imageTruncated("JPEG", "it ends inside its image data, before its end marker (EOI)")
			}
		}
	}
}

// scanEnd returns where the entropy-coded data starting at b[at] ends: at the first marker other
// than RSTn (0xff 0x00 is a stuffed 0xff), or -1 when the file ends first.
func scanEnd(b []byte, at int) int {
	for ; at < len(b)-1; at++ {
		if b[at] != 0xff {
			continue
		}
		if next := b[at+1]; next != 0x00 && next != 0xff && (next < 0xd0 || next > 0xd7) {
			return at
		}
	}
	return -1
}

// exifOrientation reads the Orientation tag (0x0112, a SHORT from 1 to 8) of IFD0 of an EXIF block
// (a TIFF header in either byte order); 1, upright, when there is none or the block does not parse.
func exifOrientation(tiff []byte) int {
	var order binary.ByteOrder
	switch {
	case bytes.HasPrefix(tiff, []byte("II*\x00")):
		order = binary.LittleEndian
	case bytes.HasPrefix(tiff, []byte("MM\x00*")):
		order = binary.BigEndian
	default:
		return 1
	}
	if len(tiff) < 8 {
		return 1
	}
	ifd := int64(order.Uint32(tiff[4:]))
	if ifd+2 > int64(len(tiff)) {
		return 1
	}
	n := int64(order.Uint16(tiff[ifd:]))
	for e := ifd + 2; e < ifd+2+12*n && e+12 <= int64(len(tiff)); e += 12 {
		if order.Uint16(tiff[e:]) == 0x0112 && order.Uint16(tiff[e+2:]) == 3 {
			if v := int(order.Uint16(tiff[e+8:])); v >= 1 && v <= 8 {
				return v
			}
			return 1
		}
	}
	return 1
}

// orient returns m as EXIF orientation o says to show it (1 upright, 2 mirrored, 3 turned half
// round, 4 mirrored top to bottom, 5 transposed, 6 turned a quarter clockwise, 7 transversed, 8
// turned a quarter anticlockwise). A grey image is copied turned; any other is wrapped, and the
// encoder reads it turned pixel by pixel, so a colour photo is never held twice.
func orient(m image.Image, o int) image.Image {
	if o < 2 || o > 8 {
		return m
	}
	r := orientedImage{src: m, o: o}
	g, ok := m.(*image.Gray)
	if !ok {
		return r
	}
	out := image.NewGray(r.Bounds())
	for y := range out.Rect.Dy() {
		for x := range out.Rect.Dx() {
			sx, sy := r.source(x, y)
			out.Pix[y*out.Stride+x] = g.GrayAt(sx, sy).Y
		}
	}
	return out
}

// orientedImage shows src turned or mirrored as EXIF orientation o (2 to 8) says.
type orientedImage struct {
	src image.Image
	o   int
}

func (m orientedImage) ColorModel() color.Model { return m.src.ColorModel() }

func (m orientedImage) Bounds() image.Rectangle {
	w, h := m.src.Bounds().Dx(), m.src.Bounds().Dy()
	if m.o >= 5 {
		w, h = h, w
	}
	return image.Rect(0, 0, w, h)
}

func (m orientedImage) At(x, y int) color.Color {
	sx, sy := m.source(x, y)
	return m.src.At(sx, sy)
}

// source returns the pixel of src shown at (x, y).
func (m orientedImage) source(x, y int) (int, int) {
	b := m.src.Bounds()
	w, h := b.Dx(), b.Dy()
	switch m.o {
	case 2:
		x = w - 1 - x
	case 3:
		x, y = w-1-x, h-1-y
	case 4:
		y = h - 1 - y
	case 5:
		x, y = y, x
	case 6:
		x, y = y, h-1-x
	case 7:
		x, y = w-1-y, h-1-x
	case 8:
		x, y = w-1-y, x
	}
	return b.Min.X + x, b.Min.Y + y
}
