package webhook

import (
	"bytes"
	"strings"
	"testing"
)

// TestSignatureKnownAnswer signs the known-answer message of Standard Webhooks 1.0.
func TestSignatureKnownAnswer(t *testing.T) {
	got, err := signature("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, []byte(`{"test": 2432232314}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Errorf("signature %s, want %s", got, want)
	}
	if _, err := signature("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "id", 1, nil); err == nil {
		t.Error("a secret without whsec_ signed")
	}
}

// TestSignaturesDuringARotation: both secrets sign, space separated, current first.
func TestSignaturesDuringARotation(t *testing.T) {
	cur, old := newSecret(), newSecret()
	h, err := signatures([]string{cur, old}, "msg_1", 5, []byte("{}"))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := signature(cur, "msg_1", 5, []byte("{}"))
	b, _ := signature(old, "msg_1", 5, []byte("{}"))
	if h != a+" "+b || a == b {
		t.Errorf("header %q, want %q", h, a+" "+b)
	}
}

// TestSealedSecretsOpenOnlyWhereSealed: a sealed secret opens with its key and endpoint only, and
// the sealed bytes do not hold the secret.
func TestSealedSecretsOpenOnlyWhereSealed(t *testing.T) {
	s, _ := newSealer(bytes.Repeat([]byte{1}, 32))
	other, _ := newSealer(bytes.Repeat([]byte{2}, 32))
	secret := newSecret()
	sealed := s.seal("demo", "e1", secret)
	if bytes.Contains(sealed, []byte(strings.TrimPrefix(secret, secretPrefix))) {
		t.Fatal("the sealed bytes hold the secret")
	}
	if got, err := s.open("demo", "e1", sealed); err != nil || got != secret {
		t.Errorf("open: %q %v", got, err)
	}
	if _, err := s.open("demo", "e2", sealed); err == nil {
		t.Error("a secret opened for another endpoint")
	}
	if _, err := other.open("demo", "e1", sealed); err == nil {
		t.Error("a secret opened with another key")
	}
}
