package edge

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/fhir"
)

// A FHIR search walks candidate views in public-ID order from a source (the REST lists' own
// queries, the kind's views, a relation, an identifier or the ids asked for), maps each view the
// caller receives to its resource and keeps those that meet every criterion. A page examines at
// most fhirScanBudget candidates, so every request has a bounded cost whatever its filters; a page
// that spent its budget before it filled ends with a next link at the last candidate examined.
// The page token is the position of the last resource given, sealed with the query it belongs to
// (the directory, the caller's view, every result-shaping parameter): keyset paging, so resources
// written between pages are neither repeated nor skipped.

// fhirScanBudget returns how many candidates a page of count resources may examine.
func fhirScanBudget(count int) int { return max(8*(count+1), 400) }

// Limits of a search's extras.
const (
	maxFHIRIncluded = 1000  // included resources on one page
	maxFHIRTotal    = 10000 // candidates examined to count a total
)

// fhirSource is where a search's candidates come from: views in public-ID order after a position.
type fhirSource func(after string, limit int) (dirsvc.Page, error)

// fhirSearch is one search request.
type fhirSearch struct {
	*fhirReader
	typ    string
	kind   dirsvc.Kind
	search *fhir.Search
	source fhirSource
	// held are the cached resources of the candidates the source gave without their views' bodies
	// (hold), by public ID.
	held map[string]*fhirCacheEntry
}

// preferLenient reports whether the request asks to have unknown parameters ignored.
func preferLenient(r *http.Request) bool {
	for _, v := range r.Header.Values("Prefer") {
		for _, p := range strings.Split(v, ",") {
			if strings.EqualFold(strings.ReplaceAll(strings.TrimSpace(p), " ", ""), "handling=lenient") {
				return true
			}
		}
	}
	return false
}

func (s *Server) handleFHIRSearch(w http.ResponseWriter, r *http.Request) {
	if err := negotiate(r); err != nil {
		s.fhirError(w, r, err)
		return
	}
	t := r.PathValue("type")
	kind, ok := fhir.KindOf(t)
	if !ok {
		s.fhirError(w, r, dirsvc.ErrNotFound)
		return
	}
	search, err := fhir.ParseSearch(t, r.URL.Query(), preferLenient(r))
	if err != nil {
		s.fhirError(w, r, err)
		return
	}
	viewer, err := s.viewer(r, dirsvc.ScopeGraphRead)
	if err != nil {
		s.fhirError(w, r, err)
		return
	}
	fr, err := s.newFHIRReader(r, viewer)
	if err != nil {
		s.fhirError(w, r, err)
		return
	}
	// Practitioners in bulk (5.4 rules 3 and 4): a search of them needs practitioners:read, or,
	// without a client, a directory that lets anyone list them.
	if t == fhir.TypePractitioner && !fr.practitioners {
		s.fhirError(w, r, dirsvc.Errorf(dirsvc.EForbiddenScope, "Searching practitioners needs the scope %s.", dirsvc.ScopePractitionersRead))
		return
	}
	key := queryKey(r.PathValue("dir"), viewerKey(viewer), "fhir", search.Key, strconv.FormatBool(fr.practitioners), strconv.FormatBool(fr.leaders))
	after := ""
	if search.Page != "" {
		var ok bool
		if after, ok = s.cursors.open(search.Page, key); !ok {
			s.fhirError(w, r, dirsvc.InvalidParam("_page", "_page is not a page token this server gave for this search"))
			return
		}
	}
	fs := &fhirSearch{fhirReader: fr, typ: t, kind: kind, search: search}
	ahead := search.Page != "" && fs.aheadable()
	if ahead {
		if p := s.fhirAhead.take(r.Context(), aheadKey(key, after, r.URL.Query()), fr.checked); p != nil {
			// The page after is begun before this one is written, so it is under way (and kept)
			// by the time the client has this one.
			if p.next != nil {
				s.fetchAhead(r, viewer, t, kind, key, p.after, p.next)
			}
			s.cacheTags(w, r, dirTag(r, "fhir"))
			s.writeFHIRTagged(w, r, viewer.Audience, p.body, p.etag, p.f, "", p.attribution)
			fhirPages.put(p.buf)
			return
		}
	}
	b, body, err := fs.run(r, after, key)
	if err != nil {
		s.fhirError(w, r, err)
		return
	}
	attribution := ""
	if b.addresses {
		attribution = fr.info.Attribution
	}
	if ahead && b.next != nil {
		s.fetchAhead(r, viewer, t, kind, key, b.after, b.next)
	}
	s.cacheTags(w, r, dirTag(r, "fhir"))
	s.writeFHIRTagged(w, r, viewer.Audience, body, b.etag, b.f, "", attribution)
	fhirPages.put(b.buf)
}

