package edge

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/dirsvc/dirsvc"
)

// An edge serves every read route from its copies and forwards every other request (writes, the
// token endpoint, and the routes of the primary: exports, webhooks, federation) to the primary:
// self-hosted by reverse-proxying it, on Fly.io by answering "fly-replay: region=<primary region>"
// so that Fly's proxy replays it there.
//
// Reading your own writes: a write's answer carries the directory's position after it
// (PositionHeader). A client that sends that position back on a read of the directory at an edge is
// answered from the edge's copy once the copy has reached it, within ReadWait, and by the primary
// otherwise.

// PositionHeader carries a directory's position: on the answer to a write, the position after it;
// on a read, the position the reader wants to see at least. A position is a number (a replication
// transaction ID) and, after a dot, the lineage of the history it counts in (see FormatPosition):
// a copy of another history is not at the position, whatever its number.
const PositionHeader = "Directory-Position"

// FormatPosition writes a position: the transaction ID, and the lineage when known.
func FormatPosition(txid uint64, lineage string) string {
	if lineage == "" {
		return strconv.FormatUint(txid, 10)
	}
	return strconv.FormatUint(txid, 10) + "." + lineage
}

// ParsePosition reads a position as FormatPosition writes it; the lineage is empty when not given.
func ParsePosition(v string) (txid uint64, lineage string, err error) {
	num, lineage, dot := strings.Cut(v, ".")
	txid, err = strconv.ParseUint(num, 10, 64)
	if err != nil || dot && lineage == "" || len(lineage) > 64 || strings.Trim(lineage, "0123456789abcdef") != "" {
		return 0, "", errors.New("not a position")
	}
	return txid, lineage, nil
}

// Headers by which an edge tells the primary who the client of a forwarded request is. The primary
// believes them only next to the vouching credential derived from its replication token.
const (
	edgeTokenHeader    = "Dirsvc-Edge-Token"
	edgeClientIPHeader = "Dirsvc-Client-Ip"
)

// vouching returns the credential by which an edge vouches for the client address it passes on:
// the hex HMAC-SHA256, keyed with the replication token, of a fixed label. It is not the token
// itself, so that what travels on every forwarded request (and may be logged or leaked on the way)
// does not open the replication stream.
func vouching(replicationToken string) string {
	m := hmac.New(sha256.New, []byte(replicationToken))
	m.Write([]byte("dirsvc edge vouches for client addresses"))
	return hex.EncodeToString(m.Sum(nil))
}

// Positions are an edge's copies of its directories, as far as reading your own writes needs
// (replicate.Follower is one).
type Positions interface {
	// WaitFor waits up to max for the copy of a directory to reach a position in the history of
	// the lineage (any, when empty), and reports whether it did.
	WaitFor(ctx context.Context, dir string, position uint64, lineage string, max time.Duration) bool
	// Position returns the position of the copy of a directory; ok is false when there is none.
	// A read far ahead of it need not wait.
	Position(dir string) (txid uint64, ok bool)
}

// Forwarding configures how a node forwards what it does not serve itself (an edge's).
type Forwarding struct {
	// Primary is the primary's address, e.g. http://primary.internal:8080: requests are
	// reverse-proxied to it. Ignored when FlyPrimaryRegion is set.
	Primary *url.URL
	// FlyPrimaryRegion is the Fly.io region of the primary: requests are answered with fly-replay.
	FlyPrimaryRegion string
	// EdgeToken is the primary's replication token. The edge vouches for the client address it
	// passes on with a credential derived from it (see vouching), never with the token itself.
	EdgeToken string
	// Positions are the edge's copies; ReadWait how long a read waits for its copy to reach the
	// position asked for before it goes to the primary (zero: DefaultReadWait).
	Positions Positions
	ReadWait  time.Duration
}

// DefaultReadWait is how long an edge waits for its copy before a read that wants a newer position
// goes to the primary.
const DefaultReadWait = time.Second

func (f *Forwarding) enabled() bool { return f.Primary != nil || f.FlyPrimaryRegion != "" }

// MaxPosition is the largest position a read may ask for: 2^53-1, the largest integer every JSON
// client holds exactly. A larger one is no position a write answered with, and is refused (400).
const MaxPosition = 1<<53 - 1

// MaxPositionAhead is how far past its copy's position a read's position may be for an edge to wait
// for the copy to reach it; a read that wants more goes to the primary at once, without waiting.
const MaxPositionAhead = 10_000

// forwards reports whether the node sends a request to the primary because no read route of its
// own serves it. The replication stream is never forwarded (forwarding answers it 404).
func (s *Server) forwards(r *http.Request) bool {
	if s.forward == nil || underReplication(r.URL.Path) {
		return false
	}
	if isFHIROperation(r.URL.Path) {
		return true // FHIR operations ($export and its status) run on the primary
	}
	_, pattern := s.mux.Handler(r)
	return pattern == "/" || pattern == ""
}

// isFHIROperation reports whether a path is a FHIR operation's under a directory's FHIR base (its
// segment after fhir starts with $): the read route of a resource type would match it otherwise.
func isFHIROperation(p string) bool {
	rest, ok := strings.CutPrefix(p, "/v1/d/")
	if !ok {
		return false
	}
	_, rest, _ = strings.Cut(rest, "/")
	op, ok := strings.CutPrefix(rest, "fhir/$")
	return ok && op != ""
}

