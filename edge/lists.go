package edge

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dirsvc/dirsvc"
)

// List bounds of section 8.
const (
	defaultListLimit = 50
	maxListLimit     = 100
	maxCursor        = 200
	maxFilterValues  = 50
	maxSystem        = 200
	maxIdentifier    = 100
)

// listValues returns the values of a list filter, given repeated or comma-separated, each checked
// by valid; a bad or empty value, or too many, is a 400 naming the parameter.
func listValues(q url.Values, name string, valid func(string) bool) ([]string, error) {
	var out []string
	for _, v := range q[name] {
		for _, part := range strings.Split(v, ",") {
			part = strings.TrimSpace(part)
			if !valid(part) {
				return nil, dirsvc.InvalidParam(name, "%s holds a value that is not valid: %.40q", name, part)
			}
			out = append(out, part)
		}
	}
	if len(out) > maxFilterValues {
		return nil, dirsvc.InvalidParam(name, "%s takes at most %d values", name, maxFilterValues)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// single returns the one value of a parameter; given twice it is a 400 naming it.
func single(q url.Values, name string) (string, error) {
	switch vs := q[name]; len(vs) {
	case 0:
		return "", nil
	case 1:
		return vs[0], nil
	}
	return "", dirsvc.InvalidParam(name, "%s may be given once", name)
}

// pageParams reads cursor and limit. A cursor is bound to the query it was made for (key): given with
// another query it is a 400.
func pageParams(q url.Values, key string) (after string, limit int, err error) {
	limit = defaultListLimit
	ls, err := single(q, "limit")
	if err != nil {
		return "", 0, err
	}
	if ls != "" {
		n, err := strconv.Atoi(ls)
		if err != nil || n < 1 || n > maxListLimit {
			return "", 0, dirsvc.InvalidParam("limit", "limit must be an integer from 1 to %d", maxListLimit)
		}
		limit = n
	}
	c, err := single(q, "cursor")
	if err != nil || c == "" {
		return "", limit, err
	}
	if len(c) > maxCursor {
		return "", 0, dirsvc.InvalidParam("cursor", "cursor is at most %d characters", maxCursor)
	}
	if after, ok := decodeCursor(c, key); ok {
		return after, limit, nil
	}
	return "", 0, dirsvc.InvalidParam("cursor", "cursor is not one this list gave for this query")
}

// queryKey is what a cursor is bound to: the directory, the caller's view and the filters.
func queryKey(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// encodeCursor returns the opaque cursor of the page that follows the public ID after.
func encodeCursor(after, key string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(after + "|" + key))
}

func decodeCursor(c, key string) (string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return "", false
	}
	after, k, ok := strings.Cut(string(b), "|")
	return after, ok && k == key && dirsvc.KindOfID(after) != ""
}

// viewerKey names a viewer in a query key.
func viewerKey(v dirsvc.Viewer) string {
	b, _ := json.Marshal(v.Narrowing)
	return v.Audience.String() + string(b)
}

// writeList writes a page of projected views as {items, limit, nextCursor}.
func (s *Server) writeList(w http.ResponseWriter, r *http.Request, a dirsvc.Audience, page dirsvc.Page, limit int, key string) {
	var buf bytes.Buffer
	buf.WriteString(`{"items":[`)
	for i, p := range page.Items {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(p.Body)
	}
	buf.WriteString(`],"limit":`)
	buf.WriteString(strconv.Itoa(limit))
	buf.WriteString(`,"nextCursor":`)
	if page.More {
		buf.WriteString(strconv.Quote(encodeCursor(page.Items[len(page.Items)-1].PublicID, key)))
	} else {
		buf.WriteString("null")
	}
	buf.WriteByte('}')
	s.writeJSON(w, r, a, buf.Bytes())
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

func (s *Server) handleListServices(w http.ResponseWriter, r *http.Request) {
	viewer, err := s.viewer(r, dirsvc.ScopeGraphRead)
	if err != nil {
		s.error(w, r, err)
		return
	}
	q := r.URL.Query()
	var sq dirsvc.ServiceQuery
	if since, err := single(q, "updatedSince"); err != nil {
		s.error(w, r, err)
		return
	} else if since != "" {
		if sq.UpdatedSince, err = time.Parse(time.RFC3339Nano, since); err != nil {
			s.error(w, r, dirsvc.InvalidParam("updatedSince", "updatedSince must be a date-time such as 2026-01-31T00:00:00Z"))
			return
		}
	}
	validOrg := func(id string) bool { return dirsvc.ValidPublicID(dirsvc.KindOrganisation, id) }
	for _, f := range []struct {
		name  string
		dst   *[]string
		valid func(string) bool
	}{
		{"area", &sq.Areas, dirsvc.ValidArea},
		{"type", &sq.Types, dirsvc.ValidCode},
		{"category", &sq.Categories, dirsvc.ValidCode},
		{"organisation", &sq.Organisations, validOrg},
	} {
		if *f.dst, err = listValues(q, f.name, f.valid); err != nil {
			s.error(w, r, err)
			return
		}
	}
	dir, _, err := s.directory(r.Context(), r.PathValue("dir"))
	if err != nil {
		s.cacheFor(w, r)
		s.error(w, r, err)
		return
	}
	key := queryKey(r.PathValue("dir"), viewerKey(viewer), sq.UpdatedSince.UTC().Format(time.RFC3339Nano),
		strings.Join(sq.Areas, ","), strings.Join(sq.Types, ","), strings.Join(sq.Categories, ","),
		strings.Join(sq.Organisations, ","))
	if sq.After, sq.Limit, err = pageParams(q, key); err != nil {
		s.error(w, r, err)
		return
	}
	if !viewer.Narrowing.AllowsKind(dirsvc.KindService) {
		s.writeList(w, r, viewer.Audience, dirsvc.Page{}, sq.Limit, key)
		return
	}
	page, err := dir.Services(r.Context(), viewer, sq)
	if err != nil {
		s.error(w, r, err)
		return
	}
	s.cacheTags(w, r, "services")
	s.writeList(w, r, viewer.Audience, page, sq.Limit, key)
}

func (s *Server) handleListPractitioners(w http.ResponseWriter, r *http.Request) {
	viewer, err := s.viewer(r, dirsvc.ScopePractitionersRead)
	if err != nil {
		s.error(w, r, err)
		return
	}
	dir, info, err := s.directory(r.Context(), r.PathValue("dir"))
	if err != nil {
		s.cacheFor(w, r)
		s.error(w, r, err)
		return
	}
	// Without a client, only a directory that lets anyone list practitioners lists them.
	if tokenFrom(r.Context()) == nil && !info.Settings.AnyoneMayListPractitioners {
		s.error(w, r, dirsvc.Errorf(dirsvc.EForbiddenScope, "Listing practitioners needs the scope %s.", dirsvc.ScopePractitionersRead))
		return
	}
	key := queryKey(r.PathValue("dir"), viewerKey(viewer), "practitioners")
	after, limit, err := pageParams(r.URL.Query(), key)
	if err != nil {
		s.error(w, r, err)
		return
	}
	var page dirsvc.Page
	if viewer.Narrowing.AllowsKind(dirsvc.KindPractitioner) {
		if page, err = dir.Practitioners(r.Context(), viewer, after, limit); err != nil {
			s.error(w, r, err)
			return
		}
	}
	s.cacheTags(w, r, "practitioners")
	s.writeList(w, r, viewer.Audience, page, limit, key)
}

// IdentifiedRecord is an item of an identifier search.
type IdentifiedRecord struct {
	EntityType dirsvc.Kind `json:"entityType"`
	PublicID   string      `json:"publicId"`
}

func (s *Server) handleSearchIdentifiers(w http.ResponseWriter, r *http.Request) {
	viewer, err := s.viewer(r, dirsvc.ScopeGraphRead)
	if err != nil {
		s.error(w, r, err)
		return
	}
	q := r.URL.Query()
	system, err := single(q, "system")
	if err == nil && (strings.TrimSpace(system) == "" || len(system) > maxSystem) {
		err = dirsvc.InvalidParam("system", "system is required: an identifier system URI or a type such as abn or hpio, at most %d characters", maxSystem)
	}
	if err != nil {
		s.error(w, r, err)
		return
	}
	value, err := single(q, "value")
	if err == nil && (strings.TrimSpace(value) == "" || len(value) > maxIdentifier) {
		err = dirsvc.InvalidParam("value", "value is required, at most %d characters", maxIdentifier)
	}
	if err != nil {
		s.error(w, r, err)
		return
	}
	dir, _, err := s.directory(r.Context(), r.PathValue("dir"))
	if err != nil {
		s.cacheFor(w, r)
		s.error(w, r, err)
		return
	}
	ids, err := dir.Identified(r.Context(), viewer, system, value)
	if err != nil {
		s.error(w, r, err)
		return
	}
	items := make([]IdentifiedRecord, 0, len(ids))
	for _, id := range ids {
		items = append(items, IdentifiedRecord{EntityType: dirsvc.KindOfID(id), PublicID: id})
	}
	body, err := json.Marshal(map[string][]IdentifiedRecord{"items": items})
	if err != nil {
		s.error(w, r, err)
		return
	}
	s.writeJSON(w, r, viewer.Audience, body)
}

// cacheTags names what an anonymous public answer depends on, so a cache in front can purge it when
// the directory changes: Surrogate-Key (space-separated) and Cache-Tag (comma-separated) carry the
// same tags. Private answers are never stored and carry none.
func (s *Server) cacheTags(w http.ResponseWriter, r *http.Request, tags ...string) {
	if tokenFrom(r.Context()) != nil {
		return
	}
	dir := r.PathValue("dir")
	all := make([]string, 0, len(tags)+1)
	all = append(all, "dir:"+dir)
	for _, t := range tags {
		all = append(all, dir+":"+t)
	}
	h := w.Header()
	h.Set("Surrogate-Key", strings.Join(all, " "))
	h.Set("Cache-Tag", strings.Join(all, ","))
}
