package primary

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"log/slog"
	"net/http"
	"net/mail"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/edge"
)

// Portal serves what the developer portal sends to the primary: sandbox sign-up and access
// requests. Sign-up issues sandbox credentials from the portal's form (section 5.2, item 3): a
// sandbox client of the demonstration directory, whose secret is shown once on the answer. The form
// carries a token bound to a cookie (a signed double submit), and sign-ups are limited per client
// address and in all, per hour and per day.
type Portal struct {
	Access *Access
	Edge   *edge.Server
	// Limits are the sign-up limits; zero means edge.DefaultSignupLimits.
	Limits edge.SignupLimits
	key    []byte
	now    func() time.Time
	// Secure marks the form's cookie Secure (the service is served over https).
	Secure bool
	// Replicate, when set, makes a new client or access request durable in every replica of the
	// platform file before it is answered. An error matching dirsvc.ErrStorageUnconfirmed makes the
	// answer say Replication-Pending (the credentials work on this primary, but the bucket lacks them
	// yet); any other (no replica holds them) is answered as an error (dirsvc.NotReplicated).
	Replicate func(ctx context.Context) error
	Log       *slog.Logger

	mu      sync.Mutex
	total   signupCount
	byAddr  map[string]*signupCount
	dayOpen time.Time // the day window byAddr counts in
}

// signupCount counts sign-ups in the current hour and day windows.
type signupCount struct {
	hour, day         time.Time
	inHour, inDay     int
	pendHour, pendDay int // sign-ups under way
}

// NewPortal returns the portal routes of a primary whose server key is serverKey.
func NewPortal(a *Access, e *edge.Server, serverKey []byte, limits edge.SignupLimits, now func() time.Time) *Portal {
	if limits == (edge.SignupLimits{}) {
		limits = edge.DefaultSignupLimits
	}
	if now == nil {
		now = time.Now
	}
	return &Portal{Access: a, Edge: e, Limits: limits, key: derive(serverKey, "sandbox-signup-form"), now: now,
		Secure: strings.HasPrefix(e.BaseURL(), "https://"), byAddr: map[string]*signupCount{}}
}

// Form token: its expiry (Unix seconds, 8 bytes), 16 random bytes, and the HMAC-SHA256 of both with
// the directory, under a key derived from the server key.
const (
	csrfCookie    = "dirsvc_signup"
	csrfField     = "csrf"
	csrfLifetime  = 2 * time.Hour
	maxSignupBody = 8 << 10
)

func (s *Portal) newToken(dir string) string {
	b := make([]byte, 24, 56)
	binary.BigEndian.PutUint64(b, uint64(s.now().Add(csrfLifetime).Unix()))
	rand.Read(b[8:24])
	return base64.RawURLEncoding.EncodeToString(append(b, s.tokenMAC(dir, b)...))
}

func (s *Portal) tokenMAC(dir string, head []byte) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(dir + "\x00"))
	m.Write(head)
	return m.Sum(nil)
}

// checkToken checks that the form's token is the cookie's, made here for the directory, and not
// expired.
func (s *Portal) checkToken(r *http.Request, dir, field string) bool {
	c, err := r.Cookie(csrfCookie)
	if err != nil || field == "" || subtle.ConstantTimeCompare([]byte(c.Value), []byte(field)) != 1 {
		return false
	}
	raw, err := base64.RawURLEncoding.DecodeString(field)
	if err != nil || len(raw) != 56 {
		return false
	}
	if !hmac.Equal(raw[24:], s.tokenMAC(dir, raw[:24])) {
		return false
	}
	return s.now().Unix() < int64(binary.BigEndian.Uint64(raw[:8]))
}

// offered returns the demonstration directory's description when dir is it and it is served.
func (s *Portal) offered(r *http.Request, dir string) (*dirsvc.Directory, bool) {
	if s.Access.SandboxDirectory == "" || dir != s.Access.SandboxDirectory {
		return nil, false
	}
	info, err := s.Edge.Directory(r.Context(), dir)
	return info, err == nil
}

// page returns the form page of a directory with a fresh token, which it also sets as the cookie.
func (s *Portal) page(w http.ResponseWriter, r *http.Request, dir string) edge.SignupPage {
	info, ok := s.offered(r, dir)
	if !ok {
		return edge.SignupPage{} // names no directory: the path is the caller's words
	}
	tok := s.newToken(dir)
	http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: tok, Path: edge.SandboxSignupPath(dir),
		MaxAge: int(csrfLifetime / time.Second), HttpOnly: true, Secure: s.Secure, SameSite: http.SameSiteStrictMode})
	return edge.SignupPage{Directory: dir, DirectoryName: info.Name, Offered: true, CSRF: tok}
}

