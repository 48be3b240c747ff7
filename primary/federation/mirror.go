package federation

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"path"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/primary/seal"
	"github.com/dirsvc/dirsvc/primary/webhook"
	jsonv2 "github.com/go-json-experiment/json"
)

// Mirroring (this directory as the aggregate): each mirror harvests its upstream's change feed
// (GET /v1/d/{dir}/changes?expand=entity) with the client credentials the upstream gave this
// directory, and writes each page, with the cursor after it, in one transaction, so a restart
// resumes where the last page ended. A 410 (the cursor is older than the upstream keeps) or a
// changed tier begins a full harvest from the upstream's oldest event; what that harvest did not see
// is then asked for one by one at the upstream's read API and removed here when it is gone there.

// MirrorConfig configures the harvester.
type MirrorConfig struct {
	Store dirsvc.MirrorStore
	// Directories lists the directories on this primary (whose mirrors are harvested).
	Directories func(ctx context.Context) ([]string, error)
	Guard       *webhook.Guard
	// Sealer opens mirrors' client secrets, and seals those stored in the clear (see SealSecret).
	Sealer *seal.Sealer
	// Interval is the wait between polls of an upstream that had nothing more (default 1 s).
	Interval time.Duration
	// MaxBackoff bounds the wait after failures, which doubles from Interval (default 1 minute).
	MaxBackoff time.Duration
	// PageSize is the feed page asked for (default and most 500).
	PageSize int
	// Rescan is how often the configured mirrors are read again (default 5 s).
	Rescan time.Duration
	Log    *slog.Logger
	// Wrote, when set, is told of every batch of a harvest written (the node's metrics count the
	// records mirrors write and refuse).
	Wrote func(dirsvc.MirrorStats)
}

// Harvester runs mirrors' harvests.
type Harvester struct {
	cfg    MirrorConfig
	client *upstreamClient
}

// NewHarvester returns a harvester with cfg's defaults filled in.
func NewHarvester(cfg MirrorConfig) *Harvester {
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = time.Minute
	}
	if cfg.PageSize <= 0 || cfg.PageSize > dirsvc.MaxFeedLimit {
		cfg.PageSize = dirsvc.MaxFeedLimit
	}
	if cfg.Rescan <= 0 {
		cfg.Rescan = 5 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Guard == nil {
		cfg.Guard = webhook.NewGuard(false)
	}
	return &Harvester{cfg: cfg, client: newUpstreamClient(cfg.Guard, cfg.Sealer, 60*time.Second, 3)}
}

// HarvestStats counts what a harvest did.
type HarvestStats struct {
	Pages   int  `json:"pages"`
	Written int  `json:"written"`
	Refused int  `json:"refused"`
	Checked int  `json:"checked"` // records a full harvest did not see, asked for one by one
	Gone    bool `json:"restarted,omitempty"`
}