// run runs the search from the position after and returns its page (with the Bundle's entity tag
// and forms) and the page's Bundle as JSON.
func (fs *fhirSearch) run(r *http.Request, after, key string) (*searchPage, []byte, error) {
	fs.source = fs.sourceOf()
	b, err := fs.bundle(r, after, key)
	if b != nil && b.bodies != nil {
		defer fhirBodyBuffers.put(b.bodies)
	}
	if err != nil {
		return nil, nil, err
	}
	if b.etag, b.f, err = fs.s.composedBundle(b.bundle, b.sums); err != nil {
		return nil, nil, err
	}
	b.buf = fhirPages.get(fhir.BundleSize(b.bundle))
	body, err := fhir.AppendBundle(*b.buf, b.bundle)
	if err != nil {
		return nil, nil, err
	}
	*b.buf = body
	return b, body, nil
}

// fhirBodyBuffers keeps the buffers a page's resources are decoded into from the cache before the
// Bundle is written, and fhirPages those Bundles are written in, given back once the answer is
// written (about 330 KB each for 100 HealthcareService resources).
var fhirBodyBuffers, fhirPages bufferPool

// composedBundle returns the entity tag of a searchset Bundle and where its coded forms are kept:
// the SHA-256 of the Bundle written with each entry's resource in place of the SHA-256 of its
// JSON (sums[i] when given, the hash kept with a cached resource), under a label of its own. Each
// resource's hash has a fixed length, so that text tells the Bundle's bytes apart as the Bundle
// itself would, and a page of cached resources is not hashed whole again.
func (s *Server) composedBundle(b *fhir.Bundle, sums []*[sha256.Size]byte) (etag string, f forms, err error) {
	skeleton := *b
	skeleton.Entry = make([]fhir.Entry, len(b.Entry))
	hashes := make([]byte, 0, sha256.Size*len(b.Entry))
	for i, e := range b.Entry {
		if i < len(sums) && sums[i] != nil {
			hashes = append(hashes, sums[i][:]...)
		} else {
			sum := sha256.Sum256(e.Resource)
			hashes = append(hashes, sum[:]...)
		}
		skeleton.Entry[i] = e
		skeleton.Entry[i].Resource = hashes[len(hashes)-sha256.Size:]
	}
	text, err := fhir.WriteBundle(&skeleton)
	if err != nil {
		return "", nil, err
	}
	h := sha256.New()
	h.Write([]byte("FHIR searchset Bundle, resources by their SHA-256\x00"))
	h.Write(text)
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return dirsvc.ETagOfSum(sum), s.bodies.forms(sum), nil
}

