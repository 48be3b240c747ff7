// Package replicate holds everything that knows Litestream: it backs the SQLite files of a data
// folder up to a replica folder and, when configured, to object storage through the S3 API, and
// restores them, latest or at a point in time.
//
// Files are named by their path in the data folder without the .db suffix: "platform",
// "dirs/<slug>/directory", "dirs/<slug>/ops". Each is replicated under its name in the folder and
// under the bucket's path.
package replicate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path"
	"path/filepath"
	"strings"

	"github.com/benbjohnson/litestream"
	"github.com/benbjohnson/litestream/file"
	lss3 "github.com/benbjohnson/litestream/s3"
	"github.com/superfly/ltx"
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

// Target is where files are replicated: a folder, object storage, or both (then every file is
// written to both and read from the folder).
type Target struct {
	Dir string
	S3  *S3
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
	if name == "platform" {
		return true
	}
	parts := strings.Split(name, "/")
	return len(parts) == 3 && parts[0] == "dirs" && parts[1] != "" && !strings.ContainsAny(parts[1], `.\`) &&
		(parts[2] == "directory" || parts[2] == "ops")
}

// FilePath returns the path in the data folder of the file named name.
func FilePath(data, name string) string { return filepath.Join(data, filepath.FromSlash(name)+".db") }

// client returns the replica client of the file named name.
func (t Target) client(name string) (litestream.ReplicaClient, error) {
	if !ValidName(name) {
		return nil, fmt.Errorf("replicate: %q is not a replicated file", name)
	}
	var clients []litestream.ReplicaClient
	if t.Dir != "" {
		clients = append(clients, file.NewReplicaClient(filepath.Join(t.Dir, filepath.FromSlash(name))))
	}
	if t.S3 != nil {
		// Credentials come from the AWS default chain (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY
		// first). The client refuses to start while AWS_CA_BUNDLE names a bundle it cannot load.
		c := lss3.NewReplicaClient()
		c.Endpoint, c.Bucket, c.Region, c.ForcePathStyle = t.S3.Endpoint, t.S3.Bucket, t.S3.Region, t.S3.ForcePathStyle
		c.Path = path.Join(t.S3.Path, name)
		clients = append(clients, c)
	}
	if len(clients) == 1 {
		return clients[0], nil
	}
	return &tee{read: clients[0], also: clients[1]}, nil
}

// tee is a replica client that writes every file to two clients and reads from the first. Litestream
// allows one replica per database: this is how one database reaches a folder and a bucket.
type tee struct {
	read, also litestream.ReplicaClient
}

var _ litestream.ReplicaClient = (*tee)(nil)

func (c *tee) Type() string { return "tee" }

func (c *tee) Init(ctx context.Context) error {
	return errors.Join(c.read.Init(ctx), c.also.Init(ctx))
}

func (c *tee) SetLogger(l *slog.Logger) { c.read.SetLogger(l); c.also.SetLogger(l) }

func (c *tee) LTXFiles(ctx context.Context, level int, seek ltx.TXID, useMetadata bool) (ltx.FileIterator, error) {
	return c.read.LTXFiles(ctx, level, seek, useMetadata)
}

func (c *tee) OpenLTXFile(ctx context.Context, level int, minTXID, maxTXID ltx.TXID, offset, size int64) (io.ReadCloser, error) {
	return c.read.OpenLTXFile(ctx, level, minTXID, maxTXID, offset, size)
}

// WriteLTXFile writes the file to the second client first, so the first (which lists) never names a
// file the second lacks.
func (c *tee) WriteLTXFile(ctx context.Context, level int, minTXID, maxTXID ltx.TXID, r io.Reader) (*ltx.FileInfo, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	if _, err := c.also.WriteLTXFile(ctx, level, minTXID, maxTXID, bytes.NewReader(b)); err != nil {
		return nil, err
	}
	return c.read.WriteLTXFile(ctx, level, minTXID, maxTXID, bytes.NewReader(b))
}

func (c *tee) DeleteLTXFiles(ctx context.Context, a []*ltx.FileInfo) error {
	return errors.Join(c.also.DeleteLTXFiles(ctx, a), c.read.DeleteLTXFiles(ctx, a))
}

func (c *tee) DeleteAll(ctx context.Context) error {
	return errors.Join(c.also.DeleteAll(ctx), c.read.DeleteAll(ctx))
}
