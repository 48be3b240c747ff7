package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"image"
	"image/color"
	"image/jpeg"
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
		if sum := sha256.Sum256(w.Body.Bytes()); w.Code == http.StatusOK && !strings.Contains(path, hex.EncodeToString(sum[:])) {
			t.Fatal("the image served is not the one the printed path names")
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

// phoneJPEG returns a 32×16 JPEG, white on its left half, as a phone writes one held upright: an
// EXIF block with orientation 6 (turn a quarter clockwise to show) and a GPS latitude, and a comment.
func phoneJPEG(t *testing.T) (photo, latitude []byte) {
	t.Helper()
	m := image.NewGray(image.Rect(0, 0, 32, 16))
	for y := range 16 {
		for x := range 16 {
			m.SetGray(x, y, color.Gray{Y: 255})
		}
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, m, nil); err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	for _, v := range []uint32{51, 1, 30, 1, 2634, 100} {
		latitude = le.AppendUint32(latitude, v)
	}
	// TIFF header; IFD0 at 8: Orientation 6, GPSInfo at 38; GPS IFD at 38: GPSLatitude at 56.
	exif := []byte("Exif\x00\x00II*\x00\x08\x00\x00\x00\x02\x00")
	exif = append(exif, 0x12, 0x01, 3, 0, 1, 0, 0, 0, 6, 0, 0, 0)
	exif = append(exif, 0x25, 0x88, 4, 0, 1, 0, 0, 0, 38, 0, 0, 0, 0, 0, 0, 0)
	exif = append(exif, 1, 0, 0x02, 0x00, 5, 0, 3, 0, 0, 0, 56, 0, 0, 0, 0, 0, 0, 0)
	exif = append(exif, latitude...)
	segment := func(marker byte, payload []byte) []byte {
		return append(binary.BigEndian.AppendUint16([]byte{0xff, marker}, uint16(len(payload)+2)), payload...)
	}
	photo = append(append(append([]byte{0xff, 0xd8}, segment(0xe1, exif)...), segment(0xfe, []byte("Taken at 12 Harbour Road"))...), b.Bytes()[2:]...)
	return photo, latitude
}

// TestImagesAddPublishesAPhotoWithoutItsMetadata adds a phone's photo with the command and reads it
// through the edge: what is served holds none of the photo's metadata, shows the right way up, and
// is named, and tagged, by its own hash; a JPEG with a ZIP archive after it is refused.
func TestImagesAddPublishesAPhotoWithoutItsMetadata(t *testing.T) {
	data, dir := t.TempDir(), t.TempDir()
	if _, log, err := runCLI(t, "import", "--data", data, filepath.Join("..", "..", "testdata", "small.ndjson")); err != nil {
		t.Fatalf("import: %v\n%s", err, log)
	}
	photo, latitude := phoneJPEG(t)
	photoFile, zipFile := filepath.Join(dir, "jo.jpg"), filepath.Join(dir, "jo-and-more.jpg")
	os.WriteFile(photoFile, photo, 0o644)
	os.WriteFile(zipFile, append(bytes.Clone(photo), "PK\x03\x04\x14\x00\x00\x00\x08\x00payload.js"...), 0o644)
	webpFile := filepath.Join("..", "..", "testdata", "images", "halves-alpha.lossy.webp")

	if out, _, err := runCLI(t, "images", "add", "--data", data, "--dir", "small", photoFile, zipFile); err == nil || !strings.Contains(err.Error(), "after its end") || out != "" {
		t.Fatalf("a JPEG followed by a ZIP archive: %v, printed %q", err, out)
	}
	out, _, err := runCLI(t, "images", "add", "--data", data, "--dir", "small", photoFile, webpFile)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasSuffix(lines[0], ".jpg") || !strings.HasSuffix(lines[1], ".webp") {
		t.Fatalf("printed %q", out)
	}
	_, path, _ := strings.Cut(lines[0], "\t")
	upd := filepath.Join(dir, "org.json")
	os.WriteFile(upd, []byte(`{"kind":"organisation","publicId":"org_coast","name":"Coast Counselling","logo":"`+path+`"}`), 0o644)
	if _, log, err := runCLI(t, "record", "--data", data, "--dir", "small", "update", upd); err != nil {
		t.Fatalf("update: %v\n%s", err, log)
	}
	store, err := dirdb.Open(context.Background(), data)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	w := httptest.NewRecorder()
	edge.New(edge.Config{Catalog: store}).ServeHTTP(w, httptest.NewRequest("GET", path, nil))
	if w.Code != http.StatusOK {
		t.Fatalf("the photo answers %d", w.Code)
	}
	served := w.Body.Bytes()
	for what, s := range map[string][]byte{"an EXIF block": []byte("Exif"), "the GPS latitude": latitude, "the comment": []byte("Harbour Road")} {
		if bytes.Contains(served, s) {
			t.Errorf("the photo served holds %s", what)
		}
	}
	sum := sha256.Sum256(served)
	if sha := hex.EncodeToString(sum[:]); w.Header().Get("ETag") != `"`+sha+`"` || path != "/v1/d/small/images/"+sha+".jpg" {
		t.Errorf("ETag %s, path %s: want both to be the hash of the bytes served, %s", w.Header().Get("ETag"), path, sha)
	}
	m, err := jpeg.Decode(bytes.NewReader(served))
	if err != nil {
		t.Fatalf("the photo served does not decode: %v", err)
	}
	if m.Bounds() != image.Rect(0, 0, 16, 32) {
		t.Fatalf("the photo served is %v, want it turned upright to 16×32", m.Bounds())
	}
	if top, bottom := color.GrayModel.Convert(m.At(8, 8)).(color.Gray).Y, color.GrayModel.Convert(m.At(8, 24)).(color.Gray).Y; top < 200 || bottom > 55 {
		t.Errorf("the photo served is not upright: %d at the top, %d at the bottom, want white above black", top, bottom)
	}
}
