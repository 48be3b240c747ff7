package edge

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/dirsvc/dirsvc"
)

// Leadership is the answer of the leadership endpoint: an organisation's current executives, then its
// board, each with only what they show to health professionals.
type Leadership struct {
	PublicID   string              `json:"publicId"`
	Leadership []dirsvc.LeaderView `json:"leadership"`
}

// currentLeaders returns the organisation's stored leadership without appointments that have ended
// since it was published (the end date has passed in the directory's time zone).
func (s *Server) currentLeaders(r *http.Request, rd *reading, orgID string) ([]dirsvc.LeaderView, error) {
	p, err := rd.dir.Leadership(r.Context(), orgID)
	if errors.Is(err, dirsvc.ErrNotFound) {
		return []dirsvc.LeaderView{}, nil
	} else if err != nil {
		return nil, err
	}
	var all []dirsvc.LeaderView
	if err := json.Unmarshal(p.Body, &all); err != nil {
		return nil, err
	}
	today := dirsvc.Today(s.cfg.Now(), rd.info.TimeZone)
	out := []dirsvc.LeaderView{}
	for _, l := range all {
		if l.Current(today) {
			out = append(out, l)
		}
	}
	return out, nil
}

// leadershipOf returns the JSON of an organisation's leadership when the caller receives it (scope
// leadership:read, and senior management switched on by the platform and the directory), else nil.
func (s *Server) leadershipOf(r *http.Request, rd *reading, orgID string) ([]byte, error) {
	t := tokenFrom(r.Context())
	if t == nil || !t.HasScope(dirsvc.ScopeLeadershipRead) || t.Tier == dirsvc.Public || !rd.info.LeadershipOn() {
		return nil, nil
	}
	ls, err := s.currentLeaders(r, rd, orgID)
	if err != nil {
		return nil, err
	}
	return json.Marshal(ls)
}

func (s *Server) handleGetLeadership(w http.ResponseWriter, r *http.Request) {
	if _, err := readQuery(r); err != nil {
		s.error(w, r, err)
		return
	}
	// Leadership is what leaders show to health professionals: never to the public tier.
	if t := tokenFrom(r.Context()); t == nil || t.Tier == dirsvc.Public {
		s.error(w, r, dirsvc.Errorf(dirsvc.EForbiddenScope, "Leadership needs the scope %s.", dirsvc.ScopeLeadershipRead))
		return
	}
	viewer, err := s.viewer(r, dirsvc.ScopeLeadershipRead)
	if err != nil {
		s.error(w, r, err)
		return
	}
	_, info, err := s.directory(r.Context(), r.PathValue("dir"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	if !info.LeadershipOn() {
		s.error(w, r, dirsvc.ErrNotFound)
		return
	}
	rd, err := s.resolve(r, dirsvc.KindOrganisation, viewer, true)
	if code := dirsvc.ErrorCode(err); code == dirsvc.EGone || code == dirsvc.EMoved {
		err = dirsvc.ErrNotFound // a closed or merged organisation has no leadership to show
	}
	if err != nil {
		s.error(w, r, err)
		return
	}
	ls, err := s.currentLeaders(r, rd, rd.status.View.PublicID)
	if err != nil {
		s.error(w, r, err)
		return
	}
	body, err := json.Marshal(Leadership{PublicID: rd.status.View.PublicID, Leadership: ls})
	if err != nil {
		s.error(w, r, err)
		return
	}
	etag, f := s.composed(body)
	s.writeView(w, r, rd, body, etag, f, false)
}
