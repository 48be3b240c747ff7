package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/replicate"
)

// targetFlags are the flags that name where files are replicated.
type targetFlags struct {
	dir, endpoint, bucket, path, region *string
	pathStyle                           *bool
	timeout                             *time.Duration
}

func addTargetFlags(fs *flag.FlagSet) *targetFlags {
	f := addS3Flags(fs)
	f.dir = fs.String("replica-dir", envOr("DIRSVC_REPLICA_DIR", ""), "replica folder ($DIRSVC_REPLICA_DIR)")
	return f
}

// addS3Flags adds the flags of an S3 bucket only (an edge bootstraps from the bucket, never from
// the primary's folder).
func addS3Flags(fs *flag.FlagSet) *targetFlags {
	none := ""
	return &targetFlags{
		dir:       &none,
		endpoint:  fs.String("s3-endpoint", envOr("DIRSVC_S3_ENDPOINT", ""), "S3 endpoint, empty for AWS ($DIRSVC_S3_ENDPOINT)"),
		bucket:    fs.String("s3-bucket", envOr("DIRSVC_S3_BUCKET", ""), "S3 bucket ($DIRSVC_S3_BUCKET); credentials from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"),
		path:      fs.String("s3-path", envOr("DIRSVC_S3_PATH", "dirsvc"), "prefix in the bucket ($DIRSVC_S3_PATH)"),
		region:    fs.String("s3-region", envOr("DIRSVC_S3_REGION", "us-east-1"), "S3 region ($DIRSVC_S3_REGION)"),
		pathStyle: fs.Bool("s3-path-style", os.Getenv("DIRSVC_S3_PATH_STYLE") == "true", "path-style S3 addresses, as MinIO needs ($DIRSVC_S3_PATH_STYLE=true)"),
		timeout:   fs.Duration("s3-timeout", envDuration("DIRSVC_S3_TIMEOUT", replicate.DefaultStorageTimeout), "longest wait for object storage to answer a call, or to move a file being read or written ($DIRSVC_S3_TIMEOUT)"),
	}
}

func (f *targetFlags) target() (replicate.Target, error) {
	t := replicate.Target{Dir: *f.dir, StorageTimeout: *f.timeout}
	if *f.bucket != "" {
		t.S3 = &replicate.S3{Endpoint: *f.endpoint, Bucket: *f.bucket, Path: *f.path, Region: *f.region, ForcePathStyle: *f.pathStyle}
	}
	if *f.timeout <= 0 {
		return t, usagef("--s3-timeout: want a positive duration")
	}
	return t, t.Valid()
}

// dataFiles returns the names of the files of a data folder: the platform's, and each directory's.
func dataFiles(ctx context.Context, data string) ([]string, error) {
	store, err := dirdb.Open(ctx, data)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	return filesOf(ctx, store, data)
}

// filesOf returns the names of the files of the open data folder.
func filesOf(ctx context.Context, store *dirdb.Store, data string) ([]string, error) {
	slugs, err := store.Slugs(ctx)
	if err != nil {
		return nil, err
	}
	names := []string{dirsvc.PlatformFile}
	for _, slug := range slugs {
		for _, f := range dirsvc.DirectoryFiles {
			name := dirsvc.FileName(f, slug)
			if _, err := os.Stat(dirsvc.FilePath(data, name)); err == nil {
				names = append(names, name)
			}
		}
	}
	return names, nil
}

// folderFiles returns what names the files of the data folder to replicate, as the folder holds
// them at each call (see replicate.Options.Files): the platform file, read by its path (it is
// asked after the service's own connections are closed), and the files of each directory it lists
// that exist.
func folderFiles(data string) func(context.Context) ([]string, error) {
	return func(ctx context.Context) ([]string, error) {
		p, err := dirdb.ReadPlatform(ctx, dirsvc.FilePath(data, dirsvc.PlatformFile))
		if err != nil {
			return nil, err
		}
		names := []string{dirsvc.PlatformFile}
		for _, d := range p.Directories {
			for _, f := range dirsvc.DirectoryFiles {
				name := dirsvc.FileName(f, d.Slug)
				if _, err := os.Stat(dirsvc.FilePath(data, name)); err == nil {
					names = append(names, name)
				}
			}
		}
		return names, nil
	}
}

