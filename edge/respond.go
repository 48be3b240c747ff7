package edge

import (
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/dirsvc/dirsvc"
)

// The helpers every read's answer is written with: its caching, the audience it was projected for,
// its entity tag and conditional answer, and its coded forms.

// cacheFor sets the caching of a successful read: shared caches keep an anonymous public answer a
// minute; every answer to a client is private and never stored (the guard set that already).
func (s *Server) cacheFor(w http.ResponseWriter, r *http.Request) {
	if tokenFrom(r.Context()) == nil {
		w.Header()[keyCacheControl] = publicCacheControl
	}
}

// setAudience names the tier a response was projected for.
func setAudience(w http.ResponseWriter, a dirsvc.Audience) {
	if a == dirsvc.Public {
		w.Header()[keyAudience] = audiencePublic
	} else {
		w.Header().Set(keyAudience, a.String())
	}
}

// writeJSON writes a projected JSON body for audience a with the caching of a read. Its entity tag
// is the hash of the body, so a client or cache that holds the same bytes, of the same directory
// state, query and audience, gets 304 to If-None-Match, and the body's coded forms are kept by the
// same hash.
func (s *Server) writeJSON(w http.ResponseWriter, r *http.Request, a dirsvc.Audience, body []byte) {
	setAudience(w, a)
	s.cacheFor(w, r)
	etag, f := s.composed(body)
	writeTagged(w, r, body, etag, f)
}

// cacheTags names what an anonymous public answer depends on, so a cache in front can purge it when
// the directory changes. The tags go in one header, Cache-Tag, comma-separated (the convention of
// Cloudflare, which others follow): dir:<slug> on every answer, then the answer's own tags (see
// dirTag and the list in docs/api.md). Private answers are never stored and carry none.
func (s *Server) cacheTags(w http.ResponseWriter, r *http.Request, tags ...string) {
	if tokenFrom(r.Context()) != nil {
		return
	}
	all := make([]string, 0, len(tags)+1)
	all = append(all, "dir:"+r.PathValue("dir"))
	w.Header().Set("Cache-Tag", strings.Join(append(all, tags...), ","))
}

// dirTag is the cache tag of one thing of the request's directory: <slug>:<name>, where name is a
// record's public ID, a list (services, practitioners), the taxonomy or the collections.
func dirTag(r *http.Request, name string) string { return r.PathValue("dir") + ":" + name }

// composed returns the entity tag of a body composed at read time, and where its coded forms are
// kept.
func (s *Server) composed(body []byte) (etag string, f forms) {
	sum := sha256.Sum256(body)
	return dirsvc.ETagOfSum(sum), s.bodies.forms(sum)
}

// writeView writes a projected body with the headers of a record read: audience, attribution when it
// carries addresses, entity tag (answering 304 to a matching If-None-Match) and caching.
func (s *Server) writeView(w http.ResponseWriter, r *http.Request, rd *reading, body []byte, etag string, f forms, addresses bool) {
	h := w.Header()
	setAudience(w, rd.aud())
	if addresses {
		setAttribution(h, rd.info.Attribution)
	}
	s.cacheFor(w, r)
	writeTagged(w, r, body, etag, f)
}

// writeTagged writes a JSON body with its entity tag, answering 304 to a matching If-None-Match, and
// offers the compression layer the body's kept coded forms (f, which may be nil).
func writeTagged(w http.ResponseWriter, r *http.Request, body []byte, etag string, f forms) {
	writeTaggedAs(w, r, body, etag, f, contentTypeJSON)
}

// writeTaggedAs is writeTagged with the content type given (a header value slice, set as it is).
func writeTaggedAs(w http.ResponseWriter, r *http.Request, body []byte, etag string, f forms, contentType []string) {
	h := w.Header()
	h.Set("ETag", etag)
	// The representation's headers go on a 304 too, so the compression layer gives it the entity tag
	// the 200 would carry.
	h[keyContentType] = contentType
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if etagMatch(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	offerForms(w, f, body)
	w.WriteHeader(http.StatusOK)
	w.Write(body)
}

// etagMatch reports whether an If-None-Match header matches the entity tag (weak comparison), in
// any of its content codings (see compress).
func etagMatch(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		for _, coding := range []string{"-br\"", "-gzip\""} {
			if base, ok := strings.CutSuffix(t, coding); ok {
				t = base + `"`
			}
		}
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}

// WriteNoStoreJSON answers v as JSON that no cache keeps: the answers of the primary's write routes
// (webhooks, exports, forwarded items), which are their caller's own.
func WriteNoStoreJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"internal"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
