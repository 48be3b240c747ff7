package edge_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/edge"
)

// TestAWrongMethodAnswers405 sends methods a route does not serve to the paths of read routes: each
// answers 405 naming the methods it serves in Allow, with a problem body, whether or not the record
// named exists; a path no route serves still answers as a missing record.
func TestAWrongMethodAnswers405(t *testing.T) {
	s := newTestServer(t, smallFixture(t))
	for _, tc := range []struct{ method, path string }{
		{"POST", "/v1/d/small/services/svc_gp"},
		{"POST", "/v1/d/small/services/svc_missing"},
		{"PUT", "/v1/d/small/locations/loc_ultimo"},
		{"DELETE", "/v1/d/small/services"},
		{"PATCH", "/v1/d/small/organisations/org_harbour/leadership"},
		{"DELETE", "/v1/d/small/developers"},
		{"POST", "/v1/d/nowhere/identifiers/search"},
		{"POST", edge.OpenAPIPath},
		{"DELETE", edge.JWKSPath},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			r := s.do(t, tc.method, tc.path)
			if r.status != http.StatusMethodNotAllowed {
				t.Fatalf("status %d, want 405: %s", r.status, r.body)
			}
			if got, want := r.header.Get("Allow"), "GET, HEAD"; got != want {
				t.Errorf("Allow = %q, want %q", got, want)
			}
			if got, want := r.header.Get("Content-Type"), "application/problem+json"; got != want {
				t.Errorf("Content-Type = %q, want %q", got, want)
			}
			if p := r.json(t); p["status"] != float64(405) || p["code"] != "method-not-allowed" {
				t.Errorf("problem %s", r.body)
			}
		})
	}
	t.Run("a hidden record's path answers a wrong method as a missing one's", func(t *testing.T) {
		missing := s.do(t, "POST", "/v1/d/small/services/svc_missing")
		if hidden := s.do(t, "POST", "/v1/d/small/services/svc_reduced"); hidden.wire() != missing.wire() {
			t.Errorf("hidden:\n%s\n--- missing:\n%s", hidden.wire(), missing.wire())
		}
	})
	t.Run("a path no route serves is not found", func(t *testing.T) {
		for _, method := range []string{"GET", "POST"} {
			// Not through the checking client: the path is in no document.
			r := send(t, method, s.URL+"/v1/d/small/widgets/w_1")
			if r.status != http.StatusNotFound || r.header.Get("Allow") != "" || r.json(t)["code"] != "not-found-or-hidden" {
				t.Errorf("%s: %d Allow %q %s", method, r.status, r.header.Get("Allow"), r.body)
			}
		}
	})
}

