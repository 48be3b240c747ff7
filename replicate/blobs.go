package replicate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// ExportsPrefix is where, under the bucket's path, a primary keeps the files of exports (beside
// dirs/, platform/ and edge/; an edge's credentials reach none of it: see EdgePolicy).
const ExportsPrefix = "exports"

// Blobs reads and writes plain objects under one prefix of the bucket: the files a primary keeps in
// object storage beside the replicated ones (exports), so that another primary (one restored from
// the bucket after the first was lost) has them too. Every call is bounded as the replica clients'
// are: an answer must come, and a body being sent or read must move, at least every storage timeout.
type Blobs struct {
	o      *objects
	prefix string
}

// Blobs returns the target's objects under prefix (a path of the bucket's path, without slashes at
// either end).
func (t Target) Blobs(ctx context.Context, prefix string) (*Blobs, error) {
	if prefix == "" || strings.HasPrefix(prefix, "/") || strings.HasSuffix(prefix, "/") {
		return nil, fmt.Errorf("replicate: %q is not a prefix of blobs", prefix)
	}
	o, err := t.objects(ctx)
	if err != nil {
		return nil, err
	}
	return &Blobs{o: o, prefix: prefix}, nil
}

// rel returns a blob's path under the bucket's path; its name must be a clean relative path.
func (b *Blobs) rel(name string) (string, error) {
	if name == "" || path.Clean(name) != name || strings.HasPrefix(name, "/") || name == ".." || strings.HasPrefix(name, "../") {
		return "", fmt.Errorf("replicate: %q is not a blob's name", name)
	}
	return b.prefix + "/" + name, nil
}

// key returns the bucket key of a blob's name.
func (b *Blobs) key(name string) (string, error) {
	rel, err := b.rel(name)
	return b.o.bucket.key(rel), err
}

// Put writes the blob name whole from body, which holds size bytes (seekable, so that the client
// can sign it and send it again).
func (b *Blobs) Put(ctx context.Context, name string, body io.ReadSeeker, size int64, contentType string) error {
	key, err := b.key(name)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(context.Canceled)
	w := newWatchdog(b.o.timeout, cancel)
	defer w.stop()
	guarded := &guardedReadSeeker{guardedReader{r: body, w: w, ctx: ctx}, body}
	_, err = b.o.c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b.o.bucket.Bucket), Key: aws.String(key),
		Body: guarded, ContentLength: aws.Int64(size), ContentType: aws.String(contentType)})
	if err != nil {
		return fmt.Errorf("put %s: %w", key, b.o.wrap(ctx, err))
	}
	return nil
}

// Get reads the blob name whole, up to limit bytes; os.ErrNotExist when the bucket does not hold it.
func (b *Blobs) Get(ctx context.Context, name string, limit int64) ([]byte, error) {
	rel, err := b.rel(name)
	if err != nil {
		return nil, err
	}
	return b.o.get(ctx, rel, limit)
}

// Open opens the blob name for reading (and seeking: each read after a seek asks for the range from
// there on); os.ErrNotExist when the bucket does not hold it.
func (b *Blobs) Open(ctx context.Context, name string) (*Blob, error) {
	key, err := b.key(name)
	if err != nil {
		return nil, err
	}
	hctx, cancel := context.WithTimeoutCause(ctx, b.o.timeout, errStalled)
	defer cancel()
	head, err := b.o.c.HeadObject(hctx, &s3.HeadObjectInput{Bucket: aws.String(b.o.bucket.Bucket), Key: aws.String(key)})
	if missing(err) {
		return nil, os.ErrNotExist
	} else if err != nil {
		return nil, fmt.Errorf("head %s: %w", key, b.o.wrap(hctx, err))
	}
	bl := &Blob{o: b.o, key: key, ctx: ctx, size: aws.ToInt64(head.ContentLength)}
	if head.LastModified != nil {
		bl.modTime = *head.LastModified
	}
	return bl, nil
}

