package federation

import (
	"encoding/base64"
	"errors"
	"strings"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/primary/seal"
)

// A mirror's client secret is kept sealed in ops.db (see package seal), under a key derived from the
// server key (primary.MirrorSealKey): ops.db is in every backup, the server key is not. The stored
// text is sealedPrefix and the standard base64 of the sealed bytes.
const sealedPrefix = "sealed:"

// secretLabel binds a sealed secret to its mirror: its name, upstream and client.
func secretLabel(m *dirsvc.Mirror) string {
	return "mirror-secret\x00" + m.Name + "\x00" + m.Upstream + "\x00" + m.UpstreamDir + "\x00" + m.ClientID
}

// SealSecret returns secret sealed as m's, in the form it is stored in.
func SealSecret(s *seal.Sealer, m *dirsvc.Mirror, secret string) string {
	return sealedPrefix + base64.StdEncoding.EncodeToString(s.Seal(secretLabel(m), secret))
}

// sealed reports whether m's secret is stored sealed; one stored in the clear was added by a build
// that did not seal secrets, and is sealed when the harvester next reads the mirror.
func sealed(m *dirsvc.Mirror) bool { return strings.HasPrefix(m.Secret, sealedPrefix) }

// errNoSealer is the error of a sealed secret and no key to open it with.
var errNoSealer = errors.New("mirror: the client secret is sealed and no server key was given to open it")

// clientSecret returns the client secret m presents to its upstream.
func clientSecret(s *seal.Sealer, m *dirsvc.Mirror) (string, error) {
	if !sealed(m) {
		return m.Secret, nil
	}
	if s == nil {
		return "", errNoSealer
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(m.Secret, sealedPrefix))
	if err != nil {
		return "", seal.ErrOpen
	}
	return s.Open(secretLabel(m), b)
}
