package edge_test

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/primary"
	"github.com/dirsvc/dirsvc/primary/demo"
)

// caller is who reads in a tier test: a token (empty for anonymous) and the tier it reads as.
type caller struct {
	name string
	tok  string
	aud  dirsvc.Audience
}

// tierCallers are an anonymous caller and clients of every tier holding every read scope (the public
// tier cannot hold leadership:read), one of them narrowed to an area.
func tierCallers(tb testing.TB, dir string, area string) []caller {
	all := "search:read graph:read feed:read practitioners:read leadership:read"
	return []caller{
		{"anonymous", "", dirsvc.Public},
		{"public client", token(tb, grant{dir: dir, tier: dirsvc.Public, scopes: "graph:read feed:read practitioners:read"}), dirsvc.Public},
		{"professional", token(tb, grant{dir: dir, tier: dirsvc.Professional, scopes: all}), dirsvc.Professional},
		{"partner", token(tb, grant{dir: dir, tier: dirsvc.Partner, scopes: all}), dirsvc.Partner},
		{"narrowed professional", token(tb, grant{dir: dir, tier: dirsvc.Professional, scopes: all,
			narrowing: dirsvc.Narrowing{Areas: []string{area}}}), dirsvc.Professional},
	}
}

// TestEveryTierSeesOnlyWhatItMay reads every record of the demo directory (whose generator gives
// every kind of restrictable detail every set of tiers) through every endpoint of the record API,
// the lists and the developer information as every tier, in every representation, with leadership
// switched on, and scans
// every byte of every answer, headers included, for a canary the tier may not see. Every answer of
// 404 must be byte for byte the answer for a record that does not exist.
func TestEveryTierSeesOnlyWhatItMay(t *testing.T) {
	file := demoFiles(t)["demo"]
	s := newTestServer(t, file)
	if err := s.store.SetSeniorManagementAvailable(context.Background(), "demo", true); err != nil {
		t.Fatal(err)
	}
	snap, err := primary.ParseImport(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	area := broadArea(snap)
	type route struct {
		path  string // with %s for the public ID
		query []string
	}
	routes := map[dirsvc.Kind][]route{
		dirsvc.KindService:      {{"/services/%s", []string{"", "?view=brief"}}},
		dirsvc.KindLocation:     {{"/locations/%s", []string{"", "?view=brief"}}},
		dirsvc.KindOrganisation: {{"/organisations/%s", []string{"", "?view=brief"}}, {"/organisations/%s/leadership", []string{""}}},
		dirsvc.KindPractitioner: {{"/practitioners/%s", []string{"", "?view=page"}}},
		dirsvc.KindRole:         {{"/roles/%s", []string{""}}},
	}
	for _, c := range tierCallers(t, "demo", area) {
		t.Run(c.name, func(t *testing.T) {
			statuses := map[int]int{}
			scan := func(path string) response {
				r := s.getAs(t, c.tok, "/v1/d/demo"+path)
				statuses[r.status]++
				var head strings.Builder
				for k, vs := range r.header {
					head.WriteString(k + ": " + strings.Join(vs, " ") + "\n")
				}
				if leaks := demo.Leaks(append([]byte(head.String()), r.body...), c.aud); len(leaks) > 0 {
					t.Errorf("GET %s leaks %v to %s", path, leaks, c.name)
				}
				return r
			}
			for _, rec := range snap.Records {
				id := rec.Base().PublicID
				for _, rt := range routes[rec.Kind()] {
					missingID := rec.Kind().IDPrefix() + "missing"
					for _, q := range rt.query {
						r := scan(strings.Replace(rt.path, "%s", id, 1) + q)
						if r.status != http.StatusNotFound {
							continue
						}
						missing := s.getAs(t, c.tok, "/v1/d/demo"+strings.Replace(rt.path, "%s", missingID, 1)+q)
						if r.wire() != missing.wire() {
							t.Errorf("hidden %s answers differently from a missing one:\n%s\nwant\n%s", id, r.wire(), missing.wire())
						}
					}
				}
				for _, id := range identifiersOf(rec) {
					scan("/identifiers/search?system=" + url.QueryEscape(id.Type) + "&value=" + url.QueryEscape(id.Value))
					scan("/identifiers/search?system=" + url.QueryEscape(id.System) + "&value=" + url.QueryEscape(id.Value))
				}
			}
			scan("/developers")
			for _, list := range []string{"/services?limit=100", "/practitioners?limit=100"} {
				for next := list; next != ""; {
					r := scan(next)
					next = ""
					if r.status != 200 {
						break
					}
					if cur, ok := r.json(t)["nextCursor"].(string); ok {
						next = list + "&cursor=" + cur
					}
				}
			}
			for _, st := range []int{200, 404} {
				if statuses[st] == 0 {
					t.Errorf("no %d answer; statuses %v", st, statuses)
				}
			}
		})
	}
}

// identifiersOf returns every identifier a record carries, whoever may see it.
func identifiersOf(rec dirsvc.Record) []dirsvc.Identifier {
	switch r := rec.(type) {
	case *dirsvc.Organisation:
		return r.Identifiers
	case *dirsvc.Location:
		return r.Identifiers
	case *dirsvc.Service:
		return r.Identifiers
	case *dirsvc.Practitioner:
		return r.Identifiers
	}
	return nil
}

// broadArea returns the broadest area of the first public site with more than one: a narrowing to
// it holds several services, and leaves others out.
func broadArea(snap *dirsvc.Snapshot) string {
	for _, r := range snap.Records {
		if l, ok := r.(*dirsvc.Location); ok && l.VisibleTo.Has(dirsvc.Public) && len(l.Areas) > 1 {
			return l.Areas[len(l.Areas)-1]
		}
	}
	return ""
}
