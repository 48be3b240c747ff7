package dirdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/schema"
)

// Store is the data folder of one node: data/platform.db and data/dirs/<slug>/{directory,ops}.db.
// It opens directories lazily and keeps them open until Close.
//
// Every file may change under it, by another process (a command run beside the service) as well as
// by this one: Directory, TokenKey and PublicKeys look at the platform file and the directory's file
// first, and drop what was kept of either since its last commit.
type Store struct {
	root     string
	platform *sql.DB
	replica  bool // an edge's copy: directory files are followed, never written here

	pwatch      *fileWatch    // platform.db
	platformGen atomic.Uint64 // moves whenever the platform file changes (see Directory.Info)

	mu   sync.Mutex
	dirs map[string]*dirEntry

	cached cacheAccount // memory of the views the directories keep (viewCache)
	keys   keyCache     // public token keys
	warm   atomic.Bool  // directories load their search indexes as they open (SetWarmSearch)
	// imported is told of every import committed (SetImportCounter).
	imported atomic.Pointer[func(dirsvc.ImportStats)]
}

// dirEntry is an open directory, or one being opened: opening runs the file's migrations, which may
// take long on a large directory, so it happens outside the store's lock and only this directory's
// readers wait for it.
type dirEntry struct {
	ready chan struct{} // closed once d or err is set
	d     *Directory
	err   error
}

func openedEntry(d *Directory) *dirEntry {
	e := &dirEntry{ready: make(chan struct{}), d: d}
	close(e.ready)
	return e
}

// Open opens (creating and migrating where needed) the data folder at root.
func Open(ctx context.Context, root string) (*Store, error) { return open(ctx, root, false) }

func open(ctx context.Context, root string, replica bool) (*Store, error) {
	if err := os.MkdirAll(dirsvc.DirsPath(root), 0o700); err != nil {
		return nil, fmt.Errorf("create data folder: %w", err)
	}
	if !replica {
		clearBuilds(root)
	}
	p, err := openWriter(ctx, dirsvc.FilePath(root, dirsvc.PlatformFile), schema.Platform)
	if err != nil {
		return nil, err
	}
	s := &Store{root: root, platform: p, replica: replica, dirs: map[string]*dirEntry{}}
	s.cached.budget.Store(DefaultViewCacheBudget)
	if s.pwatch, err = newFileWatch(dirsvc.FilePath(root, dirsvc.PlatformFile)); err != nil {
		p.Close()
		return nil, err
	}
	if err := s.reloadKeys(ctx); err != nil {
		p.Close()
		return nil, err
	}
	return s, nil
}

// SetViewCacheBudget sets the bytes of heap the views its directories keep in memory may take, all
// directories together (DefaultViewCacheBudget until set). A smaller budget takes effect as views
// are next kept; 0 keeps none.
func (s *Store) SetViewCacheBudget(n int64) { s.cached.budget.Store(max(n, 0)) }

// SetWarmSearch makes every directory opened from now on load its search index (documents and
// vocabularies) in the background at once, rather than when the first search asks: a serving node
// wants its first searches answered, a command-line tool does not want the work.
func (s *Store) SetWarmSearch(on bool) { s.warm.Store(on) }

// Warmed returns a channel closed once the directory answers searches at their usual cost: its
// search index loaded, and each audience's vocabulary and autocomplete list read (or the loading
// ended by an error, which the next search reports). It is closed at once for a directory opened
// while the store did not warm directories (see SetWarmSearch).
func (d *Directory) Warmed() <-chan struct{} {
	if d.warmed == nil {
		c := make(chan struct{})
		close(c)
		return c
	}
	return d.warmed
}

// fresh drops what the store keeps of the platform file if any connection or process committed to
// it since the last look: the public keys, the directories' descriptions (they carry the platform's
// switches), and directories another process dropped.
func (s *Store) fresh(ctx context.Context) error {
	return s.pwatch.check(func() error {
		s.platformGen.Add(1)
		if err := s.reloadKeys(ctx); err != nil {
			return err
		}
		return s.retireDropped(ctx)
	})
}

