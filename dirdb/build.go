package dirdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/schema"
)

// ImportNew creates a directory by its first import (see dirsvc.DirectoryStore).
//
// Its files are built aside, in a folder of the data folder's dirs folder whose name is no slug
// (buildPrefix), by connections that keep no journal and make no syncs: each page is written once,
// where a WAL-mode write writes it to the WAL and again at the checkpoint, the larger part of a
// large first import's commit. Once the import has committed, the files are switched to WAL mode and
// synced, the folder is moved into place, and the directory is registered. No process sees the
// directory before, and an import that fails leaves nothing behind.
//
// Where the slug's folder holds files of no registered directory (one whose drop was cut short), the
// directory is made there, as Create and Import do. A directory that another process makes in the
// meantime is imported into instead: when it is there before the build, snap is; when it appears
// during the build, what the build stored (importBuilt). So no path needs snap after the build has
// written the records, and the rest of the write has the memory they held.
func (s *Store) ImportNew(ctx context.Context, snap *dirsvc.Snapshot) (dirsvc.ImportStats, error) {
	if s.replica {
		return dirsvc.ImportStats{}, errReplica
	}
	slug := snap.Directory.Slug
	if !dirsvc.ValidSlug(slug) {
		return dirsvc.ImportStats{}, dirsvc.InvalidParam("directory.slug", "%q is not a valid directory slug", slug)
	}
	if d, err := s.Directory(ctx, slug); err == nil {
		return d.Import(ctx, snap)
	} else if !errors.Is(err, dirsvc.ErrNotFound) {
		return dirsvc.ImportStats{}, err
	}
	if ents, err := os.ReadDir(dirsvc.DirectoryFolder(s.root, slug)); err == nil && len(ents) > 0 {
		return s.importInPlace(ctx, snap)
	}
	b, err := startBuild(s.root, slug)
	if err != nil {
		return dirsvc.ImportStats{}, err
	}
	defer b.discard()
	stats, err := b.run(ctx, snap)
	if err != nil {
		return stats, err
	}
	start := time.Now()
	dirsvc.ProgressOf(ctx).Step("sync", 0)
	if err := b.finish(ctx); dirsvc.ErrorCode(err) == dirsvc.EConflict {
		return s.importBuilt(ctx, b, err)
	} else if err != nil {
		return stats, err
	}
	stats.Steps = append(stats.Steps, dirsvc.Step{Name: "sync", Took: time.Since(start)})
	dirsvc.ProgressOf(ctx).StepDone(0)
	// Registered once in place: another process that registered the slug meanwhile (its own first
	// import, say) found this one's files there and opened them.
	if err := s.RegisterDirectory(ctx, slug); err != nil {
		return stats, err
	}
	s.countImport(stats)
	return stats, nil
}

// importBuilt imports what build b stored into the directory another process made while b ran
// (conflict, the error that says so, is the answer when that directory is not registered yet).
func (s *Store) importBuilt(ctx context.Context, b *build, conflict error) (dirsvc.ImportStats, error) {
	d, err := s.Directory(ctx, b.slug)
	if errors.Is(err, dirsvc.ErrNotFound) {
		return dirsvc.ImportStats{}, conflict
	} else if err != nil {
		return dirsvc.ImportStats{}, err
	}
	snap, err := b.snapshot(ctx)
	if err != nil {
		return dirsvc.ImportStats{}, err
	}
	return d.Import(ctx, snap)
}

// importInPlace is ImportNew where the slug's folder already holds files: the directory is
// registered and imported into like any other, and dropped again if the import fails.
func (s *Store) importInPlace(ctx context.Context, snap *dirsvc.Snapshot) (dirsvc.ImportStats, error) {
	d, err := s.CreateDirectory(ctx, snap.Directory.Slug)
	if err != nil {
		return dirsvc.ImportStats{}, err
	}
	stats, err := d.Import(ctx, snap)
	if err != nil {
		if derr := s.DropDirectory(ctx, snap.Directory.Slug); derr != nil {
			err = errors.Join(err, fmt.Errorf("drop the half-created directory: %w", derr))
		}
	}
	return stats, err
}

// buildPrefix begins the names of the folders directories are built in (ImportNew). A slug holds
// no dot, so no such folder is taken for a directory's.
const buildPrefix = ".build-"

// build is a directory being built aside: its folder, locked for as long as the build runs so that
// no other process takes it for one a crashed build left (clearBuilds), and the connections of its
// files.
type build struct {
	slug, root, folder string
	unlock             func()
	pub, ops           *sql.DB
	synced             []*os.File // the files, as writeBack syncs them
	moved              bool
}

func startBuild(root, slug string) (*build, error) {
	folder, err := os.MkdirTemp(dirsvc.DirsPath(root), buildPrefix+slug+"-")
	if err != nil {
		return nil, fmt.Errorf("make a folder to build directory %q in: %w", slug, err)
	}
	unlock, err := lockFolder(folder)
	if err != nil {
		os.RemoveAll(folder)
		return nil, fmt.Errorf("lock the folder directory %q is built in: %w", slug, err)
	}
	return &build{slug: slug, root: root, folder: folder, unlock: unlock}, nil
}

// path returns the path of the build's file f (dirsvc.DirectoryFile, dirsvc.OpsFile).
func (b *build) path(f string) string { return filepath.Join(b.folder, f+".db") }

