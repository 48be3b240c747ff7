package edge

import (
	"context"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/fhir"
)

// The FHIR routes (specification section 4.6): a read-only R4 server per directory at
// /v1/d/{dir}/fhir, serving resources the fhir package makes from the very views the REST record
// API gives the caller (read through resolve, as record reads are), so a FHIR answer can hold no
// detail the caller's REST answers do not. Every error is an OperationOutcome (see error); a
// missing record, a hidden one, one outside the narrowing and an unknown type answer the same 404.

// fhirContentType is the media type of every FHIR answer.
var fhirContentType = []string{"application/fhir+json; charset=utf-8"}

// fhirBase returns the FHIR base of the request's directory on the service's base URL.
func (s *Server) fhirBase(r *http.Request) string {
	return s.cfg.BaseURL + "/v1/d/" + r.PathValue("dir") + "/fhir"
}

// isFHIRPath reports whether a path is one of the FHIR routes', whose errors are OperationOutcomes.
func isFHIRPath(p string) bool {
	if strings.HasPrefix(p, "/fhir/") {
		return true
	}
	rest, ok := strings.CutPrefix(p, "/v1/d/")
	if !ok {
		return false
	}
	_, rest, _ = strings.Cut(rest, "/")
	return rest == "fhir" || strings.HasPrefix(rest, "fhir/")
}

// fhirIssueCodes are the OperationOutcome issue codes of the domain's error codes.
var fhirIssueCodes = map[string]string{
	dirsvc.ENotFound: "not-found", dirsvc.EGone: "deleted", dirsvc.EInvalid: "invalid", dirsvc.EInvalidToken: "login",
	dirsvc.EForbiddenScope: "forbidden", dirsvc.ERateLimited: "throttled", dirsvc.EInternal: "exception",
	dirsvc.EUnavailable: "transient", eMethodNotAllowed: "not-supported", fhir.ENotAcceptable: "not-supported",
	dirsvc.EUnsupportedMedia: "not-supported", dirsvc.ETooLarge: "too-long", dirsvc.EInsufficientStorage: "transient",
}

