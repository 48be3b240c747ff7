package dirdb

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
)

// TestImportNewStoresWhatAnImportStores: a directory made by its first import aside (ImportNew)
// holds, table for table and row for row, what the same import stores in a directory created empty;
// its files are WAL-mode files of the service's page size and whole; nothing of the build is left;
// and another process's store finds the directory.
func TestImportNewStoresWhatAnImportStores(t *testing.T) {
	defer func(c func() time.Time) { writeClock = c }(writeClock)
	at := time.Date(2026, 1, 2, 3, 4, 5, 678e6, time.UTC)
	writeClock = func() time.Time { return at }
	ctx := context.Background()
	small, gen := importFixtures(t)
	for _, file := range [][]byte{small, gen} {
		slug := parseForTest(t, file).Directory.Slug
		aside, inPlace := t.TempDir(), t.TempDir()

		s, err := Open(ctx, aside)
		if err != nil {
			t.Fatal(err)
		}
		stats, err := s.ImportNew(ctx, parseForTest(t, file))
		if err != nil {
			t.Fatalf("%s: %v", slug, err)
		}
		var steps []string
		for _, st := range stats.Steps {
			steps = append(steps, st.Name)
		}
		if len(steps) == 0 || steps[len(steps)-1] != "sync" || !slices.Contains(steps, "commit") {
			t.Errorf("%s: steps %v, want the import's then sync", slug, steps)
		}
		// The generated directory takes the bulk path, whose indexes of the change log and the
		// search documents a new file makes last.
		if bulk := slices.Contains(steps, "indexes"); bulk != slices.Contains(steps, "late-indexes") || bulk != (slug == "gen") {
			t.Errorf("%s: steps %v", slug, steps)
		}
		d, err := s.Directory(ctx, slug)
		if err != nil {
			t.Fatal(err)
		}
		if page, err := d.Services(ctx, dirsvc.Viewer{Audience: dirsvc.Public}, dirsvc.ServiceQuery{Limit: 1}); err != nil || len(page.Items) != 1 {
			t.Fatalf("%s: the services of the new directory: %+v, %v", slug, page, err)
		}
		// Another process's store, opened after the import, finds it.
		other, err := Open(ctx, aside)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := other.Directory(ctx, slug); err != nil {
			t.Errorf("%s: another store on the data folder: %v", slug, err)
		}
		other.Close()
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}

		s, err = Open(ctx, inPlace)
		if err != nil {
			t.Fatal(err)
		}
		created, err := s.CreateDirectory(ctx, slug)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := created.Import(ctx, parseForTest(t, file)); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}

		ents, err := os.ReadDir(dirsvc.DirsPath(aside))
		if err != nil || len(ents) != 1 || ents[0].Name() != slug {
			t.Errorf("%s: the dirs folder holds %v (%v), want only the directory's folder", slug, ents, err)
		}
		for _, f := range []string{dirsvc.DirectoryFile, dirsvc.OpsFile} {
			built := dirsvc.FilePath(aside, dirsvc.FileName(f, slug))
			if got, want := fingerprint(t, built), fingerprint(t, dirsvc.FilePath(inPlace, dirsvc.FileName(f, slug))); got != want {
				t.Errorf("%s: the %s file built aside holds\n%s\nwhere an import into a new directory stores\n%s", slug, f, got, want)
			}
			if got, want := schemaOf(t, built), schemaOf(t, dirsvc.FilePath(inPlace, dirsvc.FileName(f, slug))); got != want {
				t.Errorf("%s: the %s file built aside has the schema\n%s\nwhere an import into a new directory has\n%s", slug, f, got, want)
			}
			// integrity_check holds every index to its table.
			for pragma, want := range map[string]string{"journal_mode": "wal", "page_size": "16384", "integrity_check": "ok"} {
				if got := pragmaOf(t, built, pragma); got != want {
					t.Errorf("%s: %s of the %s file is %s, want %s", slug, pragma, f, got, want)
				}
			}
		}
	}
}

