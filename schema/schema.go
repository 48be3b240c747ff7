// Package schema holds the embedded SQL migrations of every store file and applies them in order.
package schema

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

//go:embed platform/*.sql directory/*.sql ops/*.sql webhooks/*.sql
var files embed.FS

// A File names one kind of store file; each has its own migration sequence.
type File string

// The store files.
const (
	Platform  File = "platform"  // data/platform.db: directories, platform switches, later clients and keys
	Directory File = "directory" // data/dirs/<slug>/directory.db: published projections and change log
	Ops       File = "ops"       // data/dirs/<slug>/ops.db: primary only; canonical records and operations
	Webhooks  File = "webhooks"  // data/dirs/<slug>/webhooks.db: primary only; webhook endpoints and deliveries
)

// Migration is one numbered SQL script.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Migrations returns the migrations of file f in order.
func Migrations(f File) ([]Migration, error) {
	entries, err := fs.ReadDir(files, string(f))
	if err != nil {
		return nil, fmt.Errorf("read migrations of %s: %w", f, err)
	}
	var ms []Migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s/%s: name must start with a positive number and _", f, e.Name())
		}
		b, err := files.ReadFile(path.Join(string(f), e.Name()))
		if err != nil {
			return nil, err
		}
		ms = append(ms, Migration{Version: v, Name: e.Name(), SQL: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	for i, m := range ms {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migrations of %s: want version %d, found %s", f, i+1, m.Name)
		}
	}
	return ms, nil
}

// Migrate applies the migrations of file f that db has not yet applied, each in its own transaction
// together with the bump of PRAGMA user_version, so a failed migration leaves the file as it was.
// It returns the schema version after migrating. A file newer than this binary is an error.
func Migrate(ctx context.Context, db *sql.DB, f File) (int, error) {
	ms, err := Migrations(f)
	if err != nil {
		return 0, err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	var current int
	if err := conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&current); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	if current > len(ms) {
		return current, fmt.Errorf("%s store has schema version %d, newer than this binary's %d", f, current, len(ms))
	}
	for _, m := range ms[current:] {
		if err := apply(ctx, conn, m); err != nil {
			return current, fmt.Errorf("migration %s/%s: %w", f, m.Name, err)
		}
		current = m.Version
	}
	return current, nil
}

// apply applies migration m unless the file already has it: another process (an import, the CLI,
// a server) may open the same new file at the same moment and migrate it first, so the version is
// read again inside the transaction, which holds the write lock for a writer's connection
// (_txlock=immediate) or takes it at its first write.
func apply(ctx context.Context, conn *sql.Conn, m Migration) error {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var current int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&current); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if current >= m.Version {
		return nil
	}
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "PRAGMA user_version = "+strconv.Itoa(m.Version)); err != nil {
		return err
	}
	return tx.Commit()
}
