package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/primary/export"
)

// exportDirectory writes an export of a directory into a folder, as an export job of the primary
// would for a client of the tier given, from one snapshot of the data folder's directory. Progress
// goes to standard error: a bar on a terminal, a line every tenth otherwise.
func (m *Main) exportDirectory(ctx context.Context, args []string) error {
	fs := m.command("export", "[--data DIR] --out FOLDER [flags] SLUG\n\n"+
		"Writes an export of the directory SLUG into FOLDER (new, or empty), as a client of --tier reads it:\n"+
		"CSV per record type, the JSON export (one line), FHIR NDJSON per resource type, an HSDS data\n"+
		"package (when named in --formats) and ATTRIBUTION.txt.")
	m.dataFlag(fs)
	out := fs.String("out", "", "folder to write the files into (required)")
	tier := fs.String("tier", "partner", "the tier read as: public, professional or partner")
	formats := fs.String("formats", "csv,json,fhir-ndjson", "formats, comma separated: csv, json, fhir-ndjson, hsds")
	types := fs.String("types", "", "record types, comma separated (default all): organisation, location, service, practitioner, role")
	since := fs.String("since", "", "only records changed after this date-time (RFC 3339)")
	practitioners := fs.Bool("practitioners", false, "export practitioners (as a client with practitioners:read)")
	leadership := fs.Bool("leadership", false, "export organisations' leadership (as a client with leadership:read; only when senior management is on)")
	areas := fs.String("areas", "", "narrow to these areas, comma separated (as a narrowed client)")
	categories := fs.String("categories", "", "narrow to these service categories, comma separated")
	rest, err := parseArgs(fs, args, 1, 1)
	if err != nil {
		return err
	}
	o, err := exportOptions(*tier, *formats, *types, *since, *areas, *categories)
	if err != nil {
		return err
	}
	if *out == "" {
		return usagef("export needs --out FOLDER")
	}
	o.Practitioners, o.Leaders = *practitioners, *leadership && o.Viewer.Audience != dirsvc.Public
	if err := emptyFolder(*out); err != nil {
		return err
	}
	store, err := dirdb.Open(ctx, m.Data)
	if err != nil {
		return err
	}
	defer store.Close()
	rd, err := store.Reader(ctx, rest[0])
	if err != nil {
		return m.noDirectory(err, rest[0])
	}
	// An export makes short-lived views and resources of every record, and keeps little: collecting
	// half as often took about 8% off the CPU of a 100,000-service FHIR export for about 25 MB more
	// peak memory (bench/export.sh), as import trades (importFile). The serving modes keep the default.
	debug.SetGCPercent(200)
	p := newProgress(m.Stderr)
	o.Total, o.Progress = p.total, p.progress
	start := time.Now()
	res, err := export.Write(ctx, rd, *out, o)
	p.done(res.Records)
	if err != nil {
		return fmt.Errorf("export %s: %w", rest[0], err)
	}
	for _, f := range res.Files {
		fmt.Fprintf(m.Stdout, "%s\t%d records\t%d bytes\n", f.Name, f.Count, f.Bytes)
	}
	m.Log.Info("exported", "directory", rest[0], "records", res.Records, "files", len(res.Files), "duration", time.Since(start))
	return nil
}

// exportOptions reads the export command's flags.
func exportOptions(tier, formats, types, since, areas, categories string) (export.Options, error) {
	var o export.Options
	a, err := dirsvc.ParseAudience(tier)
	if err != nil || !slices.Contains(dirsvc.ServedAudiences, a) {
		return o, usagef("--tier is public, professional or partner")
	}
	o.Viewer = dirsvc.Viewer{Audience: a, Narrowing: dirsvc.Narrowing{Areas: splitList(areas), Categories: splitList(categories)}}
	for _, f := range splitList(formats) {
		if !slices.Contains(dirsvc.ExportFormats, f) {
			return o, usagef("--formats: %q is not csv, json, fhir-ndjson or hsds", f)
		}
	}
	for _, f := range dirsvc.ExportFormats { // in their order
		if slices.Contains(splitList(formats), f) {
			o.Formats = append(o.Formats, f)
		}
	}
	if len(o.Formats) == 0 {
		return o, usagef("--formats names no format")
	}
	ks := splitList(types)
	for _, k := range ks {
		if !slices.Contains(dirsvc.ExportKinds, dirsvc.Kind(k)) {
			return o, usagef("--types: %q is not organisation, location, service, practitioner or role", k)
		}
	}
	for _, k := range dirsvc.ExportKinds {
		if len(ks) == 0 || slices.Contains(ks, string(k)) {
			o.Kinds = append(o.Kinds, k)
		}
	}
	if since != "" {
		t, err := time.Parse(time.RFC3339Nano, since)
		if err != nil {
			return o, usagef("--since is a date-time such as 2026-01-31T00:00:00Z")
		}
		o.Since = &t
	}
	return o, nil
}

// emptyFolder makes sure dir exists and is empty.
func emptyFolder(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(ents) > 0 {
		return errors.New("--out " + dir + " is not empty")
	}
	return nil
}

// progress reports an export's progress: a bar redrawn in place on a terminal, plain lines (each
// tenth) otherwise.
type progress struct {
	w        io.Writer
	terminal bool
	all      int64
	start    time.Time
	lastTick int64 // the last tenth reported, plain
	drawn    time.Time
}

func newProgress(w io.Writer) *progress {
	return &progress{w: w, terminal: isTerminal(w), start: time.Now(), lastTick: -1}
}

func (p *progress) total(n int64) {
	p.all = n
	if !p.terminal {
		fmt.Fprintf(p.w, "exporting %d records\n", n)
	}
}

func (p *progress) progress(n int64) error {
	switch {
	case p.terminal:
		if time.Since(p.drawn) >= drawEvery {
			p.drawn = time.Now()
			fmt.Fprint(p.w, "\r"+bar(n, p.all, time.Since(p.start)))
		}
	case p.all > 0 && n*10/p.all > p.lastTick:
		p.lastTick = n * 10 / p.all
		fmt.Fprintf(p.w, "exported %d of %d records (%d%%)\n", n, p.all, n*100/p.all)
	}
	return nil
}

func (p *progress) done(n int64) {
	if p.terminal {
		fmt.Fprint(p.w, "\r"+bar(n, max(p.all, n), time.Since(p.start))+"\n")
		return
	}
	fmt.Fprintf(p.w, "exported %d records in %s\n", n, time.Since(p.start).Round(time.Millisecond))
}
