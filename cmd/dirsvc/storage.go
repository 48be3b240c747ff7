package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/dirsvc/dirsvc/replicate"
)

// probeSize is how much a storage probe writes: about what one small change writes to a
// directory's files and their replica, so that storage which takes the probe takes the next change.
const probeSize = 1 << 20

// storageProbe returns what tells whether the storage of the given folders (those that exist) takes
// writes again, after one was refused for lack of space (see edge.Config.StorageProbe): it writes
// probeSize bytes to a new file in each, syncs it, and removes it.
func storageProbe(folders ...string) func(context.Context) error {
	return func(ctx context.Context) error {
		var errs []error
		for _, dir := range folders {
			if dir == "" || ctx.Err() != nil {
				continue
			}
			if _, err := os.Stat(dir); err != nil {
				continue
			}
			if err := probe(dir); err != nil {
				errs = append(errs, fmt.Errorf("probe %s: %w", dir, err))
			}
		}
		return errors.Join(append(errs, ctx.Err())...)
	}
}

// probe writes, syncs and removes one probe file in dir.
func probe(dir string) error {
	f, err := os.CreateTemp(dir, ".storage-probe-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(make([]byte, probeSize))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// replicaFolder returns the replica folder a primary writes to ("" without one).
func replicaFolder(data string, target replicate.Target) string {
	switch {
	case target.Dir != "":
		return target.Dir
	case target.S3 != nil:
		return filepath.Join(data, replicate.DefaultFolder)
	}
	return ""
}
