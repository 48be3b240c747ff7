// Package webhook pushes each partner's change feed to the endpoints it registered (sections 4.7 and
// 6.2 of the specification): Standard Webhooks signatures, delivery in feed order with retries on a
// schedule, and the management API. It runs on the primary only.
package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/dirsvc/dirsvc/primary/seal"
)

// secretPrefix starts every signing secret (Standard Webhooks 1.0).
const secretPrefix = "whsec_"

// newSecret returns a new signing secret: whsec_ and the base64 of 32 random bytes.
func newSecret() string {
	b := make([]byte, 32)
	rand.Read(b)
	return secretPrefix + base64.StdEncoding.EncodeToString(b)
}

// secretKey returns the HMAC key of a signing secret.
func secretKey(secret string) ([]byte, error) {
	b64, ok := strings.CutPrefix(secret, secretPrefix)
	if !ok {
		return nil, errors.New("a signing secret starts with " + secretPrefix)
	}
	return base64.StdEncoding.DecodeString(b64)
}

// signature returns the Standard Webhooks signature of a message with one secret: "v1," and the base64
// of the HMAC-SHA256 of "{id}.{timestamp}.{body}".
func signature(secret, id string, timestamp int64, body []byte) (string, error) {
	key, err := secretKey(secret)
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write(strconv.AppendInt(nil, timestamp, 10))
	m.Write([]byte{'.'})
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil)), nil
}

// signatures returns the webhook-signature header's value: the signature with each secret, space
// separated (during a rotation, the current secret's and the previous one's).
func signatures(secrets []string, id string, timestamp int64, body []byte) (string, error) {
	out := make([]string, 0, len(secrets))
	for _, s := range secrets {
		sig, err := signature(s, id, timestamp, body)
		if err != nil {
			return "", err
		}
		out = append(out, sig)
	}
	return strings.Join(out, " "), nil
}

// sealer seals signing secrets at rest (see package seal), each bound to its endpoint.
type sealer struct{ s *seal.Sealer }

func newSealer(key []byte) (*sealer, error) {
	s, err := seal.New(key)
	if err != nil {
		return nil, fmt.Errorf("webhook: %w", err)
	}
	return &sealer{s}, nil
}

// sealLabel binds a sealed secret to its endpoint: a sealed secret copied to another row opens no more.
func sealLabel(dir, endpoint string) string {
	return "webhook-secret\x00" + dir + "\x00" + endpoint
}

func (s *sealer) seal(dir, endpoint, secret string) []byte {
	return s.s.Seal(sealLabel(dir, endpoint), secret)
}

func (s *sealer) open(dir, endpoint string, sealed []byte) (string, error) {
	secret, err := s.s.Open(sealLabel(dir, endpoint), sealed)
	if err != nil {
		return "", errors.New("webhook: a signing secret does not open with this server key")
	}
	return secret, nil
}
