package dirdb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dirsvc/dirsvc"
)

// keyImage is the list key of a published image a view names (img:<sha256>): the audiences whose
// view carries it are those the image is served to.
const keyImage = "img:"

// AddImage stores a checked image (dirsvc.CheckImage) in the directory's published file; adding one
// it already holds changes nothing. It is served once a record's view names it.
func (d *Directory) AddImage(ctx context.Context, img *dirsvc.Image) error {
	_, err := d.write(ctx, func(w *writeTx) error {
		return w.exec(w.pub, "INSERT INTO images (sha256, media_type, body, added_at) VALUES (?, ?, ?, ?) ON CONFLICT (sha256) DO NOTHING",
			img.SHA256, img.MediaType, img.Body, time.Now().UTC().Format(time.RFC3339))
	})
	if err != nil {
		return fmt.Errorf("add image %s: %w", img.SHA256, err)
	}
	return nil
}

// imageNamersSQL finds the records whose view for an audience names an image (walks list_keys_key).
const imageNamersSQL = `SELECT k.public_id FROM list_keys k INDEXED BY list_keys_key
WHERE k.key = ? AND k.audiences & ? != 0 ORDER BY k.public_id LIMIT ?`

// imageSQL reads an image by its hash (the primary key).
const imageSQL = `SELECT media_type, body FROM images WHERE sha256 = ?`

// maxImageNamers bounds the records checked against a narrowing for one image.
const maxImageNamers = 100

// Image returns a published image for the viewer: ErrNotFound when the directory holds none with
// that hash, or when no record the viewer may see (inside its narrowing) names it in its view. It
// reads the image in both cases, so the two take the same time.
func (d *Directory) Image(ctx context.Context, v dirsvc.Viewer, sha string) (*dirsvc.Image, error) {
	d.gate.RLock()
	defer d.gate.RUnlock()
	img := &dirsvc.Image{SHA256: sha}
	err := d.readers.QueryRowContext(ctx, imageSQL, sha).Scan(&img.MediaType, &img.Body)
	if isNoRows(err) {
		img = nil
	} else if err != nil {
		return nil, fmt.Errorf("read image %s: %w", sha, err)
	}
	rows, err := d.readers.QueryContext(ctx, imageNamersSQL, keyImage+sha, audienceBit(v.Audience), maxImageNamers)
	if err != nil {
		return nil, fmt.Errorf("read the records naming image %s: %w", sha, err)
	}
	var namers []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, err
		}
		namers = append(namers, id)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("read the records naming image %s: %w", sha, err)
	}
	seen := false
	for _, id := range namers {
		if !v.Narrowing.AllowsKind(dirsvc.KindOfID(id)) {
			continue
		}
		if seen, err = d.insideNarrowingLocked(ctx, id, v); err != nil {
			return nil, err
		} else if seen {
			break
		}
	}
	if img == nil || !seen {
		return nil, dirsvc.ErrNotFound
	}
	return img, nil
}
