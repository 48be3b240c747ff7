package edge

import (
	"bufio"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/dirsvc/dirsvc"
)

// The sitemap of a directory (sitemaps.org protocol 0.9) lists the pages a search engine may index:
// the page of every service, location and organisation the public tier may read, whoever asks, so
// a record hidden from the public never appears in it. Practitioners are left out: listing them in
// bulk needs practitioners:read (specification section 5.4). Up to SitemapURLs pages it is one
// urlset; past that, sitemap.xml is a sitemap index of parts, sitemap.xml?part=N, each a urlset of
// up to SitemapURLs pages in public-ID order. The parts sit beside the index, in the folder of the
// pages they list, as the protocol asks.

// SitemapURLs is the most URLs one sitemap file lists (the protocol's limit).
const SitemapURLs = 50000

// sitemapBatch is how many pages a sitemap reads at a time: what it holds in memory.
const sitemapBatch = 1000

const sitemapNS = "http://www.sitemaps.org/schemas/sitemap/0.9"

var partParam = param{name: "part"}

// sitemapCacheControl lets shared caches keep a sitemap five minutes (specification section 8).
var sitemapCacheControl = []string{"public, s-maxage=300"}

// sitemapURLs is the split size: Config.SitemapURLs, else SitemapURLs.
func (s *Server) sitemapURLs() int {
	if n := s.cfg.SitemapURLs; n > 0 && n < SitemapURLs {
		return n
	}
	return SitemapURLs
}

func (s *Server) handleGetSitemap(w http.ResponseWriter, r *http.Request) {
	q, err := readQuery(r, partParam)
	if err != nil {
		s.error(w, r, err)
		return
	}
	ctx := r.Context()
	slug := r.PathValue("dir")
	dir, _, err := s.directory(ctx, slug)
	if err != nil {
		s.readError(w, r, err)
		return
	}
	total, err := dir.PublicPageCount(ctx)
	if err != nil {
		s.error(w, r, err)
		return
	}
	per := s.sitemapURLs()
	parts := max(1, (total+per-1)/per)
	part := 0 // the index, when split
	if v, ok := q.get(partParam.name); ok {
		n, err := strconv.Atoi(v)
		if err != nil || strings.Trim(v, "0123456789") != "" || n < 1 || n > 1000 {
			s.error(w, r, dirsvc.InvalidParam("part", "part must be an integer from 1 to 1000, in digits only"))
			return
		}
		if n > parts {
			s.readError(w, r, dirsvc.ErrNotFound)
			return
		}
		part = n
	} else if parts == 1 {
		part = 1
	}
	base := s.cfg.BaseURL + "/v1/d/" + slug
	if part == 0 {
		// The index is written from the count alone (at most 1,000 parts): the expensive work is done.
		r = expensiveDone(r, 0)
		s.startSitemap(w, r)
		bw := bufio.NewWriter(w)
		bw.WriteString(xml.Header + `<sitemapindex xmlns="` + sitemapNS + `">` + "\n")
		for i := 1; i <= parts; i++ {
			bw.WriteString("<sitemap><loc>")
			xml.EscapeText(bw, []byte(base+"/sitemap.xml?part="+strconv.Itoa(i)))
			bw.WriteString("</loc></sitemap>\n")
		}
		bw.WriteString("</sitemapindex>\n")
		bw.Flush()
		return
	}
	s.writeURLSet(w, r, dir, base, (part-1)*per, per)
}

// startSitemap writes the headers of a sitemap answer. Its body is the public tier's whoever asks,
// but an answer to a client stays private, as every answer to a client is (the guard set that).
func (s *Server) startSitemap(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h[keyContentType] = []string{"application/xml; charset=utf-8"}
	if tokenFrom(r.Context()) == nil {
		h[keyCacheControl] = sitemapCacheControl
	}
	s.cacheTags(w, r)
}

// writeURLSet streams the urlset of the count pages from the offset-th, a batch at a time. A read
// that fails once the answer has begun aborts the connection, so a truncated sitemap is never taken
// for a whole one.
//
// Reading the store is the expensive work, and only that holds the request's expensive slots and
// runs under a time budget: each batch is read in a step of its own (expensiveStep), and the slots
// go back while the batch is written. A part of 50,000 pages takes a slow client minutes (3.85 MB at
// 300 KB/s is 13 s); under one budget it was cut part way, and holding the slots for it would let a
// few slow readers keep every list and search of the node waiting. Composing the part whole before
// writing it would hold the slots as briefly, but would hold the whole part (megabytes) in memory
// for as long as each slow client reads; a batch at a time, a request holds one batch of pages and
// the writer's buffer (about 100 KB at most, whatever the part's size). The batches follow one
// another by public ID (keyset), so a part read over minutes lists each page once.
func (s *Server) writeURLSet(w http.ResponseWriter, r *http.Request, dir dirsvc.DirectoryReader, base string, offset, count int) {
	batch, err := dir.PublicPages(r.Context(), "", offset, min(sitemapBatch, count))
	if err != nil {
		s.error(w, r, err)
		return
	}
	r = expensiveDone(r, 0)
	s.startSitemap(w, r)
	bw := bufio.NewWriter(w)
	bw.WriteString(xml.Header + `<urlset xmlns="` + sitemapNS + `">` + "\n")
	for written := 0; len(batch) > 0; {
		for _, p := range batch {
			writeSitemapURL(bw, base, p)
		}
		written += len(batch)
		if written >= count || len(batch) < sitemapBatch {
			break
		}
		if batch, err = s.readSitemapBatch(r, dir, batch[len(batch)-1].PublicID, min(sitemapBatch, count-written)); err != nil {
			bw.Flush()
			switch {
			case r.Context().Err() != nil: // the client went away
			case errors.Is(err, errNoSlot) || errors.Is(err, errOverBudget):
				s.log.Warn("a sitemap was cut: the node is busy", "dir", r.PathValue("dir"), "err", err)
				s.shedFor(ShedExpensive)
			default:
				s.log.Error("read sitemap", "dir", r.PathValue("dir"), "err", err)
			}
			panic(http.ErrAbortHandler)
		}
	}
	bw.WriteString("</urlset>\n")
	bw.Flush()
}

// readSitemapBatch reads the next batch of a sitemap part, after the public ID after, in a step of
// expensive work of its own.
func (s *Server) readSitemapBatch(r *http.Request, dir dirsvc.DirectoryReader, after string, n int) ([]dirsvc.PublicPage, error) {
	ctx, done, err := s.expensiveStep(r)
	if err != nil {
		return nil, err
	}
	defer done()
	batch, err := dir.PublicPages(ctx, after, 0, n)
	if err != nil && errors.Is(context.Cause(ctx), errOverBudget) {
		return nil, errOverBudget
	}
	return batch, err
}

func writeSitemapURL(w io.Writer, base string, p dirsvc.PublicPage) {
	io.WriteString(w, "<url><loc>")
	xml.EscapeText(w, []byte(base+"/"+recordPaths[dirsvc.KindOfID(p.PublicID)]+"/"+url.PathEscape(p.PublicID)))
	io.WriteString(w, "</loc>")
	if !p.Updated.IsZero() {
		io.WriteString(w, "<lastmod>"+p.Updated.UTC().Format(time.RFC3339)+"</lastmod>")
	}
	io.WriteString(w, "</url>\n")
}
