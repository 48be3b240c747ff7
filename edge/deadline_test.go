package edge_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc/edge"
)

// The server bounds of these tests stand for the public server's (30 s to read, 60 s to write),
// scaled down so that a body outlasts them in seconds.
const (
	testReadTimeout  = time.Second
	testWriteTimeout = time.Second
)

// serveWithTimeouts serves h on 127.0.0.1 under whole-response bounds, as the binary's server does.
func serveWithTimeouts(t *testing.T, h http.Handler, read, write time.Duration) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ReadTimeout, srv.Config.WriteTimeout = read, write
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// pacedBody is what pacedHandler writes: chunks of pacedChunk bytes, numbered.
const (
	pacedChunks = 30
	pacedChunk  = 1000
	pacedEvery  = 100 * time.Millisecond
)

func pacedBody() []byte {
	var b bytes.Buffer
	for i := range pacedChunks {
		b.Write(bytes.Repeat([]byte{byte('a' + i%26)}, pacedChunk))
	}
	return b.Bytes()
}

// pacedHandler writes pacedBody a chunk every pacedEvery, flushing each (a source slower than the
// server's bounds, as a slow link is), and reports whether the request's context ended before the
// body was written.
func pacedHandler(ctxEnded chan<- bool) http.HandlerFunc {
	body := pacedBody()
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		rc := http.NewResponseController(w)
		tick := time.NewTicker(pacedEvery)
		defer tick.Stop()
		for i := 0; i < len(body); i += pacedChunk {
			if _, err := w.Write(body[i : i+pacedChunk]); err != nil {
				break
			}
			rc.Flush()
			<-tick.C
		}
		ctxEnded <- r.Context().Err() != nil
	}
}

// read reads a whole answer with a client that never times out by itself.
func read(t *testing.T, u string) (int, []byte, error) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

func TestStreamedBodiesOutlastTheServerBounds(t *testing.T) {
	ended := make(chan bool, 2)
	s := edge.New(edge.Config{Logger: discardLogger(), StreamIdle: 10 * pacedEvery})
	s.Handle("GET /v1/exports/{id}/files/{name}", pacedHandler(ended)) // streamed
	s.Handle("GET /v1/d/{dir}/exports/{id}", pacedHandler(ended))      // not streamed
	srv := serveWithTimeouts(t, s, testReadTimeout, testWriteTimeout)
	want := pacedBody()

	t.Run("an export file arrives whole, its request alive to the end", func(t *testing.T) {
		start := time.Now()
		status, got, err := read(t, srv.URL+"/v1/exports/x/files/directory.json")
		if err != nil || status != 200 || !bytes.Equal(got, want) {
			t.Fatalf("GET file: %d, %d bytes of %d, %v", status, len(got), len(want), err)
		}
		if took := time.Since(start); took < 2*testWriteTimeout {
			t.Fatalf("the body took %v: it does not outlast the server's bounds", took)
		}
		if <-ended {
			t.Error("the request's context ended while its body was written")
		}
	})
	t.Run("another route keeps the whole-response bound", func(t *testing.T) {
		_, got, err := read(t, srv.URL+"/v1/d/demo/exports/x")
		if err == nil || len(got) >= len(want) {
			t.Fatalf("a body outlasting the write bound arrived: %d bytes of %d, %v", len(got), len(want), err)
		}
		<-ended
	})
}

func TestAnEdgeForwardsAStreamedBodyWhole(t *testing.T) {
	ended := make(chan bool, 1)
	p := edge.New(edge.Config{Logger: discardLogger(), StreamIdle: 10 * pacedEvery})
	p.Handle("GET /v1/exports/{id}/files/{name}", pacedHandler(ended))
	primary := serveWithTimeouts(t, p, testReadTimeout, testWriteTimeout)
	u, _ := url.Parse(primary.URL)
	e := edge.New(edge.Config{Logger: discardLogger(), StreamIdle: 10 * pacedEvery, Forwarding: &edge.Forwarding{Primary: u},
		AnonymousLimits: edge.Limits{PerMinute: 1 << 20, PerDay: 1 << 20}})
	srv := serveWithTimeouts(t, e, testReadTimeout, testWriteTimeout)

	status, got, err := read(t, srv.URL+"/v1/exports/x/files/HealthcareService.ndjson")
	if want := pacedBody(); err != nil || status != 200 || !bytes.Equal(got, want) {
		t.Fatalf("GET file through the edge: %d, %d bytes of %d, %v", status, len(got), len(want), err)
	}
	if <-ended {
		t.Error("the primary's request context ended while its body was written")
	}
}

func TestAStalledClientIsCutAtTheIdleBound(t *testing.T) {
	const idle = 500 * time.Millisecond
	const size = 256 << 20 // past what the connection's buffers hold
	failed := make(chan error, 1)
	s := edge.New(edge.Config{Logger: discardLogger(), StreamIdle: idle})
	s.Handle("GET /v1/exports/{id}/files/{name}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.Itoa(size))
		chunk := make([]byte, 32<<10)
		for n := 0; n < size; n += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				failed <- err
				return
			}
		}
		failed <- nil
	}))
	// The whole-response bounds are far off: only the idle bound can cut the client.
	srv := serveWithTimeouts(t, s, time.Hour, time.Hour)

	resp, err := http.Get(srv.URL + "/v1/exports/x/files/directory.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.ReadFull(resp.Body, make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	// The client reads no more: the server's write fails once it has waited the idle bound.
	select {
	case err := <-failed:
		if !isTimeout(err) {
			t.Fatalf("the write to a client that stopped reading ended with %v, want a timeout", err)
		}
	case <-time.After(30 * idle):
		t.Fatalf("a client that stopped reading was not cut within %v", 30*idle)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	if err == nil || 1000+n >= size {
		t.Fatalf("the cut answer read on: %d more bytes, %v", n, err)
	}
}

func isTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}

func TestAnEdgeCutsItsClientWhenThePrimaryStopsSending(t *testing.T) {
	const idle = 500 * time.Millisecond
	ended, stop := make(chan struct{}), make(chan struct{})
	primary := serveWithTimeouts(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000000")
		w.Write(make([]byte, 1000))
		http.NewResponseController(w).Flush()
		select { // sends nothing more for as long as the edge holds the request
		case <-r.Context().Done():
			close(ended)
		case <-stop:
		}
	}), time.Hour, time.Hour)
	u, _ := url.Parse(primary.URL)
	e := edge.New(edge.Config{Logger: discardLogger(), StreamIdle: idle, Forwarding: &edge.Forwarding{Primary: u},
		AnonymousLimits: edge.Limits{PerMinute: 1 << 20, PerDay: 1 << 20}})
	srv := serveWithTimeouts(t, e, time.Hour, time.Hour)
	t.Cleanup(func() { close(stop) }) // before the servers close, which waits for their requests

	got := make(chan error, 1)
	go func() {
		resp, err := http.Get(srv.URL + "/v1/exports/x/files/directory.json")
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		got <- err
	}()
	select {
	case <-ended:
	case <-time.After(30 * idle):
		t.Fatalf("the edge held the request %v after its primary stopped sending", 30*idle)
	}
	if err := <-got; err == nil {
		t.Fatal("the client of a primary that stopped sending read a whole answer")
	}
}