// TestMovedAndGoneAnswers merges and closes records every tier saw: the 301 names the survivor by
// its absolute address on the configured base URL, the request's query kept, without an HTML body;
// the 301 and the 410 name the audience the caller is served as, like every projected answer.
func TestMovedAndGoneAnswers(t *testing.T) {
	const base = "https://directory.example"
	s := newTestServerWith(t, func(c *edge.Config) { c.BaseURL = base + "/" }, smallFixture(t))
	ctx := context.Background()
	w, err := s.store.Writer(ctx, "small")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Transition(ctx, "svc_refuge", dirsvc.Transition{To: dirsvc.StateMerged, Survivor: "svc_counsel"}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Transition(ctx, "svc_unlisted", dirsvc.Transition{To: dirsvc.StateClosed}); err != nil {
		t.Fatal(err)
	}
	callers := []caller{
		{"anonymous", "", dirsvc.Public},
		{"professional", token(t, grant{dir: "small", tier: dirsvc.Professional, scopes: "graph:read", issuer: base}), dirsvc.Professional},
		{"partner", token(t, grant{dir: "small", tier: dirsvc.Partner, scopes: "graph:read", issuer: base}), dirsvc.Partner},
	}
	for _, c := range callers {
		t.Run(c.name, func(t *testing.T) {
			for _, q := range []string{"", "?view=brief"} {
				r := s.getAs(t, c.tok, "/v1/d/small/services/svc_refuge"+q)
				if r.status != http.StatusMovedPermanently {
					t.Fatalf("merged%s: %d %s", q, r.status, r.body)
				}
				if got, want := r.header.Get("Location"), base+"/v1/d/small/services/svc_counsel"+q; got != want {
					t.Errorf("merged%s: Location %q, want %q", q, got, want)
				}
				if ct := r.header.Get("Content-Type"); len(r.body) > 0 && ct != "application/problem+json" {
					t.Errorf("merged%s: a %s body: %s", q, ct, r.body)
				}
				if got, want := r.header.Get("X-DIR-Audience"), c.aud.String(); got != want {
					t.Errorf("merged%s: X-DIR-Audience %q, want %q", q, got, want)
				}
			}
			r := s.getAs(t, c.tok, "/v1/d/small/services/svc_unlisted")
			if r.status != http.StatusGone {
				t.Fatalf("closed: %d %s", r.status, r.body)
			}
			if got, want := r.header.Get("X-DIR-Audience"), c.aud.String(); got != want {
				t.Errorf("closed: X-DIR-Audience %q, want %q", got, want)
			}
		})
	}
}

// TestDeveloperInfoNamesTheCallersAudience reads the developer information as each tier: the body is
// the same for everyone, but the answer names the audience the caller was served as, and only the
// anonymous one may be kept by shared caches.
func TestDeveloperInfoNamesTheCallersAudience(t *testing.T) {
	s := newTestServer(t, smallFixture(t))
	var first []byte
	for _, c := range smallCallers(t) {
		r := s.getAs(t, c.tok, "/v1/d/small/developers")
		if r.status != http.StatusOK {
			t.Fatalf("%s: %d %s", c.name, r.status, r.body)
		}
		if got, want := r.header.Get("X-DIR-Audience"), c.aud.String(); got != want {
			t.Errorf("%s: X-DIR-Audience %q, want %q", c.name, got, want)
		}
		want := "private, no-store"
		if c.tok == "" {
			want = "public, max-age=300"
		}
		if got := r.header.Get("Cache-Control"); got != want {
			t.Errorf("%s: Cache-Control %q, want %q", c.name, got, want)
		}
		if first == nil {
			first = r.body
		} else if !bytes.Equal(r.body, first) {
			t.Errorf("%s: the body differs from the anonymous caller's:\n%s\n---\n%s", c.name, r.body, first)
		}
	}
}

// errStorage is the failure of a store that cannot be read.
var errStorage = errors.New("disk I/O error")

// failingCatalog is a catalog whose directories fail to read the records fail names.
type failingCatalog struct {
	dirsvc.Catalog
	fail func(publicID string) bool
}

func (c failingCatalog) Reader(ctx context.Context, slug string) (dirsvc.DirectoryReader, error) {
	d, err := c.Catalog.Reader(ctx, slug)
	if err != nil {
		return nil, err
	}
	return failingReader{d, c.fail}, nil
}

// failingReader is a directory whose reads of the records fail names fail with errStorage.
type failingReader struct {
	dirsvc.DirectoryReader
	fail func(publicID string) bool
}

func (d failingReader) Record(ctx context.Context, id string, v dirsvc.Viewer) (dirsvc.RecordStatus, error) {
	if d.fail(id) {
		return dirsvc.RecordStatus{}, errStorage
	}
	return d.DirectoryReader.Record(ctx, id, v)
}

func (d failingReader) Readable(ctx context.Context, v dirsvc.Viewer, ids []string) (map[string]bool, error) {
	for _, id := range ids {
		if d.fail(id) {
			return nil, errStorage
		}
	}
	return d.DirectoryReader.Readable(ctx, v, ids)
}

// lockedBuffer is a log destination safe for the server's goroutines and the test's.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// take returns what was logged since the last call, and forgets it.
func (b *lockedBuffer) take() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.b.String()
	b.b.Reset()
	return s
}