// forwarding sends the requests the node does not serve to the primary, and holds back reads that
// want a newer position than the copy has. It runs behind the guard, so the edge's own limits apply
// to what it forwards and to reads before they wait; the primary limits and authenticates what it
// is sent again. On a node that serves everything itself it only checks the position header.
func (s *Server) forwarding(next http.Handler) http.Handler {
	fw := s.cfg.Forwarding
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.forward != nil {
			if underReplication(r.URL.Path) {
				s.error(w, r, dirsvc.ErrNotFound) // the primary's stream is for edges, not through them
				return
			}
			if s.forwards(r) {
				s.toPrimary(w, r)
				return
			}
		}
		// The position means something on a read of a directory's copy only.
		if v := r.Header.Get(PositionHeader); v != "" && pathDirectory(r.URL.Path) != "" && !s.copyFree(r) {
			pos, lineage, err := ParsePosition(v)
			if err != nil || pos > MaxPosition {
				s.error(w, r, dirsvc.InvalidParam(PositionHeader, "want the position a write answered with"))
				return
			}
			if s.forward != nil && !s.copyAt(fw, pathDirectory(r.URL.Path), pos, lineage, r) {
				s.toPrimary(w, r)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// copyFree reports whether a request is for a read route whose answer does not come from the
// directory's copy (handleCopyFree).
func (s *Server) copyFree(r *http.Request) bool {
	_, pattern := s.mux.Handler(r)
	return s.copyFreeRoutes[pattern]
}

// copyAt reports whether the edge's copy of a directory reaches a position in time for the read:
// it waits up to the read wait, unless the position is further ahead of the copy than
// MaxPositionAhead (the copy would not get there in time, and the reader need not wait to learn it).
func (s *Server) copyAt(fw *Forwarding, dir string, pos uint64, lineage string, r *http.Request) bool {
	if fw.Positions == nil {
		return false
	}
	if at, ok := fw.Positions.Position(dir); !ok || pos > at && pos-at > MaxPositionAhead {
		return false
	}
	return fw.Positions.WaitFor(r.Context(), dir, pos, lineage, fw.ReadWait)
}

// toPrimary forwards a request the guard has let through (or a preflight, see cors). The answer is
// the primary's, with the primary's own limit and CORS headers: the edge's are dropped so that a
// client does not see two of each.
func (s *Server) toPrimary(w http.ResponseWriter, r *http.Request) {
	markForwarded(r)
	h := w.Header()
	for _, k := range []string{keyVary, keyRateLimit, keyRateLimitPolicy, keyCacheControl, keyAllowOrigin, keyExposeHeaders} {
		delete(h, k)
	}
	s.forward.ServeHTTP(w, r)
}

// replicationPrefix is where a primary serves its replication stream (replicate.StreamPrefix).
const replicationPrefix = "/replication/"

// underReplication reports whether a request path (decoded) reaches the primary's replication
// stream once cleaned, as the primary's mux cleans it: "//replication/..", "/./replication/..",
// "/x/../replication/.." all do.
func underReplication(p string) bool {
	c := path.Clean("/" + p)
	return c+"/" == replicationPrefix || strings.HasPrefix(c, replicationPrefix)
}

// forwarder returns the handler that sends a request to the primary.
func (s *Server) forwarder(fw *Forwarding) http.Handler {
	if fw.FlyPrimaryRegion != "" {
		replay := "region=" + fw.FlyPrimaryRegion
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Fly-Replay", replay)
			w.Header().Set("Cache-Control", "no-store")
			s.error(w, r, dirsvc.Errorf(dirsvc.EUnavailable, "This request is served in the primary region: the proxy in front replays it there."))
		})
	}
	vouch := ""
	if fw.EdgeToken != "" {
		vouch = vouching(fw.EdgeToken)
	}
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(fw.Primary)
			pr.Out.Host = pr.In.Host // the primary makes addresses from the public host
			pr.SetXForwarded()
			pr.Out.Header.Del(edgeTokenHeader)
			pr.Out.Header.Del(edgeClientIPHeader)
			if vouch != "" {
				pr.Out.Header.Set(edgeTokenHeader, vouch)
				pr.Out.Header.Set(edgeClientIPHeader, s.clientKey(pr.In).String())
			}
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			s.log.Warn("forward to the primary", "method", r.Method, "path", r.URL.Path, "err", err)
			w.Header().Set("Retry-After", "5")
			setCORS(w.Header(), r)
			s.error(w, r, dirsvc.Errorf(dirsvc.EUnavailable, "The primary cannot be reached: try again shortly."))
		},
	}
}

// forwardedClient returns the client address an edge vouched for, when the request comes from an
// edge that knows the replication token: it presents the vouching credential derived from it.
func (s *Server) forwardedClient(r *http.Request) string {
	if s.vouch == "" {
		return ""
	}
	tok := r.Header.Get(edgeTokenHeader)
	if tok == "" || subtle.ConstantTimeCompare([]byte(tok), []byte(s.vouch)) != 1 {
		return ""
	}
	return r.Header.Get(edgeClientIPHeader)
}
