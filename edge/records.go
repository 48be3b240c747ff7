package edge

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/dirsvc/dirsvc"
)

// recordPaths are the path segments of the record kinds served as /v1/d/{dir}/<segment>/{publicId}.
var recordPaths = map[dirsvc.Kind]string{
	dirsvc.KindService: "services", dirsvc.KindLocation: "locations", dirsvc.KindOrganisation: "organisations",
	dirsvc.KindPractitioner: "practitioners", dirsvc.KindRole: "roles",
}

// maxMergeHops bounds how far a merged record's survivors are followed.
const maxMergeHops = 8

// reading is the state of one record read: the caller's audience, the directory, the record.
type reading struct {
	dir    dirsvc.DirectoryReader
	info   *dirsvc.Directory
	aud    dirsvc.Audience
	brief  bool
	status dirsvc.RecordStatus
}

// readRecord resolves a record read to its view for the caller, or to the error to answer: not found
// (missing, hidden, wrong kind, taken down), gone (closed or removed) or moved (merged).
func (s *Server) readRecord(r *http.Request, kind dirsvc.Kind) (*reading, error) {
	q := r.URL.Query()
	brief := false
	switch q.Get("view") {
	case "", "page":
	case "brief":
		brief = true
	default:
		return nil, dirsvc.InvalidParam("view", "view must be brief or page")
	}
	dir, info, err := s.directory(r.Context(), r.PathValue("dir"))
	if err != nil {
		return nil, err
	}
	id := r.PathValue("publicId")
	if !dirsvc.ValidPublicID(kind, id) {
		return nil, dirsvc.ErrNotFound
	}
	rd := &reading{dir: dir, info: info, aud: dirsvc.Public, brief: brief}
	st, err := dir.Record(r.Context(), id, rd.aud)
	if err != nil {
		return nil, err
	}
	if st.Kind != kind {
		return nil, dirsvc.ErrNotFound
	}
	rd.status = st
	if st.View != nil {
		return rd, nil
	}
	if !st.SeenBy.Has(rd.aud) {
		return nil, dirsvc.ErrNotFound
	}
	switch st.State {
	case dirsvc.StateClosed, dirsvc.StateRemoved:
		return nil, dirsvc.Errorf(dirsvc.EGone, "The record was closed or removed.")
	case dirsvc.StateMerged:
		if survivor, ok := s.survivor(r.Context(), dir, st.Survivor, rd.aud); ok {
			return nil, &dirsvc.Error{Code: dirsvc.EMoved, Target: survivor, Message: "The record was merged."}
		}
		return nil, dirsvc.Errorf(dirsvc.EGone, "The record was merged into one you cannot see.")
	}
	return nil, dirsvc.ErrNotFound
}

// survivor follows a merged record's survivors to one the audience may see.
func (s *Server) survivor(ctx context.Context, dir dirsvc.DirectoryReader, id string, a dirsvc.Audience) (string, bool) {
	for range maxMergeHops {
		st, err := dir.Record(ctx, id, a)
		if err != nil {
			return "", false
		}
		if st.View != nil {
			return id, true
		}
		if st.State != dirsvc.StateMerged || !st.SeenBy.Has(a) {
			return "", false
		}
		id = st.Survivor
	}
	return "", false
}

// directory returns the reader and description of the directory named by slug; an unknown slug is not
// found, answered exactly as a missing record.
func (s *Server) directory(ctx context.Context, slug string) (dirsvc.DirectoryReader, *dirsvc.Directory, error) {
	if !dirsvc.ValidSlug(slug) {
		return nil, nil, dirsvc.ErrNotFound
	}
	dir, err := s.cfg.Catalog.Reader(ctx, slug)
	if err != nil {
		return nil, nil, err
	}
	info, err := dir.Info(ctx)
	if err != nil {
		return nil, nil, err
	}
	return dir, info, nil
}

// recordError answers a failed record read; a merged record redirects to its survivor.
func (s *Server) recordError(w http.ResponseWriter, r *http.Request, kind dirsvc.Kind, err error) {
	if e := (*dirsvc.Error)(nil); errors.As(err, &e) && e.Code == dirsvc.EMoved {
		loc := "/v1/d/" + r.PathValue("dir") + "/" + recordPaths[kind] + "/" + url.PathEscape(e.Target)
		if r.URL.RawQuery != "" {
			loc += "?" + r.URL.RawQuery
		}
		s.publicCache(w)
		http.Redirect(w, r, loc, http.StatusMovedPermanently)
		return
	}
	s.publicCache(w)
	s.error(w, r, err)
}

