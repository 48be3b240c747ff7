package edge

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"testing"

	"github.com/andybalholm/brotli"
)

// TestEncodeAllDecodesAtEveryLevel codes a view-sized and a list-sized body (the latter at the
// levels of large bodies) in both codings and decodes them back.
func TestEncodeAllDecodesAtEveryLevel(t *testing.T) {
	for _, n := range []int{2 << 10, largeBody + 1, 200 << 10} {
		var b bytes.Buffer
		for i := 0; b.Len() < n; i++ {
			fmt.Fprintf(&b, `{"publicId":"svc_%06d","name":"service %d"},`, i, i*7919%10007)
		}
		body := b.Bytes()[:n]
		for coding, open := range map[string]func(io.Reader) (io.Reader, error){
			"br":   func(r io.Reader) (io.Reader, error) { return brotli.NewReader(r), nil },
			"gzip": func(r io.Reader) (io.Reader, error) { return gzip.NewReader(r) },
		} {
			coded := encodeAll(coding, body)
			zr, err := open(bytes.NewReader(coded))
			if err != nil {
				t.Fatal(err)
			}
			plain, err := io.ReadAll(zr)
			if err != nil || !bytes.Equal(plain, body) {
				t.Errorf("%s of %d bytes does not decode to the body: %v", coding, n, err)
			}
			if len(coded) >= n/2 {
				t.Errorf("%s of %d bytes: %d bytes coded", coding, n, len(coded))
			}
		}
	}
}
