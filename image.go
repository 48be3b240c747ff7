package dirsvc

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Published images: organisation logos and practitioner photos the directory serves itself. An
// image enters with `dirsvc images add`, which checks it (CheckImage) and stores it in the
// directory's published file, and is named by a record's logo or photo field as its ImagePath. It is
// served only to the audiences whose view of a record carries that field (and, for a narrowed client,
// of a record inside its narrowing); to everyone else it answers as an image never published.

// Limits of a published image.
const (
	MaxImageBytes     = 2 << 20 // 2 MiB, the file added and the copy published
	MaxImageDimension = 4096    // pixels, each side
	// MaxImageDecodedBytes bounds the memory decoding an image may take, reckoned from the size its
	// header claims (pixels × the bytes per pixel its decoder allocates) before any pixel is
	// decoded, so a decompression bomb is refused without being inflated: 4096×4096 at 4 bytes.
	MaxImageDecodedBytes = 64 << 20
)

// Image is a published image.
type Image struct {
	// SHA256 is the hex SHA-256 of Body: the image's name and entity tag.
	SHA256    string
	MediaType string
	// Body is the copy published: the image as checked, with no metadata (CheckImage).
	Body []byte
}

// imageTypes are the media types a published image may have, by the extension of its path.
var imageTypes = map[string]string{"png": "image/png", "jpg": "image/jpeg", "webp": "image/webp"}

// ImageExt returns the extension of the path of an image of mediaType.
func ImageExt(mediaType string) string {
	for ext, mt := range imageTypes {
		if mt == mediaType {
			return ext
		}
	}
	return ""
}

// ImagePath is the path, on the service, of the published image of directory slug with the given
// hash and media type: what a record's logo or photo field holds to name it.
func ImagePath(slug, sha string, mediaType string) string {
	return "/v1/d/" + slug + "/images/" + sha + "." + ImageExt(mediaType)
}

// ParseImageName splits the last segment of an image path, <sha256>.<ext>, into the hash and the
// media type; ok is false for anything else.
func ParseImageName(name string) (sha, mediaType string, ok bool) {
	sha, ext, found := strings.Cut(name, ".")
	mediaType = imageTypes[ext]
	if !found || mediaType == "" || len(sha) != sha256.Size*2 || strings.Trim(sha, "0123456789abcdef") != "" {
		return "", "", false
	}
	return sha, mediaType, true
}

// ImageNamed returns the hash of the published image a logo or photo field names (an ImagePath of
// any directory), or "" when it names none (an outside address, for example).
func ImageNamed(field string) string {
	rest, ok := strings.CutPrefix(field, "/v1/d/")
	if !ok {
		return ""
	}
	slug, name, ok := strings.Cut(rest, "/images/")
	if !ok || !ValidSlug(slug) {
		return ""
	}
	sha, _, ok := ParseImageName(name)
	if !ok {
		return ""
	}
	return sha
}

// CheckImage checks an image on its way in and returns the copy to publish, with its hash and media
// type. The image must be PNG, JPEG or WebP by its content (never by a name; SVG, which can carry
// scripts, and every other type are refused), at most MaxImageBytes, each side at most
// MaxImageDimension pixels, and take at most MaxImageDecodedBytes to decode (reckoned from its header,
// before decoding). It must be whole, with nothing after its end (a file that is also an HTML page
// or a ZIP archive is refused), and it must decode fully.
//
// The copy published carries no metadata, so a photo never publishes where or when it was taken:
// a PNG is decoded and encoded again (no text, EXIF or time chunk survives); a JPEG too, its pixels
// turned as its EXIF orientation says so that it shows the same way up without it (no EXIF, XMP,
// IPTC or comment survives); a WebP keeps its image chunks alone (VP8 or VP8L, with ALPH and a
// VP8X whose flags say only alpha), because Go has no WebP encoder. The same image always gives
// the same bytes, and so the same hash. WebP is decoded by the decoder registered with package
// image (the dirsvc binary registers golang.org/x/image/webp); without one, WebP is refused.
func CheckImage(body []byte) (*Image, error) {
	if len(body) > MaxImageBytes {
		return nil, Errorf(EInvalid, "the image is %d bytes; the most is %d (2 MiB)", len(body), MaxImageBytes)
	}
	var mediaType string
	var publish func([]byte) ([]byte, error)
	switch {
	case bytes.HasPrefix(body, []byte(pngSignature)):
		mediaType, publish = "image/png", publishPNG
	case bytes.HasPrefix(body, []byte("\xff\xd8\xff")):
		mediaType, publish = "image/jpeg", publishJPEG
	case len(body) >= 12 && string(body[:4]) == "RIFF" && string(body[8:12]) == "WEBP":
		mediaType, publish = "image/webp", publishWebP
	default:
		return nil, Errorf(EInvalid, "the image is not PNG, JPEG or WebP")
	}
	out, err := publish(body)
	if err != nil {
		return nil, err
	}
	if len(out) > MaxImageBytes {
		return nil, Errorf(EInvalid, "the image without its metadata is %d bytes once encoded again; the most is %d (2 MiB): send it smaller", len(out), MaxImageBytes)
	}
	sum := sha256.Sum256(out)
	return &Image{SHA256: hex.EncodeToString(sum[:]), MediaType: mediaType, Body: out}, nil
}

// checkImageSize refuses an image by the size its header claims, before any pixel is decoded: each
// side 1 to MaxImageDimension, and w × h × bytesPerPixel (what its decoder allocates) at most
// MaxImageDecodedBytes.
func checkImageSize(kind string, w, h int, bytesPerPixel int64) error {
	if w < 1 || h < 1 || w > MaxImageDimension || h > MaxImageDimension {
		return Errorf(EInvalid, "the image is %d×%d pixels; each side must be 1 to %d", w, h, MaxImageDimension)
	}
	if need := int64(w) * int64(h) * bytesPerPixel; need > MaxImageDecodedBytes {
		return Errorf(EInvalid, "the %s image of %d×%d pixels would take %d MiB to decode; the most is %d MiB", kind, w, h, (need+1<<20-1)>>20, MaxImageDecodedBytes>>20)
	}
	return nil
}

// imageTruncated is the refusal of an image that ends before its end.
func imageTruncated(kind, why string) error {
	return Errorf(EInvalid, "the %s image is truncated: %s", kind, why)
}

// imageAfterEnd is the refusal of a file with bytes after its image's end: what follows could make
// it another file too (an HTML page, a ZIP archive), which no published image may be.
func imageAfterEnd(kind, end string, n int) error {
	return Errorf(EInvalid, "the %s image has %d bytes after its end (%s); a file with anything after its image is refused", kind, n, end)
}

// imageUndecodable is the refusal of an image whose data does not decode.
func imageUndecodable(kind string, err error) error {
	return Errorf(EInvalid, "the %s image does not decode: %v", kind, err)
}