// Run harvests every mirror of every directory until ctx ends: one loop per mirror, started and
// stopped as mirrors are added and removed.
func (h *Harvester) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	running := map[string]context.CancelFunc{}
	t := time.NewTicker(h.cfg.Rescan)
	defer t.Stop()
	for {
		seen := map[string]bool{}
		slugs, err := h.cfg.Directories(ctx)
		if err != nil && ctx.Err() == nil {
			h.cfg.Log.Error("mirrors: list directories", "err", err)
		}
		for _, slug := range slugs {
			ms, err := h.cfg.Store.Mirrors(ctx, slug)
			if err != nil {
				if ctx.Err() == nil && dirsvc.ErrorCode(err) != dirsvc.ENotFound {
					h.cfg.Log.Error("mirrors: read configuration", "directory", slug, "err", err)
				}
				continue
			}
			for _, m := range ms {
				key := slug + "\x00" + m.Name
				seen[key] = true
				if running[key] == nil {
					mctx, cancel := context.WithCancel(ctx)
					running[key] = cancel
					wg.Add(1)
					go func() { defer wg.Done(); h.loop(mctx, slug, m.Name) }()
				}
			}
		}
		for key, cancel := range running {
			if !seen[key] && err == nil {
				cancel()
				delete(running, key)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// loop harvests one mirror until ctx ends (Run ends it once the mirror is removed): at once while
// the upstream has more, every Interval once caught up, and after a failure a wait that doubles up
// to MaxBackoff.
func (h *Harvester) loop(ctx context.Context, slug, name string) {
	failures := 0
	r := &run{h: h, slug: slug, name: name}
	defer r.stopReading()
	for ctx.Err() == nil {
		more, _, err := r.step(ctx)
		wait := time.Duration(0)
		switch {
		case err != nil && dirsvc.ErrorCode(err) == dirsvc.ENotFound && statusOf(err) == 0:
			wait = h.cfg.Interval // the mirror was removed: Run ends this loop when it sees so
		case err != nil:
			if ctx.Err() != nil {
				return
			}
			failures++
			h.cfg.Log.Warn("mirror harvest failed", "directory", slug, "mirror", name, "failures", failures, "err", err)
			if ferr := h.cfg.Store.MirrorFailed(ctx, slug, name, err.Error()); ferr != nil && ctx.Err() == nil {
				h.cfg.Log.Error("mirror: record the failure", "directory", slug, "mirror", name, "err", ferr)
			}
			wait = min(h.cfg.Interval<<min(failures, 16), h.cfg.MaxBackoff)
			wait += rand.N(wait/4 + 1)
		case !more:
			failures = 0
			wait = h.cfg.Interval
		default:
			failures = 0
		}
		if wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
	}
}

// RunOnce harvests one mirror until it has caught up with its upstream (dirsvc mirror run-once).
func (h *Harvester) RunOnce(ctx context.Context, slug, name string) (HarvestStats, error) {
	var total HarvestStats
	r := &run{h: h, slug: slug, name: name}
	defer r.stopReading() // after a failure, pages may be being read ahead
	for {
		more, st, err := r.step(ctx)
		total.Pages += st.Pages
		total.Written += st.Written
		total.Refused += st.Refused
		total.Checked += st.Checked
		total.Gone = total.Gone || st.Gone
		if err != nil {
			if ferr := h.cfg.Store.MirrorFailed(ctx, slug, name, err.Error()); ferr != nil {
				err = errors.Join(err, ferr)
			}
			return total, err
		}
		if !more {
			return total, nil
		}
	}
}

// mirror returns the mirror's configuration and state as stored now.
func (h *Harvester) mirror(ctx context.Context, slug, name string) (*dirsvc.Mirror, error) {
	ms, err := h.cfg.Store.Mirrors(ctx, slug)
	if err != nil {
		return nil, err
	}
	for i := range ms {
		if m := &ms[i]; m.Name == name {
			if !sealed(m) && h.cfg.Sealer != nil {
				// Stored in the clear by a build that did not seal secrets: sealed now.
				sealedSecret := SealSecret(h.cfg.Sealer, m, m.Secret)
				if err := h.cfg.Store.SetMirrorSecret(ctx, slug, name, sealedSecret); err != nil {
					return nil, err
				}
				m.Secret = sealedSecret
			}
			return m, nil
		}
	}
	return nil, dirsvc.Errorf(dirsvc.ENotFound, "The directory has no mirror named %q.", name)
}

// feedPage is the part of a feed page a harvest reads.
type feedPage struct {
	Items      []feedItem `json:"items"`
	NextCursor string     `json:"nextCursor"`
	HasMore    bool       `json:"hasMore"`
}

// feedItem is the part of a feed item a harvest reads.
type feedItem struct {
	PublicID         string          `json:"publicId"`
	EntityType       dirsvc.Kind     `json:"entityType"`
	EventType        string          `json:"eventType"`
	SurvivorPublicID string          `json:"survivorPublicId"`
	Entity           json.RawMessage `json:"entity"`
}

// run is the harvest of one mirror by one goroutine: while a page is made into records and written,
// the pages after it are already being read from the upstream (the two sides' work overlaps).
type run struct {
	h          *Harvester
	slug, name string
	// reading is the read of the page the harvest takes next, begun ahead (readAhead), if any;
	// stopReads ends it and the reads after it.
	reading   *pageRead
	slots     chan struct{} // a place for each page read and not yet taken (pagesAhead)
	stopReads context.CancelFunc
	// During a full harvest, pages are gathered (pending, read up to pendingCursor) and written
	// together in bulk once bulkHarvest changes are waiting or the feed has no more.
	pending       []dirsvc.MirrorOp
	pendingCursor string
	pendingSince  time.Time // when the harvest asked for the first page of what pending holds
	// harvest names the mirror and full harvest that reading and pending belong to.
	harvest string
}

// pagesAhead bounds the pages read ahead of the one the harvest is making into records: each is up
// to a few megabytes in memory.
const pagesAhead = 2

// pageRead is the read of the page of an upstream's feed after cursor. next (sent before page) is
// the read of the page after it, begun as soon as the upstream named that page: by the Link header
// (rel="next") this API sends before a page's body, else by the page's nextCursor. It is nil when
// none was begun (the feed had no more, or the read failed).
type pageRead struct {
	cursor string
	next   chan *pageRead // buffered: sent once
	page   chan fetched   // buffered: sent once
}

// readAhead begins the read of the page after cursor, and the reads after it as the upstream names
// them, each once it has a place among the pagesAhead that slots holds; ctx ends them.
func (h *Harvester) readAhead(ctx context.Context, m *dirsvc.Mirror, cursor string, slots chan struct{}) *pageRead {
	p := &pageRead{cursor: cursor, next: make(chan *pageRead, 1), page: make(chan fetched, 1)}
	go func() {
		var next *pageRead
		begin := func(after string) {
			next = h.readAhead(ctx, m, after, slots)
			p.next <- next
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			p.next <- nil
			p.page <- fetched{err: ctx.Err()}
			return
		}
		f := h.fetch(ctx, m, cursor, begin)
		if next == nil {
			if f.err == nil && f.hasMore {
				begin(f.next) // an upstream that sends no Link header
			} else {
				p.next <- nil
			}
		}
		p.page <- f
	}()
	return p
}

// read returns the page of the mirror's upstream feed after cursor: read ahead, or else read now
// (and the pages after it then read ahead).
func (r *run) read(ctx context.Context, m *dirsvc.Mirror, cursor string) fetched {
	if r.reading == nil || r.reading.cursor != cursor {
		r.stopReading()
		rctx, cancel := context.WithCancel(ctx)
		r.stopReads, r.slots = cancel, make(chan struct{}, pagesAhead)
		r.reading = r.h.readAhead(rctx, m, cursor, r.slots)
	}
	p := r.reading
	r.reading = <-p.next
	f := <-p.page
	select {
	case <-r.slots: // the page is taken: its place is for one further on
	default: // it never had one (its read was ended first)
	}
	if r.reading == nil {
		r.stopReading()
	}
	return f
}

// stopReading ends the reads begun ahead.
func (r *run) stopReading() {
	if r.stopReads != nil {
		r.stopReads()
	}
	r.reading, r.slots, r.stopReads = nil, nil, nil
}

// bulkHarvest is how many changes of a full harvest are gathered for one bulk write.
const bulkHarvest = 250_000

// bulkWrite is the size from which gathered changes are written in bulk rather than in parts.
const bulkWrite = 20_000

// fetched is a page of an upstream's feed read after cursor; makeOps makes it into what to write.
type fetched struct {
	gone    bool            // 410: the upstream no longer keeps the cursor
	tier    dirsvc.Audience // the tier the upstream gave the client
	items   []feedItem
	aud     dirsvc.Audiences
	next    string
	hasMore bool
	err     error
}

// fetch reads the page of the mirror's upstream feed after cursor. Where the answer's Link header
// names the next page, fetch calls next with its cursor before it reads the body.
func (h *Harvester) fetch(ctx context.Context, m *dirsvc.Mirror, cursor string, next func(cursor string)) (f fetched) {
	q := url.Values{"expand": {"entity"}, "limit": {strconv.Itoa(h.cfg.PageSize)}}
	if cursor != "" {
		q.Set("since", cursor)
	}
	resp, err := h.client.do(ctx, m, http.MethodGet, "/changes?"+q.Encode(), nil, http.StatusOK)
	if statusOf(err) == http.StatusGone {
		return fetched{gone: true}
	} else if err != nil {
		return fetched{err: fmt.Errorf("read the upstream feed: %w", err)}
	}
	defer resp.Body.Close()
	if f.tier, err = dirsvc.ParseAudience(resp.Header.Get("X-DIR-Audience")); err != nil || f.tier == dirsvc.Staff {
		return fetched{err: fmt.Errorf("the upstream feed names no tier (X-DIR-Audience %q)", resp.Header.Get("X-DIR-Audience"))}
	}
	if m.Tier != "" && m.Tier != f.tier.String() {
		return f // the caller begins a full harvest
	}
	if f.aud, err = publishedTo(m.Audiences, f.tier); err != nil {
		return fetched{err: err}
	}
	if c := nextFromLink(resp.Header); c != "" {
		next(c)
	}
	var page feedPage
	if err := jsonv2.UnmarshalRead(resp.Body, &page); err != nil {
		return fetched{err: fmt.Errorf("read the upstream feed: %w", err)}
	}
	if page.NextCursor == "" {
		return fetched{err: errors.New("read the upstream feed: the page names no next cursor")}
	}
	f.items, f.next, f.hasMore = page.Items, page.NextCursor, page.HasMore
	return f
}

// nextFromLink returns the since cursor of the link of rel "next" in Link headers (RFC 8288), if
// any.
func nextFromLink(h http.Header) string {
	for _, v := range h.Values("Link") {
		for _, link := range strings.Split(v, ",") {
			target, params, ok := strings.Cut(strings.TrimSpace(link), ";")
			if !ok || !strings.HasPrefix(target, "<") || !strings.HasSuffix(target, ">") {
				continue
			}
			for _, p := range strings.Split(params, ";") {
				name, value, _ := strings.Cut(strings.TrimSpace(p), "=")
				if !strings.EqualFold(name, "rel") || !slices.Contains(strings.Fields(strings.ToLower(strings.Trim(value, `"`))), "next") {
					continue
				}
				if u, err := url.Parse(target[1 : len(target)-1]); err == nil {
					return u.Query().Get("since")
				}
			}
		}
	}
	return ""
}

// makeOps makes the items of a page read from the mirror's upstream into what to write, on every
// core (reading the entities is most of a harvest's own work), in the page's order.
func (h *Harvester) makeOps(m *dirsvc.Mirror, f fetched) []dirsvc.MirrorOp {
	origin := dirsvc.MirrorOrigin(m.Upstream, m.UpstreamDir)
	made := make([]dirsvc.MirrorOp, len(f.items))
	keep := make([]bool, len(f.items))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(f.items)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(f.items); i = int(next.Add(1) - 1) {
				made[i], keep[i] = h.opOf(m, f.items[i], f.aud, origin)
			}
		})
	}
	wg.Wait()
	ops := make([]dirsvc.MirrorOp, 0, len(made))
	for i, op := range made {
		if keep[i] {
			ops = append(ops, op)
		}
	}
	return coalesce(ops)
}

