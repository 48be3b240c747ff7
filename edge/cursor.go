package edge

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"github.com/dirsvc/dirsvc"
)

// A list cursor names the position after which the next page starts (the public ID of the last
// record of the page) and is bound to the query it was made for. It is opaque and signed:
//
//	base64url(version || iv || AES-256-CTR(position) || HMAC-SHA256(query key || version || iv || ciphertext)[:16])
//
// The IV is itself an HMAC of the query and the position, so one page always gives the same cursor
// (the page's entity tag stays stable and caches keep working) while the position stays unreadable.
// The MAC covers the whole blob and the query it is bound to, so a cursor that is altered, forged,
// or made for another query (another directory, audience, narrowing or filter) is refused. The keys
// derive from a secret every node of a deployment shares (Config.CursorSecret), so each node accepts
// the cursors the others gave.

// cursorVersion is the first byte of every cursor; a new layout takes a new version.
const cursorVersion = 1

// Sizes of a cursor's parts, in bytes.
const (
	cursorIVSize  = 16 // aes.BlockSize
	cursorTagSize = 16
)

// cursorKeyLabel is the HKDF info that separates the cursor keys from everything else derived from
// the same secret (the vouching credential, the server key's token and secret keys).
const cursorKeyLabel = "dirsvc list cursor keys v1"

// cursorKeys are the keys of the list cursors of one deployment.
type cursorKeys struct {
	block  cipher.Block // AES-256: hides the position
	ivKey  []byte       // HMAC key of the synthetic IV
	macKey []byte       // HMAC key of the tag
	// position is the AES-256 key of feed positions (sealer).
	position cipher.Block
}

// newCursorKeys derives the cursor keys from the deployment's secret; an empty secret takes a random
// one, whose cursors only this process accepts.
func newCursorKeys(secret []byte) *cursorKeys {
	if len(secret) == 0 {
		secret = make([]byte, 32)
		rand.Read(secret)
	}
	// Neither call can fail: 96 bytes is well within what HKDF-SHA256 gives, and 32 is an AES key size.
	k, err := hkdf.Key(sha256.New, secret, nil, cursorKeyLabel, 96)
	if err != nil {
		panic(fmt.Sprintf("derive cursor keys: %v", err))
	}
	block, err := aes.NewCipher(k[:32])
	if err != nil {
		panic(fmt.Sprintf("derive cursor keys: %v", err))
	}
	pk, err := hkdf.Key(sha256.New, secret, nil, positionKeyLabel, 32)
	if err != nil {
		panic(fmt.Sprintf("derive cursor keys: %v", err))
	}
	position, err := aes.NewCipher(pk)
	if err != nil {
		panic(fmt.Sprintf("derive cursor keys: %v", err))
	}
	return &cursorKeys{block: block, ivKey: k[32:64], macKey: k[64:], position: position}
}

// queryKey is what a cursor is bound to: the directory, the caller's view (audience and narrowing)
// and the filters, each part given in a fixed order.
func queryKey(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return string(h.Sum(nil))
}

// seal returns the cursor of the page that follows the public ID after, for the query key.
func (k *cursorKeys) seal(after, key string) string {
	iv := cursorMAC(k.ivKey, key, []byte(after))[:cursorIVSize]
	blob := make([]byte, 0, 1+cursorIVSize+len(after)+cursorTagSize)
	blob = append(blob, cursorVersion)
	blob = append(blob, iv...)
	ct := make([]byte, len(after))
	cipher.NewCTR(k.block, iv).XORKeyStream(ct, []byte(after))
	blob = append(blob, ct...)
	blob = append(blob, cursorMAC(k.macKey, key, blob)[:cursorTagSize]...)
	return base64.RawURLEncoding.EncodeToString(blob)
}

// A feed position is a sequence number of the directory's change log, and a feed page gives a
// cursor for each of its (up to 500) items, so its cursor is made with one block cipher call:
//
//	base64url(version 2 || AES-256(sequence as 8 bytes, big-endian || check))
//
// where check is the first 8 bytes of an HMAC of the query key. The block cipher is a pseudorandom
// permutation under a key of its own, so the position stays unreadable, and a block that was not
// sealed for the same query key (altered, forged, or another reader's) decrypts to a wrong check
// but with a chance of 2^-64. Cursors of the first layout, which feed pages gave before, still open.
const positionVersion = 2

