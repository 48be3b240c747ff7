package webhook

import (
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/dirsvc/dirsvc"
)

// Endpoints of clients with the same grant receive the same pages of the feed, mostly at about the
// same time: a fan-out to many endpoints would read each page once per endpoint. Pages are kept for a
// short while, by directory, reader and position, and read once for all who ask at the same time.
// Only a page that ended before the log's end is kept (a full page, or one with more after it): its
// items are events of the log, which does not change below its head, so a runner that takes it
// sends what it would have read a moment earlier and goes on from the page's end. A page that
// reached the log's end would miss what came after.

const (
	keptPages   = 256
	keptPageFor = 30 * time.Second
)

type pageKey struct {
	dir, reader string
	after       int64
	limit       int
}

type keptPage struct {
	key   pageKey
	page  FeedPage
	err   error
	at    time.Time
	ready chan struct{} // closed once page and err are set
	elem  *list.Element
}

// pageCache keeps recent feed pages (see above).
type pageCache struct {
	mu    sync.Mutex
	pages map[pageKey]*keptPage
	order *list.List // most recently used first
	now   func() time.Time
}

func newPageCache(now func() time.Time) *pageCache {
	return &pageCache{pages: map[pageKey]*keptPage{}, order: list.New(), now: now}
}

// readerKey identifies what a reader receives: its tier, narrowing and practitioner choice.
func readerKey(r dirsvc.FeedReader) string {
	n, _ := json.Marshal(r.Viewer.Narrowing)
	return strconv.Itoa(int(r.Viewer.Audience)) + "|" + strconv.FormatBool(r.Practitioners) + "|" + string(n)
}

// page returns the page of the feed, read by read unless a page of the same key read within
// keptPageFor is kept or being read.
func (c *pageCache) page(ctx context.Context, dir string, r dirsvc.FeedReader, after int64, limit int,
	read func(ctx context.Context) (FeedPage, error)) (FeedPage, error) {
	k := pageKey{dir, readerKey(r), after, limit}
	c.mu.Lock()
	if p, ok := c.pages[k]; ok && c.now().Sub(p.at) < keptPageFor {
		c.order.MoveToFront(p.elem)
		c.mu.Unlock()
		select {
		case <-p.ready:
		case <-ctx.Done():
			return FeedPage{}, ctx.Err()
		}
		if p.err == nil {
			return p.page, nil
		}
		return read(ctx) // its reader failed (its context ended, say): read it for this one
	} else if ok {
		c.drop(p)
	}
	p := &keptPage{key: k, at: c.now(), ready: make(chan struct{})}
	p.elem = c.order.PushFront(p)
	c.pages[k] = p
	for c.order.Len() > keptPages {
		c.drop(c.order.Back().Value.(*keptPage))
	}
	c.mu.Unlock()
	p.page, p.err = read(ctx)
	final := p.err == nil && (p.page.More || len(p.page.Items) == limit)
	if !final && p.err == nil {
		p.err = errNotKept // those waiting read it themselves
	}
	close(p.ready)
	if p.err != nil {
		c.mu.Lock()
		if c.pages[k] == p {
			c.drop(p)
		}
		c.mu.Unlock()
	}
	if !final && p.err == errNotKept {
		return p.page, nil
	}
	return p.page, p.err
}

// errNotKept tells those waiting for a page that it was not kept: they read it themselves.
var errNotKept = errors.New("the page reached the log's end and is not kept")

func (c *pageCache) drop(p *keptPage) {
	delete(c.pages, p.key)
	c.order.Remove(p.elem)
}