// Delete removes the blobs named; a name the bucket does not hold is no error.
func (b *Blobs) Delete(ctx context.Context, names ...string) error {
	for len(names) > 0 {
		batch := names[:min(len(names), 1000)] // the most one request of S3 takes
		names = names[len(batch):]
		var ids []types.ObjectIdentifier
		for _, n := range batch {
			key, err := b.key(n)
			if err != nil {
				return err
			}
			ids = append(ids, types.ObjectIdentifier{Key: aws.String(key)})
		}
		dctx, cancel := context.WithTimeoutCause(ctx, b.o.timeout, errStalled)
		out, err := b.o.c.DeleteObjects(dctx, &s3.DeleteObjectsInput{Bucket: aws.String(b.o.bucket.Bucket),
			Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)}})
		if err != nil {
			err = fmt.Errorf("delete under %s: %w", b.prefix, b.o.wrap(dctx, err))
		} else if len(out.Errors) > 0 {
			e := out.Errors[0]
			err = fmt.Errorf("delete %s: %s: %s", aws.ToString(e.Key), aws.ToString(e.Code), aws.ToString(e.Message))
		}
		cancel()
		if err != nil {
			return err
		}
	}
	return nil
}

// List returns the names of the blobs whose names start with under, in the bucket's order, at most
// limit of them.
func (b *Blobs) List(ctx context.Context, under string, limit int) ([]string, error) {
	root := b.o.bucket.key(b.prefix) + "/"
	p := s3.NewListObjectsV2Paginator(b.o.c, &s3.ListObjectsV2Input{Bucket: aws.String(b.o.bucket.Bucket),
		Prefix: aws.String(root + under)})
	var names []string
	for p.HasMorePages() && len(names) < limit {
		lctx, cancel := context.WithTimeoutCause(ctx, b.o.timeout, errStalled)
		page, err := p.NextPage(lctx)
		if err != nil {
			err = fmt.Errorf("list %s: %w", root+under, b.o.wrap(lctx, err))
		}
		cancel()
		if err != nil {
			return nil, err
		}
		for _, o := range page.Contents {
			if len(names) < limit {
				names = append(names, strings.TrimPrefix(aws.ToString(o.Key), root))
			}
		}
	}
	return names, nil
}

// missing reports whether err is the store's answer for an object it does not hold.
func missing(err error) bool {
	var api smithy.APIError
	return errors.As(err, &api) && (api.ErrorCode() == "NoSuchKey" || api.ErrorCode() == "NotFound")
}

// A Blob is an object of the bucket open for reading: an io.ReadSeekCloser (as http.ServeContent
// takes) that asks for the object from its offset on at the first read after a seek.
type Blob struct {
	o       *objects
	key     string
	ctx     context.Context
	size    int64
	modTime time.Time

	off  int64
	body io.ReadCloser // nil until a read, and after a seek
	stop context.CancelCauseFunc
}

// Size is the blob's length in bytes.
func (b *Blob) Size() int64 { return b.size }

// ModTime is when the blob was written.
func (b *Blob) ModTime() time.Time { return b.modTime }

func (b *Blob) Read(p []byte) (int, error) {
	if b.off >= b.size {
		return 0, io.EOF
	}
	if b.body == nil {
		ctx, cancel := context.WithCancelCause(b.ctx)
		w := newWatchdog(b.o.timeout, cancel)
		out, err := b.o.c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b.o.bucket.Bucket), Key: aws.String(b.key),
			Range: aws.String("bytes=" + strconv.FormatInt(b.off, 10) + "-")})
		if err != nil {
			w.stop()
			cancel(context.Canceled)
			return 0, fmt.Errorf("get %s: %w", b.key, b.o.wrap(ctx, err))
		}
		w.moved()
		b.body, b.stop = &guardedReader{r: out.Body, c: out.Body, w: w, ctx: ctx}, cancel
	}
	n, err := b.body.Read(p)
	b.off += int64(n)
	if err == io.EOF && b.off < b.size {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

func (b *Blob) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		offset += b.off
	case io.SeekEnd:
		offset += b.size
	}
	if offset < 0 {
		return 0, errors.New("replicate: seek before the start of a blob")
	}
	if offset != b.off {
		b.closeBody()
		b.off = offset
	}
	return offset, nil
}

// Close ends the read in progress, if any.
func (b *Blob) Close() error {
	b.closeBody()
	return nil
}

func (b *Blob) closeBody() {
	if b.body != nil {
		b.body.Close()
		b.stop(context.Canceled)
		b.body, b.stop = nil, nil
	}
}
