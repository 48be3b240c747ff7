package export

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/url"
	"strconv"
	"time"
)

// Download links are signed: sig is the HMAC-SHA256, under a key derived from the server key, of
// the export's ID, the file's name and the link's expiry (Unix seconds), so a link names one file of
// one export until one moment, and changing any of the three voids it.

// sign returns the signature of a link to file name of export id that expires at exp.
func (s *Service) sign(id, name string, exp int64) string {
	m := hmac.New(sha256.New, s.cfg.LinkKey)
	m.Write([]byte("export-file\x00" + id + "\x00" + name + "\x00" + strconv.FormatInt(exp, 10)))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// link returns the absolute signed link to file name of export id, valid until exp.
func (s *Service) link(id, name string, exp time.Time) string {
	e := exp.Unix()
	q := url.Values{"expires": {strconv.FormatInt(e, 10)}, "sig": {s.sign(id, name, e)}}
	return s.cfg.BaseURL + FilePath(id, name) + "?" + q.Encode()
}

// FilePath is the path of the download route of file name of export id.
func FilePath(id, name string) string { return "/v1/exports/" + id + "/files/" + url.PathEscape(name) }

// verify reports whether sig is the signature of a link to file name of export id with the expiry
// expires (as given), compared in constant time; and whether the link is still valid at now.
func (s *Service) verify(id, name, expires, sig string, now time.Time) (valid, current bool) {
	exp, err := strconv.ParseInt(expires, 10, 64)
	if err != nil || strconv.FormatInt(exp, 10) != expires {
		return false, false
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		return false, false
	}
	want, _ := base64.RawURLEncoding.DecodeString(s.sign(id, name, exp))
	if !hmac.Equal(got, want) {
		return false, false
	}
	return true, now.Unix() <= exp
}
