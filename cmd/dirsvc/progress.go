package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dirsvc/dirsvc"
)

// isTerminal reports whether w is a terminal, where progress is a bar redrawn in place rather than
// lines.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// barWidth is how many cells a progress bar's meter has.
const barWidth = 30

// meter draws the meter of a progress bar, [#####.....]  50%, for n of all.
func meter(n, all int64) string {
	filled, pct := 0, int64(0)
	if all > 0 {
		filled = int(min(n, all) * barWidth / all)
		pct = min(n, all) * 100 / all
	}
	return fmt.Sprintf("[%s%s] %3d%%", strings.Repeat("#", filled), strings.Repeat(".", barWidth-filled), pct)
}

// perSecond is n over took, as a rate.
func perSecond(n int64, took time.Duration) float64 {
	if took <= 0 {
		return 0
	}
	return float64(n) / took.Seconds()
}

// bar draws a progress bar: [#####.....]  50% 1500/3000 records 12000/s.
func bar(n, all int64, took time.Duration) string {
	return fmt.Sprintf("%s %d/%d records %.0f/s ", meter(n, all), n, all, perSecond(n, took))
}

// loadEvery is how often a long write's progress is logged while a step runs, besides the line at
// the end of each step: a first import of 100,000 services takes about 40 s, in steps of 3 to 20 s.
const loadEvery = 5 * time.Second

// drawEvery is how often the bar is redrawn on a terminal.
const drawEvery = 100 * time.Millisecond

// loadProgress follows a long write (an import, a republish) step by step (dirsvc.Progress) and
// logs it: a line as each step ends, with the records it went through and how long it took, and one
// every interval (loadEvery) while a step runs. On a terminal (draw set) it draws a bar for the step under way
// instead of the lines while it runs. Every line and every redraw is written under mu, so the bar
// never cuts a log line.
type loadProgress struct {
	log   *slog.Logger
	msg   string // what the lines say is under way ("importing")
	attrs []any  // and of what (the file, the directory)
	draw  io.Writer
	every time.Duration // how often a step under way is logged (loadEvery)
	// read, when set, says how far the file being parsed is read, in bytes, and its size (0 when
	// unknown): the parse step's bar shows it, the records the file holds being unknown till the end.
	read func() (n, size int64)

	mu        sync.Mutex
	step      string // the step under way; empty between steps
	total     int
	n         atomic.Int64 // the step's records so far (Records runs without mu)
	began     time.Time
	logged    time.Time // the last line about the step under way
	drawn     int       // the width of the bar on the terminal, to clear it
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// loading returns ctx carrying a loadProgress that logs the steps of the writes made with it as
// msg, with attrs; on a terminal, when bar is set, it draws a bar on standard error. Call end once
// the writes are over.
func (m *Main) loading(ctx context.Context, msg string, bar bool, attrs ...any) (context.Context, *loadProgress) {
	var draw io.Writer
	if bar && isTerminal(m.Stderr) {
		draw = m.Stderr
	}
	p := newLoadProgress(m.Log, msg, draw, loadEvery, attrs...)
	return dirsvc.WithProgress(ctx, p), p
}

// newLoadProgress returns a loadProgress that logs to log a line every interval while a step runs,
// or draws a bar on draw when it is set.
func newLoadProgress(log *slog.Logger, msg string, draw io.Writer, every time.Duration, attrs ...any) *loadProgress {
	p := &loadProgress{log: log, msg: msg, attrs: attrs, draw: draw, every: every,
		stop: make(chan struct{}), done: make(chan struct{})}
	tick := every / 5
	if draw != nil {
		tick = drawEvery
	}
	go p.run(tick)
	return p
}

// run redraws the bar, or logs the step under way once it has run an interval since its last
// line, until end.
func (p *loadProgress) run(tick time.Duration) {
	defer close(p.done)
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		p.mu.Lock()
		switch {
		case p.step == "":
		case p.draw != nil:
			p.redraw()
		case time.Since(p.logged) >= p.every:
			p.logged = time.Now()
			args := p.stepAttrs(p.n.Load())
			if p.total > 0 {
				args = append(args, "of", p.total)
			}
			p.log.Info(p.msg, append(args, "elapsed", time.Since(p.began).Round(time.Millisecond))...)
		}
		p.mu.Unlock()
	}
}

// stepAttrs are the attributes of a line about the step under way, having gone through n records.
func (p *loadProgress) stepAttrs(n int64) []any {
	args := append(append([]any(nil), p.attrs...), "step", p.step)
	if n > 0 || p.total > 0 {
		args = append(args, "records", n)
	}
	return args
}

// Step begins a step.
func (p *loadProgress) Step(name string, total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.step, p.total, p.began, p.logged = name, total, time.Now(), time.Now()
	p.n.Store(0)
	if p.draw != nil {
		p.redraw()
	}
}

// Records notes how far the step under way is.
func (p *loadProgress) Records(n int) { p.n.Store(int64(n)) }

// StepDone logs the end of the step under way.
func (p *loadProgress) StepDone(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.step == "" {
		return
	}
	p.clear()
	args := append(p.stepAttrs(int64(n)), "duration", time.Since(p.began).Round(time.Millisecond))
	p.log.Info(p.msg+" step done", args...)
	p.step = ""
}

// reading sets how far the file being parsed is read (see loadProgress.read).
func (p *loadProgress) reading(read func() (n, size int64)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.read = read
}

// end stops following the writes: a step under way (a write that failed) is left unfinished and
// its bar cleared.
func (p *loadProgress) end() {
	p.closeOnce.Do(func() {
		close(p.stop)
		<-p.done
		p.mu.Lock()
		defer p.mu.Unlock()
		p.clear()
		p.step = ""
	})
}

// redraw draws the bar of the step under way in place: the step, its meter and its records.
func (p *loadProgress) redraw() {
	n, took := p.n.Load(), time.Since(p.began)
	line := fmt.Sprintf("%-12s ", p.step)
	switch {
	case p.total > 0:
		line += bar(n, int64(p.total), took)
	case p.step == "parse" && p.read != nil:
		read, size := p.read()
		if size > 0 {
			line += meter(read, size) + " "
		}
		line += fmt.Sprintf("%d records %.0f/s ", n, perSecond(n, took))
	default:
		line += fmt.Sprintf("%.1fs ", took.Seconds())
	}
	pad := max(0, p.drawn-len(line))
	fmt.Fprint(p.draw, "\r"+line+strings.Repeat(" ", pad))
	p.drawn = len(line)
}

// clear rubs out the bar, so that a log line takes its place.
func (p *loadProgress) clear() {
	if p.draw != nil && p.drawn > 0 {
		fmt.Fprint(p.draw, "\r"+strings.Repeat(" ", p.drawn)+"\r")
		p.drawn = 0
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n.Add(int64(n))
	return n, err
}
