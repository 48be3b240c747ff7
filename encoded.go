package dirsvc

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"
)

// ETag returns the entity tag of a body: a stored view's and a body composed at read time alike, so
// the same bytes have the same tag wherever they are made.
func ETag(body []byte) string { return ETagOfSum(sha256.Sum256(body)) }

// ETagOfSum returns the entity tag of a body whose SHA-256 is sum (see ETag).
func ETagOfSum(sum [sha256.Size]byte) string { return `"` + hex.EncodeToString(sum[:12]) + `"` }

// Encoded keeps the content-coded forms of one published body (for HTTP: br and gzip), so a body
// served often is compressed once per coding instead of on every request. A form is made by the
// first request that wants it; requests that want it meanwhile wait for it and share it. A cache
// that keeps the body keeps its Encoded beside it and learns the bytes of each form kept through
// the function given to NewEncoded, to count them in its budget. The zero value keeps nothing.
type Encoded struct {
	mu    sync.Mutex
	forms [maxForms]encodedForm
	kept  func(n int)
}

type encodedForm struct {
	coding string
	body   []byte
}

// maxForms is how many codings an Encoded keeps; a body asked for more is coded again each time.
const maxForms = 2

// NewEncoded returns an Encoded that calls kept, if not nil, with the size of each form it keeps,
// after keeping it.
func NewEncoded(kept func(n int)) *Encoded { return &Encoded{kept: kept} }

// Form returns the body coded by coding: the form kept, else the one encode makes, kept for the
// next request. A nil Encoded keeps nothing and calls encode every time.
func (e *Encoded) Form(coding string, encode func() []byte) []byte {
	if e == nil || e.kept == nil {
		return encode()
	}
	e.mu.Lock()
	slot := -1
	for i := range e.forms {
		switch e.forms[i].coding {
		case coding:
			b := e.forms[i].body
			e.mu.Unlock()
			return b
		case "":
			if slot < 0 {
				slot = i
			}
		}
	}
	if slot < 0 {
		e.mu.Unlock()
		return encode()
	}
	// Made under the lock: a second request for the same coding waits rather than compressing too.
	b := encode()
	e.forms[slot] = encodedForm{coding, b}
	e.mu.Unlock()
	e.kept(cap(b))
	return b
}
