package edge

import (
	"bytes"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
)

// minCompress is the smallest body that is compressed (section 8: text bodies of 1 KB or more).
const minCompress = 1024

// Compression levels: brotli 5 and gzip 5 compress a view in tens of microseconds; brotli's highest
// levels take a hundred times longer for a few percent. A body of largeBody or more (a list page of
// 100 services is about 180 KB) is coded at level 1 of both: measured on such a page, brotli 1 takes
// about a third of brotli 5's time for 30% more bytes, gzip 1 two thirds of gzip 5's for 18% more.
// Such bodies are composed at read time and a paging client asks for each page once, so their first
// coding, which is all most of them get, is what they cost; their kept forms serve later requests.
const (
	brotliLevel      = 5
	gzipLevel        = 5
	largeBody        = 64 << 10
	largeBrotliLevel = 1
	largeGzipLevel   = 1
)

var (
	brotliWriters      = sync.Pool{New: func() any { return brotli.NewWriterLevel(nil, brotliLevel) }}
	gzipWriters        = sync.Pool{New: func() any { w, _ := gzip.NewWriterLevel(nil, gzipLevel); return w }}
	largeBrotliWriters = sync.Pool{New: func() any { return brotli.NewWriterLevel(nil, largeBrotliLevel) }}
	largeGzipWriters   = sync.Pool{New: func() any { w, _ := gzip.NewWriterLevel(nil, largeGzipLevel); return w }}
)

// encoder returns a pooled encoder of encoding ("br" or "gzip") for a body of n bytes writing to
// dst, and the function that returns it to its pool; nil for another encoding.
func encoder(encoding string, n int, dst io.Writer) (io.WriteCloser, func()) {
	large := n >= largeBody
	switch encoding {
	case "br":
		pool := &brotliWriters
		if large {
			pool = &largeBrotliWriters
		}
		bw := pool.Get().(*brotli.Writer)
		bw.Reset(dst)
		return bw, func() { bw.Reset(nil); pool.Put(bw) }
	case "gzip":
		pool := &gzipWriters
		if large {
			pool = &largeGzipWriters
		}
		gw := pool.Get().(*gzip.Writer)
		gw.Reset(dst)
		return gw, func() { gw.Reset(nil); pool.Put(gw) }
	}
	return nil, nil
}

// compress serves next with its text bodies of minCompress bytes or more compressed with brotli or
// gzip, as the request's Accept-Encoding allows. Every response varies by Accept-Encoding.
func compress(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h := w.Header(); h[keyVary] == nil {
			h[keyVary] = varyAcceptEncoding
		} else if !strings.Contains(strings.Join(h[keyVary], ","), "Accept-Encoding") {
			h.Add(keyVary, "Accept-Encoding")
		}
		enc := negotiateEncoding(r.Header.Values("Accept-Encoding"))
		if enc == "" || r.Method == http.MethodHead {
			next.ServeHTTP(w, r)
			return
		}
		cw := &compressWriter{ResponseWriter: w, encoding: enc}
		defer cw.close()
		next.ServeHTTP(cw, r)
	})
}

// negotiateEncoding returns "br", "gzip" or "" (identity) for Accept-Encoding values, preferring
// brotli when both are acceptable. A coding with q=0 is refused, also through "*".
func negotiateEncoding(values []string) string {
	if len(values) == 0 {
		return ""
	}
	q := map[string]float64{}
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
			name = strings.ToLower(strings.TrimSpace(name))
			weight := 1.0
			if p, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
				if f, err := strconv.ParseFloat(p, 64); err == nil {
					weight = f
				}
			}
			if name != "" {
				q[name] = weight
			}
		}
	}
	for _, enc := range []string{"br", "gzip"} {
		if w, ok := q[enc]; ok {
			if w > 0 {
				return enc
			}
			continue
		}
		if w, ok := q["*"]; ok && w > 0 {
			return enc
		}
	}
	return ""
}

// compressWriter compresses the body when the response turns out to be compressible: a 200 of a
// text type with a known length of minCompress or more, not already encoded. A handler that holds
// its body's coded forms, or a place to keep them, offers them first (offerForms), and the writer
// then sends the kept form instead of compressing again.
type compressWriter struct {
	http.ResponseWriter
	encoding string
	wrote    bool
	enc      io.WriteCloser
	release  func() // returns enc to its pool

	forms    forms  // offered: where the coded forms of formsOf are kept
	formsOf  []byte // the identity body they code
	form     []byte // the coded body to send in place of what the handler writes
	formSent bool
}

