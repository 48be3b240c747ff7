package replicate

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
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
	if errors.Is(err, errGap) {
		f.cfg.Log.Warn("a gap the primary's files cannot bridge: bootstrapping afresh", "directory", slug,
			"copy", uint64(f.position(fl).TXID), "primary", fp.TXID)
		return f.bootstrap(ctx, slug, fp.Lineage, c)
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

func (f *Follower) position(fl *followed) ltx.Pos {
	f.mu.Lock()
	defer f.mu.Unlock()
	return fl.pos
}

// setPosition records a copy's new position, on disk first, and wakes readers waiting for it.
func (f *Follower) setPosition(fl *followed, lineage string, pos ltx.Pos) error {
	if err := writePos(f.path(fl.slug), lineage, pos); err != nil {
		return err
	}
	f.mu.Lock()
	fl.lineage, fl.pos = lineage, pos
	close(f.changed)
	f.changed = make(chan struct{})
	f.mu.Unlock()
	return nil
}

// apply fetches one LTX file, verifies all of it, and only then writes its pages into the copy,
// inside the directory's gate.
func (f *Follower) apply(ctx context.Context, fl *followed, c litestream.ReplicaClient, info *ltx.FileInfo) error {
	rc, err := c.OpenLTXFile(ctx, info.Level, info.MinTXID, info.MaxTXID, 0, 0)
	if errors.Is(err, os.ErrNotExist) {
		return errGap // compacted away since it was listed
	} else if err != nil {
		return err
	}
	body, err := spool(rc, dirsvc.DirectoryFolder(f.cfg.Data, fl.slug))
	rc.Close()
	if err != nil {
		return fmt.Errorf("fetch %s: %w", ltx.FormatFilename(info.MinTXID, info.MaxTXID), err)
	}
	defer body.Close()
	dec := ltx.NewDecoder(body)
	if err := dec.Verify(); err != nil {
		return fmt.Errorf("verify %s: %w", ltx.FormatFilename(info.MinTXID, info.MaxTXID), err)
	}
	hdr, post := dec.Header(), dec.PostApplyPos()
	pos := f.position(fl)
	if hdr.MinTXID != pos.TXID+1 || (!hdr.NoChecksum() && hdr.PreApplyChecksum != pos.PostApplyChecksum) {
		return errGap
	}
	if _, err := body.Seek(0, io.SeekStart); err != nil {
		return err
	}
	dec = ltx.NewDecoder(body)
	if err := dec.DecodeHeader(); err != nil {
		return err
	}
	err = f.cfg.Host.Exclusive(ctx, fl.slug, func() error {
		return writeCopy(f.path(fl.slug), hdr.PageSize, hdr.Commit, func(file *os.File) error {
			data := make([]byte, hdr.PageSize)
			for {
				var ph ltx.PageHeader
				if err := dec.DecodePage(&ph, data); errors.Is(err, io.EOF) {
					return nil
				} else if err != nil {
					return err
				}
				if _, err := file.WriteAt(data, int64(ph.Pgno-1)*int64(hdr.PageSize)); err != nil {
					return err
				}
			}
		})
	})
	if err != nil {
		return fmt.Errorf("apply %s: %w", ltx.FormatFilename(info.MinTXID, info.MaxTXID), err)
	}
	return f.setPosition(fl, fl.lineage, post)
}

// writeCopy changes a copy in place: fn writes pages, then the file is cut to commit pages and its
// header marked as in rollback-journal mode with a new change counter, so every pooled reader drops
// what it cached of the file before its next read.
func writeCopy(path string, pageSize, commit uint32, fn func(*os.File) error) error {
	file, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer file.Close()
	hdr := make([]byte, 100)
	if _, err := io.ReadFull(file, hdr); err != nil {
		return fmt.Errorf("read the copy's header: %w", err)
	}
	if got := sqlitePageSize(hdr); got != pageSize {
		return fmt.Errorf("the copy has %d-byte pages, the change %d-byte pages", got, pageSize)
	}
	counter := binary.BigEndian.Uint32(hdr[24:28])
	if err := fn(file); err != nil {
		return err
	}
	if err := file.Truncate(int64(commit) * int64(pageSize)); err != nil {
		return err
	}
	if _, err := file.ReadAt(hdr, 0); err != nil {
		return err
	}
	markRollback(hdr, counter+1, commit)
	if _, err := file.WriteAt(hdr, 0); err != nil {
		return err
	}
	return file.Sync()
}

// markRollback sets a SQLite header to rollback-journal mode (bytes 18-19), with the change counter
// (24-27), the size in pages (28-31) and the version-valid-for number (92-95) that makes the size
// trusted.
func markRollback(hdr []byte, counter, pages uint32) {
	hdr[18], hdr[19] = 1, 1
	binary.BigEndian.PutUint32(hdr[24:28], counter)
	binary.BigEndian.PutUint32(hdr[28:32], pages)
	binary.BigEndian.PutUint32(hdr[92:96], counter)
}

func sqlitePageSize(hdr []byte) uint32 {
	n := uint32(binary.BigEndian.Uint16(hdr[16:18]))
	if n == 1 {
		return 65536
	}
	return n
}

// spoolInMemory is the size of an LTX file kept in memory while it is verified and applied; a larger
// one (a large import) goes to a temporary file.
const spoolInMemory = 16 << 20

type spooled interface {
	io.ReadSeeker
	io.Closer
}

type memSpool struct{ *bytes.Reader }

func (memSpool) Close() error { return nil }

type fileSpool struct{ *os.File }

func (s fileSpool) Close() error {
	err := s.File.Close()
	os.Remove(s.File.Name())
	return err
}

// spool reads r whole, into memory or, past spoolInMemory, into a temporary file in dir.
func spool(r io.Reader, dir string) (spooled, error) {
	head, err := io.ReadAll(io.LimitReader(r, spoolInMemory+1))
	if err != nil {
		return nil, err
	}
	if len(head) <= spoolInMemory {
		return memSpool{bytes.NewReader(head)}, nil
	}
	tmp, err := os.CreateTemp(dir, ".ltx-*")
	if err != nil {
		return nil, err
	}
	s := fileSpool{tmp}
	if _, err := tmp.Write(head); err != nil {
		s.Close()
		return nil, err
	}
	if _, err := io.Copy(tmp, r); err != nil {
		s.Close()
		return nil, err
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// bootstrap makes a fresh copy of a directory's file: it restores the latest state c holds into a
// new file beside the copy (checked page by page), then puts it in place of the copy: by a rename
// when there is none yet, or, inside the gate, by writing it over the copy that readers have open.
func (f *Follower) bootstrap(ctx context.Context, slug, lineage string, c litestream.ReplicaClient) error {
	start := time.Now()
	plan, err := litestream.CalcRestorePlan(ctx, c, 0, time.Time{}, f.cfg.Log)
	if errors.Is(err, litestream.ErrTxNotAvailable) {
		return nil // nothing replicated yet
	} else if err != nil {
		return fmt.Errorf("plan the bootstrap: %w", err)
	}
	last := plan[len(plan)-1]
	post, err := postApplyChecksum(ctx, c, last)
	if err != nil {
		return err
	}
	pos := ltx.Pos{TXID: last.MaxTXID, PostApplyChecksum: post}
	path := f.path(slug)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	fresh := path + ".bootstrap"
	os.Remove(fresh)
	defer os.Remove(fresh)
	opt := litestream.NewRestoreOptions()
	opt.OutputPath, opt.TXID, opt.IntegrityCheck = fresh, pos.TXID, litestream.IntegrityCheckFull
	if err := litestream.NewReplicaWithClient(nil, c).Restore(ctx, opt); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	if err := toRollback(fresh); err != nil {
		return err
	}
	f.mu.Lock()
	fl := f.files[slug]
	f.mu.Unlock()
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		if err := os.Rename(fresh, path); err != nil {
			return err
		}
	} else if err := f.cfg.Host.Exclusive(ctx, slug, func() error { return overwrite(path, fresh) }); err != nil {
		return fmt.Errorf("put the bootstrap in place: %w", err)
	}
	if fl == nil {
		fl = &followed{slug: slug}
		f.mu.Lock()
		f.files[slug] = fl
		f.mu.Unlock()
	}
	if err := f.setPosition(fl, lineage, pos); err != nil {
		return err
	}
	f.cfg.Log.Info("bootstrapped a directory", "directory", slug, "position", uint64(pos.TXID),
		"source", c.Type(), "duration", time.Since(start).Round(time.Millisecond))
	return nil
}

// postApplyChecksum reads the checksum of the database after the file info names, from its trailer.
func postApplyChecksum(ctx context.Context, c litestream.ReplicaClient, info *ltx.FileInfo) (ltx.Checksum, error) {
	if info.Size < ltx.HeaderSize+ltx.TrailerSize {
		return 0, fmt.Errorf("LTX file %s is too short", ltx.FormatFilename(info.MinTXID, info.MaxTXID))
	}
	rc, err := c.OpenLTXFile(ctx, info.Level, info.MinTXID, info.MaxTXID, info.Size-ltx.TrailerSize, ltx.TrailerSize)
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, ltx.TrailerSize+1))
	if err != nil {
		return 0, err
	}
	var t ltx.Trailer
	if len(b) != ltx.TrailerSize {
		return 0, fmt.Errorf("LTX file %s: want a %d-byte trailer", ltx.FormatFilename(info.MinTXID, info.MaxTXID), ltx.TrailerSize)
	}
	if err := t.UnmarshalBinary(b); err != nil {
		return 0, err
	}
	return t.PostApplyChecksum, nil
}

