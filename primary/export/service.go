// Package export runs the exports of section 4.5 on the primary: a request (REST or FHIR Bulk Data
// kick-off) becomes a job that reads one consistent snapshot of the directory as the caller sees it
// and writes its files, in constant memory, into a folder of its own under the data folder. Files
// are downloaded through signed links that need no other credentials.
//
// Lifetimes: a download link is valid for LinkLifetime after the answer that gave it (never past the
// export's expiry); an export's files are kept for Retention after it ends, then removed with it.
package export

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/dirsvc/dirsvc"
)

// Lifetimes and bounds of exports.
const (
	// LinkLifetime is how long a download link is valid after the answer that gave it.
	LinkLifetime = time.Hour
	// Retention is how long an export's files are kept after it ends.
	Retention = 7 * 24 * time.Hour
	// MaxUnfinished is the most exports one client may have queued or running in one directory.
	MaxUnfinished = 3
	// MaxListed is the most exports the list answers (the newest).
	MaxListed = 50
)

// statusFile is the name of an export's status in its folder.
const statusFile = "export.json"

// Config configures a Service.
type Config struct {
	// Data is the data folder; exports live in its ExportsFolder.
	Data    string
	Catalog dirsvc.Catalog
	// LinkKey (32 bytes, derived from the server key) signs download links.
	LinkKey []byte
	// BaseURL is the service's public base address, for absolute links.
	BaseURL string
	Now     func() time.Time
	Log     *slog.Logger
	// Workers is how many exports run at once on the node (default 1): each holds a reader of its
	// directory and a core busy for its whole run.
	Workers int
	// PartRecords is how many records are written between flushes of a file (default 1000).
	PartRecords int
	// Clients, when set, is asked again for an export's client as the export starts and at every
	// download: an export whose client was revoked, lost its grant or export:run, or whose grant now
	// shows it less than the export was asked as, fails, and its links answer 403. Nil (an operator's
	// export on the command line) asks no one.
	Clients dirsvc.ClientStore
	// Store, when set, keeps exports' files in object storage too (see Store).
	Store Store
	// Metrics counts the exports that end (see Metrics); nil counts nothing.
	Metrics Metrics
}

// Service runs exports and serves their API.
type Service struct {
	cfg  Config
	root string

	mu      sync.Mutex
	queue   chan string
	cancels map[string]running // running exports
	// statuses are the statuses read from the bucket for the list (see stored), under mu.
	statuses map[string]*job
}

// New returns an export service; Run starts its workers.
func New(cfg Config) (*Service, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 1
	}
	if cfg.PartRecords <= 0 {
		cfg.PartRecords = 1000
	}
	if len(cfg.LinkKey) < 32 {
		return nil, errors.New("export: the link key must be 32 bytes")
	}
	root := dirsvc.ExportsPath(cfg.Data)
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("create the exports folder: %w", err)
	}
	s := &Service{cfg: cfg, root: root, queue: make(chan string, 1024), cancels: map[string]running{}}
	// What a previous process left is settled before anything is served: no export answers running
	// that no process runs.
	if err := s.recover(); err != nil {
		return nil, fmt.Errorf("settle the exports of the previous run: %w", err)
	}
	return s, nil
}

// Export is an export as its client sees it (section 2.6).
type Export struct {
	ID         string               `json:"id"`
	Directory  string               `json:"directory"`
	Status     string               `json:"status"`
	Request    dirsvc.ExportRequest `json:"request"`
	CreatedAt  time.Time            `json:"createdAt"`
	StartedAt  *time.Time           `json:"startedAt,omitempty"`
	FinishedAt *time.Time           `json:"finishedAt,omitempty"`
	// ExpiresAt is when the files are removed (Retention after the export ended).
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	// Records is how many records have been written so far.
	Records int64  `json:"records"`
	Files   []File `json:"files"`
	Error   string `json:"error,omitempty"`
}

// File is one file of an export; URL is a signed download link, given with a succeeded export.
type File struct {
	Name   string `json:"name"`
	Format string `json:"format"`
	// Type is the record kind of a CSV or JSON file, or the FHIR resource type of an NDJSON file.
	Type  string `json:"type,omitempty"`
	Count int64  `json:"count"`
	Bytes int64  `json:"bytes"`
	URL   string `json:"url,omitempty"`
	// LinkExpiresAt is when URL stops working.
	LinkExpiresAt *time.Time `json:"linkExpiresAt,omitempty"`
}

// job is what the status file keeps: the export, and who asked for it as they could read when they
// asked (the export reads as that reader).
type job struct {
	Export
	ClientID      string        `json:"clientId"`
	Viewer        dirsvc.Viewer `json:"viewer"`
	Leaders       bool          `json:"leaders"`
	Practitioners bool          `json:"practitioners"`
	// FHIRTypes, for a Bulk Data export, are the resource types asked for (all when empty).
	FHIRTypes []string `json:"fhirTypes,omitempty"`
	Bulk      bool     `json:"bulk,omitempty"`
	// BulkRequest is the kick-off request's address, for the manifest.
	BulkRequest string `json:"bulkRequest,omitempty"`
	// SnapshotAt is when the snapshot was taken (the manifest's transactionTime).
	SnapshotAt *time.Time `json:"snapshotAt,omitempty"`
}