// sourceOf chooses the candidates of the search: the ids asked for, the records carrying an
// identifier, the records related to a reference, or a walk of the kind (the REST service list,
// with the filters it takes, for services; the practitioner list for practitioners).
func (fs *fhirSearch) sourceOf() fhirSource {
	v, kind := fs.viewer, fs.kind
	if ids, ok := fs.search.Values("_id"); ok {
		var pub []string
		for _, id := range ids {
			if p := fs.publicIDOf(id); p != "" {
				pub = append(pub, p)
			}
		}
		return fs.listed(pub)
	}
	if vals, ok := fs.search.Values("identifier"); ok && fs.typ != fhir.TypeEndpoint {
		if ids, ok := fs.identified(vals); ok {
			return fs.listed(ids)
		}
	}
	// The relations the directory keeps (records' reference columns): a role's practitioner and
	// service, a location's organisation, a service's location. Others are checked on the walk.
	for _, rel := range []struct {
		kind  dirsvc.Kind
		param string
		ref   dirsvc.Kind
	}{
		{dirsvc.KindRole, "practitioner", dirsvc.KindPractitioner}, {dirsvc.KindRole, "service", dirsvc.KindService},
		{dirsvc.KindLocation, "organization", dirsvc.KindOrganisation}, {dirsvc.KindService, "location", dirsvc.KindLocation},
	} {
		if vals, ok := fs.search.Values(rel.param); ok && kind == rel.kind && fs.typ != fhir.TypeEndpoint {
			return fs.related(rel.ref, vals)
		}
	}
	if fs.typ == fhir.TypeEndpoint {
		if vals, ok := fs.search.Values("service"); ok {
			var pub []string
			for _, ref := range vals {
				if p := fhir.PublicID(dirsvc.KindService, strings.TrimPrefix(ref, fhir.TypeHealthcareService+"/")); p != "" {
					pub = append(pub, p)
				}
			}
			return fs.listed(pub)
		}
	}
	switch kind {
	case dirsvc.KindService:
		q := fs.serviceQuery()
		if fs.typ == fhir.TypeHealthcareService {
			q.Held = fs.hold
		}
		return func(after string, limit int) (dirsvc.Page, error) {
			q.After, q.Limit = after, limit
			fs.held = map[string]*fhirCacheEntry{}
			return fs.dir.Services(fs.ctx, v, q)
		}
	case dirsvc.KindPractitioner:
		return func(after string, limit int) (dirsvc.Page, error) {
			if !v.Narrowing.AllowsKind(kind) {
				return dirsvc.Page{}, nil
			}
			return fs.dir.Practitioners(fs.ctx, v, after, limit)
		}
	}
	return func(after string, limit int) (dirsvc.Page, error) {
		return fs.dir.Records(fs.ctx, v, kind, after, limit)
	}
}

// hold reports whether the cache holds the resource of the view id at etag as checked for the
// caller's state (see fhirCache), and keeps it for the walk, which then has no need of the view's
// body. It reads nothing of the directory: the service list asks it while reading.
func (fs *fhirSearch) hold(id, etag string) bool {
	if etag == "" {
		return false
	}
	e := fs.s.fhirResources.get(fhirCacheKey{dir: fs.info.Slug, id: id, etag: etag})
	if e == nil || e.checked != fs.checked {
		return false
	}
	fs.held[id] = e
	return true
}

// publicIDOf returns the public ID of the record a resource id of the search's type stands for.
func (fs *fhirSearch) publicIDOf(id string) string {
	if fs.typ == fhir.TypeEndpoint {
		svc, _, ok := fhir.ParseEndpointID(id)
		if !ok {
			return ""
		}
		return svc
	}
	return fhir.PublicID(fs.kind, id)
}

