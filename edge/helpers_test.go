package edge_test

import (
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/dirsvc/dirsvc/edge/edgetest"
)

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// checked wraps a transport so every response is validated against the OpenAPI document.
func checked(tb testing.TB, base http.RoundTripper) http.RoundTripper {
	return edgetest.NewChecker(tb).Transport(tb, base)
}
