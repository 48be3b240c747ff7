package edge

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/dirsvc/dirsvc"
)

// The change feed (section 4.4): a reader's events after a position of the directory's change log,
// projected and narrowed as its reads are (dirdb Directory.Changes). The feed of one reader is
// made by Feed, which the primary's webhooks call too, so a webhook endpoint receives the very
// items, in the very tier, of its client's feed.

// FeedItem is one item of a change feed (section 2.5).
type FeedItem struct {
	PublicID      string      `json:"publicId"`
	EntityType    dirsvc.Kind `json:"entityType"`
	Version       int64       `json:"version"`
	LocalRevision int64       `json:"localRevision"`
	EventType     string      `json:"eventType"`
	// Cursor is the position after this item, usable as since.
	Cursor           string    `json:"cursor"`
	SurvivorPublicID string    `json:"survivorPublicId,omitempty"`
	Origin           string    `json:"origin,omitempty"`
	OccurredAt       time.Time `json:"occurredAt"`
	// Entity is the record as the reader sees it now (with expand=entity), when it still does.
	Entity json.RawMessage `json:"entity,omitempty"`
	// Seq is the item's position in the directory's change log.
	Seq int64 `json:"-"`
}

// FeedPage is a page of a reader's change feed. NextCursor (and Next, the position it names) is
// where the next page starts: after the last item, or after the last event looked at when the page
// is short. HasMore reports whether the log holds events after it; a page may be short, even empty,
// while it does (events for other readers are skipped a bounded number at a time).
type FeedPage struct {
	Items      []FeedItem `json:"items"`
	NextCursor string     `json:"nextCursor"`
	HasMore    bool       `json:"hasMore"`
	Next       int64      `json:"-"`
}

// FeedQuery asks for a page of a reader's feed: after the position After (from the oldest event
// retained with Oldest), of the kinds Kinds (all when empty), at most Limit items, each with the
// record's current view when Expand.
type FeedQuery struct {
	After  int64
	Oldest bool
	Kinds  []dirsvc.Kind
	Limit  int
	Expand bool
}

// Feed returns a page of the change feed of a directory as the reader receives it: the caller of
// GET changes, or the client of a webhook endpoint. A position below the oldest retained is an
// error of code gone (410); an unknown directory is not found.
func (s *Server) Feed(ctx context.Context, slug string, fr dirsvc.FeedReader, q FeedQuery) (*FeedPage, error) {
	dir, _, err := s.directory(ctx, slug)
	if err != nil {
		return nil, err
	}
	return s.feed(ctx, slug, dir, fr, q)
}

func (s *Server) feed(ctx context.Context, slug string, dir dirsvc.DirectoryReader, fr dirsvc.FeedReader, q FeedQuery) (*FeedPage, error) {
	cp, err := dir.Changes(ctx, fr, dirsvc.ChangeQuery{After: q.After, Oldest: q.Oldest, Kinds: q.Kinds, Limit: q.Limit, Expand: q.Expand})
	if err != nil {
		return nil, err
	}
	sl := s.cursors.sealer(feedKey(slug, fr.Viewer))
	page := &FeedPage{Items: make([]FeedItem, 0, len(cp.Changes)), HasMore: cp.More, Next: cp.Next,
		NextCursor: sl.seal(cp.Next)}
	for _, c := range cp.Changes {
		page.Items = append(page.Items, FeedItem{PublicID: c.PublicID, EntityType: c.Kind, Version: c.Version,
			LocalRevision: c.LocalRevision, EventType: c.EventType, Cursor: sl.seal(c.Seq),
			SurvivorPublicID: c.Survivor, Origin: c.Origin, OccurredAt: c.At.UTC(), Entity: c.View, Seq: c.Seq})
	}
	return page, nil
}

// feedKey is what feed cursors are bound to: the directory and the reader's view (tier and
// narrowing), so a cursor of another directory or reader is refused.
func feedKey(slug string, v dirsvc.Viewer) string { return queryKey(slug, viewerKey(v), "changes") }

// The query parameters of the change feed.
var (
	sinceParam  = param{name: "since"}
	typesParam  = param{name: "types", list: true}
	expandParam = param{name: "expand"}
)

// feedReader returns who reads the feed of the request: a client with feed:read, whose
// practitioners in bulk need practitioners:read; or, where the directory opened its public feed,
// an anonymous caller, who receives practitioners only where anyone may list them.
func (s *Server) feedReader(r *http.Request, info *dirsvc.Directory) (dirsvc.FeedReader, error) {
	t := tokenFrom(r.Context())
	if t == nil {
		if !info.Settings.PublicFeed {
			return dirsvc.FeedReader{}, dirsvc.Errorf(dirsvc.EForbiddenScope, "The change feed needs a client with the scope %s.", dirsvc.ScopeFeedRead)
		}
		return dirsvc.FeedReader{Viewer: dirsvc.Viewer{Audience: dirsvc.Public}, Practitioners: info.Settings.AnyoneMayListPractitioners}, nil
	}
	v, err := s.viewer(r, dirsvc.ScopeFeedRead)
	if err != nil {
		return dirsvc.FeedReader{}, err
	}
	return dirsvc.FeedReader{Viewer: v, Practitioners: t.HasScope(dirsvc.ScopePractitionersRead)}, nil
}

