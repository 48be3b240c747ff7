package primary

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/edge"
	"github.com/dirsvc/dirsvc/primary/federation"
)

// AdminAPI is the primary's admin API: the record operations of `dirsvc record` over HTTP, for an
// operator's tools. Every request carries "Authorization: Bearer <admin token>". A write's answer
// carries the directory's position after it (edge.PositionHeader), once the write is replicated, so
// a client can read it back at an edge.
//
// An answer of 200 is a promise: every file the write touched is in every replica (the replica
// folder, and object storage when configured). When object storage does not confirm in time, the
// write is committed and in the folder that edges follow, but the answer is 202 with
// PendingHeader naming what lacks it: the write reaches the bucket when the bucket answers again.
// A write no replica holds is no 202: it is answered as an error (dirsvc.NotReplicated), 507 when
// the storage is full.
//
//	PUT  /admin/v1/d/{dir}/records/{publicId}             the record in the import format (as FormatRecord and
//	                                                      dirsvc record show write it): replace or add it
//	POST /admin/v1/d/{dir}/records/{publicId}/transition  {"to": state, "survivor": id, "visibleTo": [audience]}
//
// and, with Moderation, the routes of the moderation queue (see moderation.go).
type AdminAPI struct {
	Store dirsvc.DirectoryStore
	Token string
	// Replicate replicates a directory's latest write (every file it touched) and says where it is;
	// nil: writes answer without a position.
	Replicate func(ctx context.Context, dir string) (Replication, error)
	// Moderation is the moderation queue of forwarded items; nil: the admin API has no moderation
	// routes.
	Moderation *federation.Service
	Log        *slog.Logger
}

// Replication is where a write is once replicated: the directory's position after it, and the
// replicas that do not hold it yet (empty when every one does).
type Replication struct {
	Position uint64
	Lineage  string // the history the position counts in
	Pending  []string
}

// PendingHeader names, on a 202 answer of the admin API, the replicas that do not hold the write yet.
const PendingHeader = "Replication-Pending"

// AdminPrefix is where the admin API is served (its patterns are spelled out in Server.routes, where
// the test of the OpenAPI document reads them).
const AdminPrefix = "/admin/v1/"

// maxAdminBody bounds an admin request body: one record.
const maxAdminBody = 1 << 20

// check refuses a weak admin token (see dirsvc.CheckSecret).
func (a *AdminAPI) check() error {
	if err := dirsvc.CheckSecret(a.Token); err != nil {
		return fmt.Errorf("the admin token is weak: %w; %s", err, dirsvc.GenerateSecretHint)
	}
	if a.Log == nil {
		a.Log = slog.Default()
	}
	return nil
}

type adminHandler func(w http.ResponseWriter, r *http.Request, body []byte) (dirsvc.ImportStats, error)

// guard checks the admin token (failures limited per client address by s.RequireBearer), reads the
// capped JSON body (edge.ReadBody), runs h, and answers with its result and the directory's position.
func (a *AdminAPI) guard(s *edge.Server, h adminHandler) http.Handler {
	return a.bearer(s, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := edge.ReadBody(w, r, maxAdminBody)
		if err != nil {
			s.WriteError(w, r, err)
			return
		}
		stats, err := h(w, r, body)
		var ie *ImportError
		if errors.As(err, &ie) {
			err = dirsvc.InvalidParam(ie.Field, "%s", ie.Error())
		}
		if err != nil {
			s.WriteError(w, r, err)
			return
		}
		a.answer(s, w, r, stats, true)
	}))
}

// bearer checks the admin token (failures limited per client address by s.RequireBearer) before h;
// no answer of the admin API is stored.
func (a *AdminAPI) bearer(s *edge.Server, h http.Handler) http.Handler {
	unauthorized := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store") // RequireBearer has set the challenge
		s.WriteError(w, r, dirsvc.Errorf(dirsvc.EInvalidToken, "The admin token is missing or wrong."))
	}
	return s.RequireBearer("admin", a.Token, unauthorized, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		h.ServeHTTP(w, r)
	}))
}

// answer writes v as a JSON answer. After a write of the directory's records (wrote), it first
// replicates the write: the answer carries the directory's position after it, and is 202 naming the
// replicas that do not hold it yet.
func (a *AdminAPI) answer(s *edge.Server, w http.ResponseWriter, r *http.Request, v any, wrote bool) {
	status := http.StatusOK
	if a.Replicate != nil && wrote {
		rep, err := a.Replicate(r.Context(), r.PathValue("dir"))
		if err != nil {
			// The write is committed, but no replica holds it: not a success of any kind.
			s.WriteError(w, r, dirsvc.NotReplicated(err))
			return
		}
		if rep.Position > 0 {
			w.Header().Set(edge.PositionHeader, edge.FormatPosition(rep.Position, rep.Lineage))
		}
		if len(rep.Pending) > 0 {
			status = http.StatusAccepted
			w.Header().Set(PendingHeader, strings.Join(rep.Pending, ", "))
		}
	}
	out, err := json.Marshal(v)
	if err != nil {
		s.WriteError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(out, '\n'))
}

func (a *AdminAPI) putRecord(w http.ResponseWriter, r *http.Request, body []byte) (dirsvc.ImportStats, error) {
	slug, id := r.PathValue("dir"), r.PathValue("publicId")
	var head struct {
		PublicID string `json:"publicId"`
	}
	if err := json.Unmarshal(body, &head); err != nil {
		return dirsvc.ImportStats{}, dirsvc.InvalidParam("body", "want one record as a JSON object in the import format")
	}
	if head.PublicID != id {
		return dirsvc.ImportStats{}, dirsvc.InvalidParam("publicId", "the record's publicId must be the one in the address")
	}
	return UpdateRecord(r.Context(), a.Store, slug, body)
}

func (a *AdminAPI) transition(w http.ResponseWriter, r *http.Request, body []byte) (dirsvc.ImportStats, error) {
	var t struct {
		To        dirsvc.State     `json:"to"`
		Survivor  string           `json:"survivor"`
		VisibleTo dirsvc.Audiences `json:"visibleTo"`
	}
	if err := dirsvc.DecodeJSON(body, &t); err != nil {
		return dirsvc.ImportStats{}, err
	}
	if !t.To.Valid() {
		return dirsvc.ImportStats{}, dirsvc.InvalidParam("to", "%q is not a record state", t.To)
	}
	wr, err := a.Store.Writer(r.Context(), r.PathValue("dir"))
	if err != nil {
		return dirsvc.ImportStats{}, err
	}
	return wr.Transition(r.Context(), r.PathValue("publicId"), dirsvc.Transition{To: t.To, Survivor: t.Survivor, VisibleTo: t.VisibleTo})
}