// toRollback marks a restored file (written in WAL mode) as a rollback-journal copy.
func toRollback(path string) error {
	pageSize, pages, err := geometry(path)
	if err != nil {
		return err
	}
	return writeCopy(path, pageSize, pages, func(*os.File) error { return nil })
}

// overwrite writes the file at from over the copy at path, which readers have open.
func overwrite(path, from string) error {
	pageSize, pages, err := geometry(from)
	if err != nil {
		return err
	}
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	return writeCopy(path, pageSize, pages, func(dst *os.File) error {
		if _, err := dst.Seek(0, io.SeekStart); err != nil {
			return err
		}
		_, err := io.Copy(dst, src)
		return err
	})
}

// geometry returns a SQLite file's page size and its size in pages.
func geometry(path string) (pageSize, pages uint32, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	hdr := make([]byte, 100)
	if _, err := io.ReadFull(f, hdr); err != nil {
		return 0, 0, fmt.Errorf("read the header of %s: %w", path, err)
	}
	pageSize = sqlitePageSize(hdr)
	return pageSize, uint32(st.Size() / int64(pageSize)), nil
}

// bootstrapFromStorage bootstraps every directory from object storage: the platform JSON the
// primary writes there for edges tells which there are (see EdgePlatformKey). It reads nothing of
// the bucket but that JSON and the directory files: never the platform file or an ops file, which
// edge credentials need not reach.
func (f *Follower) bootstrapFromStorage(ctx context.Context) error {
	target := Target{S3: f.cfg.Storage}
	p, err := ReadEdgePlatform(ctx, target)
	if err != nil {
		return err
	}
	f.cfg.Log.Info("the primary is away: bootstrapping from object storage", "directories", len(p.Directories))
	for _, d := range p.Directories {
		c, err := target.bucketClient(directoryName(d.Slug))
		if err != nil {
			return err
		}
		// The lineage is unknown here: the primary's, once it answers, makes the copy bootstrap
		// afresh from it.
		if err := f.bootstrap(ctx, d.Slug, "", c); err != nil {
			f.cfg.Log.Error("bootstrap a directory from object storage", "directory", d.Slug, "err", err)
		}
	}
	return f.syncPlatform(ctx, p)
}

