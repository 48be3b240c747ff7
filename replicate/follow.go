package replicate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/benbjohnson/litestream"
	"github.com/dirsvc/dirsvc"
	"github.com/superfly/ltx"
)

// An edge keeps a copy of every directory file of its primary and follows it: it restores the file
// once (a bootstrap), then applies the primary's LTX files to it in process, each fetched whole,
// verified, and only then written, page by page, inside the directory's gate, so no reader ever
// sees half a transaction. The copy is kept in rollback-journal mode: SQLite readers notice a
// change by the file's change counter, which every apply moves on, and drop their page caches.

// Host is an edge's data folder as the follower sees it (dirdb.Store on an edge).
type Host interface {
	// Exclusive runs fn while no one reads the directory's file, then drops what readers kept of it.
	Exclusive(ctx context.Context, slug string, fn func() error) error
	// SyncPlatform serves the directories of p whose copies are ready, drops (with their files)
	// those p no longer lists, and takes p's switches and public keys; it returns the dropped slugs.
	SyncPlatform(ctx context.Context, p *dirsvc.Platform, ready func(slug string) bool) ([]string, error)
}

// FollowConfig configures a Follower.
type FollowConfig struct {
	Data    string // the edge's data folder
	Primary string // the primary's address, e.g. http://primary.internal:8080
	Token   string // the primary's replication token
	// BaseURL is the edge's base URL: the primary's must be the same (it issues the tokens the edge
	// checks), and the follower logs an error while it is not.
	BaseURL string
	Host    Host
	// Storage is the object storage the primary replicates to: a new edge bootstraps from it while
	// the primary is away, reading only the directory files and the platform JSON (credentials
	// limited to them, see EdgePolicy, are enough). Optional.
	Storage *S3
	// MaxLag is how far behind the edge may fall before it reports itself unhealthy.
	MaxLag time.Duration
	// Wait is how long one request to the primary waits for a change; zero: 20 seconds.
	Wait time.Duration
	HTTP *http.Client
	Log  *slog.Logger
}

// Follower keeps an edge's copies of its primary's directory files.
type Follower struct {
	cfg   FollowConfig
	fetch *http.Client // for LTX files: bounded, unlike the long polls

	mu        sync.Mutex
	files     map[string]*followed // by directory slug
	started   bool                 // a first round (from the primary or from storage) completed
	lostSince time.Time            // when the primary stopped answering; zero while it answers
	changed   chan struct{}        // closed and replaced whenever a copy moves on
	issuer    string               // the primary's base URL last reported as differing
}

// followed is one directory's copy. pos is written by the goroutine following it and read by
// others under the Follower's lock.
type followed struct {
	slug        string
	lineage     string    // the history of the primary's file the copy follows ("": unknown)
	pos         ltx.Pos   // the copy's position
	primary     uint64    // the primary's last reported position
	behindSince time.Time // since when the copy is behind the primary; zero when it is not
	// Failed verifications of the primary's LTX files of this directory, for healing (heal.go):
	// in a row since the copy last moved on, in all, and the heals done and attempted in a row.
	failures, healAttempts     int
	failedVerifications, heals uint64
}

// errGap means the copy cannot be brought forward by the files the primary still holds: it needs a
// fresh bootstrap.
var errGap = errors.New("the primary no longer holds the changes after this copy's position")

// NewFollower returns a follower of the primary; it picks up the copies a previous run left in the
// data folder.
func NewFollower(cfg FollowConfig) (*Follower, error) {
	if cfg.Primary == "" || cfg.Host == nil {
		return nil, errors.New("replicate: a follower needs the primary's address and a host")
	}
	if cfg.Wait <= 0 {
		cfg.Wait = 20 * time.Second
	}
	if cfg.Wait > MaxStreamWait {
		cfg.Wait = MaxStreamWait
	}
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{}
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	cfg.Primary = strings.TrimSuffix(cfg.Primary, "/")
	f := &Follower{cfg: cfg, files: map[string]*followed{}, changed: make(chan struct{}),
		fetch: &http.Client{Transport: cfg.HTTP.Transport, Timeout: 10 * time.Minute}}
	entries, err := os.ReadDir(dirsvc.DirsPath(cfg.Data))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	for _, e := range entries {
		lineage, pos, err := readPos(f.path(e.Name()))
		if err != nil {
			continue // no finished copy: the next round bootstraps it
		}
		f.files[e.Name()] = &followed{slug: e.Name(), lineage: lineage, pos: pos, primary: uint64(pos.TXID)}
	}
	return f, nil
}

