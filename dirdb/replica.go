package dirdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/dirsvc/dirsvc"
)

// errFollowing marks a directory's entry while the follower changes its file with the directory
// closed: whoever waited for the entry looks again.
var errFollowing = errors.New("the directory's copy is being changed")

// errReplica answers every write to an edge's copy of a directory.
var errReplica = dirsvc.Errorf(dirsvc.EConflict, "this node keeps read-only copies of its directories: write on the primary")

// OpenReplica opens an edge's data folder: its own platform file, which the edge keeps in step with
// the primary's directory list, switches and public token keys (never its clients), and copies of
// directory files that only replication changes. A copy is kept in rollback-journal mode and is read
// through the same pooled, read-only connections as on the primary; the follower changes it only
// inside Exclusive.
func OpenReplica(ctx context.Context, root string) (*Store, error) { return open(ctx, root, true) }

// Exclusive runs fn while no one reads the directory's file: it waits for the reads under way, ends
// the read transactions the hot readers keep open, runs fn, and then drops everything readers kept
// of the file (the change counter fn bumps makes SQLite drop its page caches). A directory not open
// stays closed while fn runs: a request for it waits, and other directories are not held up.
func (s *Store) Exclusive(ctx context.Context, slug string, fn func() error) error {
	s.mu.Lock()
	e, ok := s.dirs[slug]
	if !ok {
		busy := &dirEntry{ready: make(chan struct{}), err: errFollowing}
		s.dirs[slug] = busy
		s.mu.Unlock()
		defer func() {
			// Released before the store's lock is taken: Close and DropDirectory wait for entries
			// while they hold it. Waiters look again until the entry is gone.
			close(busy.ready)
			s.mu.Lock()
			if s.dirs[slug] == busy {
				delete(s.dirs, slug)
			}
			s.mu.Unlock()
		}()
		return fn()
	}
	s.mu.Unlock()
	select {
	case <-e.ready:
	case <-ctx.Done():
		return ctx.Err()
	}
	d := e.d
	if d == nil { // its open failed and is being retried: wait for the store's lock instead
		s.mu.Lock()
		defer s.mu.Unlock()
		return fn()
	}
	d.yield.begin() // long reads give the gate up rather than hold the change back
	defer d.yield.end()
	d.gate.Lock()
	defer d.gate.Unlock()
	d.records.changed() // end the hot readers' transactions: they hold the file's shared lock
	err := fn()
	d.committed()
	return err
}

// Platform returns what an edge needs of the platform file: the directories with their switches,
// and the public token keys. Client identities, secrets and grants are not part of it.
func (s *Store) Platform(ctx context.Context) (*dirsvc.Platform, error) {
	return readPlatform(ctx, s.platform)
}

// ReadPlatform returns what an edge needs of a platform file that is not open (one restored from
// object storage when the primary is away).
func ReadPlatform(ctx context.Context, path string) (*dirsvc.Platform, error) {
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?mode=ro")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	return readPlatform(ctx, db)
}

func readPlatform(ctx context.Context, db *sql.DB) (*dirsvc.Platform, error) {
	rows, err := db.QueryContext(ctx, "SELECT slug, senior_management_available FROM directories ORDER BY slug")
	if err != nil {
		return nil, fmt.Errorf("read directories: %w", err)
	}
	defer rows.Close()
	p := &dirsvc.Platform{Directories: []dirsvc.PlatformDirectory{}}
	for rows.Next() {
		var d dirsvc.PlatformDirectory
		if err := rows.Scan(&d.Slug, &d.SeniorManagementAvailable); err != nil {
			return nil, err
		}
		p.Directories = append(p.Directories, d)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if p.Keys, err = signingKeys(ctx, db); err != nil {
		return nil, err
	}
	if p.Cutoffs, err = tokenCutoffs(ctx, db); err != nil {
		return nil, err
	}
	return p, nil
}

// SyncPlatform makes an edge's platform file follow the primary's: it serves the directories of p
// whose copies are ready (and drops, files and all, those p no longer lists), takes p's switches, and
// adds its public keys. It reads the edge's own platform once and writes only what differs: the
// follower calls it after every change it applies. It returns the slugs it dropped.
func (s *Store) SyncPlatform(ctx context.Context, p *dirsvc.Platform, ready func(slug string) bool) (dropped []string, err error) {
	have, err := s.Platform(ctx)
	if err != nil {
		return nil, err
	}
	served := map[string]bool{} // slug: senior management available
	for _, d := range have.Directories {
		served[d.Slug] = d.SeniorManagementAvailable
	}
	listed := map[string]bool{}
	for _, d := range p.Directories {
		listed[d.Slug] = true
		on, ok := served[d.Slug]
		if !ok && ready(d.Slug) {
			if err := s.RegisterDirectory(ctx, d.Slug); err != nil {
				return nil, err
			}
			ok = true
		}
		if ok && on != d.SeniorManagementAvailable {
			if err := s.SetSeniorManagementAvailable(ctx, d.Slug, d.SeniorManagementAvailable); err != nil {
				return nil, err
			}
		}
	}
	for slug := range served {
		if !listed[slug] {
			if err := s.DropDirectory(ctx, slug); err != nil {
				return dropped, err
			}
			dropped = append(dropped, slug)
		}
	}
	return dropped, s.syncTokenKeys(ctx, have, p)
}

// syncTokenKeys makes the edge's public keys and token cut-offs those of the primary's platform p,
// given what the edge has: a key the primary retired is withdrawn here too.
func (s *Store) syncTokenKeys(ctx context.Context, have, p *dirsvc.Platform) error {
	known, listed := map[string]bool{}, map[string]bool{}
	for _, k := range have.Keys {
		known[k.ID] = true
	}
	for _, k := range p.Keys {
		listed[k.ID] = true
		if known[k.ID] {
			continue
		}
		if k.CreatedAt.IsZero() {
			k.CreatedAt = time.Now()
		}
		if err := s.AddSigningKey(ctx, k); err != nil {
			return fmt.Errorf("a signing key from the primary: %w", err)
		}
	}
	for _, k := range have.Keys {
		if !listed[k.ID] {
			if err := s.RetireSigningKey(ctx, k.ID); err != nil {
				return fmt.Errorf("withdraw a signing key the primary retired: %w", err)
			}
		}
	}
	if slices.Equal(have.Cutoffs, p.Cutoffs) {
		return nil
	}
	tx, err := s.platform.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "DELETE FROM token_cutoffs"); err != nil {
		return fmt.Errorf("replace token cut-offs: %w", err)
	}
	for _, c := range p.Cutoffs {
		if _, err := tx.ExecContext(ctx, "INSERT INTO token_cutoffs (client_id, valid_from) VALUES (?, ?)", c.ClientID, c.ValidFrom); err != nil {
			return fmt.Errorf("replace token cut-offs: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	return s.reloadKeys(ctx)
}
