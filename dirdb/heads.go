package dirdb

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	"github.com/dirsvc/dirsvc"
)

// Each served audience's view of a record carries its own head: the version, local revision and
// time of the last change that audience could see. The record's counter moves on every published
// change, but a view's head takes the new value only when that view changed, so a change hidden
// from an audience never shows it a new version or time, in a read, a list or the change feed.

// audienceHead is the head of one audience's view, and the hash that tells whether it changed.
type audienceHead struct {
	version       int64
	localRevision int64
	updatedMs     int64    // Unix milliseconds
	hash          [16]byte // of the view without versions (and, for tiers that may hold leadership:read, the leadership)
}

// heads are the heads of the served audiences' views, by audience; a zero head is no view.
type heads [3]audienceHead

const headSize = 8 + 8 + 8 + 16

// encode returns the heads as stored in records.audience_heads.
func (h *heads) encode() []byte {
	b := make([]byte, 0, len(h)*headSize)
	for _, a := range h {
		b = binary.BigEndian.AppendUint64(b, uint64(a.version))
		b = binary.BigEndian.AppendUint64(b, uint64(a.localRevision))
		b = binary.BigEndian.AppendUint64(b, uint64(a.updatedMs))
		b = append(b, a.hash[:]...)
	}
	return b
}

// decodeHeads reads records.audience_heads; NULL (a row published before heads were kept) is all
// zero heads, so the next change gives every view a new head.
func decodeHeads(b []byte) (heads, error) {
	var h heads
	if b == nil {
		return h, nil
	}
	if len(b) != len(h)*headSize {
		return h, fmt.Errorf("audience heads of %d bytes, want %d", len(b), len(h)*headSize)
	}
	for i := range h {
		h[i].version = int64(binary.BigEndian.Uint64(b))
		h[i].localRevision = int64(binary.BigEndian.Uint64(b[8:]))
		h[i].updatedMs = int64(binary.BigEndian.Uint64(b[16:]))
		copy(h[i].hash[:], b[24:headSize])
		b = b[headSize:]
	}
	return h, nil
}

// viewHash hashes an audience's view (encoded without versions) with the leadership view, when the
// audience's tier may receive leadership.
func viewHash(a dirsvc.Audience, body, leadership []byte) [16]byte {
	h := sha256.New()
	fmt.Fprintf(h, "%d\x00", len(body))
	h.Write(body)
	if a != dirsvc.Public {
		h.Write(leadership)
	}
	var out [16]byte
	copy(out[:], h.Sum(nil))
	return out
}
