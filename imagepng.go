package dirsvc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"image/png"
)

// pngSignature opens every PNG file.
const pngSignature = "\x89PNG\r\n\x1a\n"

// pngHeader is what a PNG's IHDR chunk says of its pixels.
type pngHeader struct {
	width, height int
	depth         byte // bits per sample
	interlaced    bool
	orientation   int // the EXIF Orientation of its eXIf chunk, 1 to 8; 0 when there is none
}

// bytesPerPixel is what Go's PNG decoder allocates for each pixel: 4 (8 for 16-bit samples), an
// upper bound over its grey, paletted, RGBA and NRGBA images; an interlaced image is decoded pass by
// pass into images of its own before they are merged, so twice that; and one more for the turned
// copy of a grey image (orient).
func (h pngHeader) bytesPerPixel() int64 {
	n := int64(4)
	if h.depth == 16 {
		n = 8
	}
	if h.interlaced {
		n *= 2
	}
	if h.orientation > 1 {
		n++
	}
	return n
}

// publishPNG returns the copy of a PNG to publish: its container walked to its IEND (which must end
// the file), its size checked from its IHDR, its pixels decoded fully, turned as its eXIf chunk's
// orientation says, and encoded again, which keeps the image and drops every ancillary chunk (text,
// EXIF, time, unknown ones) and anything hidden in its compressed data.
func publishPNG(b []byte) ([]byte, error) {
	h, err := walkPNG(b)
	if err != nil {
		return nil, err
	}
	if err := checkImageSize("PNG", h.width, h.height, h.bytesPerPixel()); err != nil {
		return nil, err
	}
	m, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		return nil, imageUndecodable("PNG", err)
	}
	if m.Bounds().Dx() != h.width || m.Bounds().Dy() != h.height {
		return nil, imageUndecodable("PNG", errors.New("its pixels are not the size of its header"))
	}
	var out bytes.Buffer
	if err := png.Encode(&out, orient(m, h.orientation)); err != nil {
		return nil, imageUndecodable("PNG", err)
	}
	return out.Bytes(), nil
}

// walkPNG walks a PNG's chunks (length, type, data, CRC) from its IHDR to its IEND, without reading
// their data (the decoder checks CRCs), and returns what the IHDR says.
func walkPNG(b []byte) (pngHeader, error) {
	var h pngHeader
	for at, first := len(pngSignature), true; ; first = false {
		if len(b)-at < 12 {
			return h, imageTruncated("PNG", "it ends before its IEND chunk")
		}
		n := int64(binary.BigEndian.Uint32(b[at:]))
		typ := string(b[at+4 : at+8])
		if n > int64(len(b)-at-12) {
			return h, imageTruncated("PNG", "its "+typ+" chunk runs past the end of the file")
		}
		data := b[at+8 : at+8+int(n)]
		at += 12 + int(n)
		switch {
		case first && (typ != "IHDR" || n != 13):
			return h, imageUndecodable("PNG", errors.New("it does not start with its IHDR chunk"))
		case first:
			h = pngHeader{width: int(binary.BigEndian.Uint32(data)), height: int(binary.BigEndian.Uint32(data[4:])), depth: data[8], interlaced: data[12] == 1}
		case typ == "eXIf" && h.orientation == 0: // the first, as viewers read
			h.orientation = exifOrientation(data)
		case typ == "IEND":
			if at != len(b) {
				return h, imageAfterEnd("PNG", "its IEND chunk", len(b)-at)
			}
			return h, nil
		}
	}
}
