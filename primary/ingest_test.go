package primary_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/primary"
)

func fixture(tb testing.TB) string {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "small.ndjson"))
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// replaceLine returns the file with the line holding marker changed by fn.
func replaceLine(tb testing.TB, file, marker string, fn func(string) string) string {
	tb.Helper()
	lines := strings.Split(file, "\n")
	for i, l := range lines {
		if strings.Contains(l, marker) {
			lines[i] = fn(l)
			return strings.Join(lines, "\n")
		}
	}
	tb.Fatalf("no line holds %q", marker)
	return ""
}

func TestParseImportRejectsInvalidInputNamingLineRecordAndField(t *testing.T) {
	base := fixture(t)
	sub := func(marker, old, new string) string {
		return replaceLine(t, base, marker, func(l string) string {
			if !strings.Contains(l, old) {
				t.Fatalf("line with %q does not hold %q", marker, old)
			}
			return strings.Replace(l, old, new, 1)
		})
	}
	cases := []struct {
		name, file, want string
	}{
		{"a phone number that is not one", sub(`"svc_gp"`, `02 9876 5433`, `02 9876`), `(svc_gp) contacts[0].value: "02 9876" is not a valid telephone number`},
		{"an HPI-O with a bad check digit", sub(`"org_harbour"`, `8003621566684455`, `8003621566684454`), `(org_harbour) identifiers[1].value`},
		{"an ABN with a bad checksum", sub(`"org_harbour"`, `51824753556`, `51824753557`), `is not an ABN`},
		{"a misspelt field", sub(`"svc_gp"`, `"audiences":["professional","partner"]`, `"audience":["professional","partner"]`), `unknown field "audience"`},
		{"a reference to a missing record", sub(`"svc_counsel"`, `"location":"loc_coast"`, `"location":"loc_nowhere"`), `(svc_counsel) location: "loc_nowhere" is not a location in the file`},
		{"a reference to the wrong kind", sub(`"role_jo"`, `"service":"svc_gp"`, `"service":"loc_ultimo"`), `(role_jo) service`},
		{"a duplicate public ID", sub(`"svc_refuge"`, `svc_refuge`, `svc_gp`), `(svc_gp) publicId: already used on line`},
		{"a public ID of the wrong kind", sub(`"svc_refuge"`, `svc_refuge`, `loc_refuge2`), `is not a valid service public ID`},
		{"a merged record without survivor", sub(`"svc_old"`, `,"survivorPublicId":"svc_counsel"`, ``), `(svc_old) survivorPublicId`},
		{"an unknown gender", sub(`"prac_jo"`, `prefer_not_to_say`, `unknown`), `(prac_jo) gender`},
		{"an own term without different_term", sub(`"prac_hidden"`, `different_term`, `woman`), `(prac_hidden) genderOwnTerm`},
		{"another directory's ownership code", sub(`"org_coast"`, `small:community_controlled`, `other:community_controlled`), `(org_coast) ownershipType.code`},
		{"a bad area", sub(`"loc_coast"`, `postcode:2250`, `postcode 2250`), `(loc_coast) areas[0]`},
		{"a bad time zone", sub(`"kind":"directory"`, `Australia/Sydney`, `Mars/Olympus`), `directory.timeZone`},
		{"a data-issue contact that is no address", sub(`"kind":"directory"`, `"settings"`, `"dataIssueContact":"call us","settings"`), `directory.dataIssueContact`},
		{"a data-issue contact over http", sub(`"kind":"directory"`, `"settings"`, `"dataIssueContact":"http://example.org/issues","settings"`), `directory.dataIssueContact`},
		{"a region too long", sub(`"kind":"directory"`, `"settings"`, `"region":"`+strings.Repeat("é", dirsvc.MaxRegionLength+1)+`","settings"`), `directory.region: is 201 characters long`},
		{"the host's zone", sub(`"loc_ultimo"`, `"timeZone":"Australia/Sydney"`, `"timeZone":"Local"`), `(loc_ultimo) hours.timeZone`},
		{"an unknown service type", sub(`"svc_counsel"`, `"type":"psychology"`, `"type":"astrology"`), `(svc_counsel) type`},
		{"a practitioner contact of a workplace kind", sub(`"prac_jo"`, `{"kind":"mobile"`, `{"kind":"fax"`), `(prac_jo) contacts[0].kind`},
		{"hours with close before open", sub(`"loc_ultimo"`, `"close":"17:00"`, `"close":"08:00"`), `(loc_ultimo) hours.weekly[0].intervals[0]`},
		{"no directory line first", strings.SplitN(base, "\n", 2)[1], `line 1 kind: the first line must be the directory`},
		{"a line that is not JSON", base + "{oops\n", `not a JSON object`},
		{"a cut-off line that starts with its kind", base + `{"kind":"organisation","publicId":"org_cut"` + "\n", `invalid organisation`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := primary.ParseImport(strings.NewReader(c.file))
			var ie *primary.ImportError
			if !errors.As(err, &ie) {
				t.Fatalf("err = %v, want an ImportError", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %q, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestParseImportAcceptsTheFixtureWithDefaults(t *testing.T) {
	snap, err := primary.ParseImport(strings.NewReader(fixture(t)))
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]dirsvc.Record{}
	for _, r := range snap.Records {
		byID[r.Base().PublicID] = r
	}
	jo := byID["prac_jo"].(*dirsvc.Practitioner)
	if jo.NameVisibleTo != dirsvc.Everyone || jo.Contacts[0].Value != "+61491570156" {
		t.Fatalf("practitioner defaults: name %v, mobile %q", jo.NameVisibleTo, jo.Contacts[0].Value)
	}
	refuge := byID["loc_refuge"].(*dirsvc.Location)
	if refuge.Address.VisibleTo != dirsvc.StaffOnly {
		t.Fatalf("withheld address defaults to %v, want staff only", refuge.Address.VisibleTo)
	}
	org := byID["org_harbour"].(*dirsvc.Organisation)
	if org.Identifiers[0].System != dirsvc.IdentifierSystems[dirsvc.IdentABN] {
		t.Fatalf("ABN system = %q", org.Identifiers[0].System)
	}
	if org.Leadership[0].Contacts[0].VisibleTo.Has(dirsvc.Public) {
		t.Fatal("leader contact visible to public")
	}
}

func TestE164(t *testing.T) {
	for _, c := range []struct{ in, country, want string }{
		{"13 11 14", "AU", "+61131114"},
		{"1300 555 123", "AU", "+611300555123"},
		{"1800 123 456", "AU", "+611800123456"},
		{"(02) 9876 5432", "AU", "+61298765432"},
		{"0412 345 678", "AU", "+61412345678"},
		{"+64 9 379 0000", "AU", "+6493790000"},
		{"09 379 0000", "NZ", "+6493790000"},
		{"+44 20 7946 0958", "AU", "+442079460958"},
	} {
		got, err := primary.E164(c.in, c.country)
		if err != nil || got != c.want {
			t.Errorf("E164(%q, %s) = %q, %v; want %q", c.in, c.country, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "12", "phone me", "02 9876"} {
		if got, err := primary.E164(bad, "AU"); err == nil {
			t.Errorf("E164(%q) = %q, want an error", bad, got)
		}
	}
}

// dump returns every row of every table of a database file, for comparing states.
func dump(t *testing.T, path string) string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		rows.Scan(&n)
		tables = append(tables, n)
	}
	rows.Close()
	var b strings.Builder
	for _, tb := range tables {
		rs, err := db.Query("SELECT * FROM " + tb + " ORDER BY 1")
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rs.Columns()
		for rs.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			rs.Scan(ptrs...)
			fmt.Fprintf(&b, "%s %v\n", tb, vals)
		}
		rs.Close()
	}
	return b.String()
}

func TestFailedImportLeavesTheDirectoryAndChangeLogUntouched(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	store, err := dirdb.Open(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	good := fixture(t)
	if _, _, err := primary.Import(ctx, store, strings.NewReader(good)); err != nil {
		t.Fatal(err)
	}
	pub, ops := filepath.Join(root, "dirs", "small", "directory.db"), filepath.Join(root, "dirs", "small", "ops.db")
	before := dump(t, pub) + dump(t, ops)

	// A changed file whose last record holds a bad phone number: the earlier changes must not land.
	changed := strings.ReplaceAll(good, "Harbour Health", "Harbour Health Group")
	bad := changed + `{"kind":"service","publicId":"svc_late","organisation":"org_coast","location":"loc_coast","name":"Late","type":"gp","contacts":[{"kind":"phone","value":"555"}]}` + "\n"
	_, _, err = primary.Import(ctx, store, strings.NewReader(bad))
	if err == nil || !strings.Contains(err.Error(), "svc_late") {
		t.Fatalf("import with a bad late phone: %v", err)
	}
	if after := dump(t, pub) + dump(t, ops); after != before {
		t.Fatal("a failed import changed the stores")
	}

	// A file that is valid but fails in the store (its slug names another directory's file) writes
	// nothing either; and re-importing the good file is still a no-op.
	_, stats, err := primary.Import(ctx, store, strings.NewReader(good))
	if err != nil || stats.Events != 0 {
		t.Fatalf("re-import after a failure: %+v, %v", stats, err)
	}
	if after := dump(t, pub) + dump(t, ops); after != before {
		t.Fatal("re-importing the same file changed the stores")
	}
}

// racingStore is a store on which another process creates each directory, by its own first
// import, just before this one's first import of it.
type racingStore struct {
	*dirdb.Store
	other *dirdb.Store
	file  string // what the other process imports
}

func (s racingStore) ImportNew(ctx context.Context, snap *dirsvc.Snapshot) (dirsvc.ImportStats, error) {
	if _, _, err := primary.Import(ctx, s.other, strings.NewReader(s.file)); err != nil {
		return dirsvc.ImportStats{}, err
	}
	return s.Store.ImportNew(ctx, snap)
}

// TestFirstImportIntoADirectoryMadeMeanwhile: when another process creates the directory while a
// first import is under way, the file is imported into that directory, and its content is the file's.
func TestFirstImportIntoADirectoryMadeMeanwhile(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	var stores [2]*dirdb.Store
	for i := range stores {
		s, err := dirdb.Open(ctx, root)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		stores[i] = s
	}
	good := fixture(t)
	st := racingStore{stores[0], stores[1], strings.ReplaceAll(good, "Harbour Health", "Harbour Health Elsewhere")}
	if _, stats, err := primary.Import(ctx, st, strings.NewReader(good)); err != nil || stats.Updated == 0 {
		t.Fatalf("a first import into a directory made meanwhile: %+v, %v", stats, err)
	}
	d, err := stores[0].Directory(ctx, "small")
	if err != nil {
		t.Fatal(err)
	}
	org, err := d.Record(ctx, "org_harbour", dirsvc.Viewer{Audience: dirsvc.Public})
	if err != nil || org.View == nil || !strings.Contains(string(org.View.Body), `"Harbour Health"`) {
		t.Fatalf("the organisation after the import: %+v, %v", org, err)
	}
}

func TestFailedFirstImportCreatesNoDirectory(t *testing.T) {
	ctx := context.Background()
	store, err := dirdb.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	bad := strings.Replace(fixture(t), `"02 9876 5433"`, `"02 98"`, 1)
	if _, _, err := primary.Import(ctx, store, bytes.NewReader([]byte(bad))); err == nil {
		t.Fatal("bad import succeeded")
	}
	slugs, err := store.Slugs(ctx)
	if err != nil || len(slugs) != 0 {
		t.Fatalf("directories after a failed first import: %v, %v", slugs, err)
	}
}