// HandleForm answers the sign-up form. A directory that is not the demonstration directory answers
// 404 with a page that says sign-up is not offered.
func (s *Portal) HandleForm(w http.ResponseWriter, r *http.Request) {
	p := s.page(w, r, r.PathValue("dir"))
	status := http.StatusOK
	if !p.Offered {
		status = http.StatusNotFound
	}
	s.Edge.WriteSignupPage(w, r, status, p)
}

// signupForm is a sign-up's fields.
type signupForm struct{ name, email, purpose, csrf string }

// HandleSignup issues sandbox credentials: 201 with a page that shows them once. It answers 404
// where sign-up is not offered, 403 to a form whose token is missing or wrong, 429 past a limit
// (with Retry-After), 400 naming a field that is wrong, 413 to a body past 8 KiB. A browser (Accept
// text/html) gets each of these as a page, with the form again where it can send it again; any
// other caller a problem.
func (s *Portal) HandleSignup(w http.ResponseWriter, r *http.Request) {
	dir := r.PathValue("dir")
	info, ok := s.offered(r, dir)
	if !ok {
		s.refuse(w, r, dir, signupForm{}, dirsvc.Errorf(dirsvc.ENotFound, "This service offers no sandbox sign-up for this directory."))
		return
	}
	f, err := readSignupForm(w, r)
	if err != nil {
		s.refuse(w, r, dir, f, err)
		return
	}
	if !s.checkToken(r, dir, f.csrf) {
		s.refuse(w, r, dir, f, dirsvc.Errorf(dirsvc.EForbidden, "The form has expired or did not come from this site: send it again from the sign-up page."))
		return
	}
	if err := f.validate(); err != nil {
		s.refuse(w, r, dir, f, err)
		return
	}
	addr := s.Edge.ClientAddr(r)
	done, wait := s.reserve(addr)
	if done == nil {
		w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
		s.refuse(w, r, dir, f, dirsvc.Errorf(dirsvc.ERateLimited, "Too many sign-ups: try again in %s.", humanWait(wait)))
		return
	}
	c, secret, err := s.Access.CreateClient(r.Context(), NewClient{Name: f.name, Sandbox: true, Contact: f.email, Purpose: f.purpose})
	done(err == nil)
	if err != nil {
		s.refuse(w, r, dir, f, err)
		return
	}
	if !s.replicated(w, r) {
		return
	}
	g := c.Grant(dir)
	s.Edge.WriteSignupPage(w, r, http.StatusCreated, edge.SignupPage{Directory: dir, DirectoryName: info.Name, Offered: true,
		Issued: &edge.SignupCredentials{ClientID: c.ID, Secret: secret, Scopes: g.Scopes, Limit: g.Limit}})
}

// replicated makes a change of the platform file durable in every replica before it is answered
// (see Portal.Replicate), and reports whether to answer it: a change no replica holds is answered
// as an error (dirsvc.NotReplicated), written here.
func (s *Portal) replicated(w http.ResponseWriter, r *http.Request) bool {
	if s.Replicate == nil {
		return true
	}
	err := s.Replicate(r.Context())
	switch {
	case err == nil:
	case errors.Is(err, dirsvc.ErrStorageUnconfirmed):
		if s.Log != nil {
			s.Log.Warn("portal: object storage did not confirm a new client or access request in time")
		}
		w.Header().Set(PendingHeader, "object-storage")
	default:
		s.Edge.WriteError(w, r, dirsvc.NotReplicated(err))
		return false
	}
	return true
}

// refuse answers a refused sign-up: a page for a browser (the form again, with a fresh token, where
// it may be sent again), a problem for any other caller.
func (s *Portal) refuse(w http.ResponseWriter, r *http.Request, dir string, f signupForm, err error) {
	var e *dirsvc.Error
	if !wantsHTML(r) || !errors.As(err, &e) {
		s.Edge.WriteError(w, r, err)
		return
	}
	status := map[string]int{dirsvc.ENotFound: http.StatusNotFound, dirsvc.EForbidden: http.StatusForbidden,
		dirsvc.ERateLimited: http.StatusTooManyRequests, dirsvc.EInvalid: http.StatusBadRequest}[e.Code]
	if status == 0 {
		s.Edge.WriteError(w, r, err)
		return
	}
	p := s.page(w, r, dir)
	p.Name, p.Email, p.Purpose = f.name, f.email, f.purpose
	if e.Code == dirsvc.EInvalid && e.Param != "" {
		p.Errors = map[string]string{e.Param: e.Message}
	} else {
		p.Refusal = e.Message
	}
	s.Edge.WriteSignupPage(w, r, status, p)
}

// wantsHTML reports whether the caller asked for a page (a browser sending the form).
func wantsHTML(r *http.Request) bool { return strings.Contains(r.Header.Get("Accept"), "text/html") }