func (f *Follower) path(slug string) string {
	return dirsvc.FilePath(f.cfg.Data, dirsvc.FileName(dirsvc.DirectoryFile, slug))
}

// directoryName returns the name of the directory slug's published file.
func directoryName(slug string) string { return dirsvc.FileName(dirsvc.DirectoryFile, slug) }

// slugOf returns the slug of a directory file's name, or "" for another file.
func slugOf(name string) string {
	if f, slug, ok := dirsvc.ParseFileName(name); ok && f == dirsvc.DirectoryFile {
		return slug
	}
	return ""
}

// Run follows the primary until ctx ends. While the primary does not answer, the edge keeps
// serving its copies and asks again with a growing pause; a new edge whose primary is away
// bootstraps from object storage when it is configured.
func (f *Follower) Run(ctx context.Context) error {
	var (
		since   string
		backoff time.Duration
		stored  bool // bootstrapped from storage already
	)
	for ctx.Err() == nil {
		files, err := f.poll(ctx, since)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			since = "" // the first answer after the primary is back comes at once
			f.mu.Lock()
			first := f.lostSince.IsZero()
			if first {
				f.lostSince = time.Now()
			}
			empty := len(f.files) == 0
			f.mu.Unlock()
			if first {
				f.cfg.Log.Warn("the primary does not answer: serving the copies held", "err", err)
			}
			if empty && !stored && f.cfg.Storage != nil {
				stored = true
				if err := f.bootstrapFromStorage(ctx); err != nil {
					f.cfg.Log.Error("bootstrap from object storage", "err", err)
				}
			}
			backoff = min(max(2*backoff, 250*time.Millisecond), 5*time.Second)
			sleep(ctx, backoff)
			continue
		}
		f.mu.Lock()
		if !f.lostSince.IsZero() {
			f.cfg.Log.Info("the primary answers again", "after", time.Since(f.lostSince).Round(time.Millisecond))
		}
		f.lostSince = time.Time{}
		f.mu.Unlock()
		backoff = 0
		if err := f.round(ctx, files); err != nil {
			if ctx.Err() != nil {
				break
			}
			f.cfg.Log.Error("follow the primary", "err", err)
			sleep(ctx, time.Second)
			continue
		}
		since = files.Version
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// poll asks the primary for its files, waiting for a change since the version last seen.
func (f *Follower) poll(ctx context.Context, since string) (*Files, error) {
	ctx, cancel := context.WithTimeout(ctx, f.cfg.Wait+30*time.Second)
	defer cancel()
	q := url.Values{"wait": {f.cfg.Wait.String()}}
	if since != "" {
		q.Set("since", since)
	}
	req, err := http.NewRequestWithContext(ctx, "GET", f.cfg.Primary+StreamPrefix+"files?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+f.cfg.Token)
	resp, err := f.cfg.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("replication stream: files: %s", resp.Status)
	}
	var files Files
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&files); err != nil {
		return nil, fmt.Errorf("replication stream: files: %w", err)
	}
	if files.Platform == nil {
		return nil, errors.New("replication stream: files: no platform")
	}
	return &files, nil
}