// Position returns the position of the edge's copy of a directory; ok is false when it has none.
func (f *Follower) Position(slug string) (txid uint64, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fl := f.files[slug]
	if fl == nil {
		return 0, false
	}
	return uint64(fl.pos.TXID), true
}

// WaitFor waits up to max for the copy of a directory to reach txid in the history of the lineage
// (any, when empty), and reports whether it did: a copy of another history (the primary was
// restored since) is not there whatever its position, until it is bootstrapped afresh.
func (f *Follower) WaitFor(ctx context.Context, slug string, txid uint64, lineage string, max time.Duration) bool {
	t := time.NewTimer(max)
	defer t.Stop()
	for {
		f.mu.Lock()
		fl, ch := f.files[slug], f.changed
		ok := fl != nil && uint64(fl.pos.TXID) >= txid && (lineage == "" || fl.lineage == lineage)
		f.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-t.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// Status reports the edge's copies: each one's position and lag (how long it has been behind the
// primary, or out of touch with it), and whether every lag is within the bound.
func (f *Follower) Status() dirsvc.NodeStatus {
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	st := dirsvc.NodeStatus{Role: dirsvc.RoleEdge, Healthy: f.started, Files: []dirsvc.FileStatus{}}
	for _, fl := range f.files {
		var lag time.Duration
		if !fl.behindSince.IsZero() {
			lag = now.Sub(fl.behindSince)
		}
		if !f.lostSince.IsZero() {
			lag = max(lag, now.Sub(f.lostSince))
		}
		if f.cfg.MaxLag > 0 && lag > f.cfg.MaxLag {
			st.Healthy = false
		}
		st.Files = append(st.Files, dirsvc.FileStatus{Name: directoryName(fl.slug), Position: uint64(fl.pos.TXID), LagSeconds: lag.Seconds()})
	}
	if !f.lostSince.IsZero() && f.cfg.MaxLag > 0 && now.Sub(f.lostSince) > f.cfg.MaxLag {
		st.Healthy = false
	}
	sort.Slice(st.Files, func(i, j int) bool { return st.Files[i].Name < st.Files[j].Name })
	return st
}

// The position of a copy is kept beside it, written after the copy reached it: after a crash the
// copy may be ahead of its recorded position, never behind, and applying a change again is harmless
// (each LTX file holds whole pages as they are after it).

func posPath(path string) string { return path + "-pos" }

// readPos reads the lineage and position recorded beside a copy ("<lineage> <position>").
func readPos(path string) (string, ltx.Pos, error) {
	b, err := os.ReadFile(posPath(path))
	if err != nil {
		return "", ltx.Pos{}, err
	}
	if _, err := os.Stat(path); err != nil {
		return "", ltx.Pos{}, err
	}
	lineage, pos, ok := strings.Cut(strings.TrimSpace(string(b)), " ")
	if !ok {
		return "", ltx.Pos{}, fmt.Errorf("%s: want a lineage and a position", posPath(path))
	}
	p, err := ltx.ParsePos(pos)
	return lineage, p, err
}

func writePos(path, lineage string, pos ltx.Pos) error {
	if lineage == "" {
		lineage = "-" // unknown (a bootstrap from object storage)
	}
	return writeFileAtomic(posPath(path), []byte(lineage+" "+pos.String()+"\n"))
}
