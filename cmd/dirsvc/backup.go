package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/replicate"
)

// targetFlags are the flags that name where files are replicated.
type targetFlags struct {
	dir, endpoint, bucket, path, region *string
	pathStyle                           *bool
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
	}
}

func (f *targetFlags) target() (replicate.Target, error) {
	t := replicate.Target{Dir: *f.dir}
	if *f.bucket != "" {
		t.S3 = &replicate.S3{Endpoint: *f.endpoint, Bucket: *f.bucket, Path: *f.path, Region: *f.region, ForcePathStyle: *f.pathStyle}
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
	names := []string{"platform"}
	for _, slug := range slugs {
		for _, f := range []string{"directory", "ops"} {
			name := "dirs/" + slug + "/" + f
			if _, err := os.Stat(replicate.FilePath(data, name)); err == nil {
				names = append(names, name)
			}
		}
	}
	return names, nil
}

// backup copies every file of the data folder to the replica target once and prints each file's
// position. Run it while nothing writes the folder, or let a primary replicate continuously.
func (m *Main) backup(ctx context.Context, args []string) error {
	fs := m.flags("backup")
	tf := addTargetFlags(fs)
	if err := fs.Parse(args); err != nil {
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
	r, err := replicate.Open(ctx, m.Data, target, names, replicate.Options{Log: m.Log})
	if err != nil {
		return err
	}
	syncErr := r.Sync(ctx)
	pos := r.Positions()
	if err := errors.Join(syncErr, r.Close(ctx)); err != nil {
		return err
	}
	for _, name := range names {
		fmt.Fprintf(m.Stdout, "%s\t%d\n", name, pos[name])
	}
	return nil
}

// restore writes files back from the replica target into a data folder that does not hold them:
// every file (the platform's first, then each directory it names), or one directory's, latest or as
// they were at a time; --file NAME --txid N restores one file at a position.
func (m *Main) restore(ctx context.Context, args []string) error {
	fs := m.flags("restore")
	tf := addTargetFlags(fs)
	slug := fs.String("directory", "", "restore only this directory")
	at := fs.String("time", "", "restore as the files were at this time (RFC 3339)")
	file := fs.String("file", "", "restore only this file (platform, dirs/SLUG/directory, dirs/SLUG/ops)")
	txid := fs.String("txid", "", "with --file: the position to restore at")
	if err := fs.Parse(args); err != nil {
		return err
	}
	target, err := tf.target()
	if err != nil {
		return err
	}
	var point replicate.At
	if *at != "" {
		if point.Time, err = time.Parse(time.RFC3339Nano, *at); err != nil {
			return fmt.Errorf("--time: want a date-time such as 2026-11-22T08:00:00Z")
		}
	}
	if *txid != "" {
		if *file == "" || *at != "" {
			return errors.New("--txid goes with --file (one file's position), without --time")
		}
		if point.TXID, err = strconv.ParseUint(*txid, 10, 64); err != nil || point.TXID == 0 {
			return errors.New("--txid: want a positive position")
		}
	}
	start := time.Now()
	restored := 0
	one := func(name string, optional bool) error {
		err := replicate.Restore(ctx, m.Data, target, name, point)
		if optional && errors.Is(err, replicate.ErrNotReplicated) {
			return nil
		}
		if err == nil {
			restored++
			m.Log.Info("restored", "file", name)
		}
		return err
	}
	switch {
	case *file != "":
		if err := one(*file, false); err != nil {
			return err
		}
	case *slug != "":
		if err := one("dirs/"+*slug+"/directory", false); err != nil {
			return err
		}
		if err := one("dirs/"+*slug+"/ops", true); err != nil {
			return err
		}
		store, err := dirdb.Open(ctx, m.Data)
		if err != nil {
			return err
		}
		defer store.Close()
		if err := store.RegisterDirectory(ctx, *slug); err != nil {
			return err
		}
	default:
		n, err := restoreFolder(ctx, m.Data, target, point)
		if err != nil {
			return err
		}
		restored += n
	}
	// The restored files start a new history: edges of this folder's primary bootstrap afresh.
	if _, err := replicate.NewLineage(m.Data); err != nil {
		return err
	}
	m.Log.Info("restore done", "files", restored, "duration", time.Since(start))
	return nil
}

// restoreFolder restores every file the target holds into the data folder: the platform's first,
// then each directory it names (a directory's ops file only when there is one). It returns how many
// files it restored; ErrNotReplicated when the target holds no platform file.
func restoreFolder(ctx context.Context, data string, target replicate.Target, at replicate.At) (int, error) {
	if err := replicate.Restore(ctx, data, target, "platform", at); err != nil {
		return 0, err
	}
	store, err := dirdb.Open(ctx, data)
	if err != nil {
		return 1, err
	}
	slugs, err := store.Slugs(ctx)
	store.Close()
	if err != nil {
		return 1, err
	}
	n := 1
	for _, slug := range slugs {
		for _, f := range []string{"directory", "ops"} {
			err := replicate.Restore(ctx, data, target, "dirs/"+slug+"/"+f, at)
			switch {
			case err == nil:
				n++
			case f == "ops" && errors.Is(err, replicate.ErrNotReplicated):
			default:
				return n, err
			}
		}
	}
	return n, nil
}
