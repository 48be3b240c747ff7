package dirdb

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/dirsvc/dirsvc/schema"
)

// TestBackfillFindsWhatPublishingWrites holds the two makers of list_keys to one result: the keys
// publishing writes for the demo directory (Go, keys.go) must be exactly those the migration that
// introduced the table derives from the same published views (SQL).
func TestBackfillFindsWhatPublishingWrites(t *testing.T) {
	ctx := context.Background()
	d := demoDirectory(t)
	keys := func() string {
		rows, err := d.readers.QueryContext(ctx, "SELECT public_id, key, audiences FROM list_keys ORDER BY public_id, key")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var b strings.Builder
		for rows.Next() {
			var id, key string
			var aud int64
			if err := rows.Scan(&id, &key, &aud); err != nil {
				t.Fatal(err)
			}
			b.WriteString(id + " " + key + " " + string(rune('0'+aud)) + "\n")
		}
		return b.String()
	}
	published := keys()
	if strings.Count(published, "\n") < 1000 || !strings.Contains(published, " id:") || !strings.Contains(published, " active ") {
		t.Fatalf("publishing wrote few keys: the test would prove little\n%.500s", published)
	}
	migrations, err := schema.Migrations(schema.Directory)
	if err != nil {
		t.Fatal(err)
	}
	var backfill, sites, typeCats, locals, terms, times string
	for _, m := range migrations {
		sql := m.SQL
		if strings.Contains(m.Name, "list_keys") {
			backfill = sql[strings.Index(sql, "WITH v AS"):strings.Index(sql, "GROUP BY public_id, key;")] + "GROUP BY public_id, key"
			times = sql[strings.Index(sql, "UPDATE projections SET updated_ms"):]
		}
		if strings.Contains(m.Name, "list_plans") {
			sites = sql[strings.Index(sql, "INSERT INTO list_keys"):]
		}
		if strings.Contains(m.Name, "type_category_keys") {
			typeCats = sql[strings.Index(sql, "INSERT INTO list_keys"):]
		}
		if strings.Contains(m.Name, "collection_views") {
			locals = sql[strings.Index(sql, "INSERT INTO list_keys"):]
		}
		if strings.Contains(m.Name, "taxonomy_use_keys") {
			terms = sql[strings.Index(sql, "INSERT INTO list_keys"):]
		}
	}
	if backfill == "" || sites == "" || typeCats == "" || locals == "" || terms == "" {
		t.Fatal("no list_keys or list_plans migration")
	}
	if !strings.Contains(published, " site:") || !strings.Contains(published, " tc:") || !strings.Contains(published, " lt:") ||
		!strings.Contains(published, " pg:") || !strings.Contains(published, " tg:") {
		t.Fatalf("publishing wrote no site or type-category keys\n%.500s", published)
	}
	if _, err := d.writer.ExecContext(ctx, "DELETE FROM list_keys"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.writer.ExecContext(ctx, backfill); err != nil {
		t.Fatal(err)
	}
	if _, err := d.writer.ExecContext(ctx, sites); err != nil {
		t.Fatal(err)
	}
	if _, err := d.writer.ExecContext(ctx, typeCats); err != nil {
		t.Fatal(err)
	}
	if _, err := d.writer.ExecContext(ctx, locals); err != nil {
		t.Fatal(err)
	}
	if _, err := d.writer.ExecContext(ctx, terms); err != nil {
		t.Fatal(err)
	}
	d.changed()
	if got := keys(); got != published {
		t.Errorf("the migration's keys differ from the published ones:\n%s", firstDiff(got, published))
	}

	// The time of each view's head, as the migration reads it from the body.
	heads := func() string {
		rows, err := d.readers.QueryContext(ctx, "SELECT public_id, audiences, updated_ms FROM projections WHERE audiences & 7 != 0 ORDER BY 1, 2")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var b strings.Builder
		for rows.Next() {
			var id string
			var aud, ms int64
			if err := rows.Scan(&id, &aud, &ms); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%s %d %d\n", id, aud, ms)
		}
		return b.String()
	}
	published = heads()
	if _, err := d.writer.ExecContext(ctx, "UPDATE projections SET updated_ms = NULL"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.writer.ExecContext(ctx, times); err != nil {
		t.Fatal(err)
	}
	d.changed()
	if got := heads(); got != published {
		t.Errorf("the migration's head times differ from the published ones:\n%s", firstDiff(got, published))
	}
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return "migration: " + al[i] + "\npublished: " + bl[i]
		}
	}
	return "one is a prefix of the other"
}
