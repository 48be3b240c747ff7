package edge

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestAClientThatWentAwayIsNoError ends a request's context, as a client that disconnects does, and
// fails the request with the cancellation: nothing is logged above debug and no 500 is written.
// The same error with the client still there is a failure of the service.
func TestAClientThatWentAwayIsNoError(t *testing.T) {
	var logs bytes.Buffer
	s := New(Config{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w := httptest.NewRecorder()
	s.error(w, httptest.NewRequest("GET", "/v1/d/demo/services", nil).WithContext(ctx), fmt.Errorf("read a page: %w", context.Canceled))
	if logs.Len() != 0 || w.Code == 500 {
		t.Errorf("a client that went away: %d, logged:\n%s", w.Code, logs.String())
	}
	w = httptest.NewRecorder()
	s.error(w, httptest.NewRequest("GET", "/v1/d/demo/services", nil), fmt.Errorf("read a page: %w", context.Canceled))
	if w.Code != 500 || !strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("a cancellation the client did not cause: %d, logged:\n%s", w.Code, logs.String())
	}
}