// folder returns the folder of export id.
func (s *Service) folder(id string) string { return filepath.Join(s.root, id) }

// save writes a job's status under a temporary name, then renames it over the status file, so a
// reader never sees half of one.
func (s *Service) save(j *job) error {
	b, err := json.Marshal(j)
	if err != nil {
		return err
	}
	dir := s.folder(j.ID)
	tmp := filepath.Join(dir, statusFile+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("save export %s: %w", j.ID, err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("save export %s: %w", j.ID, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("save export %s: %w", j.ID, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("save export %s: %w", j.ID, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, statusFile)); err != nil {
		return fmt.Errorf("save export %s: %w", j.ID, err)
	}
	return nil
}

// load reads export id's status; ErrNotFound when there is none.
func (s *Service) load(id string) (*job, error) {
	if !dirsvc.ValidUUID(id) {
		return nil, dirsvc.ErrNotFound
	}
	b, err := os.ReadFile(filepath.Join(s.folder(id), statusFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, dirsvc.ErrNotFound
	} else if err != nil {
		return nil, fmt.Errorf("read export %s: %w", id, err)
	}
	var j job
	if err := json.Unmarshal(b, &j); err != nil {
		return nil, fmt.Errorf("read export %s: %w", id, err)
	}
	return &j, nil
}

// find reads export id's status from the node's folder, or from object storage when the node does
// not hold the export (see Store); ErrNotFound when neither does.
func (s *Service) find(ctx context.Context, id string) (*job, error) {
	j, err := s.load(id)
	if errors.Is(err, dirsvc.ErrNotFound) && dirsvc.ValidUUID(id) {
		return s.loadStored(ctx, id)
	}
	return j, err
}

// all returns every export on the node, newest first.
func (s *Service) all() ([]*job, error) {
	ents, err := os.ReadDir(s.root)
	if err != nil {
		return nil, fmt.Errorf("list exports: %w", err)
	}
	var out []*job
	for _, e := range ents {
		if !e.IsDir() || !dirsvc.ValidUUID(e.Name()) {
			continue
		}
		j, err := s.load(e.Name())
		if errors.Is(err, dirsvc.ErrNotFound) {
			continue // being created, or removed meanwhile
		} else if err != nil {
			s.cfg.Log.Error("exports: read a status", "export", e.Name(), "err", err)
			continue
		}
		out = append(out, j)
	}
	slices.SortFunc(out, func(a, b *job) int { return b.CreatedAt.Compare(a.CreatedAt) })
	return out, nil
}

// listed returns the exports the list may answer, newest first: every export on the node, and with
// object storage, those the bucket holds whose folder the node lacks (see stored).
func (s *Service) listed(ctx context.Context) ([]*job, error) {
	out, err := s.all()
	if err != nil || s.cfg.Store == nil {
		return out, err
	}
	local := map[string]bool{}
	for _, j := range out {
		local[j.ID] = true
	}
	more, err := s.stored(ctx, local)
	if err != nil {
		// The node's own exports are still listed as they are.
		s.cfg.Log.Error("exports: list object storage", "err", err)
		return out, nil
	}
	out = append(out, more...)
	slices.SortFunc(out, func(a, b *job) int { return b.CreatedAt.Compare(a.CreatedAt) })
	return out, nil
}

// create records a new export and queues it.
func (s *Service) create(j *job) error {
	j.ID = dirsvc.NewUUID()
	j.Status = dirsvc.ExportQueued
	j.CreatedAt = s.cfg.Now().UTC()
	j.Files = []File{}
	if err := os.Mkdir(s.folder(j.ID), 0o700); err != nil {
		return fmt.Errorf("create export: %w", err)
	}
	if err := s.save(j); err != nil {
		os.RemoveAll(s.folder(j.ID))
		return err
	}
	select {
	case s.queue <- j.ID:
	default:
		// The queue is full: the export stays queued, and Run's next look at the folder takes it.
	}
	return nil
}

// unfinished counts a client's queued and running exports in a directory.
func (s *Service) unfinished(dir, client string) (int, error) {
	js, err := s.all()
	n := 0
	for _, j := range js {
		if j.Directory == dir && j.ClientID == client && !dirsvc.ExportDone(j.Status) {
			n++
		}
	}
	return n, err
}

// Run runs exports until ctx ends: the queued ones (those a previous process left queued too), and
// every hour it removes the exports past their retention. (New has already ended failed the exports
// a previous process left running.)
func (s *Service) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for range s.cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case id := <-s.queue:
					s.run(ctx, id)
				}
			}
		}()
	}
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		s.prune(ctx)
		s.requeue()
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case <-t.C:
		}
	}
}