// round brings every copy up to the positions the primary reported, bootstrapping new directories,
// then makes the edge serve what is ready.
func (f *Follower) round(ctx context.Context, files *Files) error {
	start := time.Now()
	want := map[string]FilePosition{}
	for _, fp := range files.Files {
		if slug := slugOf(fp.Name); slug != "" && fp.TXID > 0 {
			want[slug] = fp
		}
	}
	// Directories are brought forward a few at a time: each is independent of the others.
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for slug, fp := range want {
		f.mu.Lock()
		fl := f.files[slug]
		current := fl != nil && uint64(fl.pos.TXID) == fp.TXID && fl.lineage == fp.Lineage
		if fl != nil {
			fl.primary = fp.TXID
		}
		f.mu.Unlock()
		if current {
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			c := NewStreamClient(f.cfg.Primary, f.cfg.Token, directoryName(slug), f.fetch)
			if err := f.bringForward(ctx, slug, fp, c); err != nil && ctx.Err() == nil {
				f.cfg.Log.Error("follow a directory", "directory", slug, "err", err)
			}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	f.mu.Lock()
	for slug, fl := range f.files {
		if _, ok := want[slug]; !ok {
			continue // the primary no longer replicates it: the platform drops it below
		}
		if uint64(fl.pos.TXID) < fl.primary {
			if fl.behindSince.IsZero() {
				fl.behindSince = start
			}
		} else {
			fl.behindSince = time.Time{}
		}
	}
	f.mu.Unlock()
	return f.syncPlatform(ctx, files.Platform)
}

// syncPlatform makes the edge serve the ready copies of the directories p lists, and forgets the
// copies of those it dropped.
func (f *Follower) syncPlatform(ctx context.Context, p *dirsvc.Platform) error {
	f.checkIssuer(p.BaseURL)
	dropped, err := f.cfg.Host.SyncPlatform(ctx, p, func(slug string) bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.files[slug] != nil
	})
	f.mu.Lock()
	for _, slug := range dropped {
		delete(f.files, slug)
		f.cfg.Log.Info("the primary dropped a directory", "directory", slug)
	}
	f.started = true
	f.mu.Unlock()
	return err
}

// checkIssuer logs an error, once for each base URL the primary names, when the primary's base URL
// is not the edge's: the edge refuses every access token the primary issues.
func (f *Follower) checkIssuer(primary string) {
	if primary == "" || f.cfg.BaseURL == "" || primary == f.cfg.BaseURL {
		f.issuer = ""
		return
	}
	if primary != f.issuer {
		f.issuer = primary
		f.cfg.Log.Error("the primary's --base-url is not this edge's: every access token it issues names the primary's, and this edge refuses them; give both the same public address",
			"primary", primary, "edge", f.cfg.BaseURL)
	}
}

// bringForward brings one directory's copy to at least txid: by applying the primary's files after
// its position, or by a fresh bootstrap when there is no copy or the files cannot bridge the gap.
func (f *Follower) bringForward(ctx context.Context, slug string, fp FilePosition, c litestream.ReplicaClient) error {
	f.mu.Lock()
	fl := f.files[slug]
	f.mu.Unlock()
	switch {
	case fl == nil:
		return f.bootstrap(ctx, slug, fp.Lineage, c)
	case fl.lineage != fp.Lineage:
		f.cfg.Log.Warn("the primary's history of this directory changed (a restore, or its replication started afresh): bootstrapping afresh",
			"directory", slug)
		return f.bootstrap(ctx, slug, fp.Lineage, c)
	case uint64(fl.pos.TXID) > fp.TXID:
		f.cfg.Log.Warn("the primary's position is behind this copy: bootstrapping afresh", "directory", slug,
			"copy", uint64(fl.pos.TXID), "primary", fp.TXID)
		return f.bootstrap(ctx, slug, fp.Lineage, c)
	}
	err := f.catchUp(ctx, fl, fp.TXID, c)
	var bad *corruptError
	switch {
	case errors.Is(err, errGap):
		f.cfg.Log.Warn("a gap the primary's files cannot bridge: bootstrapping afresh", "directory", slug,
			"copy", uint64(f.position(fl).TXID), "primary", fp.TXID)
		return f.bootstrap(ctx, slug, fp.Lineage, c)
	case errors.As(err, &bad):
		return f.healed(ctx, fl, fp, c, bad)
	case err == nil:
		f.verified(fl)
	}
	return err
}

// catchUp applies the primary's level-0 files after the copy's position, in order, until the copy
// reaches txid.
func (f *Follower) catchUp(ctx context.Context, fl *followed, txid uint64, c litestream.ReplicaClient) error {
	for uint64(f.position(fl).TXID) < txid {
		pos := f.position(fl)
		itr, err := c.LTXFiles(ctx, 0, pos.TXID+1, false)
		if err != nil {
			return err
		}
		infos, err := ltx.SliceFileIterator(itr)
		if err != nil {
			return err
		}
		sort.Slice(infos, func(i, j int) bool { return infos[i].MinTXID < infos[j].MinTXID })
		if len(infos) == 0 || infos[0].MinTXID != pos.TXID+1 {
			return errGap
		}
		for _, info := range infos {
			if info.MinTXID != f.position(fl).TXID+1 {
				break // listed again from the new position
			}
			if err := f.apply(ctx, fl, c, info); err != nil {
				return err
			}
		}
	}
	return nil
}
