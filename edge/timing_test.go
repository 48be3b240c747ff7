package edge_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/edge"
	"github.com/dirsvc/dirsvc/primary"
	"github.com/dirsvc/dirsvc/primary/demo"
)

// probe is one kind of record read whose timing a caller can observe: the request and the status
// it must answer.
type probe struct {
	name   string
	req    *http.Request
	status int
}

// serve answers the probe's request through the handler and fails on an unexpected status.
func (p probe) serve(tb testing.TB, h http.Handler) {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, p.req)
	if w.Code != p.status {
		tb.Fatalf("%s: %d, want %d\n%s", p.name, w.Code, p.status, w.Body)
	}
}

// notFoundProbes is a generated demo directory of the given number of services in a real store, its
// edge handler, and the reads of each way a service read can be answered not found (and the
// narrowed client's visible read beside them):
//   - anonymous missing: an ID the directory does not hold;
//   - anonymous hidden: a live service the public may not see;
//   - narrowed missing, narrowed outside, narrowed visible: a professional client narrowed to an
//     area reads an absent ID, a service the professional tier sees outside the area, one inside it.
func notFoundProbes(tb testing.TB, services int) (http.Handler, map[string]probe) {
	tb.Helper()
	var file bytes.Buffer
	if err := demo.Generate(&file, demo.Options{Slug: "demo", Services: services, Seed: demo.DefaultSeed}); err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	store, err := dirdb.Open(ctx, tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { store.Close() })
	if _, _, err := primary.Import(ctx, store, bytes.NewReader(file.Bytes())); err != nil {
		tb.Fatal(err)
	}
	snap, err := primary.ParseImport(bytes.NewReader(file.Bytes()))
	if err != nil {
		tb.Fatal(err)
	}
	h := edge.New(edge.Config{Catalog: store, Logger: discardLogger(), Keys: testKeys,
		AnonymousLimits: edge.Limits{PerMinute: 1 << 30, PerDay: 1 << 30}})
	area := ""
	for _, r := range snap.Records {
		if l, ok := r.(*dirsvc.Location); ok && l.VisibleTo.Has(dirsvc.Public) && len(l.Areas) > 0 {
			area = l.Areas[0] // a narrow area: most services lie outside it
			break
		}
	}
	professional := token(tb, grant{dir: "demo", tier: dirsvc.Professional, scopes: "graph:read"})
	narrowed := token(tb, grant{dir: "demo", tier: dirsvc.Professional, scopes: "graph:read",
		narrowing: dirsvc.Narrowing{Areas: []string{area}}})
	read := func(tok, id string) *http.Request {
		req := httptest.NewRequest("GET", "/v1/d/demo/services/"+id+"?view=brief", nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		return req
	}
	status := func(req *http.Request) int {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Code
	}
	probes := map[string]probe{
		"anonymous missing": {"anonymous missing", read("", "svc_missing"), 404},
		"narrowed missing":  {"narrowed missing", read(narrowed, "svc_missing"), 404},
	}
	for _, r := range snap.Records {
		sv, ok := r.(*dirsvc.Service)
		if !ok || sv.State != dirsvc.StateLive {
			continue
		}
		id := sv.PublicID
		if _, ok := probes["anonymous hidden"]; !ok && !sv.VisibleTo.Has(dirsvc.Public) && status(read("", id)) == 404 {
			probes["anonymous hidden"] = probe{"anonymous hidden", read("", id), 404}
		}
		if !sv.VisibleTo.Has(dirsvc.Professional) || status(read(professional, id)) != 200 {
			continue
		}
		name := "narrowed visible"
		if status(read(narrowed, id)) == 404 {
			name = "narrowed outside"
		}
		if _, ok := probes[name]; !ok {
			probes[name] = probe{name, read(narrowed, id), status(read(narrowed, id))}
		}
	}
	for _, name := range []string{"anonymous hidden", "narrowed outside", "narrowed visible"} {
		if _, ok := probes[name]; !ok {
			tb.Fatalf("the demo of %d services has no %s service (narrowed to %q)", services, name, area)
		}
	}
	return h, probes
}