// positionKeyLabel is the HKDF info of the feed position key, apart from the list cursor keys.
const positionKeyLabel = "dirsvc feed position key v1"

// positionCheck is what a feed position's block holds beside the sequence, for a query key.
func (k *cursorKeys) positionCheck(key string) []byte {
	return cursorMAC(k.macKey, key, []byte(positionKeyLabel))[:8]
}

// sealer seals the feed positions of one query key. It is not safe for concurrent use.
type sealer struct {
	block       cipher.Block
	plain, blob [aes.BlockSize]byte
	out         [1 + aes.BlockSize]byte
}

func (k *cursorKeys) sealer(key string) *sealer {
	sl := &sealer{block: k.position}
	copy(sl.plain[8:], k.positionCheck(key))
	sl.out[0] = positionVersion
	return sl
}

// seal returns the cursor of the feed position seq (at least 0).
func (sl *sealer) seal(seq int64) string {
	binary.BigEndian.PutUint64(sl.plain[:8], uint64(seq))
	sl.block.Encrypt(sl.out[1:], sl.plain[:])
	return base64.RawURLEncoding.EncodeToString(sl.out[:])
}

// openSeq returns the feed position a cursor names, when the cursor is one a sealer gave for the
// same query key (or seal gave, in the first layout); anything else is not.
func (k *cursorKeys) openSeq(c, key string) (int64, bool) {
	if b, err := base64.RawURLEncoding.DecodeString(c); err == nil && len(b) == 1+aes.BlockSize && b[0] == positionVersion {
		if base64.RawURLEncoding.EncodeToString(b) != c {
			return 0, false
		}
		var plain [aes.BlockSize]byte
		k.position.Decrypt(plain[:], b[1:])
		seq := int64(binary.BigEndian.Uint64(plain[:8]))
		if subtle.ConstantTimeCompare(plain[8:], k.positionCheck(key)) != 1 || seq < 0 {
			return 0, false
		}
		return seq, true
	}
	pos, ok := k.openPosition(c, key)
	if !ok || pos == "" || strings.Trim(pos, "0123456789") != "" {
		return 0, false
	}
	seq, err := strconv.ParseInt(pos, 10, 64)
	return seq, err == nil
}

// open returns the position a cursor names, when the cursor is one seal gave for the same query key;
// anything else (not base64url in its one form, another version, an altered byte, another query,
// another deployment's key) is not.
func (k *cursorKeys) open(c, key string) (string, bool) {
	after, ok := k.openPosition(c, key)
	return after, ok && dirsvc.KindOfID(after) != ""
}

// openPosition returns the position a cursor names, when the cursor is one seal gave for the same
// query key, whatever the position is (a list's public ID, the feed's sequence in the first layout).
func (k *cursorKeys) openPosition(c, key string) (string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	// The decoder skips line breaks and ignores the unused bits of the last character: only the
	// cursor's own spelling is the cursor.
	if err != nil || base64.RawURLEncoding.EncodeToString(b) != c ||
		len(b) <= 1+cursorIVSize+cursorTagSize || b[0] != cursorVersion {
		return "", false
	}
	blob, tag := b[:len(b)-cursorTagSize], b[len(b)-cursorTagSize:]
	if !hmac.Equal(tag, cursorMAC(k.macKey, key, blob)[:cursorTagSize]) {
		return "", false
	}
	iv, ct := blob[1:1+cursorIVSize], blob[1+cursorIVSize:]
	after := make([]byte, len(ct))
	cipher.NewCTR(k.block, iv).XORKeyStream(after, ct)
	return string(after), true
}

// cursorMAC returns the HMAC-SHA256 under macKey of the query key and data; the query key has a
// fixed length (queryKey), so the two cannot run into each other.
func cursorMAC(macKey []byte, key string, data []byte) []byte {
	m := hmac.New(sha256.New, macKey)
	m.Write([]byte(key))
	m.Write(data)
	return m.Sum(nil)
}
