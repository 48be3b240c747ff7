package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
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
	fs := m.command("import", "[--data DIR] FILE...\n\nLoads each import file (NDJSON; - for standard input) in turn, each all or nothing.")
	m.dataFlag(fs)
	files, err := parseArgs(fs, args, 1, -1)
	if err != nil {
		return err
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
	for _, name := range files {
		if err := m.importOne(ctx, store, name); err != nil {
			return err
		}
	}
	return nil
}

// importOne imports one file (- for standard input). Each step is logged as it ends, with the
// records it went through, and every few seconds while it runs; on a terminal a bar shows the step
// under way instead of the lines in between.
func (m *Main) importOne(ctx context.Context, store *dirdb.Store, name string) error {
	in := &countingReader{r: os.Stdin}
	var size int64
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			size = st.Size()
		}
		in.r = f
	}
	pctx, prog := m.loading(ctx, "importing", true, "file", name)
	prog.reading(func() (int64, int64) { return in.n.Load(), size })
	start := time.Now()
	slug, stats, err := primary.Import(pctx, store, bufio.NewReaderSize(in, 1<<20))
	prog.end()
	if err != nil {
		return fmt.Errorf("import %s: %w", name, err)
	}
	m.Log.Info("imported", "directory", slug, "created", stats.Created, "updated", stats.Updated,
		"unchanged", stats.Unchanged, "removed", stats.Removed, "events", stats.Events, "duration", time.Since(start))
	m.Log.Debug("import steps", stepAttrs(slug, stats.Steps)...)
	return nil
}

// stepAttrs returns the steps of a write to a directory as log attributes: the directory, then each
// step's name with how long it took.
func stepAttrs(slug string, steps []dirsvc.Step) []any {
	out := []any{slog.String("directory", slug)}
	for _, s := range steps {
		out = append(out, slog.Duration(s.Name, s.Took))
	}
	return out
}

// noDirectory returns err, or, when it is the store's not-found, what was not found where.
func (m *Main) noDirectory(err error, slug string) error {
	if errors.Is(err, dirsvc.ErrNotFound) {
		return fmt.Errorf("no directory %s in %s", slug, m.Data)
	}
	return err
}

// republish publishes the named directories (every directory when none is named) again from the
// canonical records of their ops.db, as importing each again would: after an upgrade that changed
// what an audience may see, the stored views are made anew; a directory whose views are right
// changes nothing.
func (m *Main) republish(ctx context.Context, args []string) error {
	fs := m.command("republish", "[--data DIR] [SLUG...]\n\nPublishes the directories named (every one when none is) again from their canonical records.")
	m.dataFlag(fs)
	slugs, err := parseArgs(fs, args, 0, -1)
	if err != nil {
		return err
	}
	store, err := dirdb.Open(ctx, m.Data)
	if err != nil {
		return err
	}
	defer store.Close()
	if len(slugs) == 0 {
		if slugs, err = store.Slugs(ctx); err != nil {
			return err
		}
	}
	for _, slug := range slugs {
		d, err := store.Directory(ctx, slug)
		if err != nil {
			return fmt.Errorf("republish %s: %w", slug, m.noDirectory(err, slug))
		}
		start := time.Now()
		pctx, prog := m.loading(ctx, "republishing", false, "directory", slug)
		stats, err := d.Republish(pctx)
		prog.end()
		if err != nil {
			return fmt.Errorf("republish %s: %w", slug, err)
		}
		m.Log.Info("republished", "directory", slug, "updated", stats.Updated, "unchanged", stats.Unchanged,
			"events", stats.Events, "duration", time.Since(start))
	}
	return nil
}

func (m *Main) gen(args []string) error {
	fs := m.command("gen", "[flags]\n\nWrites a generated demo directory in the import format.")
	opt := demo.Options{}
	fs.IntVar(&opt.Services, "services", demo.DefaultServices, "number of services")
	fs.Int64Var(&opt.Seed, "seed", demo.DefaultSeed, "random seed; the same seed gives the same file")
	fs.StringVar(&opt.Slug, "slug", demo.DefaultSlug, "directory slug")
	fs.StringVar(&opt.Country, "country", "AU", "country: AU or NZ")
	out := fs.String("out", "-", "output file (- for standard output)")
	if _, err := parseArgs(fs, args, 0, 0); err != nil {
		return err
	}
	if opt.Services < 1 || opt.Services > 1_000_000 {
		return usagef("--services must be 1 to 1,000,000")
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

const recordUsage = `[--data DIR] --dir SLUG OPERATION ARGS

operations:
  update FILE                     replace or add one record from a JSON object in the import format
  close ID | delete ID | takedown ID
  merge ID SURVIVOR               merge a record into a live record of the same kind
  reduce ID AUDIENCES             leave the record visible only to AUDIENCES (e.g. professional,partner)
  restore ID [AUDIENCES]          make a record live again
  show ID                         print the canonical record with every detail, in the format
                                  update reads: dirsvc record show ID > f; edit f; dirsvc record update f
`

func (m *Main) record(ctx context.Context, args []string) error {
	fs := m.command("record", recordUsage)
	m.dataFlag(fs)
	slug := fs.String("dir", "", "directory slug")
	a, err := parseArgs(fs, args, 2, 3)
	if err != nil {
		return err
	}
	if *slug == "" {
		fs.Usage()
		return usagef("record: name the directory with --dir")
	}
	store, err := dirdb.Open(ctx, m.Data)
	if err != nil {
		return err
	}
	defer store.Close()
	w, err := store.Writer(ctx, *slug)
	if err != nil {
		return m.noDirectory(err, *slug)
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
		return m.report(op, *slug, "", stats, err)
	case op == "show" && len(a) == 2:
		rec, err := w.Source(ctx, id)
		if err != nil {
			return m.report(op, *slug, id, dirsvc.ImportStats{}, err)
		}
		b, err := primary.FormatRecord(rec)
		if err != nil {
			return err
		}
		_, err = m.Stdout.Write(b)
		return err
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
		return usagef("record: bad operation %q or arguments", op)
	}
	stats, err := w.Transition(ctx, id, t)
	return m.report(op, *slug, id, stats, err)
}

// report logs what a record operation on record id (empty: the record of a file) of directory slug
// did, or returns its error in an operator's words.
func (m *Main) report(op, slug, id string, stats dirsvc.ImportStats, err error) error {
	if errors.Is(err, dirsvc.ErrNotFound) && id != "" {
		return fmt.Errorf("%s: no record %s in directory %s of %s", op, id, slug, m.Data)
	} else if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	m.Log.Info(op+" done", "updated", stats.Updated+stats.Created, "removed", stats.Removed, "events", stats.Events)
	return nil
}
