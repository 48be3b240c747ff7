package edge

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"time"

	"github.com/dirsvc/dirsvc"
)

// Browsing a directory (section 4.2): its categories, with the services the caller finds in each,
// and its collections. Everything is read from the node's own copy of the directory, at the caller's
// tier and inside its narrowing.

// homeParam restricts the collection list to those chosen for the home page; true is its only value.
var homeParam = param{name: "home"}

// countTag is the cache tag of a directory's category counts, which change with its services.
func countTag(r *http.Request) string { return "cat:" + r.PathValue("dir") }

// browseCategories returns the categories the viewer's tier sees (dirsvc.ProjectTaxonomy: hidden
// ones, and those left with no type that services the tier sees use, are left out), counts not yet
// filled, and what each finds.
func browseCategories(ctx context.Context, dir dirsvc.DirectoryReader, v dirsvc.Viewer) ([]dirsvc.BrowseCategory, []dirsvc.CategoryServices, error) {
	p, err := dir.Taxonomy(ctx, v.Audience)
	if err != nil {
		return nil, nil, err
	}
	tax, err := decodeView[dirsvc.TaxonomyView](p)
	if err != nil {
		return nil, nil, err
	}
	finds := make([]dirsvc.CategoryServices, len(tax.Categories))
	for i, c := range tax.Categories {
		finds[i] = dirsvc.ServicesOf(c)
	}
	return dirsvc.BrowseCategories(tax), finds, nil
}

// count fills in how many services the viewer finds in each of cats, which finds says.
func (b *browse) count(ctx context.Context, cats []dirsvc.BrowseCategory, finds []dirsvc.CategoryServices) error {
	counts, err := b.dir.CountServices(ctx, b.viewer, finds)
	if err != nil {
		return err
	}
	for i := range cats {
		cats[i].Count = counts[i]
	}
	return nil
}

// browse is a browse read under way: its query, who reads, and the directory read.
type browse struct {
	q      query
	viewer dirsvc.Viewer
	dir    dirsvc.DirectoryReader
	info   *dirsvc.Directory
}

// startBrowse reads a browse request's query against the parameters it accepts, the caller (a client
// needs search:read) and the directory of its path.
func (s *Server) startBrowse(r *http.Request, accepts ...param) (*browse, error) {
	q, err := readQuery(r, accepts...)
	if err != nil {
		return nil, err
	}
	v, err := s.viewer(r, dirsvc.ScopeSearchRead)
	if err != nil {
		return nil, err
	}
	dir, info, err := s.directory(r.Context(), r.PathValue("dir"))
	if err != nil {
		return nil, err
	}
	return &browse{q: q, viewer: v, dir: dir, info: info}, nil
}

// browseError answers a failed browse read. Not found (a directory, category or collection missing
// or hidden) is cached as a missing record's answer is; every other error as the error says.
func (s *Server) browseError(w http.ResponseWriter, r *http.Request, err error) {
	if dirsvc.ErrorCode(err) == dirsvc.ENotFound {
		s.cacheFor(w, r)
	}
	s.error(w, r, err)
}

// handleListCategories answers the categories the caller's tier sees, with their types and counts.
func (s *Server) handleListCategories(w http.ResponseWriter, r *http.Request) {
	b, err := s.startBrowse(r)
	if err != nil {
		s.browseError(w, r, err)
		return
	}
	cats, finds, err := browseCategories(r.Context(), b.dir, b.viewer)
	if err == nil {
		err = b.count(r.Context(), cats, finds)
	}
	if err != nil {
		s.error(w, r, err)
		return
	}
	s.writeBrowse(w, r, b.viewer.Audience, struct {
		Categories []dirsvc.BrowseCategory `json:"categories"`
	}{cats}, dirTag(r, "taxonomy"), countTag(r))
}

// handleGetCategory answers one category by its code: its types, its count and the places with
// most of its services. A category the caller's tier does not see answers exactly as a missing
// one.
func (s *Server) handleGetCategory(w http.ResponseWriter, r *http.Request) {
	b, err := s.startBrowse(r)
	if err != nil {
		s.browseError(w, r, err)
		return
	}
	detail, err := b.category(r.Context(), r.PathValue("code"))
	if err != nil {
		s.browseError(w, r, err)
		return
	}
	s.writeBrowse(w, r, b.viewer.Audience, detail, dirTag(r, "taxonomy"), countTag(r))
}

