// Package edge serves every read route of the service (REST records, developer information and, in
// later parts, search, FHIR and the feed) from a catalog of published directories. It runs on every
// node: in `dirsvc serve` and `dirsvc primary` beside the writer, and alone in `dirsvc edge`.
package edge

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/dirsvc/dirsvc"
)

// Config configures a Server.
type Config struct {
	// Catalog finds the published directories.
	Catalog dirsvc.Catalog
	// Logger receives every internal error and, at debug level, one line per request; never a
	// private detail.
	Logger *slog.Logger
	// BaseURL is the public address of the service (scheme and host, no trailing slash): the base of
	// links and the issuer every access token must name. It is never taken from a request; empty
	// means DefaultBaseURL.
	BaseURL string
	// Now is the clock of opening status and rate limits; nil means time.Now.
	Now func() time.Time
	// AnonymousLimits limit callers without credentials, per client address; zero means
	// DefaultAnonymousLimits.
	AnonymousLimits Limits
	// ClientIPHeader names the header a trusted proxy in front of the service puts the client's
	// address in (for example Fly-Client-IP, X-Real-IP or X-Forwarded-For). Its last entry counts:
	// the last line, and the last address of a comma-separated list, which the nearest proxy set or
	// appended. Empty, or a last entry that is not an address: the connection's address. Never set
	// it without such a proxy: clients could then choose their own address.
	ClientIPHeader string
	// Keys verify partner clients' access tokens; nil means every presented token is refused.
	Keys Keys
	// Status reports the node's role and replication state on /healthz; nil reports a healthy
	// serve node. An unhealthy node answers 503 there.
	Status func(context.Context) dirsvc.NodeStatus
	// Ready reports whether the node is ready (see dirsvc.NodeStatus.Ready) and the directories
	// still warming; a node not ready answers 503 on /healthz. Nil: always ready.
	Ready func() (ready bool, warming []string)
	// StorageProbe writes a little to every folder the node writes to and reports whether the
	// storage took it: after a write was refused for lack of storage, the node is unhealthy until
	// a probe succeeds (see storage.go). Nil: until storageRetry has passed since the last refusal.
	StorageProbe func(context.Context) error
	// Forwarding makes the node an edge: what it does not serve goes to the primary. Nil: it
	// serves everything itself.
	Forwarding *Forwarding
	// Admission bounds the requests in flight and the expensive ones; zero fields take defaults.
	Admission Admission
	// PageCacheBytes bounds the memory of the record pages kept as composed; zero means
	// DefaultPageCacheBytes, a negative number keeps none.
	PageCacheBytes int64
	// ListCost is how many requests of the caller's rate limit a list or search counts as; zero or
	// one counts every request as one, as the specification's limits are written.
	ListCost int
	// EdgeToken, on a primary, is its replication token: a request forwarded by an edge that
	// presents the vouching credential derived from it (see vouching) is limited by the client
	// address the edge names.
	EdgeToken string
	// CursorSecret is the secret the keys of list cursors derive from. Every node of a deployment
	// (the primary and its edges) must be given the same, so that each accepts the cursors the
	// others gave; empty means a random secret, whose cursors only this process accepts.
	CursorSecret []byte
	// OpenAPI is the OpenAPI document the server serves and takes its deprecations from (see
	// Deprecation); nil means the embedded one (OpenAPIDocument). New panics on a document whose
	// deprecation marks are malformed: the embedded one is checked by a test.
	OpenAPI []byte
	// SitemapURLs is the most URLs a sitemap file lists before the sitemap is split into parts
	// under an index; zero (or more than the protocol allows) means SitemapURLs.
	SitemapURLs int
	// SandboxDirectory is the demonstration directory, whose portal offers sandbox sign-up (served
	// by the primary); empty when the service offers none. Other directories' portals point to it.
	SandboxDirectory string
	// SignupLimits are the sign-up limits the portal documents (the primary applies them); zero
	// means DefaultSignupLimits.
	SignupLimits SignupLimits
	// StreamIdle is how long a client of a streamed body (an export or Bulk Data file, a sitemap, a
	// feed page) may take nothing before it is cut; such bodies have no whole-response bound (see
	// deadline.go). Zero means DefaultStreamIdle.
	StreamIdle time.Duration
	// Metrics counts the requests answered, shed and limited (see Metrics); nil counts nothing.
	Metrics Metrics
}