// feedQuery reads the parameters of GET changes; a bad one is a 400 naming it.
func (s *Server) feedQuery(q query, slug string, v dirsvc.Viewer) (FeedQuery, error) {
	var fq FeedQuery
	var err error
	if fq.Limit, err = q.limit(dirsvc.DefaultFeedLimit, dirsvc.MaxFeedLimit); err != nil {
		return fq, err
	}
	kinds, err := q.list("types", func(k string) bool { return slices.Contains(dirsvc.Kinds, dirsvc.Kind(k)) })
	if err != nil {
		return fq, err
	}
	for _, k := range kinds {
		fq.Kinds = append(fq.Kinds, dirsvc.Kind(k))
	}
	expand, err := q.oneOf("expand", "entity")
	if err != nil {
		return fq, err
	}
	fq.Expand = expand == "entity"
	since, ok := q.get("since")
	if !ok {
		fq.Oldest = true
		return fq, nil
	}
	if len(since) > maxCursor {
		return fq, dirsvc.InvalidParam("since", "since is at most %d characters", maxCursor)
	}
	n, ok := s.cursors.openSeq(since, feedKey(slug, v))
	if !ok {
		return fq, dirsvc.InvalidParam("since", "since is not a cursor this feed gave you")
	}
	fq.After = n
	return fq, nil
}

func (s *Server) handleListChanges(w http.ResponseWriter, r *http.Request) {
	q, err := readQuery(r, sinceParam, typesParam, expandParam, limitParam)
	if err != nil {
		s.error(w, r, err)
		return
	}
	slug := r.PathValue("dir")
	dir, info, err := s.directory(r.Context(), slug)
	if err != nil {
		s.error(w, r, err)
		return
	}
	fr, err := s.feedReader(r, info)
	if err != nil {
		s.error(w, r, err)
		return
	}
	fq, err := s.feedQuery(q, slug, fr.Viewer)
	if err != nil {
		s.error(w, r, err)
		return
	}
	page, err := s.feed(r.Context(), slug, dir, fr, fq)
	if err != nil {
		s.error(w, r, err)
		return
	}
	size := 256
	for _, it := range page.Items {
		size += 320 + len(it.Entity)
	}
	body := appendFeedPage(make([]byte, 0, size), page)
	// The page is composed (at most MaxFeedLimit items): what is left is writing it, which a slow
	// client can make last minutes. The expensive slots go back now and the time budget ends, so
	// that slow readers of the feed keep no list or search of the node waiting. The body is held
	// until it is written, counted in the node's bound of such bodies (expensiveDone). Its coding
	// by the compression layer comes after, outside the slots: it is made once per body (the body
	// cache keeps the coded forms for every later request) and yields the CPU as it goes.
	r = expensiveDone(r, len(body))
	h := w.Header()
	if page.HasMore {
		// The next page, named before the body (RFC 8288): a harvester may ask for it while it
		// reads this one.
		next := r.URL.Query()
		next.Set("since", page.NextCursor)
		h.Add("Link", "<"+r.URL.EscapedPath()+"?"+next.Encode()+`>; rel="next"`)
	}
	if tokenFrom(r.Context()) == nil {
		h.Set("Cache-Control", "no-store") // a page grows as events are logged; clients' answers are private already
	}
	if fq.Expand && bytes.Contains(body, []byte(`"address"`)) {
		setAttribution(h, info.Attribution)
	}
	setAudience(w, fr.Viewer.Audience)
	etag, f := s.composed(body)
	writeTagged(w, r, body, etag, f)
}

// appendFeedPage appends the JSON of a feed page: what json.Marshal gives, without re-checking
// the stored views it carries (a page of 500 expanded records holds about a megabyte of them).
func appendFeedPage(b []byte, p *FeedPage) []byte {
	b = append(b, `{"items":[`...)
	for i := range p.Items {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendFeedItem(b, &p.Items[i])
	}
	b = append(b, `],"nextCursor":`...)
	b = appendPlain(b, p.NextCursor)
	b = append(b, `,"hasMore":`...)
	b = strconv.AppendBool(b, p.HasMore)
	return append(b, '}')
}

// appendPlain appends s as a JSON string: as it is, quoted, when it holds only ASCII letters,
// digits and _ - . : (public IDs, kinds, event types, cursors), else as encoding/json writes it.
func appendPlain(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == ':') {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

func appendFeedItem(b []byte, it *FeedItem) []byte {
	b = append(b, `{"publicId":`...)
	b = appendPlain(b, it.PublicID)
	b = append(b, `,"entityType":`...)
	b = appendPlain(b, string(it.EntityType))
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, it.Version, 10)
	b = append(b, `,"localRevision":`...)
	b = strconv.AppendInt(b, it.LocalRevision, 10)
	b = append(b, `,"eventType":`...)
	b = appendPlain(b, it.EventType)
	b = append(b, `,"cursor":`...)
	b = appendPlain(b, it.Cursor)
	if it.SurvivorPublicID != "" {
		b = append(b, `,"survivorPublicId":`...)
		b = appendPlain(b, it.SurvivorPublicID)
	}
	if it.Origin != "" {
		b = append(b, `,"origin":`...)
		b = appendPlain(b, it.Origin)
	}
	b = append(b, `,"occurredAt":"`...)
	b = it.OccurredAt.AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	if it.Entity != nil {
		b = append(b, `,"entity":`...)
		b = append(b, it.Entity...)
	}
	return append(b, '}')
}