// edgePlatform returns what edges need of the data folder's platform file, which the mirror writes
// to the bucket for them. It reads the file by its path: the Replicator asks until it is closed,
// after the service's own connections are.
func edgePlatform(data string) func(context.Context) (*dirsvc.Platform, error) {
	return func(ctx context.Context) (*dirsvc.Platform, error) {
		return dirdb.ReadPlatform(ctx, dirsvc.FilePath(data, dirsvc.PlatformFile))
	}
}

// backup copies every file of the data folder to the replica target once and prints each file's
// position. Run it while nothing writes the folder, or let a primary replicate continuously.
func (m *Main) backup(ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "edge-policy" {
		return m.edgePolicy(args[1:])
	}
	fs := m.command("backup", "[--data DIR] --replica-dir DIR | --s3-bucket B [flags]\n"+
		"       dirsvc backup edge-policy --s3-bucket B [--s3-path P]   (dirsvc backup edge-policy --help)\n\n"+
		"Copies every file of the data folder to the replica folder and/or bucket once, and prints each file's position.")
	m.dataFlag(fs)
	tf := addTargetFlags(fs)
	if _, err := parseArgs(fs, args, 0, 0); err != nil {
		return err
	}
	target, err := tf.target()
	if err != nil {
		return err
	}
	names, err := dataFiles(ctx, m.Data)
	if err != nil {
		return err
	}
	r, err := replicate.Open(ctx, m.Data, target, names, replicate.Options{Log: m.Log, Platform: edgePlatform(m.Data)})
	if err != nil {
		return err
	}
	syncErr := r.Sync(ctx)
	pos := r.Positions()
	// Close copies to the bucket what it lacks, and says if it could not.
	if err := errors.Join(syncErr, r.Close(ctx)); err != nil {
		return err
	}
	for _, name := range names {
		fmt.Fprintf(m.Stdout, "%s\t%d\n", name, pos[name])
	}
	return nil
}

// edgePolicy prints the policy document (AWS IAM syntax) of read-only credentials for edges of the
// bucket the flags name: the directory files and the platform JSON, nothing of the primary's own
// files (see replicate.EdgePolicy).
func (m *Main) edgePolicy(args []string) error {
	fs := m.command("backup edge-policy", "--s3-bucket B [--s3-path P]\n\n"+
		"Prints the policy (AWS IAM syntax) of read-only credentials for edges of the bucket.")
	tf := addS3Flags(fs)
	if _, err := parseArgs(fs, args, 0, 0); err != nil {
		return err
	}
	if *tf.bucket == "" {
		return usagef("--s3-bucket: name the bucket the primary replicates to")
	}
	target, err := tf.target()
	if err != nil {
		return err
	}
	policy, err := replicate.EdgePolicy(*target.S3)
	if err != nil {
		return err
	}
	_, err = m.Stdout.Write(policy)
	return err
}

