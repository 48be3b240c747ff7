package primary

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"time"

	"github.com/dirsvc/dirsvc"
)

// Import loads a whole directory from an import file into the store, creating the directory on its
// first import. Nothing is written unless the whole file is valid, and a directory's first import
// that fails leaves no directory behind. The Progress ctx carries (dirsvc.WithProgress) follows
// each step, from reading the file to the store's last.
func Import(ctx context.Context, st dirsvc.DirectoryStore, r io.Reader) (string, dirsvc.ImportStats, error) {
	start := time.Now()
	snap, err := parseImport(r, dirsvc.ProgressOf(ctx))
	if err != nil {
		return "", dirsvc.ImportStats{}, err
	}
	parsed := dirsvc.Step{Name: "parse", Took: time.Since(start)}
	slug := snap.Directory.Slug
	// Nothing here holds snap after it is handed on: the store may let go of the records once it has
	// written them.
	stats, err := importSnapshot(ctx, st, snap)
	stats.Steps = append([]dirsvc.Step{parsed}, stats.Steps...)
	return slug, stats, err
}

// importSnapshot imports snap into its directory, creating the directory by its first import when
// there is none (ImportNew, which also imports into a directory another process makes meanwhile).
func importSnapshot(ctx context.Context, st dirsvc.DirectoryStore, snap *dirsvc.Snapshot) (dirsvc.ImportStats, error) {
	w, err := st.Writer(ctx, snap.Directory.Slug)
	if errors.Is(err, dirsvc.ErrNotFound) {
		return st.ImportNew(ctx, snap)
	} else if err != nil {
		return dirsvc.ImportStats{}, err
	}
	return w.Import(ctx, snap)
}

// ParseRecord reads one record in the import format (a single line's object, kind included) for the
// directory described by dir, applying the same defaults, normalisation and checks as an import.
func ParseRecord(b []byte, dir *dirsvc.Directory) (dirsvc.Record, error) {
	p := newParser(dir)
	p.line = 1
	if err := p.parseLine(bytes.TrimSpace(b)); err != nil {
		return nil, err
	}
	if len(p.snap.Records) != 1 {
		return nil, &ImportError{Line: 1, Field: "kind", Msg: "want one record (organisation, location, service, practitioner or role)"}
	}
	return p.snap.Records[0], nil
}

// FormatRecord returns rec as one JSON object in the import format, indented for an operator to
// read and edit: its kind first, then its fields. ParseRecord (and so UpdateRecord and the admin
// API's PUT) reads it back; what the store assigns (version, revisions, time) is shown and ignored
// on the way back.
func FormatRecord(rec dirsvc.Record) ([]byte, error) {
	b, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	kind, err := json.Marshal(kindField{Kind: string(rec.Kind())})
	if err != nil {
		return nil, err
	}
	if len(b) > 2 { // {"kind":...} followed by the record's fields
		kind = append(kind[:len(kind)-1], ',')
		b = append(kind, b[1:]...)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// UpdateRecord replaces (or adds) one record of a directory from its import-format JSON.
func UpdateRecord(ctx context.Context, st dirsvc.DirectoryStore, slug string, b []byte) (dirsvc.ImportStats, error) {
	r, err := st.Reader(ctx, slug)
	if err != nil {
		return dirsvc.ImportStats{}, err
	}
	info, err := r.Info(ctx)
	if err != nil {
		return dirsvc.ImportStats{}, err
	}
	rec, err := ParseRecord(b, info)
	if err != nil {
		return dirsvc.ImportStats{}, err
	}
	w, err := st.Writer(ctx, slug)
	if err != nil {
		return dirsvc.ImportStats{}, err
	}
	return w.Update(ctx, rec)
}
