// Package blevebench compares the project's service search with Bleve v2 on the same documents and
// the same query classes as bench/search.sh. It is a module of its own, so that Bleve is never a
// dependency of the service. Run it with
//
//	go test -run '^$' -bench . -benchtime 2000x [-services N | -data DIR -slug SLUG]
package blevebench

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/primary"
	"github.com/dirsvc/dirsvc/primary/demo"
)

// The benchmark's flags: the size of the generated directory, or an existing data root to search.
var (
	servicesFlag = flag.Int("services", 100000, "services in the generated directory")
	dataFlag     = flag.String("data", "", "an existing data root to search instead of a generated directory")
	slugFlag     = flag.String("slug", "demo", "the directory to search in the data root given by -data")
)

// The query classes, as bench/search.sh names them.
const (
	classText  = "text"
	classPlace = "place"
	classOpen  = "open"
	classGroup = "group"
	classTypo  = "typo"
)

// classes are the query classes in the order they are run.
var classes = []string{classText, classPlace, classOpen, classGroup, classTypo}

// words, typos and filters are bench/search.sh's words, misspelt words and filter pairs.
var (
	words = []string{"gp", "dental", "physiotherapy", "pharmacy", "mental health", "psychology", "counselling",
		"youth mental", "clinic", "medical", "aged care", "community health", "hospital", "podiatry",
		"speech pathology", "dentist", "after hours", "womens", "children", "family"}
	typos   = []string{"physiotherapi", "dentl", "pharmcy", "psycology", "councelling", "clinc", "medcal", "hospitl", "podiatory", "childrens"}
	filters = []filterSet{
		{costs: []string{"bulk_billed"}, delivery: []string{"in_person"}},
		{appointment: dirsvc.AppointmentNotRequired, selfReferral: true},
		{delivery: []string{"telehealth"}, costs: []string{"free"}},
		{languages: []string{"en"}, delivery: []string{"in_person"}},
		{costs: []string{"fees"}, appointment: dirsvc.AppointmentRequired},
	}
)

// Sizes of the queries and their answers.
const (
	queriesPerClass = 200 // as bench/search.sh
	pageSize        = 20  // the service's default page
	radiusKm        = 25.0
	maxGroupedHits  = 500 // the services a search by organisation returns with its page, as the project's
)

// viewer is the anonymous caller: the public audience, without a narrowing.
var viewer = dirsvc.Viewer{Audience: dirsvc.Public}

// openAt is the instant "open now" is asked at: a Tuesday, 10:30 in Sydney. A fixed instant keeps the
// match sets the same from run to run.
var openAt = time.Date(2026, time.November, 23, 23, 30, 0, 0, time.UTC)

// openNow is the open-now predicate both searches apply to a service's hours: open at openAt in the
// hours' own time zone (without public holidays, for both sides alike).
func openNow(h *dirsvc.OpeningHours, _ []string) bool {
	return h != nil && dirsvc.StatusAt(h, openAt, nil).Status == dirsvc.OpenNow
}

// filterSet is a pair of bench/search.sh's filters; each list matches any of its values.
type filterSet struct {
	costs, delivery, languages []string
	appointment                string
	selfReferral               bool
}

// benchQuery is one query of a class, as both searches are asked it.
type benchQuery struct {
	class  string
	words  string
	near   *dirsvc.Point
	filter filterSet
	open   bool
	group  bool
}

// searchQuery returns the project's query. Spelling correction is on for the misspelt words only,
// as Bleve's side matches fuzzily for them only.
func (q benchQuery) searchQuery() dirsvc.SearchQuery {
	sq := dirsvc.SearchQuery{Text: q.words, Sort: dirsvc.SortRelevance, Limit: pageSize, Spell: q.class == classTypo,
		ByOrganisation: q.group, Costs: q.filter.costs, Delivery: q.filter.delivery, Languages: q.filter.languages,
		Appointment: q.filter.appointment, SelfReferral: q.filter.selfReferral}
	if q.near != nil {
		sq.Near, sq.RadiusKm = q.near, radiusKm
	}
	if q.open {
		sq.Open = openNow
	}
	return sq
}

// outcome is what a search found: the total (organisations, by organisation), the services found,
// the first page's service IDs and how many facet values it lists.
type outcome struct {
	total, services, facets int
	page                    []string
}

// searchDirsvc answers a benchmark query with the project's search.
func searchDirsvc(ctx context.Context, d *dirdb.Directory, q benchQuery) (outcome, error) {
	res, err := d.SearchServices(ctx, viewer, q.searchQuery())
	if err != nil {
		return outcome{}, err
	}
	out := outcome{total: res.Total, services: res.Total}
	if q.group {
		out.services = res.ServiceTotal
	}
	f := res.Facets
	for _, l := range [][]dirsvc.FacetCount{f.Type, f.Category, f.Ownership, f.LocalTypes, f.Cost, f.Delivery,
		f.Language, f.TargetGroup, f.Program} {
		out.facets += len(l)
	}
	for _, h := range res.Hits {
		out.page = append(out.page, h.PublicID)
	}
	return out, nil
}

