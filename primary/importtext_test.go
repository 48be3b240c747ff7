package primary_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/primary"
)

// The text rule in the import file (and so in `dirsvc record update` and the admin API's PUT,
// which read records in its format).

// quoted is s as a JSON string, as encoding/json writes it (control characters escaped, the rest as
// they are), or with every character past ASCII escaped too.
func quoted(s string, escapeAll bool) string {
	b, _ := json.Marshal(s)
	if !escapeAll {
		return string(b)
	}
	var out strings.Builder
	for _, r := range string(b) {
		if r >= 0x7f {
			fmt.Fprintf(&out, `\u%04x`, r)
			continue
		}
		out.WriteRune(r)
	}
	return out.String()
}

func TestImportRefusesControlCharactersNamingRecordAndField(t *testing.T) {
	base := fixture(t)
	places := []struct {
		name, marker, old, want string
	}{
		{"a service's name", `"svc_gp"`, `"Harbour GP"`, `(svc_gp) name: `},
		{"a contact's label", `"svc_gp"`, `"New Zealand office"`, `(svc_gp) contacts[3].label: `},
		{"a leader's title", `"org_harbour"`, `"Chief Executive"`, `(org_harbour) leadership[0].title: `},
		{"an address line", `"loc_ultimo"`, `"1 Harris St"`, `(loc_ultimo) address.lines[0]: `},
		{"the directory's name", `"kind":"directory"`, `"Small Test Directory"`, `line 1 name: `},
		{"a category's name", `"kind":"category"`, `"Primary care"`, `line 2 name: `},
	}
	for _, c := range controlCharacters {
		for _, p := range places {
			for _, escapeAll := range []bool{false, true} {
				how := "as it is"
				if escapeAll {
					how = "escaped"
				}
				t.Run(c.name+" in "+p.name+", "+how, func(t *testing.T) {
					text := strings.Trim(p.old, `"`)
					file := replaceLine(t, base, p.marker, func(l string) string {
						return strings.Replace(l, p.old, quoted(text[:3]+c.char+text[3:], escapeAll), 1)
					})
					_, err := primary.ParseImport(strings.NewReader(file))
					var ie *primary.ImportError
					if !errors.As(err, &ie) || !strings.Contains(err.Error(), p.want) {
						t.Fatalf("err = %v, want an ImportError naming %q", err, p.want)
					}
					if strings.Contains(err.Error(), c.char) {
						t.Fatalf("the error repeats the character: %q", err)
					}
				})
			}
		}
	}
}

func TestImportTakesTabsAndLineBreaksInFreeTextOnly(t *testing.T) {
	base := fixture(t)
	withDescription := func(desc string) string {
		return replaceLine(t, base, `"svc_gp"`, func(l string) string {
			return strings.Replace(l, `"name":"Harbour GP"`, `"name":"Harbour GP","description":`+desc, 1)
		})
	}
	snap, err := primary.ParseImport(strings.NewReader(withDescription(`"Walk-in\tclinic.\r\nBook by phone.\nNo referral."`)))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range snap.Records {
		if r.Base().PublicID == "svc_gp" {
			if got, want := r.(*dirsvc.Service).Description, "Walk-in\tclinic.\nBook by phone.\nNo referral."; got != want {
				t.Fatalf("description %q, want %q", got, want)
			}
		}
	}
	for _, c := range []struct{ name, file, want string }{
		{"a line feed in a name", replaceLine(t, base, `"svc_gp"`, func(l string) string {
			return strings.Replace(l, `"Harbour GP"`, `"Harbour\nGP"`, 1)
		}), `(svc_gp) name: The text is one line`},
		{"a tab in a phone number", replaceLine(t, base, `"svc_gp"`, func(l string) string {
			return strings.Replace(l, `"02 9876 5433"`, `"02\t9876 5433"`, 1)
		}), `(svc_gp) contacts[0].value: The text is one line`},
		{"a member given twice", replaceLine(t, base, `"svc_gp"`, func(l string) string {
			return strings.Replace(l, `"name":"Harbour GP"`, `"name":"Harbour GP","name":"Harbour Clinic"`, 1)
		}), `(svc_gp) name: This member is given more than once`},
		{"a member given twice in a nested object", replaceLine(t, base, `"svc_gp"`, func(l string) string {
			return strings.Replace(l, `"label":"New Zealand office"`, `"label":"New Zealand office","label":"NZ"`, 1)
		}), `(svc_gp) contacts[3].label: This member is given more than once`},
		{"a member given twice, once in capitals", replaceLine(t, base, `"svc_gp"`, func(l string) string {
			return strings.Replace(l, `"name":"Harbour GP"`, `"name":"Harbour GP","Name":"Harbour Clinic"`, 1)
		}), `(svc_gp) Name: This member is given more than once (names that differ only in case`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := primary.ParseImport(strings.NewReader(c.file)); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}

func TestImportWithAControlCharacterWritesNothing(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	store, err := dirdb.Open(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	bad := strings.Replace(fixture(t), `"Harbour GP"`, `"Harbour \u202eGP"`, 1)
	if _, _, err := primary.Import(ctx, store, strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "(svc_gp) name") {
		t.Fatalf("first import of a file with U+202E: %v", err)
	}
	if slugs, err := store.Slugs(ctx); err != nil || len(slugs) != 0 {
		t.Fatalf("directories after the refused first import: %v, %v", slugs, err)
	}

	good := fixture(t)
	if _, _, err := primary.Import(ctx, store, strings.NewReader(good)); err != nil {
		t.Fatal(err)
	}
	pub, ops := filepath.Join(root, "dirs", "small", "directory.db"), filepath.Join(root, "dirs", "small", "ops.db")
	before := dump(t, pub) + dump(t, ops)
	// Every other change of the file is fine: none may land.
	changed := strings.ReplaceAll(good, "Harbour Health", "Harbour Health Group")
	changed = strings.Replace(changed, `"Coast Counselling"`, `"Coast\u0007Counselling"`, 1)
	if _, _, err := primary.Import(ctx, store, strings.NewReader(changed)); err == nil || !strings.Contains(err.Error(), "(org_coast) name") {
		t.Fatalf("import of a file with BEL: %v", err)
	}
	if after := dump(t, pub) + dump(t, ops); after != before {
		t.Fatal("a refused import changed the stores")
	}
}