// opOf makes one item of an upstream's feed into what to write; false when it is left out.
func (h *Harvester) opOf(m *dirsvc.Mirror, it feedItem, aud dirsvc.Audiences, origin string) (dirsvc.MirrorOp, bool) {
	switch {
	case !dirsvc.ValidPublicID(it.EntityType, it.PublicID):
		h.cfg.Log.Warn("mirror: an upstream item names no valid record; left out", "mirror", m.Name, "kind", it.EntityType)
	case dirsvc.Tombstone(it.EventType):
		return dirsvc.MirrorOp{PublicID: it.PublicID, Tombstone: it.EventType, Survivor: it.SurvivorPublicID}, true
	case len(it.Entity) == 0 || string(it.Entity) == "null":
		// The client does not see the record now: a tombstone follows in the feed.
	default:
		rec, err := recordFromView(it.EntityType, it.Entity, aud, origin)
		if err != nil || rec.Base().PublicID != it.PublicID {
			h.cfg.Log.Warn("mirror: an upstream record cannot be read; left out", "mirror", m.Name, "publicId", it.PublicID, "err", err)
			break
		}
		return dirsvc.MirrorOp{Record: rec, PublicID: it.PublicID}, true
	}
	return dirsvc.MirrorOp{}, false
}

// step harvests one page of a mirror's upstream feed (and, at the end of a full harvest, checks what
// it did not see) and reports whether more is waiting.
func (r *run) step(ctx context.Context) (bool, HarvestStats, error) {
	h, slug, name := r.h, r.slug, r.name
	var st HarvestStats
	m, err := h.mirror(ctx, slug, name)
	if err != nil {
		return false, st, err
	}
	if harvest := fmt.Sprint(m.CreatedAt.UnixNano(), " ", m.Generation); harvest != r.harvest {
		// Another mirror of the name, or another full harvest: nothing read for the last one counts.
		r.stopReading()
		r.harvest, r.pending = harvest, nil
	}
	cursor := m.Cursor
	if len(r.pending) > 0 {
		cursor = r.pendingCursor
	} else {
		r.pendingSince = time.Now()
	}
	f := r.read(ctx, m, cursor)
	if f.gone || f.err != nil || f.tier.String() != m.Tier && m.Tier != "" {
		r.stopReading()
		r.pending = nil // read again from the stored cursor
	}
	switch {
	case f.gone:
		h.cfg.Log.Info("mirror: the upstream no longer keeps the cursor; a full harvest begins", "directory", slug, "mirror", name)
		st.Gone = true
		return true, st, h.cfg.Store.RestartMirror(ctx, slug, name, m.Tier)
	case f.err != nil:
		return false, st, f.err
	case m.Tier != "" && m.Tier != f.tier.String():
		// What was harvested at the old tier is published to the wrong audiences now: all again.
		h.cfg.Log.Info("mirror: the upstream tier changed; a full harvest begins", "directory", slug, "mirror", name, "from", m.Tier, "to", f.tier)
		st.Gone = true
		return true, st, h.cfg.Store.RestartMirror(ctx, slug, name, f.tier.String())
	}
	st.Pages = 1
	ops := h.makeOps(m, f) // while the upstream serves the next page
	if m.FullHarvest && f.hasMore && len(r.pending)+len(ops) < bulkHarvest {
		r.pending, r.pendingCursor = append(r.pending, ops...), f.next
		return true, st, nil
	}
	if len(r.pending) > 0 {
		ops, r.pending = coalesce(append(r.pending, ops...)), nil
	}
	// Many changes go in bulk; fewer in parts of writeBatch, of which only the last moves the cursor,
	// so a page cut short is read and written again (to the same effect) after a restart.
	bulk, part := len(ops) >= bulkWrite, writeBatch
	if bulk {
		part = len(ops)
	}
	read := time.Since(r.pendingSince) // for a bulk write's log line
	for start := 0; start == 0 || start < len(ops); start += part {
		end := min(start+part, len(ops))
		cursor := m.Cursor
		if end == len(ops) {
			cursor = f.next
		}
		batch := ops[start:end]
		if bulk {
			ops = nil // the store lets go of a bulk batch's records once it has written them: so does this
		}
		ms, err := h.applyMirror(ctx, slug, dirsvc.MirrorBatch{Mirror: name, Ops: batch,
			Bulk: bulk, Cursor: cursor, Tier: f.tier.String(), FullHarvest: m.FullHarvest})
		if err != nil {
			return false, st, err
		}
		if bulk {
			h.cfg.Log.Debug("mirror: bulk write", writeAttrs(slug, name, read, ms)...)
		}
		st.Written, st.Refused = st.Written+ms.Written, st.Refused+ms.Refused
	}
	if m.FullHarvest && !f.hasMore {
		origin := dirsvc.MirrorOrigin(m.Upstream, m.UpstreamDir)
		checked, refused, err := h.sweep(ctx, slug, m, f.next, f.tier, f.aud, origin)
		st.Checked, st.Refused = checked, st.Refused+refused
		if err != nil {
			return false, st, err
		}
	}
	return f.hasMore, st, nil
}

