package primary

import (
	"context"
	"net/http"
	"strings"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/edge"
)

// The moderation routes of the admin API: the queue of forwarded items, and operators' actions on
// them (the operations of `dirsvc moderation`).
//
//	GET  /admin/v1/d/{dir}/moderation?status=S&for=NAME  the queue, oldest first
//	GET  /admin/v1/d/{dir}/moderation/{id}               one item with its history
//	POST /admin/v1/d/{dir}/moderation/{id}/{action}      {"operator": name, "note": text}; action accept,
//	                                                     approve, reject, resolve or no-action

// RecordUpdater returns the record write path of `dirsvc record update` and the admin API's PUT, for
// writers of records outside them (the moderation queue publishing a proposal): the record in the
// import format, read back and checked as an update is.
func RecordUpdater(st dirsvc.DirectoryStore) func(ctx context.Context, dir string, rec dirsvc.Record) error {
	return func(ctx context.Context, dir string, rec dirsvc.Record) error {
		b, err := FormatRecord(rec)
		if err != nil {
			return err
		}
		_, err = UpdateRecord(ctx, st, dir, b)
		return err
	}
}

// ModerationQueue is the answer of the queue.
type ModerationQueue struct {
	Items []dirsvc.ForwardedItem `json:"items"`
}

// ModerationRequest is the body of an operator's action.
type ModerationRequest struct {
	Operator string `json:"operator"`
	Note     string `json:"note,omitempty"`
}

func (a *AdminAPI) moderationQueue(s *edge.Server) http.Handler {
	return a.bearer(s, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		for name := range q {
			if name != "status" && name != "for" {
				s.WriteError(w, r, dirsvc.InvalidParam(edge.ClipName(name), "the queue takes status and for"))
				return
			}
		}
		var statuses []string
		for _, v := range q["status"] {
			statuses = append(statuses, strings.Split(v, ",")...)
		}
		items, err := a.Moderation.Queue(r.Context(), r.PathValue("dir"), q.Get("for"), statuses...)
		if err != nil {
			s.WriteError(w, r, err)
			return
		}
		if items == nil {
			items = []dirsvc.ForwardedItem{}
		}
		a.answer(s, w, r, ModerationQueue{Items: items}, false)
	}))
}

func (a *AdminAPI) moderationItem(s *edge.Server) http.Handler {
	return a.bearer(s, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		it, err := a.Moderation.Item(r.Context(), r.PathValue("dir"), r.PathValue("id"))
		if err != nil {
			s.WriteError(w, r, err)
			return
		}
		a.answer(s, w, r, it, false)
	}))
}

func (a *AdminAPI) moderationAct(s *edge.Server) http.Handler {
	return a.bearer(s, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req ModerationRequest
		if err := edge.ReadJSON(w, r, 16<<10, &req); err != nil {
			s.WriteError(w, r, err)
			return
		}
		action := r.PathValue("action")
		it, err := a.Moderation.Act(r.Context(), r.PathValue("dir"), r.PathValue("id"), action, req.Operator, req.Note)
		if err != nil {
			s.WriteError(w, r, err)
			return
		}
		// Every action writes the queue (and an approval the record): replicated before it is answered.
		a.answer(s, w, r, it, true)
	}))
}
