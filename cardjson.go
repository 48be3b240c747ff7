package dirsvc

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"unicode/utf8"
)

// A search answers with up to hundreds of result cards, and encoding them with encoding/json was a
// quarter of a search's work. A card the reader keeps is therefore kept encoded as well, cut before
// the members a search adds (distanceKm and openStatus, its last two); a search appends the cut card
// and those members, byte for byte as encoding/json would have encoded the whole card.

// cardTail is how encoding/json ends a card with no distance and the zero open status.
const cardTail = `"openStatus":{"status":"","detail":""}}`

// CardPrefix returns the card c encoded as encoding/json does, cut before its distance and open
// status (it ends with the comma before them); nil when c has either, which a kept card never has.
func CardPrefix(c *ResultCard) ([]byte, error) {
	if c.DistanceKm != nil || c.OpenStatus != (OpenStatus{}) {
		return nil, nil
	}
	b, err := json.Marshal(c)
	if err != nil || !bytes.HasSuffix(b, []byte(cardTail)) {
		return nil, err
	}
	n := len(b) - len(cardTail)
	return b[:n:n], nil
}

// AppendCard appends to dst the card whose CardPrefix is prefix, with its distance (nil: none) and
// open status: the bytes encoding/json gives the whole card.
func AppendCard(dst, prefix []byte, distanceKm *float64, status OpenStatus) ([]byte, error) {
	dst = append(dst, prefix...)
	if distanceKm != nil {
		var err error
		if dst, err = AppendJSONFloat(append(dst, `"distanceKm":`...), *distanceKm); err != nil {
			return nil, err
		}
		dst = append(dst, ',')
	}
	st, err := json.Marshal(status)
	if err != nil {
		return nil, err
	}
	dst = append(dst, `"openStatus":`...)
	dst = append(dst, st...)
	return append(dst, '}'), nil
}

// errJSONFloat is the error of a number JSON cannot hold.
var errJSONFloat = errors.New("a number JSON cannot hold")

// AppendJSONFloat appends f as encoding/json encodes a float64; an error for an infinity or NaN,
// which JSON cannot hold.
func AppendJSONFloat(dst []byte, f float64) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, errJSONFloat
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' { // e-09 as e-9, as encoding/json writes it
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, nil
}

// AppendJSONString appends a string as encoding/json writes it: HTML's <, > and & escaped, invalid
// UTF-8 as U+FFFD, U+2028 and U+2029 escaped.
func AppendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start, i := 0, 0
	// Eight bytes at a time while none is to be escaped or begins a character of several bytes:
	// most strings (codes, system URLs, names, addresses) go through here whole.
	for ; i+8 <= len(s); i += 8 {
		w := s[i : i+8]
		if !jsonSafeWord(uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
			uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56) {
			break
		}
	}
	for i < len(s) {
		if b := s[i]; b < utf8.RuneSelf {
			if jsonSafe[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', jsonHex[b>>4], jsonHex[b&0xf])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', jsonHex[c&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// jsonSafeWord reports whether each of the eight bytes of w is one encoding/json writes as it is
// (jsonSafe): ASCII, not a control character, not " \\ < > or &. (x - n*ones) & ^x & highs is the
// word-at-a-time test of a byte below n: zero exactly when no byte of x is below n (n up to 0x80;
// a byte at 0x80 or above is caught by the test of the high bits); a byte equal to c is one of
// x^(c*ones) below 1.
func jsonSafeWord(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q, bs, lt, gt, amp := w^('"'*ones), w^('\\'*ones), w^('<'*ones), w^('>'*ones), w^('&'*ones)
	return (w|(w-0x20*ones)&^w|(q-ones)&^q|(bs-ones)&^bs|(lt-ones)&^lt|(gt-ones)&^gt|(amp-ones)&^amp)&highs == 0
}

// jsonSafe are the ASCII bytes encoding/json writes as they are.
var jsonSafe = func() (safe [utf8.RuneSelf]bool) {
	for b := byte(0x20); b < utf8.RuneSelf; b++ {
		safe[b] = b != '"' && b != '\\' && b != '<' && b != '>' && b != '&'
	}
	return safe
}()

const jsonHex = "0123456789abcdef"