// forms keeps the coded forms of one body: dirsvc.Encoded beside a cached view, or a bodyCache
// entry for a body composed at read time.
type forms interface {
	Form(coding string, encode func() []byte) []byte
}

// offerForms tells the compression layer, when w is it, that the body the handler is about to write
// is body and its coded forms are kept by f, so it sends the kept form rather than compressing the
// body again (the first request in a coding makes and keeps it). Call it before WriteHeader, and
// then write exactly body.
func offerForms(w http.ResponseWriter, f forms, body []byte) {
	if cw, ok := w.(*compressWriter); ok && f != nil {
		cw.forms, cw.formsOf = f, body
	}
}

// encodeAll returns body coded by encoding ("br" or "gzip"), in a slice of its own length.
func encodeAll(encoding string, body []byte) []byte {
	var buf bytes.Buffer
	buf.Grow(len(body)/4 + 64)
	zw, release := encoder(encoding, len(body), &buf)
	if zw == nil {
		return nil
	}
	defer release()
	writeYielding(zw, body) // a bytes.Buffer does not fail
	zw.Close()
	return bytes.Clone(buf.Bytes())
}

// yieldChunk is how much of a body is compressed between yields of the CPU: 32 KB takes about
// 0.2 ms at level 1 (a list page of 100 services is six of them).
const yieldChunk = 32 << 10

// writeYielding writes body to w in chunks of yieldChunk, yielding the CPU between them. Go preempts
// a running goroutine only after 10 ms, and a request waiting for a CPU waits for every goroutine
// ahead of it to run its slice; compressing a large body in one go would make every brief read
// queued behind it wait for all of it (measured with 2,000 connections of the soak mix).
func writeYielding(w io.Writer, body []byte) (int, error) {
	n := 0
	for len(body) > yieldChunk {
		m, err := w.Write(body[:yieldChunk])
		n += m
		if err != nil {
			return n, err
		}
		body = body[yieldChunk:]
		runtime.Gosched()
	}
	m, err := w.Write(body)
	return n + m, err
}

func (cw *compressWriter) WriteHeader(status int) {
	if cw.wrote {
		return
	}
	cw.wrote = true
	h := cw.Header()
	n, err := strconv.Atoi(h.Get("Content-Length"))
	coded := (status == http.StatusOK || status == http.StatusNotModified) && err == nil && n >= minCompress &&
		h.Get("Content-Encoding") == "" && compressible(h.Get("Content-Type"))
	if coded {
		if tag := h.Get("ETag"); strings.HasSuffix(tag, `"`) {
			// Each coding is its own representation, with its own strong validator; a 304 carries
			// the one its 200 would.
			h.Set("ETag", strings.TrimSuffix(tag, `"`)+"-"+cw.encoding+`"`)
		}
		h.Del("Content-Length")
	}
	if coded && status == http.StatusOK && cw.forms != nil && len(cw.formsOf) == n {
		if cw.form = cw.forms.Form(cw.encoding, func() []byte { return encodeAll(cw.encoding, cw.formsOf) }); cw.form != nil {
			h.Set("Content-Encoding", cw.encoding)
			h.Set("Content-Length", strconv.Itoa(len(cw.form)))
			cw.ResponseWriter.WriteHeader(status)
			return
		}
	}
	if coded && status == http.StatusOK {
		h.Set("Content-Encoding", cw.encoding)
		cw.enc, cw.release = encoder(cw.encoding, n, cw.ResponseWriter)
	}
	cw.ResponseWriter.WriteHeader(status)
}

func (cw *compressWriter) Write(b []byte) (int, error) {
	if !cw.wrote {
		cw.WriteHeader(http.StatusOK)
	}
	if cw.form != nil {
		// The handler writes the body the form codes (offerForms); the form goes out once instead.
		if !cw.formSent {
			cw.formSent = true
			if _, err := cw.ResponseWriter.Write(cw.form); err != nil {
				return 0, err
			}
		}
		return len(b), nil
	}
	if cw.enc != nil {
		return writeYielding(cw.enc, b)
	}
	return cw.ResponseWriter.Write(b)
}

// close finishes the compressed stream and returns the encoder to its pool.
func (cw *compressWriter) close() {
	if cw.enc == nil {
		return
	}
	cw.enc.Close()
	cw.release()
	cw.enc, cw.release = nil, nil
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (cw *compressWriter) Unwrap() http.ResponseWriter { return cw.ResponseWriter }

func compressible(contentType string) bool {
	mt, _, _ := strings.Cut(contentType, ";")
	mt = strings.TrimSpace(mt)
	return strings.HasPrefix(mt, "text/") || mt == "application/json" || strings.HasSuffix(mt, "+json")
}