// publicCache sets the caching of an anonymous public read: shared caches keep it a minute.
func (s *Server) publicCache(w http.ResponseWriter) {
	w.Header()[keyCacheControl] = publicCacheControl
}

// recordRoute is what differs between the record reads: the kind, whether its stored brief view
// carries addresses, and how its page is composed (and whether that carries addresses).
type recordRoute struct {
	kind           dirsvc.Kind
	briefAddresses func(body []byte) bool
	page           func(s *Server, ctx context.Context, rd *reading) (page any, addresses bool, err error)
}

var (
	serviceRoute = recordRoute{
		kind:           dirsvc.KindService,
		briefAddresses: func([]byte) bool { return false },
		page: func(s *Server, ctx context.Context, rd *reading) (any, bool, error) {
			p, err := s.servicePage(ctx, rd)
			return p, err == nil && p.Location != nil, err
		},
	}
	locationRoute = recordRoute{
		kind:           dirsvc.KindLocation,
		briefAddresses: func([]byte) bool { return true },
		page: func(s *Server, ctx context.Context, rd *reading) (any, bool, error) {
			p, err := s.locationPage(ctx, rd)
			return p, true, err
		},
	}
	organisationRoute = recordRoute{
		kind:           dirsvc.KindOrganisation,
		briefAddresses: func(b []byte) bool { return bytes.Contains(b, []byte(`"postalAddress":`)) },
		page: func(s *Server, ctx context.Context, rd *reading) (any, bool, error) {
			p, err := s.organisationPage(ctx, rd)
			return p, true, err
		},
	}
)

func (s *Server) handleGetService(w http.ResponseWriter, r *http.Request) {
	s.getRecord(w, r, serviceRoute)
}

func (s *Server) handleGetLocation(w http.ResponseWriter, r *http.Request) {
	s.getRecord(w, r, locationRoute)
}

func (s *Server) handleGetOrganisation(w http.ResponseWriter, r *http.Request) {
	s.getRecord(w, r, organisationRoute)
}

// getRecord answers a record read: the stored brief view as it is, or the page composed from the
// views of the same audience.
func (s *Server) getRecord(w http.ResponseWriter, r *http.Request, rt recordRoute) {
	rd, err := s.readRecord(r, rt.kind)
	if err != nil {
		s.recordError(w, r, rt.kind, err)
		return
	}
	if rd.brief {
		v := rd.status.View
		s.writeView(w, r, rd, v.Body, v.ETag, rt.briefAddresses(v.Body))
		return
	}
	page, addresses, err := rt.page(s, r.Context(), rd)
	if err != nil {
		s.error(w, r, err)
		return
	}
	s.writePage(w, r, rd, page, addresses)
}

// writePage encodes a page representation and writes it.
func (s *Server) writePage(w http.ResponseWriter, r *http.Request, rd *reading, page any, addresses bool) {
	body, err := json.Marshal(page)
	if err != nil {
		s.error(w, r, err)
		return
	}
	sum := sha256.Sum256(body)
	s.writeView(w, r, rd, body, `"`+hex.EncodeToString(sum[:12])+`"`, addresses)
}

// writeView writes a projected body with the headers of a record read: audience, attribution when it
// carries addresses, entity tag (answering 304 to a matching If-None-Match) and caching.
func (s *Server) writeView(w http.ResponseWriter, r *http.Request, rd *reading, body []byte, etag string, addresses bool) {
	h := w.Header()
	if rd.aud == dirsvc.Public {
		h[keyAudience] = audiencePublic
	} else {
		h.Set(keyAudience, rd.aud.String())
	}
	if addresses && rd.info.Attribution != "" {
		h.Set("X-DIR-Attribution", rd.info.Attribution)
	}
	s.publicCache(w)
	h.Set("ETag", etag)
	// The representation's headers go on a 304 too, so the compression layer gives it the entity tag
	// the 200 would carry.
	h[keyContentType] = contentTypeJSON
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if etagMatch(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
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