// maxQueryWords bounds the words of a search, as the project's.
const maxQueryWords = 12

// queryWords splits a search's text into its words as the project does: lower-cased, each a list
// of its parts (a hyphenated or dotted word has several), at most maxQueryWords.
func queryWords(text string) [][]string {
	var out [][]string
	for _, chunk := range strings.Fields(strings.ToLower(text)) {
		parts := strings.FieldsFunc(chunk, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
		if len(parts) > 0 {
			out = append(out, parts)
		}
		if len(out) == maxQueryWords {
			break
		}
	}
	return out
}

// fixture is what the benchmarks share: both searches over the same directory, the queries, and
// what was measured.
type fixture struct {
	tmp     string
	store   *dirdb.Store
	dir     *dirdb.Directory
	bleve   *bleveSearch
	queries map[string][]benchQuery
	setup   []string // how long each step of the setup took
	checks  map[string]*check
}

// check compares the two searches' answers to one class's queries.
type check struct {
	totals  [2]int // summed over the queries: dirsvc, bleve
	overlap int    // first-page services both found
	pages   int    // first-page services dirsvc found
}

// The fixture, made once for every benchmark (or the error that made it fail), and the runs measured.
var (
	once    sync.Once
	shared  *fixture
	failed  error
	resMu   sync.Mutex
	results = map[string]map[string][]sample{} // by class and side
)

// sample is one run of a sub-benchmark: its iterations and its time per query.
type sample struct {
	n       int
	nsPerOp float64
}

// setup makes the fixture once, outside every timed loop.
func setup(b *testing.B) *fixture {
	b.Helper()
	once.Do(func() { shared, failed = newFixture(context.Background()) })
	if failed != nil {
		b.Fatal(failed)
	}
	return shared
}

// newFixture opens or generates the directory, reads its services, indexes them in Bleve, makes the
// queries and asks each of them of both searches once (which also loads the project's index and
// vocabulary).
func newFixture(ctx context.Context) (*fixture, error) {
	tmp, err := os.MkdirTemp("", "blevebench")
	if err != nil {
		return nil, err
	}
	f := &fixture{tmp: tmp, checks: map[string]*check{}}
	step := func(name string, start time.Time) {
		line := fmt.Sprintf("%s: %s", name, time.Since(start).Round(10*time.Millisecond))
		f.setup = append(f.setup, line)
		fmt.Fprintln(os.Stderr, "setup", line)
	}
	start := time.Now()
	if *dataFlag != "" {
		if f.store, err = dirdb.Open(ctx, *dataFlag); err != nil {
			return f, err
		}
		if f.dir, err = f.store.Directory(ctx, *slugFlag); err != nil {
			return f, err
		}
		step("open "+*dataFlag, start)
	} else {
		if err := f.generate(ctx); err != nil {
			return f, err
		}
		step(fmt.Sprintf("generate and import %d services", *servicesFlag), start)
	}
	start = time.Now()
	services, err := readServices(ctx, f.dir, viewer)
	if err != nil {
		return f, err
	}
	step(fmt.Sprintf("read %d services' views", len(services)), start)
	start = time.Now()
	if f.bleve, err = newBleveSearch(ctx, filepath.Join(tmp, "bleve"), services); err != nil {
		return f, err
	}
	step(fmt.Sprintf("index %d documents in Bleve and merge them", f.bleve.count), start)
	f.queries = makeQueries(services)
	start = time.Now()
	if err := f.compare(ctx); err != nil {
		return f, err
	}
	step("ask every query of both searches once", start)
	return f, nil
}

// generate imports a generated directory into a new store, as the project's own benchmarks do.
func (f *fixture) generate(ctx context.Context) error {
	var file bytes.Buffer
	if err := demo.Generate(&file, demo.Options{Slug: "bench", Country: "AU", Services: *servicesFlag, Seed: 1}); err != nil {
		return err
	}
	snap, err := primary.ParseImport(&file)
	if err != nil {
		return err
	}
	if f.store, err = dirdb.Open(ctx, filepath.Join(f.tmp, "data")); err != nil {
		return err
	}
	if f.dir, err = f.store.CreateDirectory(ctx, "bench"); err != nil {
		return err
	}
	_, err = f.dir.Import(ctx, snap)
	return err
}

// makeQueries makes each class's queries from bench/search.sh's words, filters and typos, and
// positions of the directory's sites, drawn the same way on every run.
func makeQueries(services []*service) map[string][]benchQuery {
	var points []*dirsvc.Point
	for _, s := range services {
		if s.point != nil {
			points = append(points, s.point)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	pick := func(xs []string) string { return xs[r.IntN(len(xs))] }
	out := map[string][]benchQuery{}
	for _, class := range classes {
		for range queriesPerClass {
			q := benchQuery{class: class, words: pick(words)}
			switch class {
			case classPlace:
				if len(points) > 0 {
					q.near = points[r.IntN(len(points))]
				}
				q.filter = filters[r.IntN(len(filters))]
			case classOpen:
				q.open = true
			case classGroup:
				q.group = true
			case classTypo:
				q.words = pick(typos)
			}
			out[class] = append(out[class], q)
		}
	}
	return out
}

// compare asks every query of both searches once and notes how their answers agree.
func (f *fixture) compare(ctx context.Context) error {
	for _, class := range classes {
		c := &check{}
		f.checks[class] = c
		for _, q := range f.queries[class] {
			a, err := searchDirsvc(ctx, f.dir, q)
			if err != nil {
				return fmt.Errorf("dirsvc, %s %q: %w", class, q.words, err)
			}
			b, err := f.bleve.search(ctx, q)
			if err != nil {
				return fmt.Errorf("bleve, %s %q: %w", class, q.words, err)
			}
			c.totals[0] += a.services
			c.totals[1] += b.services
			c.pages += len(a.page)
			for _, id := range a.page {
				if slices.Contains(b.page, id) {
					c.overlap++
				}
			}
		}
	}
	return nil
}

// side is one of the two searches compared.
type side struct {
	name   string
	search func(ctx context.Context, f *fixture, q benchQuery) (outcome, error)
}

// sides are the two searches, the project's first.
var sides = []side{
	{"dirsvc", func(ctx context.Context, f *fixture, q benchQuery) (outcome, error) {
		return searchDirsvc(ctx, f.dir, q)
	}},
	{"bleve", func(ctx context.Context, f *fixture, q benchQuery) (outcome, error) { return f.bleve.search(ctx, q) }},
}

// BenchmarkSearch runs each class's queries, in turn, against the project's search and Bleve.
func BenchmarkSearch(b *testing.B) {
	f := setup(b)
	ctx := context.Background()
	for _, class := range classes {
		qs := f.queries[class]
		b.Run(class, func(b *testing.B) {
			for _, s := range sides {
				b.Run(s.name, func(b *testing.B) {
					b.ReportAllocs()
					n := 0
					for b.Loop() {
						if _, err := s.search(ctx, f, qs[n%len(qs)]); err != nil {
							b.Fatal(err)
						}
						n++
					}
					record(class, s.name, n, b.Elapsed())
				})
			}
		})
	}
}

// record keeps a run of a sub-benchmark.
func record(class, side string, n int, elapsed time.Duration) {
	resMu.Lock()
	defer resMu.Unlock()
	if results[class] == nil {
		results[class] = map[string][]sample{}
	}
	results[class][side] = append(results[class][side], sample{n, float64(elapsed.Nanoseconds()) / float64(max(n, 1))})
}

// nsPerOp returns the median time per query of a sub-benchmark's longest runs (with -count, there
// are several; the short probing runs are left out), or 0 when it did not run.
func nsPerOp(samples []sample) float64 {
	longest := 0
	for _, s := range samples {
		longest = max(longest, s.n)
	}
	var ns []float64
	for _, s := range samples {
		if s.n == longest {
			ns = append(ns, s.nsPerOp)
		}
	}
	if len(ns) == 0 {
		return 0
	}
	slices.Sort(ns)
	if len(ns)%2 == 1 {
		return ns[len(ns)/2]
	}
	return (ns[len(ns)/2-1] + ns[len(ns)/2]) / 2
}

// TestMain runs the benchmarks, then prints the comparison and removes the fixture.
func TestMain(m *testing.M) {
	code := m.Run()
	if shared != nil {
		summary(shared)
		if shared.bleve != nil {
			shared.bleve.idx.Close()
		}
		if shared.store != nil {
			shared.store.Close()
		}
		os.RemoveAll(shared.tmp)
	}
	os.Exit(code)
}

// summary prints, per class, both searches' median time per query and their ratio, and how their
// answers agree: the mean services found by each and the share of the project's first page that
// Bleve's first page also holds.
func summary(f *fixture) {
	fmt.Println()
	for _, line := range f.setup {
		fmt.Println("setup", line)
	}
	fmt.Println()
	fmt.Println("| class | dirsvc ns/op | bleve ns/op | bleve/dirsvc | mean found (dirsvc / bleve) | first page shared |")
	fmt.Println("|---|---:|---:|---:|---:|---:|")
	for _, class := range classes {
		c := f.checks[class]
		a, b := nsPerOp(results[class]["dirsvc"]), nsPerOp(results[class]["bleve"])
		if a == 0 || b == 0 || c == nil {
			continue
		}
		n := float64(len(f.queries[class]))
		pct := 0.0
		if c.pages > 0 {
			pct = 100 * float64(c.overlap) / float64(c.pages)
		}
		fmt.Printf("| %s | %.0f | %.0f | %.2f | %.0f / %.0f | %.0f%% |\n", class, a, b, b/a,
			float64(c.totals[0])/n, float64(c.totals[1])/n, pct)
	}
}