// TestStorageErrorsAnswer500 reads records through a store that fails: a failed read of the record,
// or of the survivor of a merged one, answers 500 and is logged at error level; it is never taken for
// a missing record (404) or a gone one (410). A missing or hidden record still answers 404, the same
// bytes as before, and nothing is logged for it.
func TestStorageErrorsAnswer500(t *testing.T) {
	var logs lockedBuffer
	failing := map[string]bool{"svc_gp": true, "svc_counsel": true}
	plain := newTestServer(t, smallFixture(t))
	s := newTestServerWith(t, func(c *edge.Config) {
		c.Catalog = failingCatalog{c.Catalog, func(id string) bool { return failing[id] }}
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	}, smallFixture(t))
	ctx := context.Background()
	w, err := s.store.Writer(ctx, "small")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Transition(ctx, "svc_refuge", dirsvc.Transition{To: dirsvc.StateMerged, Survivor: "svc_counsel"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range smallCallers(t) {
		for _, tc := range []struct{ name, path string }{
			{"a record that cannot be read", "/v1/d/small/services/svc_gp?view=brief"},
			{"a merged record whose survivor cannot be read", "/v1/d/small/services/svc_refuge?view=brief"},
		} {
			t.Run(c.name+": "+tc.name, func(t *testing.T) {
				logs.take()
				r := s.getAs(t, c.tok, tc.path)
				if r.status != http.StatusInternalServerError || r.header.Get("Content-Type") != "application/problem+json" ||
					r.json(t)["code"] != dirsvc.EInternal {
					t.Fatalf("%d %s %s", r.status, r.header.Get("Content-Type"), r.body)
				}
				if bytes.Contains(r.body, []byte(errStorage.Error())) {
					t.Errorf("the answer shows the cause: %s", r.body)
				}
				if got := logs.take(); !strings.Contains(got, "level=ERROR") || !strings.Contains(got, errStorage.Error()) {
					t.Errorf("log %q, want an error line with the cause", got)
				}
			})
		}
		t.Run(c.name+": missing and hidden records are not found, as before", func(t *testing.T) {
			logs.take()
			for _, id := range []string{"svc_missing", "svc_reduced", "svc_down"} {
				if c.aud != dirsvc.Public && id == "svc_reduced" {
					continue // visible to clinicians
				}
				path := "/v1/d/small/services/" + id + "?view=brief"
				got, want := s.getAs(t, c.tok, path), plain.getAs(t, c.tok, path)
				if got.status != http.StatusNotFound || got.wire() != want.wire() {
					t.Errorf("%s: %s\n--- without failures:\n%s", id, got.wire(), want.wire())
				}
			}
			if got := logs.take(); strings.Contains(got, "level=ERROR") {
				t.Errorf("a missing record was logged as an error: %s", got)
			}
		})
	}
}

// TestFHIRPageFailsWhenAReferenceCannotBeRead: a search page whose resources refer to a record that
// cannot be read answers 500, an OperationOutcome without the cause; the reference is never taken
// for one to a hidden record and left out.
func TestFHIRPageFailsWhenAReferenceCannotBeRead(t *testing.T) {
	var logs lockedBuffer
	s := newTestServerWith(t, func(c *edge.Config) {
		c.Catalog = failingCatalog{c.Catalog, func(id string) bool { return id == "loc_ultimo" }}
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	}, smallFixture(t))
	r := s.get(t, "/v1/d/small/fhir/HealthcareService?_count=100")
	if r.status != http.StatusInternalServerError || !strings.HasPrefix(r.header.Get("Content-Type"), "application/fhir+json") {
		t.Fatalf("%d %s %s", r.status, r.header.Get("Content-Type"), r.body)
	}
	if bytes.Contains(r.body, []byte(errStorage.Error())) {
		t.Errorf("the answer shows the cause: %s", r.body)
	}
	if got := logs.take(); !strings.Contains(got, "level=ERROR") || !strings.Contains(got, errStorage.Error()) {
		t.Errorf("log %q, want an error line with the cause", got)
	}
	// The same search on a directory that reads: the page refers to the location.
	ok := newTestServer(t, smallFixture(t)).get(t, "/v1/d/small/fhir/HealthcareService?_count=100")
	if ok.status != http.StatusOK || !bytes.Contains(ok.body, []byte(`"Location/loc-ultimo"`)) {
		t.Fatalf("without failures: %d %s", ok.status, ok.body)
	}
}
