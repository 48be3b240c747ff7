package replicate_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/dirsvc/dirsvc/replicate"
)

// TestAnEdgeRestoresFromThePrimarysStream serves a primary's replica over the replication stream
// and restores its directory file from it, latest and at an earlier position, as an edge
// bootstraps; the primary's own files are not on the stream.
func TestAnEdgeRestoresFromThePrimarysStream(t *testing.T) {
	ctx := context.Background()
	data, store := smallFolder(t)
	target := replicate.Target{Dir: t.TempDir()}
	r, err := replicate.Open(ctx, data, target, smallFiles, replicate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { store.Close(); r.Close(ctx) }()
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	before := r.Positions()
	rename(t, store, "Coast Counselling Renamed")
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	const token = "replication-token-for-tests"
	h, err := replicate.Stream(r, token, store.Platform)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	// Without the token the stream gives nothing away.
	for _, auth := range []string{"", "Bearer wrong-token-of-some-length", "Basic " + token} {
		req, _ := http.NewRequest("GET", srv.URL+replicate.StreamPrefix+"files", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		want := `Bearer realm="dirsvc-replication"`
		if auth != "" {
			want += `, error="invalid_token"`
		}
		if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != want {
			t.Errorf("Authorization %q: %d, WWW-Authenticate %q, want 401 with %s", auth, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), want)
		}
	}
	if _, err := replicate.RestoreFrom(ctx, t.TempDir(), replicate.NewStreamClient(srv.URL, "wrong-token-of-some-length", "dirs/small/directory", nil),
		"dirs/small/directory", replicate.At{}); err == nil {
		t.Error("a restore with a wrong token succeeded")
	}

	latest, earlier := t.TempDir(), t.TempDir()
	for _, name := range []string{"dirs/small/directory"} {
		c := replicate.NewStreamClient(srv.URL, token, name, nil)
		if _, err := replicate.RestoreFrom(ctx, latest, c, name, replicate.At{}); err != nil {
			t.Fatal(err)
		}
		if _, err := replicate.RestoreFrom(ctx, earlier, c, name, replicate.At{TXID: before[name]}); err != nil {
			t.Fatal(err)
		}
	}
	p, err := store.Platform(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := copyServiceName(t, latest, p, "svc_counsel"); got != "Coast Counselling Renamed" {
		t.Errorf("latest from the stream: %q", got)
	}
	if got := copyServiceName(t, earlier, p, "svc_counsel"); got != "Coast Counselling" {
		t.Errorf("earlier from the stream: %q", got)
	}
	for _, name := range []string{"dirs/other/directory", "platform", "dirs/small/ops"} {
		_, err = replicate.RestoreFrom(ctx, t.TempDir(), replicate.NewStreamClient(srv.URL, token, name, nil), name, replicate.At{})
		if !errors.Is(err, replicate.ErrNotReplicated) {
			t.Errorf("%s from the stream: %v, want ErrNotReplicated", name, err)
		}
	}
	if _, err := replicate.Stream(r, "short", store.Platform); err == nil {
		t.Error("a short replication token was accepted")
	}
}
