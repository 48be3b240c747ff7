// Package replicate holds everything that knows Litestream: it backs the SQLite files of a data
// folder up to a replica folder and, when configured, to object storage through the S3 API, and
// restores them, latest or at a point in time.
//
// Files are named as the data folder's layout names them (dirsvc.FileName): "platform",
// "dirs/<slug>/directory", "dirs/<slug>/ops". Each is replicated under its name in the folder and
// under the bucket's path.
package replicate

import (
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"time"

	"github.com/benbjohnson/litestream"
	"github.com/benbjohnson/litestream/file"
	lss3 "github.com/benbjohnson/litestream/s3"
	"github.com/dirsvc/dirsvc"
)

// S3 names a bucket of an S3-compatible object store (AWS, Tigris, R2, MinIO). Credentials come
// from the environment (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or the AWS default chain).
type S3 struct {
	Endpoint       string // empty for AWS
	Bucket         string
	Path           string // prefix inside the bucket
	Region         string
	ForcePathStyle bool // needed by MinIO and by endpoints given as an IP address
}

// Target is where files are replicated: a folder, object storage, or both. A primary replicates to
// the folder, and a mirror copies the folder to the bucket (see mirror): the folder is what edges
// follow, the bucket what survives the loss of the primary's volume.
type Target struct {
	Dir string
	S3  *S3
	// StorageTimeout bounds every call to object storage (see bounded); zero means
	// DefaultStorageTimeout.
	StorageTimeout time.Duration
}

// Valid reports what is wrong with the target, if anything.
func (t Target) Valid() error {
	if t.Dir == "" && t.S3 == nil {
		return errors.New("replicate: name a replica folder or an S3 bucket")
	}
	if t.S3 != nil && t.S3.Bucket == "" {
		return errors.New("replicate: the S3 target needs a bucket")
	}
	return nil
}

// ValidName reports whether name is a replicated file's name.
func ValidName(name string) bool {
	_, _, ok := dirsvc.ParseFileName(name)
	return ok
}

// folderClient returns the replica client of the file named name in the folder.
func (t Target) folderClient(name string) (litestream.ReplicaClient, error) {
	if !ValidName(name) {
		return nil, fmt.Errorf("replicate: %q is not a replicated file", name)
	}
	if t.Dir == "" {
		return nil, errors.New("replicate: the target has no replica folder")
	}
	return file.NewReplicaClient(filepath.Join(t.Dir, filepath.FromSlash(name))), nil
}

// bucketClient returns the replica client of the file named name in the bucket, every call bounded
// in time.
func (t Target) bucketClient(name string) (litestream.ReplicaClient, error) {
	if !ValidName(name) {
		return nil, fmt.Errorf("replicate: %q is not a replicated file", name)
	}
	if t.S3 == nil {
		return nil, errors.New("replicate: the target has no bucket")
	}
	// Credentials come from the AWS default chain (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY
	// first). The client refuses to start while AWS_CA_BUNDLE names a bundle it cannot load.
	c := lss3.NewReplicaClient()
	c.Endpoint, c.Bucket, c.Region, c.ForcePathStyle = t.S3.Endpoint, t.S3.Bucket, t.S3.Region, t.S3.ForcePathStyle
	c.Path = path.Join(t.S3.Path, name)
	timeout := t.StorageTimeout
	if timeout <= 0 {
		timeout = DefaultStorageTimeout
	}
	return &bounded{c: c, timeout: timeout}, nil
}

// client returns the replica client a restore of the file named name reads: the bucket's or the
// folder's, whichever holds the later position (the folder when they hold the same: it is local).
func (t Target) client(ctx context.Context, name string) (litestream.ReplicaClient, error) {
	switch {
	case t.S3 == nil:
		return t.folderClient(name)
	case t.Dir == "":
		return t.bucketClient(name)
	}
	fc, err := t.folderClient(name)
	if err != nil {
		return nil, err
	}
	bc, err := t.bucketClient(name)
	if err != nil {
		return nil, err
	}
	folder, err := listLevels(ctx, fc)
	if err != nil {
		return nil, err
	}
	bucket, err := listLevels(ctx, bc)
	if err != nil {
		return nil, fmt.Errorf("list %s in the bucket: %w", name, err)
	}
	if maxTXID(bucket) > maxTXID(folder) {
		return bc, nil
	}
	return fc, nil
}
