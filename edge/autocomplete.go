package edge

import (
	"encoding/json"
	"net/http"
	"unicode/utf8"

	"github.com/dirsvc/dirsvc"
)

// Autocomplete bounds: q is required, at most 100 characters (section 8), and each kind of
// suggestion lists at most suggestionsPerKind.
const (
	maxAutocompleteText = 100
	suggestionsPerKind  = 5
)

// autocompleteCacheControl lets browsers keep an anonymous answer a minute and shared caches five
// (section 8).
var autocompleteCacheControl = []string{"public, max-age=60, s-maxage=300"}

// Suggestions is the answer of GET autocomplete.
type Suggestions struct {
	Suggestions []dirsvc.Suggestion `json:"suggestions"`
}

// handleAutocomplete answers GET autocomplete: service types, places and organisations whose words
// start with those typed, among the services the caller may find.
func (s *Server) handleAutocomplete(w http.ResponseWriter, r *http.Request) {
	b, err := s.startBrowse(r, param{name: "q"})
	text, given := "", false
	if err == nil {
		if text, given = b.q.get("q"); !given || text == "" || utf8.RuneCountInString(text) > maxAutocompleteText {
			err = dirsvc.InvalidParam("q", "q is required, 1 to %d characters", maxAutocompleteText)
		}
	}
	if err != nil {
		s.browseError(w, r, err)
		return
	}
	dir, viewer := b.dir, b.viewer
	found, err := dir.Suggest(r.Context(), viewer, text, suggestionsPerKind)
	if err != nil {
		s.error(w, r, err)
		return
	}
	body, err := json.Marshal(Suggestions{Suggestions: found})
	if err != nil {
		s.error(w, r, err)
		return
	}
	s.cacheTags(w, r, dirTag(r, "services"))
	setAudience(w, viewer.Audience)
	if tokenFrom(r.Context()) == nil { // a client's answers are private, never stored (the guard's)
		w.Header()[keyCacheControl] = autocompleteCacheControl
	}
	etag, f := s.composed(body)
	if body, etag, f, err = s.localise(w, r, viewer.Audience, body, etag, f); err != nil {
		s.error(w, r, err)
		return
	}
	writeTagged(w, r, body, etag, f)
}
