package edge

import (
	"context"
	"net/http"
	"time"
)

// Metrics counts what a Server answers, for the node's private metrics (cmd/dirsvc exports them to
// Prometheus). Every label it is given comes from a small fixed set, never from what a client
// wrote: a route is a pattern of the routes list (or RouteUnmatched, RouteForwarded), never a path.
// Its methods are called on the request's goroutine, once the answer is written, and must not block.
type Metrics interface {
	// Request counts a request answered: the pattern of the route that served it, its method (one
	// of the standard methods, or "other"), the class of its status ("2xx" to "5xx", or "none" when
	// the client went away before any answer), and how long it took.
	Request(route, method, status string, took time.Duration)
	// Shed counts a request shed for lack of capacity (503 with Retry-After): reason is one of the
	// Shed* constants.
	Shed(reason string)
	// Limited counts a request refused by a rate limit (429 with Retry-After): limit is one of the
	// Limit* constants.
	Limited(limit string)
}

// Routes of requests no pattern of the routes list served.
const (
	// RouteUnmatched: no route matched (the answer is 404 or 405), or the request was refused
	// before routing.
	RouteUnmatched = "unmatched"
	// RouteForwarded: an edge sent the request to its primary (see Forwarding).
	RouteForwarded = "forwarded"
)

// Reasons a request is shed (see Admission).
const (
	// ShedReads: the bound of cheap reads in flight stayed full for the admission wait.
	ShedReads = "reads"
	// ShedPages: the bound of record pages in flight stayed full.
	ShedPages = "pages"
	// ShedExpensive: the bounds of lists and searches (the directory's or the node's) stayed full.
	ShedExpensive = "expensive"
	// ShedBudget: a list or search ran out of its time budget.
	ShedBudget = "budget"
)

// Rate limits a request is refused by.
const (
	// LimitAnonymous: the anonymous limit of the client's address.
	LimitAnonymous = "anonymous"
	// LimitClient: the limit of a partner client's grant in a directory.
	LimitClient = "client"
	// LimitTokenFailures: too many wrong admin or replication tokens from the address (RequireBearer).
	LimitTokenFailures = "token_failures"
)

// routeKey keys, in a request's context, the statusRecorder of the request as ServeHTTP made it:
// the middleware in front of the mux hands the mux copies of the request (WithContext), so the
// pattern the mux sets on its copy is carried back to ServeHTTP through the recorder.
type routeKey struct{}

// measured returns r with its recorder in the context, when the server counts requests.
func (s *Server) measured(r *http.Request, rec *statusRecorder) *http.Request {
	if s.cfg.Metrics == nil {
		return r
	}
	return r.WithContext(context.WithValue(r.Context(), routeKey{}, rec))
}

// recorderOf returns the recorder ServeHTTP put in a request's context, or nil.
func recorderOf(r *http.Request) *statusRecorder {
	rec, _ := r.Context().Value(routeKey{}).(*statusRecorder)
	return rec
}

// routed serves requests with the mux and tells the request's recorder the pattern that served it,
// as the mux set it (empty when none matched), whatever the handler did, a panic included.
func routed(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rec := recorderOf(r); rec != nil {
			defer func() { rec.route = r.Pattern }()
		}
		mux.ServeHTTP(w, r)
	})
}

// markForwarded records that a request went to the primary.
func markForwarded(r *http.Request) {
	if rec := recorderOf(r); rec != nil {
		rec.route = RouteForwarded
	}
}

// countRequest counts a request answered. A request the mux never saw (refused by the guard, say)
// counts under the pattern the mux would have chosen; one no route serves, under RouteUnmatched.
func (s *Server) countRequest(r *http.Request, rec *statusRecorder, took time.Duration) {
	route := rec.route
	if route == "" {
		_, route = s.mux.Handler(r)
	}
	if route == "" || route == "/" { // "/" is the catch-all that answers 404
		route = RouteUnmatched
	}
	status := statusClass(rec.status)
	if !rec.wrote && r.Context().Err() != nil {
		status = "none"
	}
	s.cfg.Metrics.Request(route, methodLabel(r.Method), status, took)
}

// shedFor counts a request shed for reason.
func (s *Server) shedFor(reason string) {
	if s.cfg.Metrics != nil {
		s.cfg.Metrics.Shed(reason)
	}
}

// limitedBy counts a request refused by limit.
func (s *Server) limitedBy(limit string) {
	if s.cfg.Metrics != nil {
		s.cfg.Metrics.Limited(limit)
	}
}

// statusClasses are the labels of the status classes, by the status's first digit.
var statusClasses = [...]string{1: "1xx", 2: "2xx", 3: "3xx", 4: "4xx", 5: "5xx"}

// statusClass returns "2xx" for 200 to 299, and so on; "5xx" for anything out of range.
func statusClass(status int) string {
	if c := status / 100; c >= 1 && c <= 5 {
		return statusClasses[c]
	}
	return "5xx"
}

// methodLabel returns a standard method as it is, and "other" for any other: a client chooses the
// method, and a label must not take whatever it sends.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions:
		return m
	}
	return "other"
}