// schemaOf returns the definitions of the tables, indexes and triggers of the file at path.
func schemaOf(t *testing.T, path string) string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var out string
	if err := db.QueryRow("SELECT group_concat(type || ' ' || name || ': ' || COALESCE(sql, ''), char(10)) FROM (SELECT * FROM sqlite_schema ORDER BY name)").Scan(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// pragmaOf returns the value of a pragma of the file at path.
func pragmaOf(t *testing.T, path, pragma string) string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v string
	if err := db.QueryRow("PRAGMA " + pragma).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// smallStore opens a store on a new data folder, closed when the test ends, and reads the small
// fixture.
func smallStore(t *testing.T) (s *Store, root string, small []byte) {
	t.Helper()
	small, err := os.ReadFile(filepath.Join("..", "testdata", "small.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	root = t.TempDir()
	s, err = Open(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, root, small
}

// TestImportNewThatFailsLeavesNothing: a first import that fails leaves neither a directory nor a
// file behind, and the slug can be imported afterwards; into a slug taken meanwhile, the file is
// imported as into any directory.
func TestImportNewThatFailsLeavesNothing(t *testing.T) {
	ctx := context.Background()
	s, root, b := smallStore(t)
	bad := parseForTest(t, b)
	bad.Records[len(bad.Records)-1].Base().State = "bogus"
	if _, err := s.ImportNew(ctx, bad); err == nil {
		t.Fatal("an import with an impossible state succeeded")
	}
	if _, err := s.Directory(ctx, "small"); !errors.Is(err, dirsvc.ErrNotFound) {
		t.Errorf("after a failed first import the directory answers %v, want not found", err)
	}
	if ents, err := os.ReadDir(dirsvc.DirsPath(root)); err != nil || len(ents) != 0 {
		t.Errorf("after a failed first import the dirs folder holds %v (%v)", ents, err)
	}
	if _, err := s.ImportNew(ctx, parseForTest(t, b)); err != nil {
		t.Fatalf("the import after the failed one: %v", err)
	}
	again := parseForTest(t, bytes.Replace(b, []byte(`"name":"Harbour GP"`), []byte(`"name":"Harbour GP Again"`), 1))
	if stats, err := s.ImportNew(ctx, again); err != nil || stats.Created != 0 || stats.Updated == 0 {
		t.Errorf("a first import of a slug taken meanwhile: %+v, %v; want the records updated", stats, err)
	}
	d, err := s.Directory(ctx, "small")
	if err != nil {
		t.Fatal(err)
	}
	if st, err := d.Record(ctx, "svc_gp", dirsvc.Viewer{Audience: dirsvc.Public}); err != nil || !bytes.Contains(st.View.Body, []byte("Harbour GP Again")) {
		t.Errorf("the directory after the second import: %v", err)
	}
}

// TestBuildMadeMeanwhileIsAConflict: when another process makes the directory while it is being
// built aside, the build does not move over it: it answers a conflict, leaves the other's directory
// as it is, and nothing of the build is left.
func TestBuildMadeMeanwhileIsAConflict(t *testing.T) {
	ctx := context.Background()
	s, _, root, _, build, err := buildMadeMeanwhile(t)
	build.discard()
	if dirsvc.ErrorCode(err) != dirsvc.EConflict {
		t.Errorf("a build whose directory was made meanwhile: %v, want a conflict", err)
	}
	if ents, err := os.ReadDir(dirsvc.DirsPath(root)); err != nil || len(ents) != 1 || ents[0].Name() != "small" {
		t.Errorf("the dirs folder holds %v (%v), want the other's directory alone", ents, err)
	}
	mine, err := s.Directory(ctx, "small")
	if err != nil {
		t.Fatal(err)
	}
	if st, err := mine.Record(ctx, "svc_gp", dirsvc.Viewer{Audience: dirsvc.Public}); err != nil || !bytes.Contains(st.View.Body, []byte("Their GP")) {
		t.Errorf("the directory after the build gave way: %v", err)
	}
}

// buildMadeMeanwhile builds the small directory aside in store s while another store on the same
// data folder (other) makes it with another name for a service, then finishes the build and returns
// what finishing answered.
func buildMadeMeanwhile(t *testing.T) (s, other *Store, root string, b []byte, bd *build, finished error) {
	ctx := context.Background()
	s, root, b = smallStore(t)
	other, err := Open(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	if bd, err = startBuild(root, "small"); err != nil {
		t.Fatal(err)
	}
	if _, err := bd.run(ctx, parseForTest(t, b)); err != nil {
		t.Fatal(err)
	}
	theirs := bytes.Replace(b, []byte(`"name":"Harbour GP"`), []byte(`"name":"Their GP"`), 1)
	d, err := other.CreateDirectory(ctx, "small")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Import(ctx, parseForTest(t, theirs)); err != nil {
		t.Fatal(err)
	}
	return s, other, root, b, bd, bd.finish(ctx)
}

// TestBuildGivesWayToADirectoryMadeMeanwhile: a first import whose directory another process made
// while it was being built imports what it built into that directory, and leaves nothing of the
// build behind.
func TestBuildGivesWayToADirectoryMadeMeanwhile(t *testing.T) {
	defer func(c func() time.Time) { writeClock = c }(writeClock)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	writeClock = func() time.Time { return at }
	ctx := context.Background()
	s, other, root, b, build, conflict := buildMadeMeanwhile(t)
	defer build.discard()
	if dirsvc.ErrorCode(conflict) != dirsvc.EConflict {
		t.Fatalf("a build whose directory was made meanwhile: %v, want a conflict", conflict)
	}
	stats, err := s.importBuilt(ctx, build, conflict)
	if err != nil || stats.Updated == 0 {
		t.Fatalf("the build imported into the directory made meanwhile: %+v, %v", stats, err)
	}
	build.discard()
	if ents, err := os.ReadDir(dirsvc.DirsPath(root)); err != nil || len(ents) != 1 || ents[0].Name() != "small" {
		t.Errorf("the dirs folder holds %v (%v), want the directory alone", ents, err)
	}
	mine, err := other.Directory(ctx, "small")
	if err != nil {
		t.Fatal(err)
	}
	if st, err := mine.Record(ctx, "svc_gp", dirsvc.Viewer{Audience: dirsvc.Public}); err != nil || !bytes.Contains(st.View.Body, []byte("Harbour GP")) {
		t.Errorf("the directory after the build's import: %v", err)
	}
	// What the build stored reads back as the file it was built from.
	fresh, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if _, err := fresh.ImportNew(ctx, parseForTest(t, b)); err != nil {
		t.Fatal(err)
	}
	want := fingerprint(t, filepath.Join(fresh.Root(), "dirs", "small", "ops.db"))
	if got := fingerprint(t, filepath.Join(root, "dirs", "small", "ops.db")); got != want {
		t.Errorf("the canonical records after the build gave way:\n%s\nwant those of an import of the file:\n%s", got, want)
	}
}

// TestImportNewOverLeftFiles: where the slug's folder holds files of no registered directory (a
// drop cut short), a first import is made there, in place.
func TestImportNewOverLeftFiles(t *testing.T) {
	ctx := context.Background()
	s, root, b := smallStore(t)
	if _, err := s.CreateDirectory(ctx, "small"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.platform.Exec("DELETE FROM directories"); err != nil {
		t.Fatal(err)
	}
	if err := s.retireDropped(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ImportNew(ctx, parseForTest(t, b)); err != nil {
		t.Fatal(err)
	}
	d, err := s.Directory(ctx, "small")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Record(ctx, "svc_gp", dirsvc.Viewer{Audience: dirsvc.Public}); err != nil {
		t.Errorf("read after the import: %v", err)
	}
	if ents, err := os.ReadDir(dirsvc.DirsPath(root)); err != nil || len(ents) != 1 {
		t.Errorf("the dirs folder holds %v (%v), want the directory's folder alone", ents, err)
	}
}

// TestOpenClearsBuildsCutShort: opening a data folder removes the folders of builds no process
// holds (a crashed import's), and leaves the one being built.
func TestOpenClearsBuildsCutShort(t *testing.T) {
	if unlock, ok := tryLockFolder(t.TempDir()); !ok {
		t.Skip("no folder locks on this system: builds cut short are left for the operator")
	} else {
		unlock()
	}
	ctx := context.Background()
	root := t.TempDir()
	s, err := Open(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	crashed := filepath.Join(dirsvc.DirsPath(root), buildPrefix+"demo-1")
	running := filepath.Join(dirsvc.DirsPath(root), buildPrefix+"demo-2")
	for _, folder := range []string{crashed, running} {
		if err := os.Mkdir(folder, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(folder, "directory.db"), []byte("half a file"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	unlock, err := lockFolder(running)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	s, err = Open(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := os.Stat(crashed); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the folder of a build cut short is still there (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(running, "directory.db")); err != nil {
		t.Errorf("the folder of a build under way was touched: %v", err)
	}
}
