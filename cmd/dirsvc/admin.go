package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/primary"
	"github.com/dirsvc/dirsvc/primary/demo"
)

// importFile loads whole directories from import files, one after another in one process (each
// file all or nothing).
func (m *Main) importFile(ctx context.Context, args []string) error {
	fs := m.flags("import")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() < 1 {
		return errors.New("usage: dirsvc import [--data DIR] FILE... (- for standard input)")
	}
	store, err := dirdb.Open(ctx, m.Data)
	if err != nil {
		return err
	}
	defer store.Close()
	// An import holds the whole directory in memory while it makes short-lived views of every
	// record; collecting half as often cut a 100,000-service import from 30 to 28 s for 0.8 GB more
	// peak memory (bench/import.sh). The serving modes keep the default.
	debug.SetGCPercent(200)
	for _, name := range fs.Args() {
		if err := m.importOne(ctx, store, name); err != nil {
			return err
		}
	}
	return nil
}

func (m *Main) importOne(ctx context.Context, store *dirdb.Store, name string) error {
	var in io.Reader = os.Stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	start := time.Now()
	slug, stats, err := primary.Import(ctx, store, bufio.NewReaderSize(in, 1<<20))
	if err != nil {
		return fmt.Errorf("import %s: %w", name, err)
	}
	m.Log.Info("imported", "directory", slug, "created", stats.Created, "updated", stats.Updated,
		"unchanged", stats.Unchanged, "removed", stats.Removed, "events", stats.Events, "duration", time.Since(start))
	return nil
}

// republish publishes the named directories (every directory when none is named) again from the
// canonical records of their ops.db, as importing each again would: after an upgrade that changed
// what an audience may see, the stored views are made anew; a directory whose views are right
// changes nothing.
func (m *Main) republish(ctx context.Context, args []string) error {
	fs := m.flags("republish")
	if err := fs.Parse(args); err != nil {
		return err
	}
	store, err := dirdb.Open(ctx, m.Data)
	if err != nil {
		return err
	}
	defer store.Close()
	slugs := fs.Args()
	if len(slugs) == 0 {
		if slugs, err = store.Slugs(ctx); err != nil {
			return err
		}
	}
	for _, slug := range slugs {
		d, err := store.Directory(ctx, slug)
		if err != nil {
			return fmt.Errorf("republish %s: %w", slug, err)
		}
		start := time.Now()
		stats, err := d.Republish(ctx)
		if err != nil {
			return fmt.Errorf("republish %s: %w", slug, err)
		}
		m.Log.Info("republished", "directory", slug, "updated", stats.Updated, "unchanged", stats.Unchanged,
			"events", stats.Events, "duration", time.Since(start))
	}
	return nil
}

func (m *Main) gen(args []string) error {
	fs := m.flags("gen")
	opt := demo.Options{}
	fs.IntVar(&opt.Services, "services", demo.DefaultServices, "number of services")
	fs.Int64Var(&opt.Seed, "seed", demo.DefaultSeed, "random seed; the same seed gives the same file")
	fs.StringVar(&opt.Slug, "slug", demo.DefaultSlug, "directory slug")
	fs.StringVar(&opt.Country, "country", "AU", "country: AU or NZ")
	out := fs.String("out", "-", "output file (- for standard output)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if opt.Services < 1 || opt.Services > 1_000_000 {
		return errors.New("--services must be 1 to 1,000,000")
	}
	w := m.Stdout
	if *out != "-" {
		f, err := os.Create(*out)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	return demo.Generate(w, opt)
}

const recordUsage = `usage: dirsvc record [--data DIR] --dir SLUG OPERATION ARGS

operations:
  update FILE                     replace or add one record from a JSON object in the import format
  close ID | delete ID | takedown ID
  merge ID SURVIVOR               merge a record into a live record of the same kind
  reduce ID AUDIENCES             leave the record visible only to AUDIENCES (e.g. professional,partner)
  restore ID [AUDIENCES]          make a record live again
  show ID                         print the canonical record with every detail
`

func (m *Main) record(ctx context.Context, args []string) error {
	fs := m.flags("record")
	slug := fs.String("dir", "", "directory slug")
	fs.Usage = func() { fmt.Fprint(m.Stderr, recordUsage) }
	if err := fs.Parse(args); err != nil {
		return err
	}
	a := fs.Args()
	if *slug == "" || len(a) < 2 {
		fs.Usage()
		return errors.New("record: need --dir and an operation with its arguments")
	}
	store, err := dirdb.Open(ctx, m.Data)
	if err != nil {
		return err
	}
	defer store.Close()
	w, err := store.Writer(ctx, *slug)
	if err != nil {
		return fmt.Errorf("directory %q: %w", *slug, err)
	}
	op, id := a[0], a[1]
	var t dirsvc.Transition
	switch {
	case op == "update" && len(a) == 2:
		b, err := os.ReadFile(id)
		if err != nil {
			return err
		}
		stats, err := primary.UpdateRecord(ctx, store, *slug, b)
		return m.report(op, stats, err)
	case op == "show" && len(a) == 2:
		rec, err := w.Source(ctx, id)
		if err != nil {
			return err
		}
		enc := json.NewEncoder(m.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rec)
	case op == "close" && len(a) == 2:
		t.To = dirsvc.StateClosed
	case op == "delete" && len(a) == 2:
		t.To = dirsvc.StateRemoved
	case op == "takedown" && len(a) == 2:
		t.To = dirsvc.StateTakedown
	case op == "merge" && len(a) == 3:
		t.To, t.Survivor = dirsvc.StateMerged, a[2]
	case op == "reduce" && len(a) == 3, op == "restore" && len(a) <= 3:
		t.To = dirsvc.StateVisibilityReduced
		if op == "restore" {
			t.To = dirsvc.StateLive
		}
		if len(a) == 3 {
			var names []string
			for _, n := range strings.Split(a[2], ",") {
				names = append(names, strings.TrimSpace(n))
			}
			b, _ := json.Marshal(names)
			if err := json.Unmarshal(b, &t.VisibleTo); err != nil {
				return err
			}
		}
	default:
		fs.Usage()
		return fmt.Errorf("record: bad operation %q or arguments", op)
	}
	stats, err := w.Transition(ctx, id, t)
	return m.report(op, stats, err)
}

func (m *Main) report(op string, stats dirsvc.ImportStats, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	m.Log.Info(op+" done", "updated", stats.Updated+stats.Created, "removed", stats.Removed, "events", stats.Events)
	return nil
}
