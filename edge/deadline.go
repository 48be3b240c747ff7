package edge

import (
	"net/http"
	"time"
)

// Streamed bodies and the connection's deadlines.
//
// The public server bounds every response as a whole (http.Server's WriteTimeout), which suits the
// answers of the API: a record, a page, a search. A streamed body is different: an export file or a
// Bulk Data NDJSON file of a large directory takes minutes over an ordinary link, and a
// whole-response bound cuts it part way whatever the client does. The routes of streamed bodies
// (streamedRoutes) are bounded instead by idleness: from the start of the handler, and again before
// every write of at most streamChunk bytes, the connection's deadlines move the idle bound ahead. A
// client that reads on, however slowly, is served to the end; one that takes nothing for the bound is
// cut (the write fails, and the request's context ends). A range request (the files' routes take
// them) resumes a cut download.
//
// The read deadline moves with the write deadline. Once a handler runs, net/http reads the
// connection in the background with no deadline (the server's ReadTimeout bounds reading the request
// only), and that read ending is what ends the request's context. Bounding it by the same idleness
// ends the context of a request that has sent nothing for the bound, whatever it waits on: an edge
// forwarding a file whose primary stops sending cuts its client rather than holding the connection
// for as long as the client does. A body a client declared and never sent is drained within the bound
// too.

// DefaultStreamIdle is how long a client of a streamed body may take nothing before it is cut.
const DefaultStreamIdle = 30 * time.Second

// streamedRoutes matches the routes whose bodies are streamed: export files and Bulk Data files
// (through their signed links, served by the primary and forwarded by edges), sitemaps (the index
// and its parts) and feed pages (these two are expensive routes as well: their work keeps its time
// budget, see admission.go). Every other route keeps the server's whole-response bounds, the
// replication stream's long poll included.
var streamedRoutes = func() *http.ServeMux {
	mux := http.NewServeMux()
	for _, pattern := range []string{
		"GET /v1/exports/{id}/files/{name}",
		"GET /v1/d/{dir}/sitemap.xml",
		"GET /v1/d/{dir}/changes",
	} {
		mux.Handle(pattern, http.NotFoundHandler()) // only matched, never served
	}
	return mux
}()

// streamDeadlines returns the writer a request is served through: for a streamed route, w with the
// connection's deadlines moved the idle bound ahead now and at every write (see streamWriter);
// for any other route, or a writer that has no deadlines (a test's recorder), w itself.
func (s *Server) streamDeadlines(w http.ResponseWriter, r *http.Request) http.ResponseWriter {
	if _, pattern := streamedRoutes.Handler(r); pattern == "" {
		return w
	}
	idle := s.cfg.StreamIdle
	if idle <= 0 {
		idle = DefaultStreamIdle
	}
	sw := &streamWriter{ResponseWriter: w, rc: http.NewResponseController(w), idle: idle}
	if sw.extend() != nil {
		return w
	}
	return sw
}

// streamChunk is the most a streamWriter writes under one extension of the deadlines: a client is
// cut when it takes less than this in the idle bound (2 KB/s at the default), however large the
// handler's writes (a feed page is written whole).
const streamChunk = 64 << 10

// streamWriter moves the connection's deadlines the idle bound ahead before each write of at most
// streamChunk bytes, so that a write fails only when the client has taken nothing for that long.
type streamWriter struct {
	http.ResponseWriter
	rc   *http.ResponseController
	idle time.Duration
}

// extend moves both deadlines of the connection the idle bound ahead.
func (w *streamWriter) extend() error {
	at := time.Now().Add(w.idle)
	if err := w.rc.SetWriteDeadline(at); err != nil {
		return err
	}
	return w.rc.SetReadDeadline(at)
}

func (w *streamWriter) Write(b []byte) (int, error) {
	n := 0
	for len(b) > streamChunk {
		w.extend()
		m, err := w.ResponseWriter.Write(b[:streamChunk])
		n += m
		if err != nil {
			return n, err
		}
		b = b[streamChunk:]
	}
	w.extend()
	m, err := w.ResponseWriter.Write(b)
	return n + m, err
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *streamWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
