package dirsvc

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"image"
	_ "image/jpeg" // registers the JPEG decoder's configuration reader
	_ "image/png"  // registers the PNG decoder's configuration reader
	"strings"
)

// Published images: organisation logos and practitioner photos the directory serves itself. An
// image enters with `dirsvc images add`, which checks it (CheckImage) and stores it in the
// directory's published file, and is named by a record's logo or photo field as its ImagePath. It is
// served only to the audiences whose view of a record carries that field (and, for a narrowed client,
// of a record inside its narrowing); to everyone else it answers as an image never published.

// Limits of a published image.
const (
	MaxImageBytes     = 2 << 20 // 2 MiB
	MaxImageDimension = 4096    // pixels, each side
)

// Image is a published image.
type Image struct {
	// SHA256 is the hex SHA-256 of Body: the image's name and entity tag.
	SHA256    string
	MediaType string
	Body      []byte
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

// CheckImage checks an image on its way in: PNG, JPEG or WebP by its content (never by a name;
// SVG, which can carry scripts, and every other type are refused), at most MaxImageBytes, each side
// at most MaxImageDimension pixels, and a header that decodes. It returns the image with its hash
// and media type.
func CheckImage(body []byte) (*Image, error) {
	if len(body) > MaxImageBytes {
		return nil, Errorf(EInvalid, "the image is %d bytes; the most is %d (2 MiB)", len(body), MaxImageBytes)
	}
	var mediaType string
	var w, h int
	switch {
	case bytes.HasPrefix(body, []byte("\x89PNG\r\n\x1a\n")):
		mediaType = "image/png"
	case bytes.HasPrefix(body, []byte("\xff\xd8\xff")):
		mediaType = "image/jpeg"
	case len(body) >= 12 && string(body[:4]) == "RIFF" && string(body[8:12]) == "WEBP":
		mediaType = "image/webp"
	default:
		return nil, Errorf(EInvalid, "the image is not PNG, JPEG or WebP")
	}
	if mediaType == "image/webp" {
		var ok bool
		if w, h, ok = webpSize(body); !ok {
			return nil, Errorf(EInvalid, "the WebP image's header does not decode")
		}
	} else {
		cfg, format, err := image.DecodeConfig(bytes.NewReader(body))
		if err != nil || "image/"+format != mediaType {
			return nil, Errorf(EInvalid, "the image's header does not decode as %s", mediaType)
		}
		w, h = cfg.Width, cfg.Height
	}
	if w < 1 || h < 1 || w > MaxImageDimension || h > MaxImageDimension {
		return nil, Errorf(EInvalid, "the image is %d×%d pixels; each side must be 1 to %d", w, h, MaxImageDimension)
	}
	sum := sha256.Sum256(body)
	return &Image{SHA256: hex.EncodeToString(sum[:]), MediaType: mediaType, Body: body}, nil
}

// webpSize reads the canvas size of a WebP image from its first chunk: VP8 (lossy), VP8L
// (lossless) or VP8X (extended), as the WebP container specification lays them out.
func webpSize(b []byte) (w, h int, ok bool) {
	if len(b) < 30 || int64(binary.LittleEndian.Uint32(b[4:8]))+8 > int64(len(b)) {
		return 0, 0, false
	}
	switch string(b[12:16]) {
	case "VP8 ":
		if b[23] != 0x9d || b[24] != 0x01 || b[25] != 0x2a {
			return 0, 0, false
		}
		return int(binary.LittleEndian.Uint16(b[26:28]) & 0x3fff), int(binary.LittleEndian.Uint16(b[28:30]) & 0x3fff), true
	case "VP8L":
		if b[20] != 0x2f {
			return 0, 0, false
		}
		bits := binary.LittleEndian.Uint32(b[21:25])
		return int(bits&0x3fff) + 1, int(bits>>14&0x3fff) + 1, true
	case "VP8X":
		return int(uint32(b[24])|uint32(b[25])<<8|uint32(b[26])<<16) + 1, int(uint32(b[27])|uint32(b[28])<<8|uint32(b[29])<<16) + 1, true
	}
	return 0, 0, false
}
