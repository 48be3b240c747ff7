package replicate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/benbjohnson/litestream"
	"github.com/superfly/ltx"
)

// DefaultStorageTimeout bounds each call to object storage: an answer must come, and a file being
// read or written must move, at least this often. A store that hangs fails the call instead of
// holding a sync, a restore or a shutdown.
const DefaultStorageTimeout = 10 * time.Second

// bounded is a replica client of object storage whose every call is bounded in time: listings and
// deletions must finish within the timeout, and a file being read or written must move at least
// once every timeout. The S3 client's own HTTP client waits up to a day.
type bounded struct {
	c       litestream.ReplicaClient
	timeout time.Duration
}

var _ litestream.ReplicaClient = (*bounded)(nil)

// errStalled is the cause of a call that the store left unanswered for the timeout.
var errStalled = errors.New("object storage did not answer in time")

func (b *bounded) Type() string             { return b.c.Type() }
func (b *bounded) SetLogger(l *slog.Logger) { b.c.SetLogger(l) }

func (b *bounded) Init(ctx context.Context) error {
	ctx, cancel := context.WithTimeoutCause(ctx, b.timeout, errStalled)
	defer cancel()
	return b.wrap(ctx, b.c.Init(ctx))
}

// LTXFiles lists a level whole, while the context of the call lives (the S3 client pages lazily,
// and with metadata asks for each file): each page or file must come within the timeout.
func (b *bounded) LTXFiles(ctx context.Context, level int, seek ltx.TXID, useMetadata bool) (ltx.FileIterator, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(context.Canceled)
	w := newWatchdog(b.timeout, cancel)
	defer w.stop()
	itr, err := b.c.LTXFiles(ctx, level, seek, useMetadata)
	if err != nil {
		return nil, b.wrap(ctx, err)
	}
	defer itr.Close()
	var infos []*ltx.FileInfo
	for itr.Next() {
		w.moved()
		infos = append(infos, itr.Item())
	}
	if err := errors.Join(itr.Err(), itr.Close()); err != nil {
		return nil, b.wrap(ctx, err)
	}
	return ltx.NewFileInfoSliceIterator(infos), nil
}

func (b *bounded) OpenLTXFile(ctx context.Context, level int, minTXID, maxTXID ltx.TXID, offset, size int64) (io.ReadCloser, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	w := newWatchdog(b.timeout, cancel)
	rc, err := b.c.OpenLTXFile(ctx, level, minTXID, maxTXID, offset, size)
	if err != nil {
		w.stop()
		return nil, b.wrap(ctx, err)
	}
	w.moved()
	return &guardedReader{r: rc, c: rc, w: w, ctx: ctx, cancel: cancel}, nil
}

func (b *bounded) WriteLTXFile(ctx context.Context, level int, minTXID, maxTXID ltx.TXID, r io.Reader) (*ltx.FileInfo, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	w := newWatchdog(b.timeout, cancel)
	defer w.stop()
	var body io.Reader = &guardedReader{r: r, w: w, ctx: ctx}
	if rs, ok := r.(io.ReadSeeker); ok { // the S3 client retries a seekable body
		body = &guardedReadSeeker{guardedReader{r: r, w: w, ctx: ctx}, rs}
	}
	info, err := b.c.WriteLTXFile(ctx, level, minTXID, maxTXID, body)
	return info, b.wrap(ctx, err)
}

func (b *bounded) DeleteLTXFiles(ctx context.Context, a []*ltx.FileInfo) error {
	ctx, cancel := context.WithTimeoutCause(ctx, b.timeout, errStalled)
	defer cancel()
	return b.wrap(ctx, b.c.DeleteLTXFiles(ctx, a))
}

func (b *bounded) DeleteAll(ctx context.Context) error {
	ctx, cancel := context.WithTimeoutCause(ctx, b.timeout, errStalled)
	defer cancel()
	return b.wrap(ctx, b.c.DeleteAll(ctx))
}

// wrap names the stall as the cause of an error the store's client reports as a cancellation.
func (b *bounded) wrap(ctx context.Context, err error) error {
	if err != nil && errors.Is(context.Cause(ctx), errStalled) {
		return fmt.Errorf("%w (nothing for %s): %w", errStalled, b.timeout, err)
	}
	return err
}

// watchdog cancels a call when it has not moved for the timeout.
type watchdog struct {
	mu      sync.Mutex
	t       *time.Timer
	timeout time.Duration
}

func newWatchdog(timeout time.Duration, cancel context.CancelCauseFunc) *watchdog {
	return &watchdog{timeout: timeout, t: time.AfterFunc(timeout, func() { cancel(errStalled) })}
}

func (w *watchdog) moved() {
	w.mu.Lock()
	w.t.Reset(w.timeout)
	w.mu.Unlock()
}

func (w *watchdog) stop() {
	w.mu.Lock()
	w.t.Stop()
	w.mu.Unlock()
}

// guardedReader tells the watchdog of every read that moves, and reads nothing once the call was
// cancelled for a stall.
type guardedReader struct {
	r      io.Reader
	c      io.Closer // nil when the reader is not the guard's to close
	w      *watchdog
	ctx    context.Context
	cancel context.CancelCauseFunc // nil when the call is not the guard's to end
}

func (g *guardedReader) Read(p []byte) (int, error) {
	if err := context.Cause(g.ctx); err != nil {
		return 0, err
	}
	n, err := g.r.Read(p)
	if n > 0 {
		g.w.moved()
	}
	return n, err
}

func (g *guardedReader) Close() error {
	g.w.stop()
	var err error
	if g.c != nil {
		err = g.c.Close()
	}
	if g.cancel != nil {
		g.cancel(context.Canceled)
	}
	return err
}

// guardedReadSeeker keeps a seekable body seekable.
type guardedReadSeeker struct {
	guardedReader
	s io.Seeker
}

func (g *guardedReadSeeker) Seek(off int64, whence int) (int64, error) { return g.s.Seek(off, whence) }
