package dirsvc

import "errors"

// MinSecretLength is the shortest shared secret (admin token, replication token) a node accepts.
const MinSecretLength = 16

// GenerateSecretHint says how to make a secret that CheckSecret accepts.
const GenerateSecretHint = "generate one with: openssl rand -base64 32"

// CheckSecret returns an error when secret is too weak to guard an API: shorter than
// MinSecretLength, made of fewer than 10 distinct characters, mostly a run of neighbouring
// characters ("0123456789abcdef"), or a repetition of a shorter part ("qwertyuiopqwertyuiop").
// These are the secrets a person types; what a random generator makes passes. The error does not
// contain the secret.
func CheckSecret(secret string) error {
	if len(secret) < MinSecretLength {
		return errors.New("want at least 16 characters")
	}
	distinct := map[byte]bool{}
	for i := 0; i < len(secret); i++ {
		distinct[secret[i]] = true
	}
	if len(distinct) < 10 {
		return errors.New("want at least 10 distinct characters")
	}
	// A run: most steps between neighbours go up or down by one (or stay).
	steps := 0
	for i := 1; i < len(secret); i++ {
		if d := int(secret[i]) - int(secret[i-1]); d >= -1 && d <= 1 {
			steps++
		}
	}
	if 2*steps > len(secret)-1 {
		return errors.New("want random characters, not a run")
	}
	for p := 1; p <= len(secret)/2; p++ {
		if periodic(secret, p) {
			return errors.New("want random characters, not a repetition")
		}
	}
	return nil
}

// periodic reports whether s repeats its first p characters throughout.
func periodic(s string, p int) bool {
	for i := p; i < len(s); i++ {
		if s[i] != s[i-p] {
			return false
		}
	}
	return true
}
