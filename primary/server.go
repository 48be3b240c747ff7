package primary

import (
	"log/slog"
	"net/http"

	"github.com/dirsvc/dirsvc/edge"
	"github.com/dirsvc/dirsvc/primary/export"
	"github.com/dirsvc/dirsvc/primary/federation"
	"github.com/dirsvc/dirsvc/primary/webhook"
)

// Server is what only the primary serves: the token endpoint, the admin API, the webhook and export
// APIs and the federation writes (forwarded proposals and issues). Its routes are mounted on the
// edge's server, beside the read routes and behind the same guard (tokens, rate limits, admission,
// problem answers), so one handler serves a primary node; an edge forwards these routes here.
type Server struct {
	Edge   *edge.Server
	Access *Access
	// Admin is the admin API; nil when it is off (no admin token).
	Admin *AdminAPI
	// Webhooks is the webhook service; nil when the node sends no webhooks.
	Webhooks *webhook.Service
	// Exports is the export service; nil when the node runs no exports.
	Exports *export.Service
	// Federation takes forwarded proposals and issues and moderates them; nil when the node takes
	// none.
	Federation *federation.Service
	// Portal serves sandbox sign-up and access requests; nil when the node serves neither.
	Portal *Portal
	Log    *slog.Logger
}

// Mount registers the primary's routes on its edge server. A weak admin token is refused.
func (s *Server) Mount() error {
	if s.Log == nil {
		s.Log = slog.Default()
	}
	if s.Admin != nil {
		if err := s.Admin.check(); err != nil {
			return err
		}
	}
	s.routes()
	return nil
}

// routes registers every route of the primary. It is the one list of what the primary serves beside
// the edge's reads.
func (s *Server) routes() {
	e := s.Edge
	e.Handle("POST "+edge.TokenPath, s.Access.HandleToken(s.Log))
	e.Handle(edge.TokenPath, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", http.MethodPost)
		writeOAuth(w, http.StatusMethodNotAllowed, OAuthError{"invalid_request", "use POST"})
	}))
	if p := s.Portal; p != nil {
		e.Handle("GET /v1/d/{dir}/portal/sandbox", http.HandlerFunc(p.HandleForm))
		e.Handle("POST /v1/d/{dir}/portal/sandbox", http.HandlerFunc(p.HandleSignup))
		e.Handle("POST /v1/access-requests", http.HandlerFunc(p.HandleAccessRequest))
	}
	if a := s.Admin; a != nil {
		e.Handle("PUT /admin/v1/d/{dir}/records/{publicId}", a.guard(e, a.putRecord))
		e.Handle("POST /admin/v1/d/{dir}/records/{publicId}/transition", a.guard(e, a.transition))
		if a.Moderation != nil {
			e.Handle("GET /admin/v1/d/{dir}/moderation", a.moderationQueue(e))
			e.Handle("GET /admin/v1/d/{dir}/moderation/{id}", a.moderationItem(e))
			e.Handle("POST /admin/v1/d/{dir}/moderation/{id}/{action}", a.moderationAct(e))
		}
	}
	if s.Federation != nil {
		api := &federation.API{Service: s.Federation, Token: edge.AccessTokenOf, WriteError: e.WriteError}
		e.Handle("POST /v1/d/{dir}/federation/forwarded/proposals", http.HandlerFunc(api.HandlePropose))
		e.Handle("POST /v1/d/{dir}/federation/forwarded/issues", http.HandlerFunc(api.HandleIssue))
		e.Handle("GET /v1/d/{dir}/federation/forwarded/{id}", http.HandlerFunc(api.HandleReceipt))
		e.Handle("POST /v1/d/{dir}/federation/forwarded/{id}/withdraw", http.HandlerFunc(api.HandleWithdraw))
	}
	if s.Webhooks != nil {
		api := &webhook.API{Service: s.Webhooks, Token: edge.AccessTokenOf, WriteError: e.WriteError}
		e.Handle("GET /v1/d/{dir}/webhooks", http.HandlerFunc(api.HandleList))
		e.Handle("POST /v1/d/{dir}/webhooks", http.HandlerFunc(api.HandleCreate))
		e.Handle("GET /v1/d/{dir}/webhooks/{id}", http.HandlerFunc(api.HandleGet))
		e.Handle("PATCH /v1/d/{dir}/webhooks/{id}", http.HandlerFunc(api.HandlePatch))
		e.Handle("DELETE /v1/d/{dir}/webhooks/{id}", http.HandlerFunc(api.HandleDelete))
		e.Handle("POST /v1/d/{dir}/webhooks/{id}/rotate", http.HandlerFunc(api.HandleRotate))
		e.Handle("POST /v1/d/{dir}/webhooks/{id}/test", http.HandlerFunc(api.HandleTest))
		e.Handle("GET /v1/d/{dir}/webhooks/{id}/deliveries", http.HandlerFunc(api.HandleDeliveries))
		e.Handle("GET /v1/d/{dir}/webhooks/{id}/deliveries/{deliveryId}", http.HandlerFunc(api.HandleDelivery))
		e.Handle("POST /v1/d/{dir}/webhooks/{id}/deliveries/{deliveryId}/replay", http.HandlerFunc(api.HandleReplay))
	}
	if s.Exports != nil {
		api := &export.API{Service: s.Exports, Token: edge.AccessTokenOf, WriteError: e.WriteError}
		e.Handle("POST /v1/d/{dir}/exports", http.HandlerFunc(api.HandleCreate))
		e.Handle("GET /v1/d/{dir}/exports", http.HandlerFunc(api.HandleList))
		e.Handle("GET /v1/d/{dir}/exports/{id}", http.HandlerFunc(api.HandleGet))
		e.Handle("GET /v1/exports/{id}/files/{name}", http.HandlerFunc(api.HandleFile))
		e.Handle("GET /v1/d/{dir}/fhir/$export", http.HandlerFunc(api.HandleBulkKickoff))
		e.Handle("POST /v1/d/{dir}/fhir/$export", http.HandlerFunc(api.HandleBulkKickoff))
		e.Handle("GET /v1/d/{dir}/fhir/$export-poll/{id}", http.HandlerFunc(api.HandleBulkStatus))
		e.Handle("DELETE /v1/d/{dir}/fhir/$export-poll/{id}", http.HandlerFunc(api.HandleBulkCancel))
	}
}