// recover ends failed the exports a stopped process left running, their partial files removed (a
// part file is never served, but it takes room).
func (s *Service) recover() error {
	js, err := s.all()
	if err != nil {
		return err
	}
	for _, j := range js {
		if j.Status != dirsvc.ExportRunning {
			continue
		}
		removeFiles(s.folder(j.ID))
		j.Files = []File{}
		s.finish(j, dirsvc.ExportFailed, "The service stopped during the export: ask for it again.")
	}
	return nil
}

// requeue queues the queued exports the queue does not hold (after a restart, or a full queue).
func (s *Service) requeue() {
	js, err := s.all()
	if err != nil {
		s.cfg.Log.Error("exports: list", "err", err)
		return
	}
	for i := len(js) - 1; i >= 0; i-- { // oldest first
		j := js[i]
		s.mu.Lock()
		_, running := s.cancels[j.ID]
		s.mu.Unlock()
		if j.Status == dirsvc.ExportQueued && !running {
			select {
			case s.queue <- j.ID:
			default:
			}
		}
	}
}

// prune removes the exports past their retention, and those that never got a status, from the
// node's folder and from object storage.
func (s *Service) prune(ctx context.Context) {
	now := s.cfg.Now()
	ents, err := os.ReadDir(s.root)
	if err != nil {
		s.cfg.Log.Error("exports: prune", "err", err)
		return
	}
	for _, e := range ents {
		if !e.IsDir() || !dirsvc.ValidUUID(e.Name()) {
			continue
		}
		j, err := s.load(e.Name())
		switch {
		case errors.Is(err, dirsvc.ErrNotFound):
			if info, ierr := e.Info(); ierr == nil && now.Sub(info.ModTime()) > time.Hour {
				os.RemoveAll(s.folder(e.Name()))
			}
		case err != nil:
		case j.ExpiresAt != nil && now.After(*j.ExpiresAt):
			// From the bucket first: a folder removed while its blobs stay is pruned from the
			// bucket by pruneStored, but not the other way round.
			if err := s.unstore(ctx, j.ID); err != nil {
				s.cfg.Log.Error("exports: remove an expired export from object storage", "export", j.ID, "err", err)
				continue
			}
			if err := os.RemoveAll(s.folder(j.ID)); err != nil {
				s.cfg.Log.Error("exports: remove an expired export", "export", j.ID, "err", err)
			}
		}
	}
	s.pruneStored(ctx)
}

// Prune removes the exports past their retention now (Run does it every hour).
func (s *Service) Prune(ctx context.Context) { s.prune(ctx) }

// settle ends a job in state st (its status not saved).
func (s *Service) settle(j *job, st, msg string) {
	now := s.cfg.Now().UTC()
	exp := now.Add(Retention)
	j.Status, j.Error, j.FinishedAt, j.ExpiresAt = st, msg, &now, &exp
}

// finish ends a job in state st and saves it.
func (s *Service) finish(j *job, st, msg string) {
	s.settle(j, st, msg)
	if err := s.save(j); err != nil {
		s.cfg.Log.Error("exports: save", "export", j.ID, "err", err)
	}
}

// cancel stops export id if it runs, and removes it, from object storage too.
func (s *Service) cancel(ctx context.Context, id string) error {
	s.mu.Lock()
	run, ok := s.cancels[id]
	s.mu.Unlock()
	if ok {
		// Its writer stops, and is waited for: a file it was writing as the folder is removed would
		// otherwise be left behind, or stop the removal.
		run.cancel()
		select {
		case <-run.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := s.unstore(ctx, id); err != nil {
		return err
	}
	return os.RemoveAll(s.folder(id))
}

// running is an export being written: how to stop it, and a channel closed once its writer has
// returned.
type running struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// removeFiles removes every file of an export folder but its status.
func removeFiles(dir string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.Name() != statusFile {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}

// errAccessChanged ends an export, or refuses a link to its files, once its client may no longer
// have it (see Config.Clients).
var errAccessChanged = dirsvc.Errorf(dirsvc.EForbiddenScope,
	"The client's access to the directory changed since the export was asked for: ask for it again.")

// granted checks that an export's client may still have it, as its grant stands now.
func (s *Service) granted(ctx context.Context, j *job) error {
	if s.cfg.Clients == nil || j.ClientID == "" {
		return nil
	}
	c, _, err := s.cfg.Clients.Client(ctx, j.ClientID)
	if errors.Is(err, dirsvc.ErrNotFound) {
		return errAccessChanged
	} else if err != nil {
		return err
	}
	g := c.Grant(j.Directory)
	if c.Revoked || g == nil || !slices.Contains(g.Scopes, dirsvc.ScopeExportRun) ||
		j.Practitioners && !slices.Contains(g.Scopes, dirsvc.ScopePractitionersRead) ||
		j.Leaders && !slices.Contains(g.Scopes, dirsvc.ScopeLeadershipRead) ||
		g.Tier != j.Viewer.Audience || !sameNarrowing(g.Narrowing, j.Viewer.Narrowing) {
		return errAccessChanged
	}
	return nil
}

func sameNarrowing(a, b dirsvc.Narrowing) bool {
	return slices.Equal(a.Areas, b.Areas) && slices.Equal(a.Categories, b.Categories) && slices.Equal(a.Kinds, b.Kinds)
}