// writeOutcome writes an error of a FHIR route as an OperationOutcome with the status of its code.
func (s *Server) writeOutcome(w http.ResponseWriter, e *dirsvc.Error, status int) {
	code := fhirIssueCodes[e.Code]
	if code == "" {
		code = "processing"
	}
	var expr []string
	if e.Param != "" && e.Code == dirsvc.EInvalid {
		expr = []string{e.Param}
	}
	body, err := json.Marshal(fhir.Outcome("error", code, e.Message, expr...))
	if err != nil {
		s.log.Error("encode operation outcome", "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h[keyContentType] = fhirContentType
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("X-Content-Type-Options", "nosniff")
	if h.Get("Cache-Control") == "" {
		h.Set("Cache-Control", "no-store")
	}
	w.WriteHeader(status)
	w.Write(body)
}

// fhirError answers a failed FHIR request. A not-found answer is cached as a record's is, whatever
// made it (missing, hidden, outside the narrowing, an unknown type or directory), so all are the same.
func (s *Server) fhirError(w http.ResponseWriter, r *http.Request, err error) {
	var e *dirsvc.Error
	if errors.As(err, &e) && e.Code == dirsvc.EMoved {
		loc := s.fhirBase(r) + "/" + r.PathValue("type") + "/" + fhir.ResourceID(e.Target)
		w.Header().Set("Location", loc)
		setAudience(w, audience(r))
		s.cacheFor(w, r)
		w.WriteHeader(http.StatusMovedPermanently)
		return
	}
	s.readError(w, r, err)
}

// negotiate checks that the caller accepts FHIR JSON: _format json (or a JSON media type), else an
// Accept header that is absent or holds */*, application/*, application/json or
// application/fhir+json (parameters allowed) with a non-zero weight. Anything else is 406.
func negotiate(r *http.Request) error {
	if fs, ok := r.URL.Query()["_format"]; ok {
		for _, f := range fs {
			if !fhir.JSONFormat(f) {
				return notAcceptable
			}
		}
		return nil
	}
	accept := r.Header.Values("Accept")
	if len(accept) == 0 {
		return nil
	}
	for _, h := range accept {
		for _, part := range strings.Split(h, ",") {
			if strings.TrimSpace(part) == "" {
				continue
			}
			mt, params, err := mime.ParseMediaType(part)
			if err != nil {
				continue
			}
			if q, ok := params["q"]; ok {
				if f, err := strconv.ParseFloat(q, 64); err != nil || f <= 0 {
					continue
				}
			}
			switch mt {
			case "*/*", "application/*", "application/json", "application/fhir+json":
				return nil
			}
		}
	}
	return notAcceptable
}

var notAcceptable = &dirsvc.Error{Code: fhir.ENotAcceptable, Message: "Only FHIR JSON is offered: accept application/fhir+json or application/json, or ask for _format=json."}

// writeFHIR writes a FHIR body with its entity tag (304 to a matching If-None-Match), the audience
// it was made for and, when it carries addresses, their attribution.
func (s *Server) writeFHIR(w http.ResponseWriter, r *http.Request, a dirsvc.Audience, body []byte, lastUpdated string, attribution string) {
	etag, f := s.composed(body)
	s.writeFHIRTagged(w, r, a, body, etag, f, lastUpdated, attribution)
}

// writeFHIRTagged is writeFHIR with the body's entity tag and forms (composed) given.
func (s *Server) writeFHIRTagged(w http.ResponseWriter, r *http.Request, a dirsvc.Audience, body []byte, etag string, f forms, lastUpdated string, attribution string) {
	h := w.Header()
	setAudience(w, a)
	if attribution != "" {
		setAttribution(h, attribution)
	}
	s.cacheFor(w, r)
	if date, ok := httpDate(lastUpdated); ok {
		h["Last-Modified"] = []string{date}
	}
	writeTaggedAs(w, r, body, etag, f, fhirContentType)
}

// httpDate writes an instant ("2026-11-23T16:25:18.012Z") as an HTTP date ("Mon, 23 Nov 2026
// 16:25:18 GMT", http.TimeFormat), by hand, as every read sends one; false for what is not an
// instant of years 0 to 9999.
func httpDate(instant string) (string, bool) {
	t, err := time.Parse(time.RFC3339Nano, instant)
	if err != nil {
		return "", false
	}
	t = t.UTC()
	year, month, day := t.Date()
	hour, minute, second := t.Clock()
	if year < 0 || year > 9999 {
		return "", false
	}
	two := func(b []byte, n int) []byte { return append(b, byte('0'+n/10), byte('0'+n%10)) }
	var a [len(http.TimeFormat)]byte
	b := append(a[:0], t.Weekday().String()[:3]...)
	b = two(append(b, ", "...), day)
	b = append(append(append(b, ' '), month.String()[:3]...), ' ')
	b = two(two(b, year/100), year%100)
	b = two(append(b, ' '), hour)
	b = two(append(b, ':'), minute)
	b = two(append(b, ':'), second)
	return string(append(b, " GMT"...)), true
}

// fhirReadParams are the parameters a read takes.
var fhirReadParams = map[string]bool{"_format": true, "_elements": true}

func (s *Server) handleFHIRRead(w http.ResponseWriter, r *http.Request) {
	if err := negotiate(r); err != nil {
		s.fhirError(w, r, err)
		return
	}
	q := r.URL.Query()
	for name := range q {
		if !fhirReadParams[name] {
			s.fhirError(w, r, dirsvc.InvalidParam(name, "%s is not a parameter of a read (it takes _format and _elements)", ClipName(name)))
			return
		}
	}
	viewer, err := s.viewer(r, dirsvc.ScopeGraphRead)
	if err != nil {
		s.fhirError(w, r, err)
		return
	}
	t := r.PathValue("type")
	var elements []string
	if _, ok := fhir.KindOf(t); ok && len(q["_elements"]) > 0 {
		sr, err := fhir.ParseSearch(t, url.Values{"_elements": q["_elements"]}, false)
		if err != nil {
			s.fhirError(w, r, err)
			return
		}
		elements = sr.Elements
	}
	fr, err := s.newFHIRReader(r, viewer)
	if err != nil {
		s.fhirError(w, r, err)
		return
	}
	e, err := fr.readEntry(r, t, r.PathValue("id"))
	if err != nil {
		s.fhirError(w, r, err)
		return
	}
	res := e.res
	attribution := ""
	if res.Search.Has("address") {
		attribution = fr.info.Attribution
	}
	if len(elements) > 0 {
		body, err := e.body()
		if err == nil {
			body, err = fhir.Subset(res, elements)
		}
		if err != nil {
			s.fhirError(w, r, err)
			return
		}
		s.cacheTags(w, r, dirTag(r, res.Source))
		s.writeFHIR(w, r, viewer.Audience, body, res.LastUpdated, attribution)
		return
	}
	// The whole resource: its entity tag is its hash, kept with it, and its JSON is decoded from
	// the cache into a pooled buffer, given back once written.
	buf := fhirReadBodies.Get().(*[]byte)
	defer func() {
		if cap(*buf) <= maxFHIRReadBody {
			fhirReadBodies.Put(buf)
		}
	}()
	body, err := e.appendBody((*buf)[:0])
	if err != nil {
		s.fhirError(w, r, err)
		return
	}
	*buf = body
	s.cacheTags(w, r, dirTag(r, res.Source))
	s.writeFHIRTagged(w, r, viewer.Audience, body, dirsvc.ETagOfSum(e.sum), s.bodies.forms(e.sum), res.LastUpdated, attribution)
}

// fhirReadBodies keeps the buffers the JSON of read resources is decoded into, up to
// maxFHIRReadBody bytes each (a HealthcareService is about 3 KB).
var fhirReadBodies = sync.Pool{New: func() any { b := make([]byte, 0, 8<<10); return &b }}

const maxFHIRReadBody = 64 << 10

// fhirReader makes the resources of one request: it reads records as the caller may (resolve), and
// remembers which records the caller may read, for the references of every resource it maps.
type fhirReader struct {
	s        *Server
	req      *http.Request
	ctx      context.Context
	dir      dirsvc.DirectoryReader
	info     *dirsvc.Directory
	viewer   dirsvc.Viewer
	mapper   fhir.Mapper
	mu       sync.Mutex // guards readable (made by the first setReadable) and err: a search maps a page's views in parallel
	readable map[string]bool
	// self is the record a read answers with (readEntry), which the caller may read.
	self string
	// leaders tells whether the caller receives organisations' leadership (leadershipOf).
	leaders bool
	// practitioners tells whether the caller may receive practitioners in bulk (5.4 rules 3, 4).
	practitioners bool
	// checked is the caller's viewer at the open directory's generation before the request read
	// anything: a cached resource checked at the same is used without checking its references.
	checked fhirChecked
	err     error
}

func (s *Server) newFHIRReader(r *http.Request, viewer dirsvc.Viewer) (*fhirReader, error) {
	dir, info, err := s.directory(r.Context(), r.PathValue("dir"))
	if err != nil {
		return nil, err
	}
	fr := &fhirReader{s: s, req: r, ctx: r.Context(), dir: dir, info: info, viewer: viewer,
		checked: fhirChecked{epoch: s.fhirResources.epoch(info.Slug, dir), gen: dir.Generation(), viewer: viewerKey(viewer)}}
	fr.mapper = fhir.Mapper{Country: info.Country, Canonical: fhir.Canonical(s.cfg.BaseURL), Readable: fr.canRead}
	t := tokenFrom(r.Context())
	fr.leaders = t != nil && t.HasScope(dirsvc.ScopeLeadershipRead) && t.Tier != dirsvc.Public && info.LeadershipOn()
	if t == nil {
		fr.practitioners = info.Settings.AnyoneMayListPractitioners
	} else {
		fr.practitioners = t.HasScope(dirsvc.ScopePractitionersRead)
	}
	return fr, nil
}

// canRead reports whether the caller may read the record id: a read of it would answer 200 (as
// known for the caller's state, fhirReadability, or read now). A failed read counts as not
// readable, and fails the request (fr.err).
func (fr *fhirReader) canRead(id string) bool {
	if id == fr.self && id != "" {
		return true
	}
	fr.mu.Lock()
	ok, seen := fr.readable[id]
	fr.mu.Unlock()
	if seen {
		return ok
	}
	if ok, known := fr.s.fhirReadable.get(fr.checked, id); known {
		fr.setReadable(id, ok)
		return ok
	}
	kind := dirsvc.KindOfID(id)
	failed := false
	if kind != "" && fr.viewer.Narrowing.AllowsKind(kind) {
		st, err := fr.dir.Record(fr.ctx, id, fr.viewer)
		switch {
		case errors.Is(err, dirsvc.ErrNotFound):
		case err != nil:
			fr.fail(err)
			failed = true
		default:
			ok = st.View != nil && st.Kind == kind
		}
	}
	if !failed {
		fr.s.fhirReadable.put(fr.checked, id, ok)
	}
	fr.setReadable(id, ok)
	return ok
}

// setReadable records whether the caller may read the record id.
func (fr *fhirReader) setReadable(id string, ok bool) {
	fr.mu.Lock()
	if fr.readable == nil {
		fr.readable = map[string]bool{}
	}
	fr.readable[id] = ok
	fr.mu.Unlock()
}

// fail keeps the first failed read of the request.
func (fr *fhirReader) fail(err error) {
	fr.mu.Lock()
	if fr.err == nil {
		fr.err = err
	}
	fr.mu.Unlock()
}

// failed returns the request's first failed read.
func (fr *fhirReader) failed() error {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	return fr.err
}

// read returns the resource of type t and id as the caller may read it, or the error a read
// answers (not found for an unknown type or a malformed id too).
func (fr *fhirReader) read(r *http.Request, t, id string) (*fhir.Resource, error) {
	e, err := fr.readEntry(r, t, id)
	if err != nil {
		return nil, err
	}
	if _, err := e.body(); err != nil {
		return nil, err
	}
	return e.res, nil
}

// readEntry is read giving the resource with the hash of its JSON, its body still packed when it
// comes from the cache.
func (fr *fhirReader) readEntry(r *http.Request, t, id string) (*fhirCacheEntry, error) {
	kind, ok := fhir.KindOf(t)
	if !ok {
		return nil, dirsvc.ErrNotFound
	}
	var publicID string
	n := 0
	if t == fhir.TypeEndpoint {
		if publicID, n, ok = fhir.ParseEndpointID(id); !ok {
			publicID = ""
		}
	} else {
		publicID = fhir.PublicID(kind, id)
	}
	if publicID == "" {
		// The same lookups as for a well-formed id, so that the answer takes as long.
		publicID = kind.IDPrefix() + "0"
	}
	rd, err := fr.s.resolveIn(r, fr.dir, fr.info, kind, publicID, fr.viewer, true)
	if err != nil {
		if t == fhir.TypeEndpoint && dirsvc.ErrorCode(err) == dirsvc.EMoved {
			return nil, dirsvc.Errorf(dirsvc.EGone, "The record was merged.")
		}
		return nil, err
	}
	if rd.status.View == nil || (t == fhir.TypeEndpoint && n == 0) || (t != fhir.TypeEndpoint && fhir.ResourceID(publicID) != id) {
		return nil, dirsvc.ErrNotFound
	}
	fr.self = publicID
	e, err := fr.mapped(kind, rd.status.View)
	if err != nil {
		return nil, err
	}
	if t == fhir.TypeEndpoint {
		eps, err := fr.endpoints(rd.status.View, nil)
		if err != nil {
			return nil, err
		}
		if n > len(eps) {
			return nil, dirsvc.ErrNotFound
		}
		return newFHIREntry(eps[n-1], "", fr.checked), nil
	}
	return e, nil
}

// resource maps a view the caller receives to its resource (for a service, the HealthcareService:
// see endpoints for its Endpoints), its JSON decoded.
func (fr *fhirReader) resource(kind dirsvc.Kind, p *dirsvc.Published) (*fhir.Resource, error) {
	e, err := fr.mapped(kind, p)
	if err != nil {
		return nil, err
	}
	if _, err := e.body(); err != nil {
		return nil, err
	}
	return e.res, nil
}

// mapped maps a view the caller receives to its resource, with the hash of its JSON. A resource
// mapped from the same view before is taken from the cache (its JSON still packed) when every
// record it refers to is readable, or not, for this caller as it was then.
func (fr *fhirReader) mapped(kind dirsvc.Kind, p *dirsvc.Published) (*fhirCacheEntry, error) {
	m, err := fr.prepare(kind, p)
	if err != nil {
		return nil, err
	}
	return fr.finish(kind, p, m)
}

// fhirMapping is a view on its way to its resource (prepare, then finish): the cache's entry of
// it, or the view decoded, and the records whose readability finish may ask about.
type fhirMapping struct {
	e    *fhirCacheEntry
	view any
	refs []string
}

// cacheable reports whether the resource of a view of kind is kept in the cache (not an
// organisation with the leadership the caller receives, which is not in its view).
func (fr *fhirReader) cacheable(kind dirsvc.Kind, p *dirsvc.Published) bool {
	return p.ETag != "" && !(kind == dirsvc.KindOrganisation && fr.leaders)
}

// prepare finds the cached resource of a view, or decodes the view, reading nothing of the
// directory: a page prepares its views, learns the readability of all their references at once
// (readAll), then finishes them.
func (fr *fhirReader) prepare(kind dirsvc.Kind, p *dirsvc.Published) (*fhirMapping, error) {
	m := &fhirMapping{}
	if fr.cacheable(kind, p) {
		if e := fr.s.fhirResources.get(fhirCacheKey{dir: fr.info.Slug, id: p.PublicID, etag: p.ETag}); e != nil {
			m.e = e
			if e.checked != fr.checked {
				for _, readable := range []string{"true", "false"} {
					e.refs.Each(readable, func(id string) bool {
						m.refs = append(m.refs, id)
						return true
					})
				}
			}
			return m, nil
		}
	}
	v, err := fr.mapper.DecodeView(kind, p.Body)
	if err != nil {
		return nil, err
	}
	m.view, m.refs = v, fhir.References(v)
	return m, nil
}

// finish gives the resource of a prepared view: the cached one when its references are as readable
// as they were, else the view mapped (and kept in the cache).
func (fr *fhirReader) finish(kind dirsvc.Kind, p *dirsvc.Published, m *fhirMapping) (*fhirCacheEntry, error) {
	key := fhirCacheKey{dir: fr.info.Slug, id: p.PublicID, etag: p.ETag}
	if e := m.e; e != nil {
		if e.checked == fr.checked {
			return e, nil
		}
		if fr.sameReadability(e.refs) {
			e.checked = fr.checked
			fr.s.fhirResources.put(key, e)
			return e, nil
		}
		if err := fr.failed(); err != nil {
			return nil, err
		}
		v, err := fr.mapper.DecodeView(kind, p.Body)
		if err != nil {
			return nil, err
		}
		m.view = v
	}
	asked := map[string][]string{} // the records asked about, by readability ("true", "false")
	mp := fr.mapper
	mp.Readable = func(id string) bool {
		ok := fr.canRead(id)
		asked[strconv.FormatBool(ok)] = append(asked[strconv.FormatBool(ok)], id)
		return ok
	}
	var res *fhir.Resource
	var err error
	if ov, ok := m.view.(*dirsvc.OrganisationView); ok && kind == dirsvc.KindOrganisation && fr.leaders {
		var leaders []dirsvc.LeaderView
		leaders, err = fr.s.currentLeaders(fr.req, &reading{dir: fr.dir, info: fr.info}, ov.PublicID)
		if err == nil {
			res, err = mp.Organization(ov, leaders)
		}
	} else {
		res, err = mp.Map(m.view)
	}
	if err == nil {
		err = fr.failed()
	}
	if err != nil {
		return nil, err
	}
	e := newFHIREntry(res, fhir.PackValues(asked), fr.checked)
	if fr.cacheable(kind, p) {
		fr.s.fhirResources.put(key, e)
	}
	return e, nil
}

// readAll learns at once whether the caller may read each record of ids whose readability is not
// known yet for its state (one read for all, where canRead reads one record).
func (fr *fhirReader) readAll(ids []string) error {
	var ask []string
	fr.mu.Lock()
	for _, id := range ids {
		if _, seen := fr.readable[id]; !seen && id != fr.self {
			ask = append(ask, id)
		}
	}
	fr.mu.Unlock()
	unknown := ask[:0]
	for _, id := range ask {
		if ok, known := fr.s.fhirReadable.get(fr.checked, id); known {
			fr.setReadable(id, ok)
		} else {
			unknown = append(unknown, id)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	unknown = slices.Compact(unknown)
	readable, err := fr.dir.Readable(fr.ctx, fr.viewer, unknown)
	if err != nil {
		return err
	}
	for _, id := range unknown {
		fr.s.fhirReadable.put(fr.checked, id, readable[id])
		fr.setReadable(id, readable[id])
	}
	return nil
}

// sameReadability reports whether each record of refs is readable, or not, for the caller as refs
// says.
func (fr *fhirReader) sameReadability(refs fhir.Values) bool {
	same := true
	for _, readable := range []bool{true, false} {
		refs.Each(strconv.FormatBool(readable), func(id string) bool {
			same = fr.canRead(id) == readable
			return same
		})
		if !same {
			return false
		}
	}
	return fr.failed() == nil
}

// endpoints returns the Endpoints of a service's view the caller receives (decoded already, view,
// or decoded from p).
func (fr *fhirReader) endpoints(p *dirsvc.Published, view any) ([]*fhir.Resource, error) {
	if view == nil {
		var err error
		if view, err = fr.mapper.DecodeView(dirsvc.KindService, p.Body); err != nil {
			return nil, err
		}
	}
	v, ok := view.(*dirsvc.ServiceView)
	if !ok {
		return nil, errors.New("endpoints of a view not a service's")
	}
	eps, err := fr.mapper.Endpoints(v)
	if err == nil {
		err = fr.failed()
	}
	return eps, err
}

func (s *Server) handleFHIRMetadata(w http.ResponseWriter, r *http.Request) {
	if err := negotiate(r); err != nil {
		s.fhirError(w, r, err)
		return
	}
	for name := range r.URL.Query() {
		if name != "_format" && name != "mode" {
			s.fhirError(w, r, dirsvc.InvalidParam(name, "%s is not a parameter of metadata", ClipName(name)))
			return
		}
	}
	_, info, err := s.directory(r.Context(), r.PathValue("dir"))
	if err != nil {
		s.fhirError(w, r, err)
		return
	}
	body, err := fhir.CapabilityStatement(fhir.Capability{Base: s.fhirBase(r), Canonical: fhir.Canonical(s.cfg.BaseURL),
		Name: info.Name, Country: info.Country, Published: fhirPublished, TokenURL: s.cfg.BaseURL + TokenPath})
	if err != nil {
		s.fhirError(w, r, err)
		return
	}
	s.writeFHIR(w, r, audience(r), body, "", "")
}

// fhirPublished is the date of the CapabilityStatement: when this server's FHIR interface last
// changed.
var fhirPublished = time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)

// handleFHIRDefinition serves the service's own conformance resources (the ownership extension's
// StructureDefinition and its CodeSystem) at their canonical URLs.
func (s *Server) handleFHIRDefinition(make func(canonical string) ([]byte, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := negotiate(r); err != nil {
			s.fhirError(w, r, err)
			return
		}
		body, err := make(fhir.Canonical(s.cfg.BaseURL))
		if err != nil {
			s.fhirError(w, r, err)
			return
		}
		s.writeFHIR(w, r, audience(r), body, "", "")
	}
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }
