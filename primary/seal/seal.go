// Package seal keeps secrets that the primary must present again, such as webhooks' signing secrets and
// mirrors' upstream client secrets, sealed at rest with AES-256-GCM under keys derived from the server
// key: a copy of the file that holds them (a backup, a stolen disk) gives none away without the key.
//
// Each sealed secret is bound to a label naming where it belongs (its row), so a sealed secret copied
// to another row does not open there.
package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
)

// KeySize is the size of a sealing key in bytes.
const KeySize = 32

// ErrOpen is the error of a sealed secret that does not open: another key, another label, or bytes
// changed.
var ErrOpen = errors.New("the sealed secret does not open with this server key")

// Sealer seals and opens secrets under one key.
type Sealer struct{ aead cipher.AEAD }

// New returns the Sealer of a KeySize-byte key.
func New(key []byte) (*Sealer, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("the sealing key has %d bytes, want %d", len(key), KeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Sealer{aead: aead}, nil
}

// Seal returns secret sealed under label: a random nonce, then the ciphertext and its tag. An empty
// secret seals to nothing.
func (s *Sealer) Seal(label, secret string) []byte {
	if secret == "" {
		return nil
	}
	nonce := make([]byte, s.aead.NonceSize())
	rand.Read(nonce)
	return s.aead.Seal(nonce, nonce, []byte(secret), []byte(label))
}

// Open returns the secret sealed under label; nothing sealed opens to the empty secret.
func (s *Sealer) Open(label string, sealed []byte) (string, error) {
	if len(sealed) == 0 {
		return "", nil
	}
	n := s.aead.NonceSize()
	if len(sealed) < n+s.aead.Overhead() {
		return "", ErrOpen
	}
	b, err := s.aead.Open(nil, sealed[:n], sealed[n:], []byte(label))
	if err != nil {
		return "", ErrOpen
	}
	return string(b), nil
}
