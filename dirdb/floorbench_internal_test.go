package dirdb

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc/schema"
)

// BenchmarkWriteFloor measures what SQLite alone takes to write what a directory's files hold: the
// floor under any write that stores those rows (a first import, a mirror's first harvest), which
// also has to make them. For each file of the directory DIRSVC_BENCH_DIR (default demo) of the data
// folder DIRSVC_BENCH_DATA, a new file is made and migrated as the writer makes one (its page size,
// WAL, synchronous=NORMAL, its page cache), and in one transaction its secondary indexes are
// dropped, every table's rows are copied from the stored file by INSERT ... SELECT (no Go between
// the engine and the rows; the full-text indexes' own tables included), the indexes are built again
// from the rows, and it commits. Each file is a sub-benchmark of its own (a write has a connection
// to each), which reports the seconds of each phase. Point it at a data folder no process writes,
// by a path the test finds from dirdb, where it runs (an absolute one).
//
//	DIRSVC_BENCH_DATA=$PWD/bench/out/mirror-a DIRSVC_BENCH_DIR=agg go test -run X -bench WriteFloor -benchtime 1x ./dirdb
func BenchmarkWriteFloor(b *testing.B) {
	root := os.Getenv("DIRSVC_BENCH_DATA")
	if root == "" {
		b.Skip("DIRSVC_BENCH_DATA names no data folder")
	}
	slug := os.Getenv("DIRSVC_BENCH_DIR")
	if slug == "" {
		slug = "demo"
	}
	ctx := context.Background()
	for _, f := range []struct {
		name string
		file schema.File
	}{{"directory.db", schema.Directory}, {"ops.db", schema.Ops}} {
		b.Run(f.name, func(b *testing.B) {
			src := filepath.Join(root, "dirs", slug, f.name)
			if _, err := os.Stat(src); err != nil {
				b.Fatal(err)
			}
			var copied, indexed, committed time.Duration
			for range b.N {
				b.StopTimer()
				db, err := openOwner(ctx, filepath.Join(b.TempDir(), f.name), f.file, writing)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				c, i, m, err := copyRows(ctx, db, src)
				if err != nil {
					b.Fatal(err)
				}
				copied, indexed, committed = copied+c, indexed+i, committed+m
				b.StopTimer()
				db.Close()
				b.StartTimer()
			}
			n := float64(b.N)
			b.ReportMetric(copied.Seconds()/n, "rows-s/op")
			b.ReportMetric(indexed.Seconds()/n, "indexes-s/op")
			b.ReportMetric(committed.Seconds()/n, "commit-s/op")
		})
	}
}

// copyRows copies every row of the file at src into db, a migrated file of the same schema and no
// rows of its own but the migrations', in one transaction, and returns how long the rows, the
// indexes and the commit took.
func copyRows(ctx context.Context, db *sql.DB, src string) (rows, indexes, commit time.Duration, err error) {
	conn, err := db.Conn(ctx) // ATTACH holds for one connection: the writer's only one
	if err != nil {
		return 0, 0, 0, err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "ATTACH ? AS src", "file:"+src+"?mode=ro"); err != nil {
		return 0, 0, 0, err
	}
	defer conn.ExecContext(ctx, "DETACH src")
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return 0, 0, 0, err
	}
	defer tx.Rollback()
	names := func(q string) ([][2]string, error) {
		rs, err := tx.QueryContext(ctx, q)
		if err != nil {
			return nil, err
		}
		defer rs.Close()
		var out [][2]string
		for rs.Next() {
			var x [2]string
			if err := rs.Scan(&x[0], &x[1]); err != nil {
				return nil, err
			}
			out = append(out, x)
		}
		return out, rs.Err()
	}
	idx, err := names("SELECT name, sql FROM main.sqlite_schema WHERE type = 'index' AND sql IS NOT NULL")
	if err != nil {
		return 0, 0, 0, err
	}
	// Every ordinary table (a full-text index's own tables among them), not the virtual ones over them.
	tables, err := names(`SELECT name, '' FROM main.sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'
AND sql NOT LIKE 'CREATE VIRTUAL%'`)
	if err != nil {
		return 0, 0, 0, err
	}
	for _, x := range idx {
		if _, err := tx.ExecContext(ctx, `DROP INDEX main."`+x[0]+`"`); err != nil {
			return 0, 0, 0, err
		}
	}
	for _, t := range tables {
		if _, err := tx.ExecContext(ctx, `DELETE FROM main."`+t[0]+`"`); err != nil {
			return 0, 0, 0, err
		}
	}
	start := time.Now()
	for _, t := range tables {
		if _, err := tx.ExecContext(ctx, fmt.Sprintf(`INSERT INTO main."%s" SELECT * FROM src."%[1]s"`, t[0])); err != nil {
			return 0, 0, 0, fmt.Errorf("copy %s: %w", t[0], err)
		}
	}
	rows = time.Since(start)
	start = time.Now()
	for _, x := range idx {
		if _, err := tx.ExecContext(ctx, x[1]); err != nil {
			return 0, 0, 0, err
		}
	}
	indexes = time.Since(start)
	start = time.Now()
	if err := tx.Commit(); err != nil {
		return 0, 0, 0, err
	}
	commit = time.Since(start)
	// The copy holds every row: the floor is of the whole.
	for _, t := range tables {
		var mine, theirs int
		if err := conn.QueryRowContext(ctx, fmt.Sprintf(`SELECT (SELECT count(*) FROM main."%s"), (SELECT count(*) FROM src."%[1]s")`, t[0])).Scan(&mine, &theirs); err != nil {
			return 0, 0, 0, err
		}
		if mine != theirs {
			return 0, 0, 0, fmt.Errorf("%s: %d rows copied of %d", t[0], mine, theirs)
		}
	}
	return rows, indexes, commit, nil
}