// retireDropped closes the open directories the platform no longer lists, or whose file is no longer
// the one opened (another process dropped the directory, and maybe imported it anew): the next
// request opens what is there now.
func (s *Store) retireDropped(ctx context.Context) error {
	s.mu.Lock()
	listed := map[string]bool{}
	rows, err := s.platform.QueryContext(ctx, "SELECT slug FROM directories")
	if err != nil {
		s.mu.Unlock()
		return fmt.Errorf("list directories: %w", err)
	}
	for rows.Next() {
		var slug string
		if err := rows.Scan(&slug); err != nil {
			rows.Close()
			s.mu.Unlock()
			return fmt.Errorf("list directories: %w", err)
		}
		listed[slug] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		s.mu.Unlock()
		return fmt.Errorf("list directories: %w", err)
	}
	var retired []*Directory
	for slug, e := range s.dirs {
		select {
		case <-e.ready:
		default:
			continue // being opened, or changed by the follower: as the platform is now
		}
		if e.d != nil && (!listed[slug] || e.d.replaced()) {
			delete(s.dirs, slug)
			retired = append(retired, e.d)
		}
	}
	s.mu.Unlock()
	for _, d := range retired {
		d.retire()
	}
	return nil
}

// retire closes a directory that is no longer served, once the reads under way are done.
func (d *Directory) retire() {
	d.gate.Lock()
	defer d.gate.Unlock()
	d.close()
}

// Close closes every open file.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, e := range s.dirs {
		<-e.ready
		if e.d != nil {
			errs = append(errs, e.d.close())
		}
	}
	s.dirs = map[string]*dirEntry{}
	errs = append(errs, s.platform.Close())
	return errors.Join(errs...)
}

// Root returns the data folder.
func (s *Store) Root() string { return s.root }

// Slugs returns the slugs of the directories this node serves, in order.
func (s *Store) Slugs(ctx context.Context) ([]string, error) {
	slugs, err := queryStrings(ctx, s.platform, "SELECT slug FROM directories ORDER BY slug")
	if err != nil {
		return nil, fmt.Errorf("list directories: %w", err)
	}
	return slugs, nil
}

// Directory returns the open directory with the slug, opening it on first use. An unknown slug is
// dirsvc.ErrNotFound.
//
// What the store and the directory keep of their files is as fresh as the files at the call: a
// commit by any process before it is seen by every read through the directory after it.
func (s *Store) Directory(ctx context.Context, slug string) (*Directory, error) {
	if err := s.fresh(ctx); err != nil {
		return nil, err
	}
	for {
		d, err := s.directory(ctx, slug)
		if errors.Is(err, errFollowing) {
			runtime.Gosched() // the follower is about to remove its entry
			continue
		}
		if err != nil {
			return nil, err
		}
		if err := d.fresh(); err != nil {
			return nil, err
		}
		return d, nil
	}
}

