package edge

import (
	"context"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/fhir"
)

// A client paging a FHIR search asks for one page, reads it, then asks for the next: while it reads,
// the server makes the next page (fetchAhead), on a slot of the node's expensive bound, so that the
// client's next request finds it ready, composed and coded as it will ask for it. A page is made
// ahead only for a client already paging (a request carrying a page token) and only for searches
// whose pages depend on nothing but the caller's viewer and the directory's state: no _include or
// _revinclude (their reads go through the request), no Organization with leadership. The page made
// ahead is kept under the request it answers, exactly (the search, the position, the caller's viewer
// and switches, the query as the next link gives it), and with the open directory, its generation
// and the viewer it was made at (fhirChecked, taken before the page read anything): it answers only
// a request that finds the same, so it says nothing a page made now would not, and a directory
// changed meanwhile has it made again. Each is taken once; at most maxFHIRAhead are kept or in the
// making, each for at most fhirAheadTTL.

const (
	maxFHIRAhead = 16
	fhirAheadTTL = 30 * time.Second
)

// fhirAhead keeps the pages made ahead, by the request they answer (aheadKey).
type fhirAhead struct {
	mu    sync.Mutex
	pages map[string]*aheadPage
	// taken counts the requests answered with a page made ahead.
	taken atomic.Int64
}

// aheadPage is a page made ahead; done is closed when it is made (body set) or has failed (body nil).
type aheadPage struct {
	done    chan struct{}
	started time.Time
	checked fhirChecked
	body    []byte
	// buf is the pooled buffer body is in (fhirPages), given back by the request that takes it.
	buf  *[]byte
	etag string
	f    forms
	// attribution is the directory's attribution when the page carries addresses.
	attribution string
	// next is the query of the page's next link and after its position; nil when it has none.
	next  url.Values
	after string
}

func newFHIRAhead() *fhirAhead { return &fhirAhead{pages: map[string]*aheadPage{}} }

// aheadKey is the key of the page of a search (key, its query key) from the position after, asked
// for with the query q.
func aheadKey(key, after string, q url.Values) string {
	return key + "\x00" + after + "\x00" + selfQuery(q)
}

// start returns a new page in the making under k, or nil when one is kept under k already or the
// bound is reached.
func (a *fhirAhead) start(k string, now time.Time) *aheadPage {
	a.mu.Lock()
	defer a.mu.Unlock()
	for key, p := range a.pages {
		if now.Sub(p.started) > fhirAheadTTL {
			delete(a.pages, key)
		}
	}
	if _, ok := a.pages[k]; ok || len(a.pages) >= maxFHIRAhead {
		return nil
	}
	p := &aheadPage{done: make(chan struct{}), started: now}
	a.pages[k] = p
	return p
}

// drop forgets the page under k if it is p.
func (a *fhirAhead) drop(k string, p *aheadPage) {
	a.mu.Lock()
	if a.pages[k] == p {
		delete(a.pages, k)
	}
	a.mu.Unlock()
}

// take returns the page made ahead under k for a request checked at checked, waiting for one in the
// making (until ctx ends); nil when there is none, it failed, or it was made at another state. A
// page is taken once.
func (a *fhirAhead) take(ctx context.Context, k string, checked fhirChecked) *aheadPage {
	a.mu.Lock()
	p := a.pages[k]
	delete(a.pages, k)
	a.mu.Unlock()
	if p == nil {
		return nil
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		return nil
	}
	if p.body == nil || p.checked != checked {
		return nil
	}
	a.taken.Add(1)
	return p
}

// aheadable reports whether the pages of a search may be made ahead (see fhirAhead).
func (fs *fhirSearch) aheadable() bool {
	return len(fs.search.Include) == 0 && len(fs.search.RevInclude) == 0 && !(fs.kind == dirsvc.KindOrganisation && fs.leaders)
}

// fetchAhead makes, on a slot of the expensive bound if one is free, the page of the search at
// the position after that the query next asks for, as the request r's caller (viewer) would have
// it, and keeps it for the request that follows the next link.
func (s *Server) fetchAhead(r *http.Request, viewer dirsvc.Viewer, typ string, kind dirsvc.Kind, key, after string, next url.Values) {
	select {
	case s.admit.expensive <- struct{}{}:
	default:
		return
	}
	k := aheadKey(key, after, next)
	p := s.fhirAhead.start(k, s.cfg.Now())
	if p == nil {
		<-s.admit.expensive
		return
	}
	// The request as the next link makes it: its path values and the caller's token (context
	// values) stay, its end does not.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), s.admit.cfg.ExpensiveBudget)
	nr := r.WithContext(ctx)
	u := *r.URL
	u.RawQuery = encodeQuery(next)
	nr.URL = &u
	nr.Header = r.Header.Clone()
	go func() {
		defer func() { <-s.admit.expensive }()
		defer cancel()
		defer close(p.done)
		fr, err := s.newFHIRReader(nr, viewer)
		if err != nil {
			s.fhirAhead.drop(k, p)
			return
		}
		search, err := fhir.ParseSearch(typ, nr.URL.Query(), preferLenient(nr))
		if err != nil {
			s.fhirAhead.drop(k, p)
			return
		}
		fs := &fhirSearch{fhirReader: fr, typ: typ, kind: kind, search: search}
		page, body, err := fs.run(nr, after, key)
		if err != nil {
			s.fhirAhead.drop(k, p)
			return
		}
		p.checked = fr.checked
		p.etag, p.f = page.etag, page.f
		if enc := negotiateEncoding(nr.Header.Values("Accept-Encoding")); enc != "" && len(body) >= minCompress {
			p.f.Form(enc, func() []byte { return encodeAll(enc, body) })
		}
		if page.addresses {
			p.attribution = fr.info.Attribution
		}
		p.next, p.after = page.next, page.after
		p.body, p.buf = body, page.buf
	}()
}
