package edge

import (
	"net/http"

	"github.com/dirsvc/dirsvc"
)

// handleGetTaxonomy answers the directory's taxonomy as the public sees it, whoever asks (the
// specification serves it at the public tier only): the categories, local types, platform types,
// programs and target groups that the services the public sees use, hidden entries left out
// (dirsvc.ProjectTaxonomy). It takes no parameter, and is read from the node's own copy of the
// directory.
func (s *Server) handleGetTaxonomy(w http.ResponseWriter, r *http.Request) {
	if _, err := readQuery(r); err != nil {
		s.error(w, r, err)
		return
	}
	dir, _, err := s.directory(r.Context(), r.PathValue("dir"))
	if err != nil {
		s.cacheFor(w, r)
		s.error(w, r, err)
		return
	}
	p, err := dir.Taxonomy(r.Context(), dirsvc.Public)
	if err != nil {
		s.error(w, r, err)
		return
	}
	// It lists what the services the public sees use: it changes with them, as category counts do.
	s.cacheTags(w, r, dirTag(r, "taxonomy"), countTag(r))
	s.writeLabelled(w, r, dirsvc.Public, p.Body)
}