func (s *Store) directory(ctx context.Context, slug string) (*Directory, error) {
	s.mu.Lock()
	e, ok := s.dirs[slug]
	if !ok {
		var one int
		err := s.platform.QueryRowContext(ctx, "SELECT 1 FROM directories WHERE slug = ?", slug).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			s.mu.Unlock()
			return nil, dirsvc.ErrNotFound
		} else if err != nil {
			s.mu.Unlock()
			return nil, fmt.Errorf("look up directory %q: %w", slug, err)
		}
		e = &dirEntry{ready: make(chan struct{})}
		s.dirs[slug] = e
		s.mu.Unlock()
		// The open outlives the request that started it: others may be waiting for it.
		e.d, e.err = openDirectory(context.WithoutCancel(ctx), s, slug, false)
		if e.err == nil && s.warm.Load() {
			d := e.d
			d.warmed = make(chan struct{})
			go func() {
				defer close(d.warmed)
				d.warmSearch()
			}()
		}
		close(e.ready)
		if e.err != nil {
			s.mu.Lock()
			if s.dirs[slug] == e {
				delete(s.dirs, slug) // the next request tries again
			}
			s.mu.Unlock()
		}
		return e.d, e.err
	}
	s.mu.Unlock()
	select {
	case <-e.ready:
		return e.d, e.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// CreateDirectory registers a new, empty directory and returns it; it is a conflict when the slug is
// taken.
func (s *Store) CreateDirectory(ctx context.Context, slug string) (*Directory, error) {
	if s.replica {
		return nil, errReplica
	}
	if !dirsvc.ValidSlug(slug) {
		return nil, dirsvc.InvalidParam("slug", "%q is not a valid directory slug", slug)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.MkdirAll(dirsvc.DirectoryFolder(s.root, slug), 0o700); err != nil {
		return nil, fmt.Errorf("create directory folder: %w", err)
	}
	res, err := s.platform.ExecContext(ctx,
		"INSERT INTO directories (slug, created_at) VALUES (?, ?) ON CONFLICT (slug) DO NOTHING",
		slug, time.Now().UTC().Format(time.RFC3339Nano))
	if err != nil {
		return nil, fmt.Errorf("register directory %q: %w", slug, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil, dirsvc.Errorf(dirsvc.EConflict, "directory %q exists", slug)
	}
	d, err := openDirectory(ctx, s, slug, true)
	if err != nil {
		return nil, err
	}
	s.dirs[slug] = openedEntry(d)
	return d, nil
}

// RegisterDirectory records a directory whose files were put in the data folder from elsewhere (a
// restore); registering one already known changes nothing.
func (s *Store) RegisterDirectory(ctx context.Context, slug string) error {
	if !dirsvc.ValidSlug(slug) {
		return dirsvc.InvalidParam("slug", "%q is not a valid directory slug", slug)
	}
	_, err := s.platform.ExecContext(ctx,
		"INSERT INTO directories (slug, created_at) VALUES (?, ?) ON CONFLICT (slug) DO NOTHING",
		slug, time.Now().UTC().Format(time.RFC3339Nano))
	if err != nil {
		return fmt.Errorf("register directory %q: %w", slug, err)
	}
	return nil
}

// DropDirectory closes and deletes a directory; used to undo a directory whose first import failed.
func (s *Store) DropDirectory(ctx context.Context, slug string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.dirs[slug]; ok {
		<-e.ready
		if e.d != nil {
			e.d.retire()
		}
		delete(s.dirs, slug)
	}
	if _, err := s.platform.ExecContext(ctx, "DELETE FROM directories WHERE slug = ?", slug); err != nil {
		return fmt.Errorf("unregister directory %q: %w", slug, err)
	}
	return os.RemoveAll(dirsvc.DirectoryFolder(s.root, slug))
}

// SeniorManagementAvailable reports whether the platform made senior management available to the
// directory.
func (s *Store) SeniorManagementAvailable(ctx context.Context, slug string) (bool, error) {
	var on bool
	err := s.platform.QueryRowContext(ctx,
		"SELECT senior_management_available FROM directories WHERE slug = ?", slug).Scan(&on)
	if errors.Is(err, sql.ErrNoRows) {
		return false, dirsvc.ErrNotFound
	}
	return on, err
}

// SetSeniorManagementAvailable sets the platform's switch for senior management of a directory.
func (s *Store) SetSeniorManagementAvailable(ctx context.Context, slug string, on bool) error {
	res, err := s.platform.ExecContext(ctx,
		"UPDATE directories SET senior_management_available = ? WHERE slug = ?", on, slug)
	if err != nil {
		return fmt.Errorf("set senior management of %q: %w", slug, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return dirsvc.ErrNotFound
	}
	s.platformGen.Add(1) // a description read before the switch is not kept (see Info)
	return nil
}
