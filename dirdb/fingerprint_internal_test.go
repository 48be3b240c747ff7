package dirdb

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/primary/demo"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// TestImportFingerprint holds what imports store, row for row, to a golden file: every table of
// directory.db and ops.db (the full-text indexes by their every word instance) after a small first
// import, a first import large enough to take the bulk paths, and a second import that changes,
// adds and removes records. The write path may be made faster; what it stores must not change.
func TestImportFingerprint(t *testing.T) {
	defer func(c func() time.Time) { writeClock = c }(writeClock)
	at := time.Date(2026, 1, 2, 3, 4, 5, 678e6, time.UTC)
	writeClock = func() time.Time { return at }
	ctx := context.Background()
	small, gen := importFixtures(t)
	var out strings.Builder
	for _, c := range []struct {
		name  string
		files [][]byte
		edit  func(*dirsvc.Snapshot) // of the last file
	}{
		{name: "a small first import", files: [][]byte{small}},
		{name: "a large first import", files: [][]byte{gen}},
		{name: "a second import that changes records", files: [][]byte{gen, gen}, edit: editSnapshot},
	} {
		s, err := Open(ctx, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		for i, f := range c.files {
			snap := parseForTest(t, f)
			if i == len(c.files)-1 && c.edit != nil {
				c.edit(snap)
			}
			d, err := s.Directory(ctx, snap.Directory.Slug)
			if err != nil {
				d, err = s.CreateDirectory(ctx, snap.Directory.Slug)
			}
			if err != nil {
				t.Fatal(err)
			}
			at = at.Add(time.Hour)
			if _, err := d.Import(ctx, snap); err != nil {
				t.Fatalf("%s: import %d: %v", c.name, i+1, err)
			}
		}
		slug := parseForTest(t, c.files[0]).Directory.Slug
		root := s.Root()
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&out, "# %s\n", c.name)
		for _, file := range []string{"directory.db", "ops.db"} {
			out.WriteString(fingerprint(t, filepath.Join(root, "dirs", slug, file)))
		}
	}
	golden := filepath.Join("testdata", "import-fingerprint.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != string(want) {
		t.Errorf("what the imports store changed (go test -run TestImportFingerprint -update rewrites %s):\n%s\nwant\n%s", golden, got, want)
	}
}

// importFixtures returns the small fixture, and a generated directory large enough for the bulk
// paths of a first import (bulkThreshold).
func importFixtures(t *testing.T) (small, gen []byte) {
	t.Helper()
	small, err := os.ReadFile(filepath.Join("..", "testdata", "small.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := demo.Generate(&b, demo.Options{Slug: "gen", Country: "AU", Services: 1800, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	return small, b.Bytes()
}

// editSnapshot changes a generated directory as a second import would find it: three roles gone, a
// service renamed, a site moved and a service taken down.
func editSnapshot(snap *dirsvc.Snapshot) {
	var kept []dirsvc.Record
	renamed, moved, down, dropped := false, false, false, 0
	for _, rec := range snap.Records {
		switch r := rec.(type) {
		case *dirsvc.Service:
			switch {
			case !renamed:
				r.Name += " Plus"
				renamed = true
			case !down && r.State == dirsvc.StateLive:
				r.State = dirsvc.StateTakedown
				down = true
			}
		case *dirsvc.Location:
			if !moved && len(r.Areas) > 1 {
				r.Areas = r.Areas[1:]
				moved = true
			}
		case *dirsvc.PractitionerRole:
			if dropped < 3 {
				dropped++
				continue
			}
		}
		kept = append(kept, rec)
	}
	snap.Records = kept
}

// fingerprint describes every table of a file: its name, its number of rows and a hash of them in
// order of every column. A full-text index is described by each instance of each word.
func fingerprint(t *testing.T, path string) string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	rows, err := db.Query("SELECT name, sql FROM sqlite_schema WHERE type = 'table' ORDER BY name")
	if err != nil {
		t.Fatal(err)
	}
	type table struct{ name, def string }
	var tables []table
	for rows.Next() {
		var tb table
		if err := rows.Scan(&tb.name, &tb.def); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, tb)
	}
	rows.Close()
	var virtual []string
	for _, tb := range tables {
		if strings.HasPrefix(tb.def, "CREATE VIRTUAL TABLE") {
			virtual = append(virtual, tb.name)
		}
	}
	var b strings.Builder
	for _, tb := range tables {
		query := fmt.Sprintf("SELECT * FROM %q ORDER BY %s", tb.name, "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15")
		switch {
		case shadowOf(tb.name, virtual):
			continue
		case strings.Contains(tb.def, "fts5vocab"):
			continue // what the index's instances show
		case strings.Contains(tb.def, "fts5"):
			v := "temp." + tb.name + "_instances"
			if _, err := db.Exec(fmt.Sprintf("CREATE VIRTUAL TABLE %s USING fts5vocab(main, %q, instance)", v, tb.name)); err != nil {
				t.Fatal(err)
			}
			query = "SELECT term, doc, col, offset FROM " + v + " ORDER BY 1, 2, 3, 4"
		}
		query = trimOrder(t, db, tb.name, query)
		n, h := hashRows(t, db, query)
		fmt.Fprintf(&b, "%s %s %d %x\n", filepath.Base(path), tb.name, n, h[:8])
	}
	return b.String()
}

// shadowOf reports whether name is a shadow table of one of the virtual tables.
func shadowOf(name string, virtual []string) bool {
	for _, v := range virtual {
		if strings.HasPrefix(name, v+"_") {
			return true
		}
	}
	return false
}

// trimOrder cuts an ORDER BY of column numbers to the table's number of columns.
func trimOrder(t *testing.T, db *sql.DB, name, query string) string {
	t.Helper()
	head, order, ok := strings.Cut(query, " ORDER BY ")
	if !ok || !strings.HasPrefix(head, "SELECT * ") {
		return query
	}
	var n int
	if err := db.QueryRow(fmt.Sprintf("SELECT count(*) FROM pragma_table_info(%s)", sqlQuote(name))).Scan(&n); err != nil {
		t.Fatal(err)
	}
	cols := strings.Split(order, ", ")
	return head + " ORDER BY " + strings.Join(cols[:min(n, len(cols))], ", ")
}

func sqlQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// hashRows returns the number of rows query returns and a hash of their values and types.
func hashRows(t *testing.T, db *sql.DB, query string) (int, []byte) {
	t.Helper()
	rows, err := db.Query(query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	n := 0
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		for _, v := range vals {
			fmt.Fprintf(h, "%T:%q|", v, fmt.Sprint(v))
		}
		h.Write([]byte{'\n'})
		n++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return n, h.Sum(nil)
}