// writeAttrs are the attributes of the log line of a bulk write: how long the harvest took to read
// and make the records it wrote (read), and each step of the write.
func writeAttrs(slug, name string, read time.Duration, ms dirsvc.MirrorStats) []any {
	out := []any{slog.String("directory", slug), slog.String("mirror", name), slog.Int("written", ms.Written),
		slog.Int("refused", ms.Refused), slog.Duration("read", read)}
	for _, s := range ms.Steps {
		out = append(out, slog.Duration(s.Name, s.Took))
	}
	return out
}

// publishedTo returns the audiences harvested records are published to here: the configured set, or
// by default MirrorAudiences of the upstream tier. A configured set that reaches a tier below the
// upstream's (public, when the client is a partner) is refused: nothing the upstream gave the client
// may reach a wider audience here.
func publishedTo(configured dirsvc.Audiences, tier dirsvc.Audience) (dirsvc.Audiences, error) {
	if configured == 0 {
		return dirsvc.MirrorAudiences(tier), nil
	}
	for _, a := range dirsvc.ServedAudiences {
		if a < tier && configured.Has(a) {
			return 0, dirsvc.InvalidParam("audiences", "the mirror publishes to %s, wider than the upstream tier %s allows (%s and above)",
				a, tier, tier)
		}
	}
	return configured, nil
}

