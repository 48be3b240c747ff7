package schema_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dirsvc/dirsvc/schema"
	_ "modernc.org/sqlite"
)

func openDB(t *testing.T) *sql.DB {
	t.Helper()
	db := openDBAt(t, filepath.Join(t.TempDir(), "x.db"))
	db.SetMaxOpenConns(1)
	return db
}

func TestMigrateEmptyThenAlreadyMigratedStore(t *testing.T) {
	for _, f := range []schema.File{schema.Platform, schema.Directory, schema.Ops, schema.Webhooks} {
		t.Run(string(f), func(t *testing.T) {
			ctx := context.Background()
			ms, err := schema.Migrations(f)
			if err != nil || len(ms) == 0 {
				t.Fatalf("Migrations(%s) = %d, %v", f, len(ms), err)
			}
			db := openDB(t)
			v, err := schema.Migrate(ctx, db, f)
			if err != nil || v != len(ms) {
				t.Fatalf("first Migrate = %d, %v; want %d", v, err, len(ms))
			}
			var tables int
			db.QueryRow("SELECT count(*) FROM sqlite_schema WHERE type = 'table'").Scan(&tables)
			if tables == 0 {
				t.Fatal("no tables after migrating")
			}
			// Migrating again is a no-op: same version, same tables.
			v, err = schema.Migrate(ctx, db, f)
			if err != nil || v != len(ms) {
				t.Fatalf("second Migrate = %d, %v", v, err)
			}
			var again int
			db.QueryRow("SELECT count(*) FROM sqlite_schema WHERE type = 'table'").Scan(&again)
			if again != tables {
				t.Fatalf("tables %d then %d", tables, again)
			}
		})
	}
}

func TestMigrateRefusesANewerStore(t *testing.T) {
	db := openDB(t)
	if _, err := db.Exec("PRAGMA user_version = 999"); err != nil {
		t.Fatal(err)
	}
	_, err := schema.Migrate(context.Background(), db, schema.Directory)
	if err == nil || !strings.Contains(err.Error(), "newer than this binary") {
		t.Fatalf("Migrate of a newer store: %v", err)
	}
}

func TestFailedMigrationLeavesTheVersion(t *testing.T) {
	db := openDB(t)
	// A table the first migration creates already exists, so it fails part-way.
	if _, err := db.Exec("CREATE TABLE records (x)"); err != nil {
		t.Fatal(err)
	}
	if _, err := schema.Migrate(context.Background(), db, schema.Directory); err == nil {
		t.Fatal("migration over a conflicting table succeeded")
	}
	var v int
	db.QueryRow("PRAGMA user_version").Scan(&v)
	var n int
	db.QueryRow("SELECT count(*) FROM sqlite_schema WHERE name = 'projections'").Scan(&n)
	if v != 0 || n != 0 {
		t.Fatalf("after a failed migration: version %d, projections table %d", v, n)
	}
}

// TestMigrateTheSameNewFileFromTwoProcesses opens one new file from two writers at once, as an import
// and a running server may, each with its own handle as a process has: both migrations succeed and
// the file ends at the latest version, whichever migrated it.
func TestMigrateTheSameNewFileFromTwoProcesses(t *testing.T) {
	ms, err := schema.Migrations(schema.Directory)
	if err != nil {
		t.Fatal(err)
	}
	for range 30 {
		path := filepath.Join(t.TempDir(), "x.db")
		start := make(chan struct{})
		errs := make(chan error, 2)
		for range 2 {
			db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_txlock=immediate")
			if err != nil {
				t.Fatal(err)
			}
			db.SetMaxOpenConns(1)
			t.Cleanup(func() { db.Close() })
			go func() {
				<-start
				_, err := schema.Migrate(context.Background(), db, schema.Directory)
				errs <- err
			}()
		}
		close(start)
		for range 2 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		db := openDBAt(t, path)
		var v int
		if err := db.QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != len(ms) {
			t.Fatalf("version %d (%v), want %d", v, err, len(ms))
		}
	}
}

func openDBAt(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
