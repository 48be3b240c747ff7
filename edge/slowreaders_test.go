//go:build unix

package edge_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc/edge"
	"github.com/dirsvc/dirsvc/primary"
	"github.com/dirsvc/dirsvc/primary/demo"
)

// slowBuffer is the socket buffer of both ends of a slow reader's connection: an ordinary link's
// order of size rather than the megabytes loopback grows to, so that the server sends at the
// reader's pace instead of handing the whole body to the kernel at once.
const slowBuffer = 8 << 10

// smallSendBuffers is a listener whose connections have a send buffer of slowBuffer bytes.
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(slowBuffer)
	}
	return c, err
}

// serveSlowly serves h on 127.0.0.1 as the binary's public server does (whole-response bounds, the
// streamed routes excepted), through connections with small send buffers.
func serveSlowly(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.Listener = smallSendBuffers{srv.Listener}
	srv.Config.ReadTimeout, srv.Config.WriteTimeout = testReadTimeout, testWriteTimeout
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// slowReader reads one answer at rate bytes a second through a receive buffer of slowBuffer bytes.
type slowReader struct {
	header chan http.Header // the answer's headers, once they came (nil when the request failed)
	done   chan struct{}    // closed once the body is read to its end, or failed
	status int
	body   []byte
	err    error
	took   time.Duration // from the request to the body's end
}

// readSlowly starts reading u at rate bytes a second.
func readSlowly(t *testing.T, u string, rate int) *slowReader {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{
		DisableCompression: true, // the body as it is, larger than the buffers
		DialContext: (&net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
			var err error
			c.Control(func(fd uintptr) {
				err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, slowBuffer)
			})
			return err
		}}).DialContext,
	}}
	sr := &slowReader{header: make(chan http.Header, 1), done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); <-sr.done })
	go func() {
		defer close(sr.done)
		start := time.Now()
		req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
		resp, err := client.Do(req)
		if err != nil {
			sr.err = err
			sr.header <- nil
			return
		}
		defer resp.Body.Close()
		sr.status = resp.StatusCode
		sr.header <- resp.Header
		const every = 20 * time.Millisecond
		tick := time.NewTicker(every)
		defer tick.Stop()
		chunk := make([]byte, rate*int(every)/int(time.Second))
		var body bytes.Buffer
		for {
			// A chunk's worth a tick. Only io.EOF ends the body whole: a cut one ends otherwise
			// (io.ErrUnexpectedEOF from a chunked body that stops short).
			n, err := 0, error(nil)
			for n < len(chunk) && err == nil {
				var m int
				m, err = resp.Body.Read(chunk[n:])
				n += m
			}
			body.Write(chunk[:n])
			if err == io.EOF {
				break
			}
			if err != nil {
				sr.err = err
				break
			}
			<-tick.C
		}
		sr.body, sr.took = body.Bytes(), time.Since(start)
	}()
	return sr
}

// finished reports whether the reader has read its body to the end (or failed).
func (sr *slowReader) finished() bool {
	select {
	case <-sr.done:
		return true
	default:
		return false
	}
}

// TestSlowReadersOfSitemapsAndFeedPages reads a sitemap part and a page of the change feed, each
// several times larger than the connection's buffers, with clients that take many times the time
// budget of expensive requests to read them, on a node of one expensive slot. Both arrive whole, the
// same bytes a fast client receives; and while they are read, a search from another client is
// admitted and answered: reading the store is the expensive work, holding the slot and its budget,
// and writing to a slow client is not.
func TestSlowReadersOfSitemapsAndFeedPages(t *testing.T) {
	const budget = 500 * time.Millisecond
	var gen bytes.Buffer
	if err := demo.Generate(&gen, demo.Options{Slug: "gen", Country: "AU", Services: 1200, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	snap, err := primary.ParseImport(bytes.NewReader(gen.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	snap.Directory.Settings.PublicFeed = true
	s := newTestServerWith(t, func(c *edge.Config) {
		c.SitemapURLs = 2000 // part 1 is read in two batches
		c.Admission = edge.Admission{Expensive: 1, ExpensiveBudget: budget, ExpensiveWait: 4 * budget}
	})
	ctx := context.Background()
	w, err := s.store.Create(ctx, "gen")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Import(ctx, snap); err != nil {
		t.Fatal(err)
	}
	srv := serveSlowly(t, s.edge)
	const (
		sitemap = "/v1/d/gen/sitemap.xml?part=1"
		feed    = "/v1/d/gen/changes?expand=entity&limit=200"
		search  = "/v1/d/gen/search/services?q=clinic"
	)
	// What a fast client receives: the bodies the slow readers must receive whole.
	want := map[string][]byte{}
	for _, path := range []string{sitemap, feed} {
		r := s.get(t, path, "Accept-Encoding", "identity")
		if r.status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, r.status, r.body)
		}
		if path == sitemap {
			if urls, _ := checkSitemapFile(t, r, edge.DefaultBaseURL+"/v1/d/gen/sitemap.xml"); len(urls) != 2000 {
				t.Fatalf("sitemap part 1 lists %d pages, want 2000 (two batches)", len(urls))
			}
		}
		if len(r.body) < 16*slowBuffer {
			t.Fatalf("%s: %d bytes: too few to outlast the connection's buffers", path, len(r.body))
		}
		want[path] = r.body
	}
	// Each slow reader takes eight budgets to read its body.
	readers := map[string]*slowReader{}
	for path, body := range want {
		readers[path] = readSlowly(t, srv.URL+path, len(body)*int(time.Second)/int(8*budget))
	}
	for path, sr := range readers {
		if h := <-sr.header; h == nil || sr.status != http.StatusOK {
			<-sr.done
			t.Fatalf("GET %s slowly: %d %v", path, sr.status, sr.err)
		}
	}

	t.Run("a search is answered while they read", func(t *testing.T) {
		r := s.get(t, search)
		if r.status != http.StatusOK {
			t.Errorf("GET %s: %d %s", search, r.status, r.body)
		}
		for path, sr := range readers {
			if sr.finished() {
				t.Errorf("%s was read to its end before the search was answered: the test proves nothing", path)
			}
		}
	})
	t.Run("the bodies arrive whole", func(t *testing.T) {
		for path, sr := range readers {
			<-sr.done
			if sr.err != nil || !bytes.Equal(sr.body, want[path]) {
				t.Errorf("GET %s slowly: %d bytes of %d, %v", path, len(sr.body), len(want[path]), sr.err)
			}
			if sr.took < 4*budget {
				t.Errorf("GET %s slowly took %v: it does not outlast the time budget (%v)", path, sr.took, budget)
			}
		}
	})
}
