package edge

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
)

// minCompress is the smallest body that is compressed (section 8: text bodies of 1 KB or more).
const minCompress = 1024

// Compression levels: brotli 5 and gzip 5 compress a large page in a few milliseconds; brotli's
// highest levels take a hundred times longer for a few percent.
const (
	brotliLevel = 5
	gzipLevel   = 5
)

var (
	brotliWriters = sync.Pool{New: func() any { return brotli.NewWriterLevel(nil, brotliLevel) }}
	gzipWriters   = sync.Pool{New: func() any { w, _ := gzip.NewWriterLevel(nil, gzipLevel); return w }}
)

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
// text type with a known length of minCompress or more, not already encoded.
type compressWriter struct {
	http.ResponseWriter
	encoding string
	wrote    bool
	enc      io.WriteCloser
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
	if coded && status == http.StatusOK {
		h.Set("Content-Encoding", cw.encoding)
		switch cw.encoding {
		case "br":
			bw := brotliWriters.Get().(*brotli.Writer)
			bw.Reset(cw.ResponseWriter)
			cw.enc = bw
		case "gzip":
			gw := gzipWriters.Get().(*gzip.Writer)
			gw.Reset(cw.ResponseWriter)
			cw.enc = gw
		}
	}
	cw.ResponseWriter.WriteHeader(status)
}

func (cw *compressWriter) Write(b []byte) (int, error) {
	if !cw.wrote {
		cw.WriteHeader(http.StatusOK)
	}
	if cw.enc != nil {
		return cw.enc.Write(b)
	}
	return cw.ResponseWriter.Write(b)
}

// close finishes the compressed stream and returns the encoder to its pool.
func (cw *compressWriter) close() {
	if cw.enc == nil {
		return
	}
	cw.enc.Close()
	switch e := cw.enc.(type) {
	case *brotli.Writer:
		e.Reset(nil)
		brotliWriters.Put(e)
	case *gzip.Writer:
		e.Reset(nil)
		gzipWriters.Put(e)
	}
	cw.enc = nil
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (cw *compressWriter) Unwrap() http.ResponseWriter { return cw.ResponseWriter }

func compressible(contentType string) bool {
	mt, _, _ := strings.Cut(contentType, ";")
	mt = strings.TrimSpace(mt)
	return strings.HasPrefix(mt, "text/") || mt == "application/json" || strings.HasSuffix(mt, "+json")
}