// coalesce keeps, of several changes of one record in a page, the last (each carries the record as
// it is now, or its last tombstone), and puts records before tombstones, records in kind order, so a
// record is written before those that refer to it and a survivor before what merges into it.
func coalesce(ops []dirsvc.MirrorOp) []dirsvc.MirrorOp {
	last := map[string]int{}
	for i, op := range ops {
		last[op.PublicID] = i
	}
	out := make([]dirsvc.MirrorOp, 0, len(last))
	for i, op := range ops {
		if last[op.PublicID] == i {
			out = append(out, op)
		}
	}
	rank := func(op dirsvc.MirrorOp) int {
		if op.Record == nil {
			return len(dirsvc.Kinds)
		}
		return slices.Index(dirsvc.Kinds, op.Record.Kind())
	}
	slices.SortStableFunc(out, func(a, b dirsvc.MirrorOp) int { return cmp.Compare(rank(a), rank(b)) })
	return out
}

// writeBatch is the most changes one write takes. A write that places more records than the store's
// whole-refresh bound (dirdb) makes every record's narrowing keys and feed placements anew, a cost
// that grows with the directory; parts of this size stay well under it.
const writeBatch = 200

// sweepBatch is how many unseen records one write of a sweep settles.
const sweepBatch = 100

// sweep ends a full harvest: each mirrored record the harvest did not see is asked for at the
// upstream's read API, and written as it answers (the record; 301 merged; 410 closed or removed;
// 404 no longer seen by the client); then the full harvest is marked done. An upstream whose log was
// pruned past records it still publishes loses none of them here.
func (h *Harvester) sweep(ctx context.Context, slug string, m *dirsvc.Mirror, cursor string, tier dirsvc.Audience, aud dirsvc.Audiences, origin string) (checked, refused int, err error) {
	after := ""
	for {
		ids, err := h.cfg.Store.UnseenMirrored(ctx, slug, m.Name, after, sweepBatch)
		if err != nil {
			return checked, refused, err
		}
		ops := make([]dirsvc.MirrorOp, 0, len(ids))
		for _, id := range ids {
			op, err := h.lookUp(ctx, m, id, aud, origin)
			if err != nil {
				return checked, refused, fmt.Errorf("check %s at the upstream: %w", id, err)
			}
			ops = append(ops, op)
		}
		checked += len(ids)
		ms, err := h.applyMirror(ctx, slug, dirsvc.MirrorBatch{Mirror: m.Name, Ops: coalesce(ops),
			Cursor: cursor, Tier: tier.String(), FullHarvest: len(ids) == sweepBatch})
		if err != nil {
			return checked, refused, err
		}
		refused += ms.Refused
		if len(ids) < sweepBatch {
			return checked, refused, nil
		}
		after = ids[len(ids)-1]
	}
}

