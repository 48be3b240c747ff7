package main

import (
	"context"
	"fmt"
	"io"
	"os"

	_ "golang.org/x/image/webp" // registers the WebP decoder dirsvc.CheckImage decodes WebP images with

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/dirdb"
)

// images adds published images (logos, photos) to a directory: each file is checked
// (dirsvc.CheckImage: PNG, JPEG or WebP by content, at most 2 MiB and 4096 pixels a side, whole and
// decoding fully) and a copy of it without metadata is stored in the directory's published file;
// the copy's path is printed, for a record's logo or photo field.
func (m *Main) images(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] != "add" {
		return usagef("usage: dirsvc images add --dir SLUG FILE...")
	}
	fs := m.command("images add", "--dir SLUG [--data DIR] FILE...\n\n"+
		"Checks each image (PNG, JPEG or WebP by its content; at most 2 MiB and 4096 pixels a side; whole, with\n"+
		"nothing after its end, and decoding fully) and publishes a copy of it without metadata (no EXIF, GPS\n"+
		"position, XMP, comment or text chunk; turned the way its EXIF orientation says) in the directory;\n"+
		"prints for each FILE the path that a logo or photo field names the copy by. Nothing is added when any\n"+
		"file is refused.")
	m.dataFlag(fs)
	slug := fs.String("dir", "", "directory slug")
	files, err := parseArgs(fs, args[1:], 1, -1)
	if err != nil {
		return err
	}
	if *slug == "" {
		return usagef("--dir is required")
	}
	var imgs []*dirsvc.Image
	for _, name := range files {
		img, err := readImage(name)
		if err != nil {
			return err
		}
		imgs = append(imgs, img)
	}
	store, err := dirdb.Open(ctx, m.Data)
	if err != nil {
		return err
	}
	defer store.Close()
	d, err := store.Directory(ctx, *slug)
	if err != nil {
		return m.noDirectory(err, *slug)
	}
	for i, img := range imgs {
		if err := d.AddImage(ctx, img); err != nil {
			return err
		}
		fmt.Fprintf(m.Stdout, "%s\t%s\n", files[i], dirsvc.ImagePath(*slug, img.SHA256, img.MediaType))
	}
	return nil
}

// readImage reads and checks one image file, reading at most one byte more than an image may have.
func readImage(name string) (*dirsvc.Image, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	body, err := io.ReadAll(io.LimitReader(f, dirsvc.MaxImageBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	img, err := dirsvc.CheckImage(body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return img, nil
}
