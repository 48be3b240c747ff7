package dirsvc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
)

// webpChunk is one chunk of a WebP file's RIFF container.
type webpChunk struct {
	id   string
	data []byte
}

// webpImage is what a WebP file holds that is its image: the image chunk (VP8 lossy or VP8L
// lossless), the alpha chunk of a lossy image, and the canvas size of a VP8X chunk.
type webpImage struct {
	vp8x          bool
	canvasW       int
	canvasH       int
	alph, picture *webpChunk
}

// publishWebP returns the copy of a WebP to publish: its RIFF container walked to the size its
// header says (which must be the file's), its size checked from its headers, and a new container
// built of its image chunks alone, which drops EXIF, XMP, ICC and unknown chunks (Go has no WebP
// encoder to encode it again); the copy must then decode fully.
func publishWebP(b []byte) ([]byte, error) {
	img, err := walkWebP(b)
	if err != nil {
		return nil, err
	}
	w, h, perPixel, err := img.size()
	if err != nil {
		return nil, err
	}
	if err := checkImageSize("WebP", w, h, perPixel); err != nil {
		return nil, err
	}
	out := img.container(w, h)
	m, format, err := image.Decode(bytes.NewReader(out))
	switch {
	case errors.Is(err, image.ErrFormat):
		return nil, Errorf(EInternal, "this program cannot check WebP images: it has no WebP decoder registered")
	case err != nil:
		return nil, imageUndecodable("WebP", err)
	case format != "webp" || m.Bounds().Dx() != w || m.Bounds().Dy() != h:
		return nil, imageUndecodable("WebP", errors.New("its pixels are not the size of its header"))
	}
	return out, nil
}

// walkWebP walks the chunks of a WebP file and keeps those of its image.
func walkWebP(b []byte) (webpImage, error) {
	var img webpImage
	size := int64(binary.LittleEndian.Uint32(b[4:])) + 8
	switch {
	case size > int64(len(b)):
		return img, imageTruncated("WebP", fmt.Sprintf("its RIFF header says %d bytes and the file has %d", size, len(b)))
	case size < int64(len(b)):
		return img, imageAfterEnd("WebP", "the size its RIFF header says", len(b)-int(size))
	}
	for at, first := 12, true; at < len(b); first = false {
		if len(b)-at < 8 {
			return img, imageTruncated("WebP", "a chunk header runs past its RIFF size")
		}
		c := webpChunk{id: string(b[at : at+4])}
		n := int64(binary.LittleEndian.Uint32(b[at+4:]))
		if n > int64(len(b)-at-8) {
			return img, imageTruncated("WebP", "its "+c.id+" chunk runs past its RIFF size")
		}
		c.data = b[at+8 : at+8+int(n)]
		at = min(len(b), at+8+int(n)+int(n%2)) // a chunk is padded to an even length
		switch {
		case c.id == "VP8X" && first:
			if len(c.data) < 10 {
				return img, imageUndecodable("WebP", errors.New("its VP8X chunk is short"))
			}
			img.vp8x = true
			img.canvasW = int(uint32(c.data[4])|uint32(c.data[5])<<8|uint32(c.data[6])<<16) + 1
			img.canvasH = int(uint32(c.data[7])|uint32(c.data[8])<<8|uint32(c.data[9])<<16) + 1
		case c.id == "ANIM" || c.id == "ANMF":
			return img, Errorf(EInvalid, "the WebP image is animated; only still images are accepted")
		case c.id == "EXIF":
			// Without an encoder the copy cannot be turned as its EXIF says, and without the EXIF
			// it would show another way up.
			if o := exifOrientation(bytes.TrimPrefix(c.data, []byte("Exif\x00\x00"))); o != 1 {
				return img, Errorf(EInvalid, "the WebP image's EXIF says to turn it to show it (orientation %d), which its copy without metadata could not; save it turned, or as JPEG or PNG", o)
			}
		case img.picture != nil:
			// After the image: EXIF, XMP and unknown chunks, none of them published.
		case c.id == "ALPH" && img.alph == nil:
			img.alph = &c
		case c.id == "VP8 " || c.id == "VP8L":
			img.picture = &c
		}
	}
	if img.picture == nil {
		return img, imageUndecodable("WebP", errors.New("it has no image chunk (VP8 or VP8L)"))
	}
	return img, nil
}

// size returns the image's width and height from its image chunk's frame header (which must agree
// with the VP8X canvas), and the bytes per pixel its decoder allocates: a lossy image is decoded
// to 4:2:0 YCbCr (2, with its macroblock padding), and its alpha plane takes 1 more, or 9 when
// compressed (decoded as a lossless image, then copied out); a lossless image takes 4, and 4 more
// for its transforms.
func (img webpImage) size() (w, h int, perPixel int64, err error) {
	p := img.picture.data
	switch img.picture.id {
	case "VP8 ":
		if len(p) < 10 || p[0]&1 != 0 || !bytes.Equal(p[3:6], []byte{0x9d, 0x01, 0x2a}) {
			return 0, 0, 0, imageUndecodable("WebP", errors.New("its VP8 frame header is not a key frame's"))
		}
		w, h, perPixel = int(binary.LittleEndian.Uint16(p[6:])&0x3fff), int(binary.LittleEndian.Uint16(p[8:])&0x3fff), 2
		if img.alph != nil && len(img.alph.data) > 0 && img.alph.data[0]&0x03 == 0 {
			perPixel++
		} else if img.alph != nil {
			perPixel += 9
		}
	case "VP8L":
		if img.alph != nil {
			return 0, 0, 0, imageUndecodable("WebP", errors.New("a lossless image has an ALPH chunk"))
		}
		if len(p) < 5 || p[0] != 0x2f || p[4]>>5 != 0 {
			return 0, 0, 0, imageUndecodable("WebP", errors.New("its VP8L header is not one"))
		}
		bits := binary.LittleEndian.Uint32(p[1:])
		w, h, perPixel = int(bits&0x3fff)+1, int(bits>>14&0x3fff)+1, 8
	}
	if img.vp8x && (img.canvasW != w || img.canvasH != h) {
		return 0, 0, 0, imageUndecodable("WebP", fmt.Errorf("its canvas is %d×%d and its image %d×%d", img.canvasW, img.canvasH, w, h))
	}
	return w, h, perPixel, nil
}

// container builds the WebP file published: the image chunk alone (the simple format), or, for a
// lossy image with alpha, a VP8X chunk whose only flag is alpha, the ALPH chunk (an uncompressed
// one cut to its w × h samples) and the image chunk. Padding bytes are zeros, whatever the input's.
func (img webpImage) container(w, h int) []byte {
	out := []byte("RIFF\x00\x00\x00\x00WEBP")
	add := func(id string, data []byte) {
		out = append(out, id...)
		out = binary.LittleEndian.AppendUint32(out, uint32(len(data)))
		out = append(out, data...)
		if len(data)%2 == 1 {
			out = append(out, 0)
		}
	}
	if img.alph != nil {
		const alphaFlag = 0x10
		add("VP8X", []byte{alphaFlag, 0, 0, 0, byte(w - 1), byte((w - 1) >> 8), byte((w - 1) >> 16), byte(h - 1), byte((h - 1) >> 8), byte((h - 1) >> 16)})
		alph := img.alph.data
		if len(alph) > 1+w*h && alph[0]&0x03 == 0 {
			alph = alph[:1+w*h]
		}
		add("ALPH", alph)
	}
	add(img.picture.id, img.picture.data)
	binary.LittleEndian.PutUint32(out[4:], uint32(len(out)-8))
	return out
}
