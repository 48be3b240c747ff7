package replicate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/dirsvc/dirsvc"
)

// What an edge may read of the bucket.
//
// The bucket holds the primary's own files (platform: partner clients' secret MACs, grants, signing
// keys; dirs/<slug>/ops: canonical records with staff-only details) beside the directory files that
// edges serve. An edge that bootstraps from the bucket while the primary is away needs only the
// directory files and what edges need of the platform, which the mirror writes as JSON at
// EdgePlatformKey under the bucket's path (the same JSON the replication stream carries). An edge
// never reads the platform or an ops file from the bucket, so its credentials can be limited to:
//
//	<path>/dirs/*/directory/*   the directory files (every LTX file of every level)
//	<path>/edge/platform.json   the directories, their switches and the public token keys
//
// No other key matches: a slug is lower-case letters, digits and hyphens (dirsvc.ValidSlug), so the
// one segment between dirs/ and /directory/ never holds a slash, and the keys of an ops file
// (<path>/dirs/<slug>/ops/<level>/<file>.ltx) and of the platform file (<path>/platform/...) hold
// no "/directory/" after <path>/dirs/. EdgePolicy writes the policy that grants this.

// EdgePlatformKey is where, under the bucket's path, the mirror writes what edges need of the
// platform file (a dirsvc.Platform as JSON).
const EdgePlatformKey = "edge/platform.json"

// maxPlatformJSON bounds the platform JSON an edge reads from the bucket.
const maxPlatformJSON = 16 << 20

// ErrNoEdgePlatform is the answer of an edge's bootstrap from a bucket that holds no platform JSON:
// its primary is of a build that did not write one.
var ErrNoEdgePlatform = errors.New("replicate: the bucket holds no " + EdgePlatformKey + " (written by primaries of this build and later): upgrade the primary, or start the edge while the primary answers")

// key returns the bucket key of rel under the bucket's path, as the replica clients form keys.
func (s *S3) key(rel string) string { return path.Join(s.Path, rel) }

// objects reads and writes single objects of the bucket beside the replicated files, with the same
// endpoint, region and credentials as the replica clients, every call bounded by timeout.
type objects struct {
	c       *s3.Client
	bucket  *S3
	timeout time.Duration
}

// objects returns the target's object client.
func (t Target) objects(ctx context.Context) (*objects, error) {
	if t.S3 == nil {
		return nil, errors.New("replicate: the target has no bucket")
	}
	timeout := t.StorageTimeout
	if timeout <= 0 {
		timeout = DefaultStorageTimeout
	}
	region := t.S3.Region
	if region == "" {
		region = "us-east-1"
	}
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion(region))
	if err != nil {
		return nil, fmt.Errorf("s3: load the configuration: %w", err)
	}
	c := s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.UsePathStyle = t.S3.ForcePathStyle
		if e := t.S3.Endpoint; e != "" {
			if !strings.HasPrefix(e, "http://") && !strings.HasPrefix(e, "https://") {
				e = "https://" + e
			}
			o.BaseEndpoint = aws.String(e)
			// As the replica clients: S3-compatible stores do not all take the SDK's default
			// checksums.
			o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
			o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		}
	})
	return &objects{c: c, bucket: t.S3, timeout: timeout}, nil
}

// put writes an object whole.
func (o *objects) put(ctx context.Context, rel string, body []byte, contentType string) error {
	ctx, cancel := context.WithTimeoutCause(ctx, o.timeout, errStalled)
	defer cancel()
	_, err := o.c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(o.bucket.Bucket), Key: aws.String(o.bucket.key(rel)),
		Body: bytes.NewReader(body), ContentType: aws.String(contentType)})
	if err != nil {
		return fmt.Errorf("put %s: %w", o.bucket.key(rel), o.wrap(ctx, err))
	}
	return nil
}