// category reads the category with the code as the viewer finds it; not found when it is missing
// or hidden from the viewer's tier.
func (b *browse) category(ctx context.Context, code string) (*dirsvc.CategoryDetail, error) {
	if !dirsvc.ValidCode(code) {
		return nil, dirsvc.ErrNotFound
	}
	cats, finds, err := browseCategories(ctx, b.dir, b.viewer)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(cats, func(c dirsvc.BrowseCategory) bool { return c.Code == code })
	if i < 0 {
		return nil, dirsvc.ErrNotFound
	}
	if err := b.count(ctx, cats[i:i+1], finds[i:i+1]); err != nil {
		return nil, err
	}
	places, err := b.dir.Places(ctx, b.viewer, finds[i])
	if err != nil {
		return nil, err
	}
	for j := range places {
		places[j].Name = dirsvc.AreaName(places[j].Area)
	}
	return &dirsvc.CategoryDetail{BrowseCategory: cats[i], Places: places}, nil
}

// currentCollections returns the collections the viewer's tier sees that are current on the date
// now in the directory's time zone.
func (b *browse) currentCollections(ctx context.Context, now time.Time) ([]dirsvc.CollectionView, error) {
	cols, err := b.dir.Collections(ctx, b.viewer.Audience)
	if err != nil {
		return nil, err
	}
	today := dirsvc.Today(now, b.info.TimeZone)
	return slices.DeleteFunc(cols, func(c dirsvc.CollectionView) bool { return !c.Current(today) }), nil
}

// handleListCollections answers the collections the caller's tier sees today; home=true keeps those
// chosen for the home page.
func (s *Server) handleListCollections(w http.ResponseWriter, r *http.Request) {
	b, err := s.startBrowse(r, homeParam)
	if err != nil {
		s.browseError(w, r, err)
		return
	}
	home, err := b.q.oneOf("home", "true")
	if err != nil {
		s.error(w, r, err)
		return
	}
	cols, err := b.currentCollections(r.Context(), s.cfg.Now())
	if err != nil {
		s.error(w, r, err)
		return
	}
	items := []dirsvc.CollectionSummary{}
	for i := range cols {
		if home == "" || cols[i].Home {
			items = append(items, cols[i].Summary())
		}
	}
	s.writeBrowse(w, r, b.viewer.Audience, struct {
		Items []dirsvc.CollectionSummary `json:"items"`
	}{items}, dirTag(r, "collections"))
}

// collectionSlugRE is what a collection slug in a path may be; anything else is not found.
var collectionSlugRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$`)

// handleGetCollection answers a collection the caller's tier sees today: its saved search and its
// picked services as result cards at the caller's tier, those the caller does not see left out. An
// answer whose cards carry an address names the directory's address attribution.
func (s *Server) handleGetCollection(w http.ResponseWriter, r *http.Request) {
	b, err := s.startBrowse(r)
	if err != nil {
		s.browseError(w, r, err)
		return
	}
	detail, err := s.collection(r.Context(), b, r.PathValue("slug"))
	if err != nil {
		s.browseError(w, r, err)
		return
	}
	for _, c := range detail.Services {
		if c.Location != nil && c.Location.Address != nil {
			setAttribution(w.Header(), b.info.Attribution)
			break
		}
	}
	s.writeBrowse(w, r, b.viewer.Audience, detail, dirTag(r, "collections"))
}

// collection reads the collection with the slug as the viewer sees it; not found when it is
// missing, a draft, for other audiences or outside its dates.
func (s *Server) collection(ctx context.Context, b *browse, slug string) (*dirsvc.CollectionDetail, error) {
	if !collectionSlugRE.MatchString(slug) {
		return nil, dirsvc.ErrNotFound
	}
	cols, err := b.currentCollections(ctx, s.cfg.Now())
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(cols, func(c dirsvc.CollectionView) bool { return c.Slug == slug })
	if i < 0 {
		return nil, dirsvc.ErrNotFound
	}
	rd := &reading{dir: b.dir, info: b.info, viewer: b.viewer}
	cards, err := s.cards(ctx, rd, cols[i].Services, s.cfg.Now())
	if err != nil {
		return nil, err
	}
	return &dirsvc.CollectionDetail{CollectionSummary: cols[i].Summary(),
		Search: dirsvc.SavedSearchOf(b.info.Slug, cols[i].Search), Services: cards}, nil
}

// writeBrowse writes a body composed at read time for audience a, with the cache tags of an
// anonymous answer.
func (s *Server) writeBrowse(w http.ResponseWriter, r *http.Request, a dirsvc.Audience, v any, tags ...string) {
	body, err := json.Marshal(v)
	if err != nil {
		s.error(w, r, err)
		return
	}
	s.cacheTags(w, r, tags...)
	s.writeLabelled(w, r, a, body)
}