// serviceQuery returns the filters of the REST service list that the search's criteria imply: the
// service types, organisations and the area of a postcode or state. The list finds a superset of
// what the criteria match (an area finds services whose catchment reaches it too); the criteria are
// checked on every resource.
func (fs *fhirSearch) serviceQuery() dirsvc.ServiceQuery {
	var q dirsvc.ServiceQuery
	if fs.typ != fhir.TypeHealthcareService {
		return q
	}
	if vals, ok := fs.search.Values("service-type"); ok {
		system := fs.mapper.Canonical + fhir.ServiceTypePath
		for _, v := range vals {
			sys, code, hasSystem := strings.Cut(v, "|")
			if !hasSystem {
				code = sys
			} else if sys != system {
				// Another system's code matches nothing; one impossible type keeps the walk short.
				code = "-"
			}
			if !dirsvc.ValidCode(code) {
				q.Types = nil
				break
			}
			q.Types = append(q.Types, code)
		}
	}
	if vals, ok := fs.search.Values("organization"); ok {
		for _, ref := range vals {
			if p := fhir.PublicID(dirsvc.KindOrganisation, strings.TrimPrefix(ref, fhir.TypeOrganization+"/")); p != "" {
				q.Organisations = append(q.Organisations, p)
			} else {
				q.Organisations = []string{"org_-"}
				break
			}
		}
	}
	areas := func(param, prefix string, full func(string) bool) bool {
		vals, ok := fs.search.Values(param)
		if !ok {
			return false
		}
		var out []string
		for _, v := range vals {
			if !full(v) {
				return false
			}
			out = append(out, prefix+strings.ToLower(v))
		}
		q.Areas = out
		return true
	}
	if !areas("address-postalcode", "postcode:", isPostcode) {
		areas("address-state", "state:", func(v string) bool {
			return len(v) >= 2 && len(v) <= 5 && dirsvc.ValidArea("state:"+strings.ToLower(v))
		})
	}
	return q
}

