package edge

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
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

// pageParams reads cursor and limit. A cursor is bound to the query it was made for (key): given with
// another query, altered, or not one this deployment made, it is a 400 naming cursor.
func (s *Server) pageParams(q query, key string) (after string, limit int, err error) {
	if limit, err = q.limit(defaultListLimit, maxListLimit); err != nil {
		return "", 0, err
	}
	c, ok := q.get("cursor")
	if !ok {
		return "", limit, nil
	}
	if len(c) > maxCursor {
		return "", 0, dirsvc.InvalidParam("cursor", "cursor is at most %d characters", maxCursor)
	}
	if after, ok := s.cursors.open(c, key); ok {
		return after, limit, nil
	}
	return "", 0, dirsvc.InvalidParam("cursor", "cursor is not one this list gave for this query")
}

// viewerKey names a viewer in a query key.
func viewerKey(v dirsvc.Viewer) string {
	if !v.Narrowing.Narrowed() {
		return v.Audience.String() + "{}" // the JSON of a narrowing that limits nothing, without encoding it
	}
	b, _ := json.Marshal(v.Narrowing)
	return v.Audience.String() + string(b)
}

// writeList writes a page of projected views as {items, limit, nextCursor}.
func (s *Server) writeList(w http.ResponseWriter, r *http.Request, a dirsvc.Audience, page dirsvc.Page, limit int, key string) {
	size := len(`{"items":[],"limit":,"nextCursor":null}`) + 4 + 2*maxCursor
	for _, p := range page.Items {
		size += len(p.Body) + 1
	}
	buf := listBuffers.get(size)
	defer listBuffers.put(buf)
	b := append(*buf, `{"items":[`...)
	for i, p := range page.Items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, p.Body...)
	}
	b = append(b, `],"limit":`...)
	b = strconv.AppendInt(b, int64(limit), 10)
	b = append(b, `,"nextCursor":`...)
	if page.More {
		b = strconv.AppendQuote(b, s.cursors.seal(page.Items[len(page.Items)-1].PublicID, key))
	} else {
		b = append(b, "null"...)
	}
	b = append(b, '}')
	*buf = b
	// The body is written before writeLabelled returns and is not kept (only its coded forms are, in
	// bodies, by its hash; another language's answer is a copy): the buffer goes back to the pool.
	s.writeLabelled(w, r, a, b)
}

// listBuffers keeps the buffers list pages are composed in: a page of 100 services is about 180 KB,
// and lists are the reads that would otherwise allocate most.
var listBuffers bufferPool

// bufferPool is a sync.Pool of byte buffers that keeps none larger than maxPooledBuffer.
type bufferPool struct{ pool sync.Pool }

const (
	minPooledBuffer = 64 << 10
	maxPooledBuffer = 1 << 20
)

// get returns an empty buffer of at least size bytes' capacity.
func (bp *bufferPool) get(size int) *[]byte {
	if b, ok := bp.pool.Get().(*[]byte); ok && cap(*b) >= size {
		*b = (*b)[:0]
		return b
	}
	b := make([]byte, 0, max(size, minPooledBuffer))
	return &b
}

// put returns a buffer nothing refers to any more (none for nil).
func (bp *bufferPool) put(b *[]byte) {
	if b != nil && cap(*b) <= maxPooledBuffer {
		bp.pool.Put(b)
	}
}

// serviceListParams are the query parameters of the service list.
var serviceListParams = []param{updatedSinceParam, areaParam, typeParam, categoryParam, organisationParam,
	cursorParam, limitParam}

// serviceQuery reads the filters of the service list; a bad one is a 400 naming it.
func serviceQuery(q query) (dirsvc.ServiceQuery, error) {
	var sq dirsvc.ServiceQuery
	if since, ok := q.get("updatedSince"); ok {
		var err error
		if sq.UpdatedSince, err = time.Parse(time.RFC3339Nano, since); err != nil {
			return sq, dirsvc.InvalidParam("updatedSince", "updatedSince must be a date-time such as 2026-01-31T00:00:00Z")
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
		var err error
		if *f.dst, err = q.list(f.name, f.valid); err != nil {
			return sq, err
		}
	}
	return sq, nil
}

func (s *Server) handleListServices(w http.ResponseWriter, r *http.Request) {
	q, err := readQuery(r, serviceListParams...)
	if err != nil {
		s.error(w, r, err)
		return
	}
	viewer, err := s.viewer(r, dirsvc.ScopeGraphRead)
	if err != nil {
		s.error(w, r, err)
		return
	}
	sq, err := serviceQuery(q)
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
	key := queryKey(r.PathValue("dir"), viewerKey(viewer), sq.UpdatedSince.UTC().Format(time.RFC3339Nano),
		strings.Join(sq.Areas, ","), strings.Join(sq.Types, ","), strings.Join(sq.Categories, ","),
		strings.Join(sq.Organisations, ","))
	if sq.After, sq.Limit, err = s.pageParams(q, key); err != nil {
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
	s.cacheTags(w, r, dirTag(r, "services"))
	s.writeList(w, r, viewer.Audience, page, sq.Limit, key)
}

func (s *Server) handleListPractitioners(w http.ResponseWriter, r *http.Request) {
	q, err := readQuery(r, cursorParam, limitParam)
	if err != nil {
		s.error(w, r, err)
		return
	}
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
	after, limit, err := s.pageParams(q, key)
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
	s.cacheTags(w, r, dirTag(r, "practitioners"))
	s.writeList(w, r, viewer.Audience, page, limit, key)
}

// identifierParams reads the system and value of an identifier search; both are required.
func identifierParams(q query) (system, value string, err error) {
	system, _ = q.get("system")
	if strings.TrimSpace(system) == "" || len(system) > maxSystem {
		return "", "", dirsvc.InvalidParam("system", "system is required: an identifier system URI or a type such as abn or hpio, at most %d characters", maxSystem)
	}
	value, _ = q.get("value")
	if strings.TrimSpace(value) == "" || len(value) > maxIdentifier {
		return "", "", dirsvc.InvalidParam("value", "value is required, at most %d characters", maxIdentifier)
	}
	return system, value, nil
}

// IdentifiedRecord is an item of an identifier search.
type IdentifiedRecord struct {
	EntityType dirsvc.Kind `json:"entityType"`
	PublicID   string      `json:"publicId"`
}

func (s *Server) handleSearchIdentifiers(w http.ResponseWriter, r *http.Request) {
	q, err := readQuery(r, systemParam, valueParam)
	if err != nil {
		s.error(w, r, err)
		return
	}
	viewer, err := s.viewer(r, dirsvc.ScopeGraphRead)
	if err != nil {
		s.error(w, r, err)
		return
	}
	system, value, err := identifierParams(q)
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