// restore writes files back from the replica target into a data folder that does not hold them:
// every file (the platform's first, then each directory it names), or one directory's, latest or as
// they were at a time; --file NAME --txid N restores one file at a position. It prints the point
// each file was restored to.
func (m *Main) restore(ctx context.Context, args []string) error {
	fs := m.command("restore", "[--data DIR] --replica-dir DIR | --s3-bucket B [--directory SLUG | --file NAME [--txid N]] [--time T] [flags]\n\n"+
		"Writes files back from the replica folder or bucket into a data folder that does not hold them: every file,\n"+
		"one --directory, or one --file (at --txid); latest, or as they were at --time. Prints the point each file was restored to.")
	m.dataFlag(fs)
	tf := addTargetFlags(fs)
	slug := fs.String("directory", "", "restore only this directory")
	at := fs.String("time", "", "restore as the files were at this time (RFC 3339)")
	tolerance := fs.Duration("tolerance", replicate.DefaultTolerance, "with --time: refuse when the target can only restore a point earlier than asked by more than this, with changes in between it cannot place (compacted); -1s accepts any")
	file := fs.String("file", "", "restore only this file (platform, dirs/SLUG/directory, dirs/SLUG/ops)")
	txid := fs.String("txid", "", "with --file: the position to restore at")
	if _, err := parseArgs(fs, args, 0, 0); err != nil {
		return err
	}
	target, err := tf.target()
	if err != nil {
		return err
	}
	point := replicate.At{Tolerance: *tolerance}
	if *at != "" {
		if point.Time, err = time.Parse(time.RFC3339Nano, *at); err != nil {
			return usagef("--time: want a date-time such as 2026-11-22T08:00:00Z")
		}
	}
	if *txid != "" {
		if *file == "" || *at != "" {
			return usagef("--txid goes with --file (one file's position), without --time")
		}
		if point.TXID, err = strconv.ParseUint(*txid, 10, 64); err != nil || point.TXID == 0 {
			return usagef("--txid: want a positive position")
		}
	}
	start := time.Now()
	var points []replicate.Restored
	one := func(name string) error {
		p, err := replicate.Restore(ctx, m.Data, target, name, point)
		if err == nil {
			points = append(points, p)
		}
		return err
	}
	switch {
	case *file != "":
		err = one(*file)
	case *slug != "":
		if err = one(dirsvc.FileName(dirsvc.DirectoryFile, *slug)); err == nil {
			err = one(dirsvc.FileName(dirsvc.OpsFile, *slug))
		}
		if err == nil {
			if err = one(dirsvc.FileName(dirsvc.WebhooksFile, *slug)); errors.Is(err, replicate.ErrNotReplicated) {
				err = nil // the directory had no webhook then
			}
		}
		if err == nil {
			err = registerDirectory(ctx, m.Data, *slug)
		}
	default:
		points, err = restoreFolder(ctx, m.Data, target, point, nil)
	}
	m.printPoints(points, point)
	if err != nil {
		return err
	}
	// The restored files start a new history: edges of this folder's primary bootstrap afresh.
	if _, err := replicate.NewLineage(m.Data); err != nil {
		return err
	}
	m.Log.Info("restore done", "files", len(points), "duration", time.Since(start))
	return nil
}

// printPoints prints the point each file was restored to: its position and the time of its last
// change, and whether changes after it may have happened before the time asked for.
func (m *Main) printPoints(points []replicate.Restored, at replicate.At) {
	for _, p := range points {
		line := fmt.Sprintf("%s\tposition %d\tas of %s", p.Name, p.TXID, p.Time.UTC().Format(time.RFC3339Nano))
		if !at.Time.IsZero() && !p.Exact {
			line += fmt.Sprintf("\t%s before the time asked; later changes were compacted into a file written %s",
				at.Time.Sub(p.Time).Round(time.Millisecond), p.Next.UTC().Format(time.RFC3339))
			m.Log.Warn("restored an earlier point than asked", "file", p.Name, "position", p.TXID, "at", p.Time, "asked", at.Time)
		}
		fmt.Fprintln(m.Stdout, line)
	}
}

func registerDirectory(ctx context.Context, data, slug string) error {
	store, err := dirdb.Open(ctx, data)
	if err != nil {
		return err
	}
	defer store.Close()
	return store.RegisterDirectory(ctx, slug)
}

// A whole data folder is restored all or nothing: into a staging folder inside it, then moved into
// place, the platform file last. A data folder with a platform file is restored; one without holds
// nothing of a restore but, while restoreMarker exists, the directory files of one that was cut off
// while moving into place.
const (
	restoreStage  = ".restoring"
	restoreMarker = "restore-incomplete"
)

