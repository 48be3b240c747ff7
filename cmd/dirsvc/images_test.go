package main

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/edge"
)

// TestImagesAddPublishesWhatARecordNames adds a logo with the command, names it in an organisation
// with record update, and reads it through the edge; a refused file adds nothing.
func TestImagesAddPublishesWhatARecordNames(t *testing.T) {
	data, dir := t.TempDir(), t.TempDir()
	if _, log, err := runCLI(t, "import", "--data", data, filepath.Join("..", "..", "testdata", "small.ndjson")); err != nil {
		t.Fatalf("import: %v\n%s", err, log)
	}
	var logo bytes.Buffer
	if err := png.Encode(&logo, image.NewGray(image.Rect(0, 0, 12, 12))); err != nil {
		t.Fatal(err)
	}
	logoFile, svgFile := filepath.Join(dir, "logo.png"), filepath.Join(dir, "logo.svg.png")
	os.WriteFile(logoFile, logo.Bytes(), 0o644)
	os.WriteFile(svgFile, []byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`), 0o644)

	if _, _, err := runCLI(t, "images", "add", "--data", data, "--dir", "small", logoFile, svgFile); err == nil || !strings.Contains(err.Error(), "not PNG, JPEG or WebP") {
		t.Fatalf("an SVG named .png was not refused by its content: %v", err)
	}
	if _, _, err := runCLI(t, "images", "add", "--data", data, "--dir", "nowhere", logoFile); err == nil {
		t.Fatal("adding to an unknown directory did not fail")
	}
	if _, _, err := runCLI(t, "images", "add", "--data", data, logoFile); exitCode(err) != 2 {
		t.Fatalf("no --dir: %v, want a usage error", err)
	}
	out, _, err := runCLI(t, "images", "add", "--data", data, "--dir", "small", logoFile)
	if err != nil {
		t.Fatal(err)
	}
	_, path, _ := strings.Cut(strings.TrimSpace(out), "\t")
	if !strings.HasPrefix(path, "/v1/d/small/images/") || !strings.HasSuffix(path, ".png") {
		t.Fatalf("printed %q", out)
	}
	get := func() int {
		store, err := dirdb.Open(context.Background(), data)
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		w := httptest.NewRecorder()
		edge.New(edge.Config{Catalog: store}).ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		if w.Code == http.StatusOK && !bytes.Equal(w.Body.Bytes(), logo.Bytes()) {
			t.Fatal("the image served is not the file added")
		}
		return w.Code
	}
	if code := get(); code != http.StatusNotFound {
		t.Fatalf("an image no record names answers %d", code)
	}
	upd := filepath.Join(dir, "org.json")
	os.WriteFile(upd, []byte(`{"kind":"organisation","publicId":"org_coast","name":"Coast Counselling","logo":"`+path+`"}`), 0o644)
	if _, log, err := runCLI(t, "record", "--data", data, "--dir", "small", "update", upd); err != nil {
		t.Fatalf("update: %v\n%s", err, log)
	}
	if code := get(); code != http.StatusOK {
		t.Fatalf("the logo of an organisation answers %d", code)
	}
}
