package edge

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"slices"

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
// ones, and those left with no type the tier sees, are left out), each with how many services the
// viewer finds in it, and what each finds.
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
	counts, err := dir.CountServices(ctx, v, finds)
	if err != nil {
		return nil, nil, err
	}
	cats := dirsvc.BrowseCategories(tax)
	for i := range cats {
		cats[i].Count = counts[i]
	}
	return cats, finds, nil
}

// handleListCategories answers the categories the caller's tier sees, with their types and counts.
func (s *Server) handleListCategories(w http.ResponseWriter, r *http.Request) {
	if _, err := readQuery(r); err != nil {
		s.error(w, r, err)
		return
	}
	viewer, err := s.viewer(r, dirsvc.ScopeSearchRead)
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
	cats, _, err := browseCategories(r.Context(), dir, viewer)
	if err != nil {
		s.error(w, r, err)
		return
	}
	s.writeBrowse(w, r, viewer.Audience, struct {
		Categories []dirsvc.BrowseCategory `json:"categories"`
	}{cats}, dirTag(r, "taxonomy"), countTag(r))
}

// handleGetCategory answers one category by its code: its types, its count and the places with
// most of its services. A category the caller's tier does not see answers exactly as a missing
// one.
func (s *Server) handleGetCategory(w http.ResponseWriter, r *http.Request) {
	if _, err := readQuery(r); err != nil {
		s.error(w, r, err)
		return
	}
	viewer, err := s.viewer(r, dirsvc.ScopeSearchRead)
	if err != nil {
		s.error(w, r, err)
		return
	}
	detail, err := s.category(r, viewer)
	if err != nil {
		s.cacheFor(w, r)
		s.error(w, r, err)
		return
	}
	s.writeBrowse(w, r, viewer.Audience, detail, dirTag(r, "taxonomy"), countTag(r))
}

// category reads the category of the request's path as the viewer finds it; not found when the
// directory or the category is missing or hidden from the viewer's tier.
func (s *Server) category(r *http.Request, v dirsvc.Viewer) (*dirsvc.CategoryDetail, error) {
	ctx, code := r.Context(), r.PathValue("code")
	dir, _, err := s.directory(ctx, r.PathValue("dir"))
	if err != nil {
		return nil, err
	}
	if !dirsvc.ValidCode(code) {
		return nil, dirsvc.ErrNotFound
	}
	cats, finds, err := browseCategories(ctx, dir, v)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(cats, func(c dirsvc.BrowseCategory) bool { return c.Code == code })
	if i < 0 {
		return nil, dirsvc.ErrNotFound
	}
	places, err := dir.Places(ctx, v, finds[i])
	if err != nil {
		return nil, err
	}
	return &dirsvc.CategoryDetail{BrowseCategory: cats[i], Places: places}, nil
}

// currentCollections returns the collections the viewer's tier sees that are current today in the
// directory's time zone.
func (s *Server) currentCollections(ctx context.Context, dir dirsvc.DirectoryReader, info *dirsvc.Directory, a dirsvc.Audience) ([]dirsvc.CollectionView, error) {
	cols, err := dir.Collections(ctx, a)
	if err != nil {
		return nil, err
	}
	today := dirsvc.Today(s.cfg.Now(), info.TimeZone)
	return slices.DeleteFunc(cols, func(c dirsvc.CollectionView) bool { return !c.Current(today) }), nil
}

// handleListCollections answers the collections the caller's tier sees today; home=true keeps those
// chosen for the home page.
func (s *Server) handleListCollections(w http.ResponseWriter, r *http.Request) {
	q, err := readQuery(r, homeParam)
	if err != nil {
		s.error(w, r, err)
		return
	}
	home, err := q.oneOf("home", "true")
	if err != nil {
		s.error(w, r, err)
		return
	}
	viewer, err := s.viewer(r, dirsvc.ScopeSearchRead)
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
	cols, err := s.currentCollections(r.Context(), dir, info, viewer.Audience)
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
	s.writeBrowse(w, r, viewer.Audience, struct {
		Items []dirsvc.CollectionSummary `json:"items"`
	}{items}, dirTag(r, "collections"))
}

// collectionSlugRE is what a collection slug in a path may be; anything else is not found.
var collectionSlugRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$`)

// handleGetCollection answers a collection the caller's tier sees today: its saved search and its
// picked services as result cards at the caller's tier, those the caller does not see left out.
func (s *Server) handleGetCollection(w http.ResponseWriter, r *http.Request) {
	if _, err := readQuery(r); err != nil {
		s.error(w, r, err)
		return
	}
	viewer, err := s.viewer(r, dirsvc.ScopeSearchRead)
	if err != nil {
		s.error(w, r, err)
		return
	}
	detail, info, err := s.collection(r, viewer)
	if err != nil {
		s.cacheFor(w, r)
		s.error(w, r, err)
		return
	}
	for _, c := range detail.Services {
		if c.Location != nil && c.Location.Address != nil {
			setAttribution(w.Header(), info.Attribution)
			break
		}
	}
	s.writeBrowse(w, r, viewer.Audience, detail, dirTag(r, "collections"))
}

// collection reads the collection of the request's path as the viewer sees it, and the directory's
// description; not found when the directory or the collection is missing, a draft, for other
// audiences or outside its dates.
func (s *Server) collection(r *http.Request, v dirsvc.Viewer) (*dirsvc.CollectionDetail, *dirsvc.Directory, error) {
	ctx, slug := r.Context(), r.PathValue("slug")
	dir, info, err := s.directory(ctx, r.PathValue("dir"))
	if err != nil {
		return nil, nil, err
	}
	if !collectionSlugRE.MatchString(slug) {
		return nil, nil, dirsvc.ErrNotFound
	}
	cols, err := s.currentCollections(ctx, dir, info, v.Audience)
	if err != nil {
		return nil, nil, err
	}
	i := slices.IndexFunc(cols, func(c dirsvc.CollectionView) bool { return c.Slug == slug })
	if i < 0 {
		return nil, nil, dirsvc.ErrNotFound
	}
	cards, err := s.cards(ctx, dir, v, cols[i].Services)
	if err != nil {
		return nil, nil, err
	}
	return &dirsvc.CollectionDetail{CollectionSummary: cols[i].Summary(),
		Search: dirsvc.SavedSearchOf(r.PathValue("dir"), cols[i].Search), Services: cards}, info, nil
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
	s.writeJSON(w, r, a, body)
}