// restoreFolder restores every file the target holds into the data folder (the platform's first,
// then each directory it names, its directory and ops files) and returns the points restored;
// ErrNotReplicated when the target holds no platform file. Any failure leaves the data folder as it
// was. each, if set, is called as each file is restored.
func restoreFolder(ctx context.Context, data string, target replicate.Target, at replicate.At, each func(replicate.Restored)) ([]replicate.Restored, error) {
	if _, err := os.Stat(dirsvc.FilePath(data, dirsvc.PlatformFile)); err == nil {
		return nil, fmt.Errorf("%s holds a platform file: restore into a data folder that does not", data)
	}
	if err := clearInterruptedRestore(data); err != nil {
		return nil, err
	}
	stage := filepath.Join(data, restoreStage)
	if err := os.RemoveAll(stage); err != nil {
		return nil, err
	}
	defer os.RemoveAll(stage)
	points, slugs, err := restoreInto(ctx, stage, target, at, each)
	if err != nil {
		return points, err
	}
	if err := os.WriteFile(filepath.Join(data, restoreMarker), nil, 0o600); err != nil {
		return points, err
	}
	if err := os.MkdirAll(dirsvc.DirsPath(data), 0o700); err != nil {
		return points, err
	}
	for _, slug := range slugs {
		if err := os.Rename(dirsvc.DirectoryFolder(stage, slug), dirsvc.DirectoryFolder(data, slug)); err != nil {
			return points, fmt.Errorf("move a restored directory into place: %w", err)
		}
	}
	if err := os.Rename(dirsvc.FilePath(stage, dirsvc.PlatformFile), dirsvc.FilePath(data, dirsvc.PlatformFile)); err != nil {
		return points, fmt.Errorf("move the restored platform file into place: %w", err)
	}
	return points, os.Remove(filepath.Join(data, restoreMarker))
}

// clearInterruptedRestore removes what a restore cut off while moving into place left (directory
// files without the platform file that lists them). Directory files without a platform file and
// without the marker are not a restore's: they are refused, never restored over.
func clearInterruptedRestore(data string) error {
	dirs := dirsvc.DirsPath(data)
	if _, err := os.Stat(filepath.Join(data, restoreMarker)); err == nil {
		if err := os.RemoveAll(dirs); err != nil {
			return fmt.Errorf("clear an interrupted restore: %w", err)
		}
		return os.Remove(filepath.Join(data, restoreMarker))
	}
	if ents, err := os.ReadDir(dirs); err == nil && len(ents) > 0 {
		return fmt.Errorf("%s holds directory files but no platform file listing them: move them away before restoring", dirs)
	}
	return nil
}

// restoreInto restores the platform file and every directory it names into a new folder, calling
// each (if set) as each file is restored.
func restoreInto(ctx context.Context, dir string, target replicate.Target, at replicate.At, each func(replicate.Restored)) ([]replicate.Restored, []string, error) {
	if each == nil {
		each = func(replicate.Restored) {}
	}
	p, err := replicate.Restore(ctx, dir, target, dirsvc.PlatformFile, at)
	if err != nil {
		return nil, nil, err
	}
	each(p)
	points := []replicate.Restored{p}
	store, err := dirdb.Open(ctx, dir)
	if err != nil {
		return points, nil, err
	}
	slugs, err := store.Slugs(ctx)
	store.Close()
	if err != nil {
		return points, nil, err
	}
	for _, slug := range slugs {
		for _, f := range dirsvc.DirectoryFiles {
			p, err := replicate.Restore(ctx, dir, target, dirsvc.FileName(f, slug), at)
			if f == dirsvc.WebhooksFile && errors.Is(err, replicate.ErrNotReplicated) {
				continue // the directory had no webhook then
			}
			if err != nil {
				// Every directory listed is restored whole: its published file and its canonical
				// records (without them, the next write would revert what was published).
				return points, slugs, fmt.Errorf("directory %s: %w", slug, err)
			}
			each(p)
			points = append(points, p)
		}
	}
	return points, slugs, nil
}
