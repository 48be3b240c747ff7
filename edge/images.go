package edge

import (
	"net/http"
	"strconv"

	"github.com/dirsvc/dirsvc"
)

// imageCacheControl: a published image never changes at its address (the address is its hash).
var imageCacheControl = []string{"public, max-age=31536000, immutable"}

// handleGetImage serves a published image (dirsvc.Image) at /v1/d/{dir}/images/{sha256}.{ext} to
// the callers whose view of a record names it. A malformed name, an unknown hash, another
// extension than the image's, and an image no record the caller may read names all answer the same
// 404; so does a conditional request for one, which never learns that the image exists.
func (s *Server) handleGetImage(w http.ResponseWriter, r *http.Request) {
	if _, err := readQuery(r); err != nil {
		s.error(w, r, err)
		return
	}
	viewer, err := s.viewer(r, dirsvc.ScopeGraphRead)
	if err != nil {
		s.error(w, r, err)
		return
	}
	dir, _, err := s.directory(r.Context(), r.PathValue("dir"))
	if err != nil {
		s.readError(w, r, err)
		return
	}
	sha, mediaType, ok := dirsvc.ParseImageName(r.PathValue("image"))
	var img *dirsvc.Image
	if ok {
		img, err = dir.Image(r.Context(), viewer, sha)
	} else {
		err = dirsvc.ErrNotFound
	}
	if err == nil && img.MediaType != mediaType {
		err = dirsvc.ErrNotFound
	}
	if err != nil {
		s.readError(w, r, err)
		return
	}
	h := w.Header()
	setAudience(w, viewer.Audience)
	if tokenFrom(r.Context()) == nil {
		h[keyCacheControl] = imageCacheControl
	}
	etag := `"` + img.SHA256 + `"`
	h.Set("ETag", etag)
	h[keyContentType] = []string{img.MediaType}
	h.Set("X-Content-Type-Options", "nosniff")
	if etagMatch(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Length", strconv.Itoa(len(img.Body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(img.Body)
	}
}