func isPostcode(v string) bool {
	if len(v) != 4 {
		return false
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// listed is the source of the records named (for the _id of an Endpoint, its service), read one by
// one as the caller may read them, in public-ID order.
func (fs *fhirSearch) listed(ids []string) fhirSource {
	slices.Sort(ids)
	ids = slices.Compact(ids)
	return func(after string, limit int) (dirsvc.Page, error) {
		var page dirsvc.Page
		for _, id := range ids {
			if id <= after || dirsvc.KindOfID(id) != fs.kind {
				continue
			}
			if len(page.Items) == limit {
				page.More = true
				break
			}
			if !fs.canRead(id) {
				if err := fs.failed(); err != nil {
					return page, err
				}
				continue
			}
			st, err := fs.dir.Record(fs.ctx, id, fs.viewer)
			if err != nil {
				return page, err
			}
			if st.View != nil {
				page.Items = append(page.Items, *st.View)
			}
		}
		return page, nil
	}
}

// identified returns the records of the search's kind that carry one of the identifiers (each
// system|value, as the identifier search of the REST API finds them); false when a value has no
// system, which the walk checks instead.
func (fs *fhirSearch) identified(vals []string) ([]string, bool) {
	var out []string
	for _, v := range vals {
		system, value, ok := strings.Cut(v, "|")
		if !ok || system == "" || value == "" {
			return nil, false
		}
		ids, err := fs.dir.Identified(fs.ctx, fs.viewer, system, value)
		if err != nil {
			fs.fail(err)
			return nil, true
		}
		for _, id := range ids {
			if dirsvc.KindOfID(id) == fs.kind {
				out = append(out, id)
			}
		}
	}
	return out, true
}

// related is the source of the records of the search's kind that refer to one of the references
// (Type/id), as the caller sees them.
func (fs *fhirSearch) related(ref dirsvc.Kind, vals []string) fhirSource {
	var all []dirsvc.Published
	loaded := false
	return func(after string, limit int) (dirsvc.Page, error) {
		if !loaded {
			loaded = true
			for _, v := range vals {
				_, id, _ := strings.Cut(v, "/")
				p := fhir.PublicID(ref, id)
				if p == "" || !fs.canRead(p) {
					continue
				}
				rel, err := fs.dir.Related(fs.ctx, fs.viewer, fs.kind, ref, p)
				if err != nil {
					return dirsvc.Page{}, err
				}
				all = append(all, rel...)
			}
			if err := fs.failed(); err != nil {
				return dirsvc.Page{}, err
			}
			slices.SortFunc(all, func(a, b dirsvc.Published) int { return strings.Compare(a.PublicID, b.PublicID) })
			all = slices.CompactFunc(all, func(a, b dirsvc.Published) bool { return a.PublicID == b.PublicID })
		}
		var page dirsvc.Page
		for _, p := range all {
			if p.PublicID <= after {
				continue
			}
			if len(page.Items) == limit {
				page.More = true
				break
			}
			page.Items = append(page.Items, p)
		}
		return page, nil
	}
}

// candidate is a resource found by the walk, with the hash of its JSON when known (e, whose body may
// still be packed), and its position (the public ID of its record, and for an Endpoint its number:
// svc_x#2).
type candidate struct {
	res *fhir.Resource
	e   *fhirCacheEntry
	pos string
}

// resources maps one candidate view to the resources it gives: one, or a service's Endpoints. m
// is the view prepared (mapAll), or nil.
func (fs *fhirSearch) resources(p *dirsvc.Published, m *fhirMapping) ([]candidate, error) {
	if fs.typ == fhir.TypeEndpoint {
		var view any
		if m != nil {
			view = m.view
		}
		eps, err := fs.endpoints(p, view)
		if err != nil {
			return nil, err
		}
		out := make([]candidate, len(eps))
		for i, e := range eps {
			out[i] = candidate{res: e, pos: p.PublicID + "#" + strconv.Itoa(i+1)}
		}
		return out, nil
	}
	if p.Body == nil {
		// Given without its body: held, or gone since the source's page was read.
		e := fs.held[p.PublicID]
		if e == nil {
			return nil, nil
		}
		fs.setReadable(p.PublicID, true)
		return []candidate{{res: e.res, e: e, pos: p.PublicID}}, nil
	}
	fs.setReadable(p.PublicID, true)
	var e *fhirCacheEntry
	var err error
	if m != nil {
		e, err = fs.finish(fs.kind, p, m)
	} else {
		e, err = fs.mapped(fs.kind, p)
	}
	if err != nil {
		return nil, err
	}
	return []candidate{{res: e.res, e: e, pos: p.PublicID}}, nil
}

// mapAll maps a page of views: it prepares each (decoded, or found in the cache), learns the
// readability of every record they refer to at once, then maps them, each step on as many
// goroutines as there are CPUs (up to 4).
func (fs *fhirSearch) mapAll(items []dirsvc.Published) ([][]candidate, error) {
	prepared := make([]*fhirMapping, len(items))
	err := forEach(len(items), func(i int) error {
		if items[i].Body == nil {
			return nil
		}
		if fs.typ == fhir.TypeEndpoint { // not cached: the service's view is mapped
			v, err := fs.mapper.DecodeView(fs.kind, items[i].Body)
			prepared[i] = &fhirMapping{view: v, refs: fhir.References(v)}
			return err
		}
		var err error
		prepared[i], err = fs.prepare(fs.kind, &items[i])
		return err
	})
	if err != nil {
		return nil, err
	}
	var refs []string
	for _, m := range prepared {
		if m != nil {
			refs = append(refs, m.refs...)
		}
	}
	if err := fs.readAll(refs); err != nil {
		return nil, err
	}
	out := make([][]candidate, len(items))
	err = forEach(len(items), func(i int) error {
		var err error
		out[i], err = fs.resources(&items[i], prepared[i])
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// forEach calls f for 0 to n-1, on as many goroutines as there are CPUs (up to 4), each yielding the
// CPU every yieldViews calls as a record page does; it returns the first error, after which no
// further call begins on that goroutine.
func forEach(n int, f func(i int) error) error {
	workers := min(runtime.GOMAXPROCS(0), 4, n)
	if workers <= 1 {
		for i := range n {
			if err := f(i); err != nil {
				return err
			}
			if (i+1)%yieldViews == 0 {
				runtime.Gosched()
			}
		}
		return nil
	}
	var next atomic.Int64
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for calls := 1; ; calls++ {
				i := int(next.Add(1) - 1)
				if i >= n || errs[w] != nil {
					return
				}
				errs[w] = f(i)
				if calls%yieldViews == 0 {
					runtime.Gosched()
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// walk returns up to want matching resources after the position after, examining at most budget
// candidates; done reports that the source has no candidate after the last one returned (or
// examined, when none matched past it), and last is the position of the last candidate examined.
func (fs *fhirSearch) walk(after string, want, budget int) (found []candidate, last string, done bool, err error) {
	last = after
	// An Endpoint position inside a service: the rest of that service's Endpoints first.
	if svc, n, ok := strings.Cut(after, "#"); ok {
		after = svc
		skip, _ := strconv.Atoi(n)
		st, err := fs.dir.Record(fs.ctx, svc, fs.viewer)
		if err == nil && st.View != nil && st.Kind == dirsvc.KindService {
			cs, err := fs.resources(st.View, nil)
			if err != nil {
				return nil, last, false, err
			}
			for _, c := range cs[min(skip, len(cs)):] {
				last = c.pos
				if fs.search.Matches(c.res) {
					found = append(found, c)
				}
			}
		} else if err != nil && dirsvc.ErrorCode(err) != dirsvc.ENotFound {
			return nil, last, false, err
		}
	}
	examined := 0
	for len(found) < want && examined < budget {
		batch := min(budget-examined, max(want-len(found), 20), 500)
		page, err := fs.source(after, batch)
		if err != nil {
			return nil, last, false, err
		}
		if len(page.Items) == 0 && page.More {
			// A next link from here would name the page itself, which a client would follow
			// forever: every source gives a candidate whenever it has more.
			return nil, last, false, errors.New("a FHIR search source gave no candidate but said it had more")
		}
		mapped, err := fs.mapAll(page.Items)
		if err != nil {
			return nil, last, false, err
		}
		for i := range page.Items {
			p := &page.Items[i]
			examined++
			after = p.PublicID
			cs := mapped[i]
			for _, c := range cs {
				last = c.pos
				if fs.search.Matches(c.res) {
					found = append(found, c)
					if len(found) == want {
						return found, last, false, nil
					}
				}
			}
			if len(cs) == 0 {
				last = p.PublicID
			}
		}
		if !page.More {
			return found, last, true, nil
		}
	}
	return found, last, false, nil
}

// searchPage is a search's answer, whether it carries addresses, and the query and position of its
// next link (nil and empty when it has none).
type searchPage struct {
	bundle    *fhir.Bundle
	addresses bool
	next      url.Values
	after     string
	// sums are the hashes of the entries' resources, where known (composedBundle); bodies holds the
	// JSON of the cached ones, until the Bundle is written.
	sums   []*[sha256.Size]byte
	bodies *[]byte
	// etag and f are the Bundle's entity tag and coded forms, and buf the pooled buffer it is
	// written in (fhirPages), once written (run).
	etag string
	f    forms
	buf  *[]byte
}

// bundle runs the search from the position after and returns its searchset Bundle.
func (fs *fhirSearch) bundle(r *http.Request, after, key string) (*searchPage, error) {
	sr := fs.search
	base := fs.s.fhirBase(r)
	out := &searchPage{bundle: &fhir.Bundle{ResourceType: "Bundle", Type: "searchset"}}
	b := out.bundle
	b.Link = []fhir.Link{{Relation: "self", URL: base + "/" + fs.typ + selfQuery(r.URL.Query())}}
	var warnings []string
	for _, p := range sr.Ignored {
		warnings = append(warnings, "The parameter "+p+" is not supported and was ignored.")
	}
	if sr.Total || sr.SummaryOnly {
		found, _, done, err := fs.walk("", maxFHIRTotal+1, maxFHIRTotal)
		if err != nil {
			return nil, err
		}
		if done && len(found) <= maxFHIRTotal {
			n := len(found)
			b.Total = &n
		} else {
			warnings = append(warnings, "The total is left out: more than "+strconv.Itoa(maxFHIRTotal)+" resources would have to be counted. Narrow the search to have it counted.")
		}
	}
	if !sr.SummaryOnly && sr.Count > 0 {
		found, last, done, err := fs.walk(after, sr.Count+1, fhirScanBudget(sr.Count))
		if err != nil {
			return nil, err
		}
		next := ""
		switch {
		case len(found) > sr.Count:
			found = found[:sr.Count]
			next = found[len(found)-1].pos
		case !done:
			next = last
		}
		if next != "" {
			q := r.URL.Query()
			q.Del("_page")
			q.Set("_page", fs.s.cursors.seal(next, key))
			out.next, out.after = q, next
			b.Link = append(b.Link, fhir.Link{Relation: "next", URL: base + "/" + fs.typ + "?" + encodeQuery(q)})
		}
		included := map[string]bool{}
		if err := out.addMatches(found, sr.Elements, base); err != nil {
			return nil, err
		}
		for _, c := range found {
			included[c.res.Type+"/"+c.res.ID] = true
		}
		incs, warn, err := fs.includes(found, included)
		if err != nil {
			return nil, err
		}
		warnings = append(warnings, warn...)
		for _, res := range incs {
			out.addresses = out.addresses || res.Search.Has("address")
			b.Entry = append(b.Entry, fhir.Entry{FullURL: base + "/" + res.Type + "/" + res.ID, Resource: res.Body,
				Search: &fhir.EntrySearch{Mode: "include"}})
		}
	}
	if len(warnings) > 0 {
		oo := &fhir.OperationOutcome{ResourceType: "OperationOutcome"}
		for _, w := range warnings {
			oo.Issue = append(oo.Issue, fhir.Issue{Severity: "warning", Code: "informational", Diagnostics: w})
		}
		body, err := jsonMarshal(oo)
		if err != nil {
			return nil, err
		}
		b.Entry = append(b.Entry, fhir.Entry{Resource: body, Search: &fhir.EntrySearch{Mode: "outcome"}})
	}
	return out, nil
}

// addMatches adds the page's matches as entries. A whole resource from the cache is decoded into the
// page's buffer of bodies, its hash kept for the Bundle's entity tag.
func (out *searchPage) addMatches(found []candidate, elements []string, base string) error {
	size := 0
	for _, c := range found {
		if c.e != nil && len(elements) == 0 {
			size += c.e.bodyLen()
		}
	}
	if size > 0 {
		out.bodies = fhirBodyBuffers.get(size)
	}
	b := out.bundle
	for _, c := range found {
		var body json.RawMessage
		var sum *[sha256.Size]byte
		switch {
		case c.e != nil && len(elements) == 0:
			start := len(*out.bodies)
			buf, err := c.e.appendBody(*out.bodies)
			if err != nil {
				return err
			}
			*out.bodies, body, sum = buf, buf[start:len(buf):len(buf)], &c.e.sum
		case c.e != nil:
			if _, err := c.e.body(); err != nil {
				return err
			}
			fallthrough
		default:
			var err error
			if body, err = fhir.Subset(c.res, elements); err != nil {
				return err
			}
		}
		out.addresses = out.addresses || c.res.Search.Has("address")
		b.Entry = append(b.Entry, fhir.Entry{FullURL: base + "/" + c.res.Type + "/" + c.res.ID, Resource: body,
			Search: &fhir.EntrySearch{Mode: "match"}})
		out.sums = append(out.sums, sum)
	}
	return nil
}

// includes returns the resources _include and _revinclude add to a page's matches, each once and
// none already on the page, as the caller may read them. Practitioners are included only for a
// caller who may receive them in bulk (5.4 rule 3).
func (fs *fhirSearch) includes(found []candidate, seen map[string]bool) ([]*fhir.Resource, []string, error) {
	var out []*fhir.Resource
	var warnings []string
	full := false
	add := func(res *fhir.Resource) {
		key := res.Type + "/" + res.ID
		if seen[key] {
			return
		}
		if len(out) == maxFHIRIncluded {
			full = true
			return
		}
		seen[key] = true
		out = append(out, res)
	}
	leftPractitioners, manyServices := false, false
	for _, inc := range fs.search.Include {
		_, param, _ := strings.Cut(inc, ":")
		for _, c := range found {
			for _, ref := range c.res.Refs.Get(param) {
				if seen[ref] {
					continue
				}
				t, id, _ := strings.Cut(ref, "/")
				if t == fhir.TypePractitioner && !fs.practitioners {
					leftPractitioners = true
					continue
				}
				res, err := fs.read(fs.req, t, id)
				if dirsvc.ErrorCode(err) == dirsvc.ENotFound || dirsvc.ErrorCode(err) == dirsvc.EGone {
					continue
				} else if err != nil {
					return nil, nil, err
				}
				add(res)
			}
		}
	}
	for _, rev := range fs.search.RevInclude {
		srcType, param, _ := strings.Cut(rev, ":")
		srcKind, _ := fhir.KindOf(srcType)
		for _, c := range found {
			target := c.res.Type + "/" + c.res.ID
			if srcType == fhir.TypeHealthcareService && param == "endpoint" {
				res, err := fs.read(fs.req, fhir.TypeHealthcareService, fhir.ResourceID(c.res.Source))
				if err == nil {
					add(res)
				} else if dirsvc.ErrorCode(err) != dirsvc.ENotFound {
					return nil, nil, err
				}
				continue
			}
			if !fs.viewer.Narrowing.AllowsKind(srcKind) {
				continue
			}
			var rel []dirsvc.Published
			var err error
			if srcKind == dirsvc.KindRole && (fs.kind == dirsvc.KindOrganisation || fs.kind == dirsvc.KindLocation) {
				var capped bool
				rel, capped, err = fs.rolesAt(c.res.Source)
				manyServices = manyServices || capped
			} else {
				rel, err = fs.dir.Related(fs.ctx, fs.viewer, srcKind, fs.kind, c.res.Source)
			}
			if err != nil {
				return nil, nil, err
			}
			for i := range rel {
				fs.setReadable(rel[i].PublicID, true)
				res, err := fs.resource(srcKind, &rel[i])
				if err != nil {
					return nil, nil, err
				}
				if res.Refs.Contains(param, target) {
					add(res)
				}
			}
		}
	}
	if leftPractitioners {
		warnings = append(warnings, "Practitioners are left out of _include: receiving them in bulk needs the scope "+dirsvc.ScopePractitionersRead+".")
	}
	if manyServices {
		warnings = append(warnings, "PractitionerRole is included from the first "+strconv.Itoa(maxRoleServices)+
			" services of each organisation or location: search PractitionerRole by service to have every role.")
	}
	if full {
		warnings = append(warnings, "Included resources are limited to "+strconv.Itoa(maxFHIRIncluded)+" a page: ask for a smaller _count to have them all.")
	}
	return out, warnings, nil
}

// maxRoleServices bounds the services of one organisation or location whose roles a
// _revinclude of PractitionerRole reads.
const maxRoleServices = 200

// rolesAt returns the roles at the services of an organisation or location (id) as the caller sees
// them: a role refers to its service only, and its organisation and location are its service's.
// The services are found as the caller sees them but for a narrowing to record kinds (a role lies
// where its service does, whatever kinds the caller reads), at most maxRoleServices of them; capped
// reports that there were more.
func (fs *fhirSearch) rolesAt(id string) (out []dirsvc.Published, capped bool, err error) {
	through := fs.viewer
	through.Narrowing.Kinds = nil
	services, err := fs.dir.Related(fs.ctx, through, dirsvc.KindService, dirsvc.KindOfID(id), id)
	if err != nil {
		return nil, false, err
	}
	capped = len(services) > maxRoleServices
	for _, sv := range services[:min(len(services), maxRoleServices)] {
		roles, err := fs.dir.Related(fs.ctx, fs.viewer, dirsvc.KindRole, dirsvc.KindService, sv.PublicID)
		if err != nil {
			return nil, false, err
		}
		out = append(out, roles...)
	}
	return out, capped, nil
}

// selfQuery returns the query of a self link: the request's parameters in a fixed order.
func selfQuery(q url.Values) string {
	if len(q) == 0 {
		return ""
	}
	return "?" + encodeQuery(q)
}

// encodeQuery encodes parameters sorted by name, keeping the characters FHIR values use (| , :)
// readable.
func encodeQuery(q url.Values) string {
	s := q.Encode()
	return strings.NewReplacer("%7C", "|", "%2C", ",", "%3A", ":", "%2F", "/").Replace(s)
}
