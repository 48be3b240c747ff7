package edge

import (
	"net/http"
	"path"
	"slices"
	"strings"
)

// Browser apps on other origins call the read routes and the routes a partner calls with a bearer
// token (CORS, the Fetch standard). Every answer of those routes, refusals by the guard included,
// allows any origin: credentials are bearer tokens a script puts in Authorization, never cookies, so
// the grant is the constant "*", never Access-Control-Allow-Credentials, and an answer is the same
// whatever the Origin (no Vary: Origin; shared caches stay correct). The routes a browser must not
// call get nothing: the token endpoint and access requests (they take a client secret, which never
// belongs in a browser), the sandbox sign-up form (its form token rides in a cookie), the admin API
// and the replication stream. A browser then refuses to hand their answers to another origin's script.

// Canonical keys and shared values of the CORS headers, set without allocating (see headers.go).
var (
	keyAllowOrigin   = http.CanonicalHeaderKey("Access-Control-Allow-Origin")
	keyExposeHeaders = http.CanonicalHeaderKey("Access-Control-Expose-Headers")
	keyAllowMethods  = http.CanonicalHeaderKey("Access-Control-Allow-Methods")
	keyAllowHeaders  = http.CanonicalHeaderKey("Access-Control-Allow-Headers")
	keyMaxAge        = http.CanonicalHeaderKey("Access-Control-Max-Age")

	corsAnyOrigin = []string{"*"}
	// corsExposed are the headers the service sets for its clients beyond those every script may read
	// (Cache-Control, Content-Language, Content-Length, Content-Type, Expires, Last-Modified, Pragma).
	corsExposed = []string{strings.Join([]string{
		"ETag", "Link", "Location", "Content-Location", "X-DIR-Audience", "X-DIR-Attribution",
		"RateLimit", "RateLimit-Policy", "Retry-After", "WWW-Authenticate", "Allow",
		"X-Progress", PositionHeader, "Replication-Pending", "Deprecation", "Sunset",
		"Content-Disposition", "Content-Range", "Accept-Ranges",
	}, ", ")}
	// corsAllowed are the request headers a route reads that a script may have to ask leave to send:
	// the token, a JSON body's type, conditional and range requests (record reads, export files), the
	// FHIR Prefer, the labels' language and the position a reader wants to see.
	corsAllowed = []string{strings.Join([]string{
		"Authorization", "Content-Type", "If-None-Match", "If-Match", "If-Modified-Since",
		"If-Unmodified-Since", "If-Range", "Range", "Prefer", "Accept-Language", PositionHeader,
	}, ", ")}
	// corsMaxAge is how long a browser may keep a preflight's grant, in seconds: two hours, the most
	// Chromium keeps one.
	corsMaxAge = []string{"7200"}
)

// cors gives the answers of the routes a browser may call the CORS headers, and answers their
// preflights. It runs in front of the guard, so that the guard's refusals (429, 401, 403, 503) carry
// them too: a script reads an error only when it is allowed to read the answer. A preflight is
// answered here, never limited and needing no token, as browsers send it without credentials.
func (s *Server) cors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !corsRoute(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		if r.Method == http.MethodOptions {
			if want := r.Header.Get("Access-Control-Request-Method"); want != "" {
				s.preflight(w, r, want)
				return
			}
		}
		h := w.Header()
		h[keyAllowOrigin] = corsAnyOrigin
		h[keyExposeHeaders] = corsExposed
		next.ServeHTTP(w, r)
	})
}

// preflight answers a browser that asks whether it may send a request with method want: 204 with
// the grant when a route of the path takes the method, and the methods the path's routes take,
// asked of the mux (the one list of routes). A path no route serves answers 404, and a method the
// path's routes do not take 405, neither with a grant. An edge asks its primary about what it would
// send there (the primary's own routes, and methods its read routes do not take): only the primary
// knows them.
func (s *Server) preflight(w http.ResponseWriter, r *http.Request, want string) {
	if s.forward != nil {
		announced := *r
		announced.Method = want
		if s.forwards(&announced) {
			s.toPrimary(w, r)
			return
		}
	}
	allow := s.allowed(r)
	if !slices.Contains(allow, want) {
		s.handleNotFound(w, r)
		return
	}
	h := w.Header()
	h[keyAllowOrigin] = corsAnyOrigin
	h[keyAllowMethods] = []string{strings.Join(allow, ", ")}
	h[keyAllowHeaders] = corsAllowed
	h[keyMaxAge] = corsMaxAge
	w.WriteHeader(http.StatusNoContent)
}

// corsRoute reports whether a browser on another origin may call a path: every path but the token
// endpoint, access requests, the sandbox sign-up, the admin API and the replication stream, each
// recognised as the mux would route it once the path is cleaned.
func corsRoute(p string) bool {
	c := path.Clean(p) // no copy when the path is clean already, as it almost always is
	switch {
	case c == TokenPath, c == AccessRequestsPath,
		c == replicationPrefix[:len(replicationPrefix)-1] || strings.HasPrefix(c, replicationPrefix),
		c == "/admin" || strings.HasPrefix(c, "/admin/"):
		return false
	}
	if dir := pathDirectory(c); dir != "" {
		sub := c[len("/v1/d/")+len(dir):]
		if sub == "/portal/sandbox" || strings.HasPrefix(sub, "/portal/sandbox/") {
			return false
		}
	}
	return true
}

// setCORS gives an answer written outside the middleware's sight (the edge's own answer when its
// primary cannot be reached) the headers the middleware would have given it.
func setCORS(h http.Header, r *http.Request) {
	if corsRoute(r.URL.Path) {
		h[keyAllowOrigin] = corsAnyOrigin
		h[keyExposeHeaders] = corsExposed
	}
}