// get reads an object whole, up to limit bytes; os.ErrNotExist when the bucket does not hold it.
func (o *objects) get(ctx context.Context, rel string, limit int64) ([]byte, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, o.timeout, errStalled)
	defer cancel()
	out, err := o.c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(o.bucket.Bucket), Key: aws.String(o.bucket.key(rel))})
	if missing(err) {
		return nil, os.ErrNotExist
	} else if err != nil {
		return nil, fmt.Errorf("get %s: %w", o.bucket.key(rel), o.wrap(ctx, err))
	}
	defer out.Body.Close()
	b, err := io.ReadAll(io.LimitReader(out.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", o.bucket.key(rel), o.wrap(ctx, err))
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("get %s: larger than %d bytes", o.bucket.key(rel), limit)
	}
	return b, nil
}

// wrap names the stall as the cause of an error the SDK reports as a cancellation.
func (o *objects) wrap(ctx context.Context, err error) error {
	if errors.Is(context.Cause(ctx), errStalled) {
		return fmt.Errorf("%w (nothing for %s): %w", errStalled, o.timeout, err)
	}
	return err
}

// ReadEdgePlatform reads what edges need of the platform from the bucket (see EdgePlatformKey);
// ErrNoEdgePlatform when the bucket holds none. It reads nothing else of the bucket.
func ReadEdgePlatform(ctx context.Context, target Target) (*dirsvc.Platform, error) {
	o, err := target.objects(ctx)
	if err != nil {
		return nil, err
	}
	b, err := o.get(ctx, EdgePlatformKey, maxPlatformJSON)
	var api smithy.APIError
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("%w (looked at %s in bucket %s)", ErrNoEdgePlatform, target.S3.key(EdgePlatformKey), target.S3.Bucket)
	case errors.As(err, &api) && api.ErrorCode() == "AccessDenied":
		// S3 answers a missing object so to credentials that may not list where it would be.
		return nil, fmt.Errorf("%w: either the bucket holds none (its primary is of an older build) or these credentials do not reach it (see dirsvc backup edge-policy)", err)
	case err != nil:
		return nil, err
	}
	var p dirsvc.Platform
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("read %s: %w", target.S3.key(EdgePlatformKey), err)
	}
	for _, d := range p.Directories {
		if !dirsvc.ValidSlug(d.Slug) {
			return nil, fmt.Errorf("read %s: %q is not a directory's slug", target.S3.key(EdgePlatformKey), d.Slug)
		}
	}
	return &p, nil
}

// EdgePolicy returns the policy document (AWS IAM syntax) of read-only credentials for edges of
// the bucket: they may get every object of a directory file and the platform JSON, and list the
// directory files, and nothing else (see the layout above). The bucket's path may not hold the
// policy language's wildcards or variables (*, ?, $).
func EdgePolicy(s S3) ([]byte, error) {
	if s.Bucket == "" {
		return nil, errors.New("replicate: the policy needs a bucket")
	}
	if strings.ContainsAny(s.Bucket+s.Path, "*?$") {
		return nil, errors.New("replicate: the bucket and its path may not hold *, ? or $ (wildcards and variables in a policy)")
	}
	directories := s.key(dirsvc.DirsFolder) + "/*/" + dirsvc.DirectoryFile + "/*"
	arn := "arn:aws:s3:::" + s.Bucket
	type statement struct {
		Sid       string                         `json:"Sid"`
		Effect    string                         `json:"Effect"`
		Action    []string                       `json:"Action"`
		Resource  []string                       `json:"Resource"`
		Condition map[string]map[string][]string `json:"Condition,omitempty"`
	}
	policy := struct {
		Version   string      `json:"Version"`
		Statement []statement `json:"Statement"`
	}{Version: "2012-10-17", Statement: []statement{
		{Sid: "ReadDirectoryFilesAndTheEdgePlatform", Effect: "Allow", Action: []string{"s3:GetObject"},
			Resource: []string{arn + "/" + directories, arn + "/" + s.key(EdgePlatformKey)}},
		{Sid: "ListDirectoryFiles", Effect: "Allow", Action: []string{"s3:ListBucket"}, Resource: []string{arn},
			Condition: map[string]map[string][]string{"StringLike": {"s3:prefix": {directories}}}},
	}}
	b, err := json.MarshalIndent(policy, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
