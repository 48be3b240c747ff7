package dirsvc

import (
	"crypto/rand"
	"fmt"
)

// NewUUID returns a random (version 4) UUID in its canonical lower-case form: the ids of webhook
// endpoints and deliveries, exports and other records the service makes.
func NewUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// ValidUUID reports whether s is a UUID in its canonical lower-case form (as NewUUID writes them):
// ids from a path are checked with it before they name anything.
func ValidUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return false
			}
		case !('0' <= c && c <= '9' || 'a' <= c && c <= 'f'):
			return false
		}
	}
	return true
}