// run imports snap into the build's files.
func (b *build) run(ctx context.Context, snap *dirsvc.Snapshot) (dirsvc.ImportStats, error) {
	var err error
	if b.pub, err = openOwner(ctx, b.path(dirsvc.DirectoryFile), schema.Directory, building); err != nil {
		return dirsvc.ImportStats{}, err
	}
	if b.ops, err = openOwner(ctx, b.path(dirsvc.OpsFile), schema.Ops, building); err != nil {
		return dirsvc.ImportStats{}, err
	}
	stop := b.writeBack()
	defer stop()
	imp := importing(snap)
	return writeFiles(ctx, b.pub, b.ops, func(w *writeTx) error {
		w.fresh = true
		return imp(w)
	}, func() {})
}

// writeBack syncs the build's files every writeBackEvery until stop: the pages the build writes
// go to the disk while it runs, where the kernel would hold most of them until the last sync
// (finish), which then waits for them all. The descriptors it syncs through stay open until the
// files' connections have closed (closeFiles): closing one would drop the POSIX locks SQLite holds
// on the file.
func (b *build) writeBack() (stop func()) {
	for _, f := range []string{dirsvc.DirectoryFile, dirsvc.OpsFile} {
		if fd, err := os.Open(b.path(f)); err == nil {
			b.synced = append(b.synced, fd)
		}
	}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(writeBackEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				for _, fd := range b.synced {
					fd.Sync() // the last sync reports what fails
				}
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}

// writeBackEvery is how often a build's files are synced while it runs.
const writeBackEvery = time.Second

// finish makes the build's files what a directory's files are, durably, and moves its folder into
// place: each file is switched to WAL mode and synced, and the data folder's dirs folder is synced
// after the move.
func (b *build) finish(ctx context.Context) error {
	if err := b.closeFiles(); err != nil {
		return err
	}
	for _, f := range []string{dirsvc.DirectoryFile, dirsvc.OpsFile} {
		if err := toWAL(ctx, b.path(f)); err != nil {
			return fmt.Errorf("finish directory %q: %w", b.slug, err)
		}
		if err := syncFile(b.path(f)); err != nil {
			return fmt.Errorf("finish directory %q: %w", b.slug, err)
		}
	}
	// A move onto an empty folder replaces it; onto one holding files it fails and leaves them be:
	// another process made the directory meanwhile.
	if err := os.Rename(b.folder, dirsvc.DirectoryFolder(b.root, b.slug)); errors.Is(err, os.ErrExist) {
		return dirsvc.Errorf(dirsvc.EConflict, "directory %q was made by another process during the import", b.slug).With(err)
	} else if err != nil {
		return fmt.Errorf("move directory %q into place: %w", b.slug, err)
	}
	b.moved = true
	return syncFile(dirsvc.DirsPath(b.root))
}

// toWAL switches a file to WAL mode on a connection of its own, which deletes the empty WAL as it
// closes.
func toWAL(ctx context.Context, path string) error {
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath())
	if err != nil {
		return err
	}
	defer db.Close()
	var mode string
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&mode); err != nil {
		return fmt.Errorf("switch %s to WAL mode: %w", filepath.Base(path), err)
	}
	if mode != "wal" {
		return fmt.Errorf("switch %s to WAL mode: it is in %s mode", filepath.Base(path), mode)
	}
	return db.Close()
}

// snapshot reads back the directory a finished build stored (build.finish closed its files).
func (b *build) snapshot(ctx context.Context) (*dirsvc.Snapshot, error) {
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: b.path(dirsvc.OpsFile)}).EscapedPath())
	if err != nil {
		return nil, err
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("read back directory %q: %w", b.slug, err)
	}
	defer tx.Rollback()
	snap, err := loadSnapshot(ctx, tx)
	if err != nil {
		return nil, fmt.Errorf("read back directory %q: %w", b.slug, err)
	}
	return snap, nil
}

// closeFiles closes the build's connections, then the descriptors writeBack synced through.
func (b *build) closeFiles() error {
	var errs []error
	for _, db := range []**sql.DB{&b.pub, &b.ops} {
		if *db != nil {
			errs = append(errs, (*db).Close())
			*db = nil
		}
	}
	for _, fd := range b.synced {
		fd.Close()
	}
	b.synced = nil
	return errors.Join(errs...)
}

// discard ends a build: it removes the folder unless it was moved into place.
func (b *build) discard() {
	b.closeFiles()
	if !b.moved {
		if err := os.RemoveAll(b.folder); err != nil {
			slog.Error("remove the folder of a directory build that failed", "folder", b.folder, "err", err)
		}
	}
	b.unlock()
}

// clearBuilds removes the folders of builds cut short (a process that crashed or was killed while it
// built a directory): those no process holds locked. What it cannot remove it logs and leaves.
func clearBuilds(root string) {
	ents, err := os.ReadDir(dirsvc.DirsPath(root))
	if err != nil {
		slog.Error("list the directories' folders", "err", err)
		return
	}
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), buildPrefix) {
			continue
		}
		folder := filepath.Join(dirsvc.DirsPath(root), e.Name())
		unlock, ok := tryLockFolder(folder)
		if !ok {
			continue // being built, or not to be told (see tryLockFolder)
		}
		err := os.RemoveAll(folder)
		unlock()
		if err != nil {
			slog.Error("remove the folder of a directory build cut short", "folder", folder, "err", err)
		} else {
			slog.Info("removed the folder of a directory build cut short", "folder", folder)
		}
	}
}

// syncFile syncs a file or folder (for a folder, the names just made or moved in it).
func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	return nil
}