// readSignupForm reads the form body (application/x-www-form-urlencoded, at most maxSignupBody).
func readSignupForm(w http.ResponseWriter, r *http.Request) (signupForm, error) {
	var f signupForm
	if mt, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";"); strings.TrimSpace(mt) != "application/x-www-form-urlencoded" {
		return f, &dirsvc.Error{Code: dirsvc.EUnsupportedMedia, Param: "Content-Type",
			Message: "Send the form as application/x-www-form-urlencoded."}
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxSignupBody)
	if err := r.ParseForm(); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return f, dirsvc.Errorf(dirsvc.ETooLarge, "The form is larger than %d bytes.", maxSignupBody)
		}
		return f, dirsvc.InvalidParam("body", "the form body is malformed")
	}
	one := func(name string) (string, error) {
		vs := r.PostForm[name]
		if len(vs) > 1 {
			return "", dirsvc.InvalidParam(name, "%s is given more than once", name)
		}
		if len(vs) == 0 {
			return "", nil
		}
		// A browser sends every line break of a form as CRLF: kept as a line feed, as the text rule
		// reads it.
		return strings.TrimSpace(dirsvc.NormaliseLineBreaks(vs[0])), nil
	}
	var err error
	for _, p := range []struct {
		name string
		dst  *string
	}{{"name", &f.name}, {"email", &f.email}, {"purpose", &f.purpose}, {csrfField, &f.csrf}} {
		if *p.dst, err = one(p.name); err != nil {
			return f, err
		}
	}
	return f, nil
}

// validate checks the fields: each given, within its bound, keeping the text rule
// (dirsvc.CheckText: the purpose, free text, may hold line breaks), and the email a single address.
func (f signupForm) validate() error {
	for _, c := range []struct {
		name, v, what string
		max           int
	}{{"name", f.name, "Your name", edge.MaxSignupName}, {"email", f.email, "Your email address", edge.MaxSignupEmail},
		{"purpose", f.purpose, "What you will build", edge.MaxSignupPurpose}} {
		switch n := utf8.RuneCountInString(c.v); {
		case n == 0:
			return dirsvc.InvalidParam(c.name, "%s is required.", c.what)
		case n > c.max:
			return dirsvc.InvalidParam(c.name, "%s is at most %d characters.", c.what, c.max)
		case dirsvc.CheckText(c.name, c.v) != nil:
			// The rule's own message names a code point; a person at the form reads this one.
			return dirsvc.InvalidParam(c.name, "%s holds characters that are not text.", c.what)
		}
	}
	a, err := mail.ParseAddress(f.email)
	if err != nil || a.Address != f.email || !strings.Contains(a.Address[strings.LastIndexByte(a.Address, '@')+1:], ".") {
		return dirsvc.InvalidParam("email", "Give an email address such as name@example.org.")
	}
	return nil
}

// reserve takes a sign-up of the address's and the overall allowance: done(ok) must follow, which
// counts it when ok and gives it back otherwise. Past a limit it returns nil and how long until the
// window that is full ends.
func (s *Portal) reserve(addr string) (done func(ok bool), wait time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if day := now.Truncate(24 * time.Hour); !day.Equal(s.dayOpen) {
		s.dayOpen, s.byAddr = day, map[string]*signupCount{} // a new day: every address starts again
	}
	a := s.byAddr[addr]
	if a == nil {
		a = &signupCount{}
	}
	a.roll(now)
	s.total.roll(now)
	l := s.Limits
	switch {
	case a.inDay+a.pendDay >= l.PerAddressDay || s.total.inDay+s.total.pendDay >= l.TotalDay:
		return nil, a.day.Add(24 * time.Hour).Sub(now)
	case a.inHour+a.pendHour >= l.PerAddressHour || s.total.inHour+s.total.pendHour >= l.TotalHour:
		return nil, a.hour.Add(time.Hour).Sub(now)
	}
	s.byAddr[addr] = a
	a.pendHour, a.pendDay, s.total.pendHour, s.total.pendDay = a.pendHour+1, a.pendDay+1, s.total.pendHour+1, s.total.pendDay+1
	return func(ok bool) {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, c := range []*signupCount{a, &s.total} {
			c.pendHour, c.pendDay = c.pendHour-1, c.pendDay-1
			if ok {
				c.inHour, c.inDay = c.inHour+1, c.inDay+1
			}
		}
	}, 0
}

// roll starts new windows when the hour or the day has turned.
func (c *signupCount) roll(now time.Time) {
	if h := now.Truncate(time.Hour); !h.Equal(c.hour) {
		c.hour, c.inHour = h, 0
	}
	if d := now.Truncate(24 * time.Hour); !d.Equal(c.day) {
		c.day, c.inDay = d, 0
	}
}

// humanWait says a wait in minutes or hours.
func humanWait(d time.Duration) string {
	if m := int(d.Minutes()) + 1; m < 90 {
		return strconv.Itoa(m) + " minutes"
	}
	return strconv.Itoa(int(d.Hours())+1) + " hours"
}
