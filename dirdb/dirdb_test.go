package dirdb_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/primary"
)

// MustOpenStore opens a store on a fresh data folder, closed when the test ends.
func MustOpenStore(tb testing.TB) *dirdb.Store {
	tb.Helper()
	s, err := dirdb.Open(context.Background(), tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

func readFixture(tb testing.TB) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "small.ndjson"))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// MustImport imports an import file into the store.
func MustImport(tb testing.TB, s *dirdb.Store, file []byte) dirsvc.ImportStats {
	tb.Helper()
	_, stats, err := primary.Import(context.Background(), s, bytes.NewReader(file))
	if err != nil {
		tb.Fatal(err)
	}
	return stats
}

func view(t *testing.T, d *dirdb.Directory, id string, a dirsvc.Audience) map[string]any {
	t.Helper()
	st, err := d.Record(context.Background(), id, dirsvc.Viewer{Audience: a})
	if err != nil {
		t.Fatalf("Record(%s, %s): %v", id, a, err)
	}
	if st.View == nil {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(st.View.Body, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func countChanges(t *testing.T, root, slug string) int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(root, "dirs", slug, "directory.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow("SELECT count(*) FROM changes").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestImportPublishesEveryRecordOnceAndReimportIsANoOp(t *testing.T) {
	s := MustOpenStore(t)
	file := readFixture(t)
	first := MustImport(t, s, file)
	// One created event for each record some audience sees; none for the four created closed,
	// merged or taken down (svc_closed, svc_old, svc_hiddenmerge, svc_down), which nobody ever saw.
	if first.Created == 0 || first.Events != first.Created-4 {
		t.Fatalf("first import: %+v; want an event for each of the %d records less the 4 nobody sees", first, first.Created)
	}
	events := countChanges(t, s.Root(), "small")
	if events != first.Events {
		t.Fatalf("change log holds %d rows, import reported %d events", events, first.Events)
	}
	again := MustImport(t, s, file)
	if again.Events != 0 || again.Created+again.Updated+again.Removed != 0 {
		t.Fatalf("re-import changed something: %+v", again)
	}
	if got := countChanges(t, s.Root(), "small"); got != events {
		t.Fatalf("re-import wrote %d events", got-events)
	}
}

func TestProjectionPerAudience(t *testing.T) {
	s := MustOpenStore(t)
	MustImport(t, s, readFixture(t))
	d, err := s.Directory(context.Background(), "small")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("phone numbers are E.164, another country's kept in its own form", func(t *testing.T) {
		v := view(t, d, "svc_gp", dirsvc.Public)
		var values []string
		for _, c := range v["contacts"].([]any) {
			values = append(values, c.(map[string]any)["value"].(string))
		}
		want := []string{"+61298765433", "+61131114", "+611800123456", "+6493790000"}
		if strings.Join(values, " ") != strings.Join(want, " ") {
			t.Fatalf("public contacts = %v, want %v", values, want)
		}
	})
	t.Run("typeDisplay is the first specialty that refines the type", func(t *testing.T) {
		pub := view(t, d, "svc_gp", dirsvc.Public)
		if got := pub["typeDisplay"]; got != "Women's health GP" {
			t.Fatalf("typeDisplay = %v", got)
		}
		if got := pub["localType"].(map[string]any)["id"]; got != "womens-health" {
			t.Fatalf("localType = %v", got)
		}
		if got := len(pub["specialties"].([]any)); got != 2 {
			t.Fatalf("public sees %d specialties, want 2 (one is for professionals)", got)
		}
		counsel := view(t, d, "svc_counsel", dirsvc.Public)
		if counsel["categoryIcon"] != dirsvc.DefaultIcon || counsel["categoryCode"] != "mental_health" {
			t.Fatalf("icon %v code %v", counsel["categoryIcon"], counsel["categoryCode"])
		}
	})
	t.Run("ownership is inherited service <- location <- organisation", func(t *testing.T) {
		for id, want := range map[string]string{"svc_gp": "organisation", "svc_refuge": "service", "svc_counsel": "location"} {
			if got := view(t, d, id, dirsvc.Public)["ownershipSource"]; got != want {
				t.Errorf("%s ownershipSource = %v, want %v", id, got, want)
			}
		}
	})
	t.Run("withheld address shows its area only", func(t *testing.T) {
		v := view(t, d, "loc_refuge", dirsvc.Public)
		if v["address"] != nil || v["point"] != nil || v["addressWithheld"] != true || v["area"] != "Glebe NSW 2037" {
			t.Fatalf("withheld location: address=%v point=%v withheld=%v area=%v", v["address"], v["point"], v["addressWithheld"], v["area"])
		}
	})
	t.Run("unlisted site is hidden from public only", func(t *testing.T) {
		if v := view(t, d, "loc_unlisted", dirsvc.Public); v != nil {
			t.Fatalf("public sees unlisted site: %v", v)
		}
		if v := view(t, d, "loc_unlisted", dirsvc.Professional); v == nil {
			t.Fatal("professional does not see unlisted site")
		}
		if v := view(t, d, "svc_unlisted", dirsvc.Public); v == nil || v["location"] != nil {
			t.Fatalf("public service at unlisted site: %v", v)
		}
	})
	t.Run("practitioner privacy", func(t *testing.T) {
		pub := view(t, d, "prac_jo", dirsvc.Public)
		if pub["gender"] != nil || pub["bio"] != nil || pub["contacts"] != nil {
			t.Fatalf("public practitioner: gender=%v bio=%v contacts=%v", pub["gender"], pub["bio"], pub["contacts"])
		}
		partner := view(t, d, "prac_jo", dirsvc.Partner)
		if partner["gender"] != "prefer_not_to_say" || partner["bio"] == nil || len(partner["contacts"].([]any)) != 1 {
			t.Fatalf("partner practitioner: %v", partner)
		}
		if v := view(t, d, "prac_hidden", dirsvc.Public); v != nil {
			t.Fatal("public sees a practitioner whose name is hidden")
		}
		role := view(t, d, "role_hidden", dirsvc.Public)
		if p := role["practitioner"].(map[string]any); p["publicId"] != "prac_hidden" || p["name"] != nil {
			t.Fatalf("role names hidden practitioner as %v", p)
		}
	})
}

func TestDirectoryFileHoldsNoStaffOnlyDetail(t *testing.T) {
	s := MustOpenStore(t)
	MustImport(t, s, readFixture(t))
	s.Close()
	files, _ := filepath.Glob(filepath.Join(s.Root(), "dirs", "small", "directory.db*"))
	if len(files) == 0 {
		t.Fatal("no directory.db")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte("canary-staff-x")) {
			t.Errorf("%s holds a staff-only detail", filepath.Base(f))
		}
	}
	ops, _ := os.ReadFile(filepath.Join(s.Root(), "dirs", "small", "ops.db"))
	wal, _ := os.ReadFile(filepath.Join(s.Root(), "dirs", "small", "ops.db-wal"))
	if !bytes.Contains(append(ops, wal...), []byte("canary-staff-x")) {
		t.Error("ops.db does not hold the canonical records (the scan above would prove nothing)")
	}
}

func readFixtureString(tb testing.TB) string { return string(readFixture(tb)) }

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

func TestNewFilesUseTheServicePageSize(t *testing.T) {
	s := MustOpenStore(t)
	MustImport(t, s, readFixture(t))
	for _, name := range []string{"directory.db", "ops.db"} {
		db, err := sql.Open("sqlite", "file:"+filepath.Join(s.Root(), "dirs", "small", name)+"?mode=ro")
		if err != nil {
			t.Fatal(err)
		}
		var size int
		var mode string
		db.QueryRow("PRAGMA page_size").Scan(&size)
		db.QueryRow("PRAGMA journal_mode").Scan(&mode)
		db.Close()
		if size != 16384 || mode != "wal" {
			t.Errorf("%s: page size %d, journal mode %s; want 16384, wal", name, size, mode)
		}
	}
}

func TestSeniorManagementIsOffUntilThePlatformMakesItAvailable(t *testing.T) {
	ctx := context.Background()
	s := MustOpenStore(t)
	MustImport(t, s, readFixture(t))
	if on, err := s.SeniorManagementAvailable(ctx, "small"); err != nil || on {
		t.Fatalf("new directory: available=%v, %v; want off", on, err)
	}
	if err := s.SetSeniorManagementAvailable(ctx, "small", true); err != nil {
		t.Fatal(err)
	}
	if on, err := s.SeniorManagementAvailable(ctx, "small"); err != nil || !on {
		t.Fatalf("after switching on: available=%v, %v", on, err)
	}
	if err := s.SetSeniorManagementAvailable(ctx, "nowhere", true); err != dirsvc.ErrNotFound {
		t.Fatalf("switching an unknown directory: %v", err)
	}
	if _, err := s.SeniorManagementAvailable(ctx, "nowhere"); err != dirsvc.ErrNotFound {
		t.Fatalf("reading an unknown directory: %v", err)
	}
}