// readPaths are where the upstream's read API serves each kind, with the view that is the feed's.
var readPaths = map[dirsvc.Kind]string{
	dirsvc.KindOrganisation: "/organisations/%s?view=brief", dirsvc.KindLocation: "/locations/%s?view=brief",
	dirsvc.KindService: "/services/%s?view=brief", dirsvc.KindPractitioner: "/practitioners/%s",
	dirsvc.KindRole: "/roles/%s",
}

// lookUp asks the upstream's read API for one record and returns what to write of its answer.
func (h *Harvester) lookUp(ctx context.Context, m *dirsvc.Mirror, id string, aud dirsvc.Audiences, origin string) (dirsvc.MirrorOp, error) {
	kind := dirsvc.KindOfID(id)
	resp, err := h.client.do(ctx, m, http.MethodGet, fmt.Sprintf(readPaths[kind], url.PathEscape(id)), nil,
		http.StatusOK, http.StatusMovedPermanently, http.StatusGone, http.StatusNotFound)
	if err != nil {
		return dirsvc.MirrorOp{}, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusMovedPermanently:
		loc, err := url.Parse(resp.Header.Get("Location"))
		if err != nil {
			return dirsvc.MirrorOp{}, fmt.Errorf("the upstream's 301 names no survivor: %w", err)
		}
		return dirsvc.MirrorOp{PublicID: id, Tombstone: dirsvc.EventMerged, Survivor: path.Base(loc.Path)}, nil
	case http.StatusGone:
		return dirsvc.MirrorOp{PublicID: id, Tombstone: dirsvc.EventDeleted}, nil
	case http.StatusNotFound:
		return dirsvc.MirrorOp{PublicID: id, Tombstone: dirsvc.EventVisibilityReduced}, nil
	}
	var body json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return dirsvc.MirrorOp{}, err
	}
	rec, err := recordFromView(kind, body, aud, origin)
	if err != nil {
		return dirsvc.MirrorOp{}, err
	}
	if rec.Base().PublicID != id {
		return dirsvc.MirrorOp{}, fmt.Errorf("the upstream answered with %s", rec.Base().PublicID)
	}
	return dirsvc.MirrorOp{Record: rec, PublicID: id}, nil
}
