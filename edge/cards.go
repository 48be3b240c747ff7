package edge

import (
	"context"
	"time"

	"github.com/dirsvc/dirsvc"
)

// cards returns the result cards of the services ids, in the order given, as the reader's viewer
// sees them at the time now: each made as search makes its results' (resultCard), from the viewer's
// views of the service, its site and its roles, read through DirectoryReader.Record so the view
// cache serves them. A service the viewer does not see is left out silently, whatever the reason:
// missing, hidden from its tier, closed, removed, merged or outside its narrowing, so a list of
// cards never tells one from another. A failed read is an error, never taken for a hidden service.
func (s *Server) cards(ctx context.Context, rd *reading, ids []string, now time.Time) ([]dirsvc.ResultCard, error) {
	out := make([]dirsvc.ResultCard, 0, len(ids))
	if !rd.viewer.Narrowing.AllowsKind(dirsvc.KindService) {
		return out, nil
	}
	for _, id := range ids {
		if !dirsvc.ValidPublicID(dirsvc.KindService, id) {
			continue
		}
		c, ok, err := s.resultCard(ctx, rd, dirsvc.SearchHit{PublicID: id}, now)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, c)
		}
	}
	return out, nil
}