// Server is the HTTP handler of the read routes.
type Server struct {
	cfg       Config
	log       *slog.Logger
	mux       *http.ServeMux
	handler   http.Handler // mux behind the middleware
	anonymous *limiter[netip.Addr]
	clients   *limiter[clientLimitKey]
	tokens    tokenCache
	admit     *admission
	// expensiveRoutes are the patterns of the expensive read routes (handleExpensive).
	expensiveRoutes map[string]bool
	bodies          *bodyCache       // coded forms of bodies composed at read time
	pages           *pageCache       // record pages as composed
	fhirResources   *fhirCache       // FHIR resources mapped from views (fhircache.go)
	fhirAhead       *fhirAhead       // FHIR search pages made ahead of their request (fhirahead.go)
	fhirReadable    *fhirReadability // whether viewers may read referenced records (fhircache.go)
	cursors         *cursorKeys      // sign and hide the list cursors
	vouch           string           // on a primary with a replication token, the credential edges vouch with
	forward         http.Handler     // on an edge, what sends a request to the primary; nil elsewhere
	// tokenFailures counts wrong admin and replication tokens per client address (RequireBearer).
	tokenFailures tokenFailures
	// copyFreeRoutes are the patterns of the read routes whose answer does not come from the
	// directory's copy (handleCopyFree).
	copyFreeRoutes map[string]bool
	openapi        []byte           // the document served at OpenAPIPath
	deprecated     deprecatedRoutes // the headers of deprecated routes, by pattern (deprecation.go)
	portals        portalCache      // developer portal pages as rendered
	// apiRef is the portal's reference of the operations, read once from the served document.
	apiRef func() (*apiReference, error)
	// storage is whether the node's storage refuses writes (storage.go).
	storage storageHealth
}

// New returns a Server.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.BaseURL = strings.TrimSuffix(cfg.BaseURL, "/"); cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if cfg.AnonymousLimits == (Limits{}) {
		cfg.AnonymousLimits = DefaultAnonymousLimits
	}
	if cfg.PageCacheBytes == 0 {
		cfg.PageCacheBytes = DefaultPageCacheBytes
	}
	s := &Server{cfg: cfg, log: cfg.Logger, mux: http.NewServeMux(),
		anonymous: newLimiter[netip.Addr](maxLimited), clients: newLimiter[clientLimitKey](maxLimited),
		bodies: newBodyCache(), pages: newPageCache(max(cfg.PageCacheBytes, 0)), admit: newAdmission(cfg.Admission),
		expensiveRoutes: map[string]bool{}, copyFreeRoutes: map[string]bool{}, cursors: newCursorKeys(cfg.CursorSecret),
		fhirResources: newFHIRCache(), fhirAhead: newFHIRAhead(), fhirReadable: newFHIRReadability()}
	if s.openapi = cfg.OpenAPI; s.openapi == nil {
		s.openapi = openAPIDoc
	}
	s.apiRef = sync.OnceValues(func() (*apiReference, error) { return readAPIReference(s.openapi) })
	deps, err := deprecations(s.openapi)
	if err != nil {
		panic("edge: " + err.Error())
	}
	s.deprecated = newDeprecatedRoutes(deps, cfg.BaseURL)
	if cfg.EdgeToken != "" {
		s.vouch = vouching(cfg.EdgeToken)
	}
	if fw := cfg.Forwarding; fw != nil && fw.enabled() {
		if fw.ReadWait <= 0 {
			fw.ReadWait = DefaultReadWait
		}
		s.forward = s.forwarder(fw)
	}
	s.routes()
	s.handler = s.cors(s.guard(s.forwarding(compress(s.deprecate(routed(s.mux))))))
	return s
}

// Handle registers a route of another part of the service (the primary's token endpoint and write
// routes) on the server's mux, behind the same guard, limits and compression as the read routes.
func (s *Server) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// ServeHTTP serves a request, recovering from a panic in a handler as a 500 problem. A streamed body
// is bounded by its client's idleness rather than by the server's whole-response deadlines
// (streamDeadlines).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w = s.streamDeadlines(w, r)
	start := time.Now()
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	r = s.measured(r, rec)
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.Error("panic serving request", "method", r.Method, "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
			if !rec.wrote {
				s.error(rec, r, dirsvc.Errorf(dirsvc.EInternal, "internal error"))
			}
		}
		// One line per request at debug level: at the rates an edge serves, an access log belongs to
		// the proxy in front; errors are logged where they happen.
		if s.log.Enabled(r.Context(), slog.LevelDebug) {
			s.log.Debug("request", "method", r.Method, "path", r.URL.Path, "status", rec.status,
				"bytes", rec.bytes, "duration", time.Since(start))
		}
		if s.cfg.Metrics != nil {
			s.countRequest(r, rec, time.Since(start))
		}
	}()
	s.handler.ServeHTTP(rec, r)
}

// statusRecorder remembers the status and size of a response for the request log.
type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int
	wrote  bool
	route  string // the pattern that served the request, for metrics (see routed)
}

func (w *statusRecorder) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusRecorder) Write(b []byte) (int, error) {
	w.wrote = true
	n, err := w.ResponseWriter.Write(b)
	w.bytes += n
	return n, err
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// DefaultBaseURL is the base URL of a server configured with none (in tests).
const DefaultBaseURL = "http://localhost"

// BaseURL returns the public address of the service: the base of links and the issuer of access
// tokens.
func (s *Server) BaseURL() string { return s.cfg.BaseURL }
