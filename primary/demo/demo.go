// Package demo generates realistic demo directories of health and human services in the import
// format (docs/import-format.md): a taxonomy, organisations with their sites, services,
// practitioners and their roles, senior management and curated collections, for Australia or New
// Zealand, with localities from the service's gazetteer (dirsvc.Localities).
//
// Generation is deterministic: the same Options give byte-identical output (math/rand/v2 with a PCG
// source seeded from Options.Seed; no map is ever iterated unsorted). Records are streamed through a
// buffered writer, so memory stays modest at 100,000 services.
//
// Every case the specification names appears in every directory generated: withheld addresses,
// unlisted sites, practitioners who hide their name or keep fields private, every gender value,
// records in every lifecycle state, local types that refine platform types and ones that do not,
// several specialties, collections that must and must not be shown, senior management with past
// appointments and staff-only details, numbers of another country, and contacts and identifiers
// restricted to some audiences. Every value that some served audience may not see carries a canary
// marker; see Canaries and Leaks for the scheme.
package demo

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"

	"github.com/dirsvc/dirsvc"
)

// Defaults of the standard demo directory.
const (
	DefaultSlug     = "demo"
	DefaultServices = 600
	DefaultSeed     = 1
)

// The New Zealand demo directory written by DemoNZ.
const (
	nzDemoSlug     = "demo-nz"
	nzDemoServices = 60
)

// Options for Generate.
type Options struct {
	Slug     string // directory slug, e.g. "demo"; empty means DefaultSlug
	Country  string // "AU" or "NZ"; empty means AU
	Services int    // number of services to generate (scales to 100,000); 0 means DefaultServices
	Seed     int64
}

// Generate writes a whole directory in the import format (NDJSON, one object per line, first line
// kind=directory) to w. The same options always give the same bytes.
func Generate(w io.Writer, opt Options) error {
	if opt.Slug == "" {
		opt.Slug = DefaultSlug
	}
	if opt.Country == "" {
		opt.Country = "AU"
	}
	opt.Country = strings.ToUpper(opt.Country)
	if opt.Services == 0 {
		opt.Services = DefaultServices
	}
	if !dirsvc.ValidSlug(opt.Slug) {
		return fmt.Errorf("demo: %q is not a valid directory slug", opt.Slug)
	}
	if opt.Country != "AU" && opt.Country != "NZ" {
		return fmt.Errorf("demo: country %q: want AU or NZ", opt.Country)
	}
	if opt.Services < 1 {
		return errors.New("demo: the number of services must be at least 1")
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	g := newGen(opt, bw)
	g.run()
	if g.err != nil {
		return g.err
	}
	return bw.Flush()
}

// Demo writes the standard demo directory: slug demo, Australia, DefaultServices services,
// DefaultSeed.
func Demo(w io.Writer) error {
	return Generate(w, Options{Slug: DefaultSlug, Country: "AU", Services: DefaultServices, Seed: DefaultSeed})
}

// DemoNZ writes a small New Zealand demo directory: slug demo-nz, 60 services, DefaultSeed.
func DemoNZ(w io.Writer) error {
	return Generate(w, Options{Slug: nzDemoSlug, Country: "NZ", Services: nzDemoServices, Seed: DefaultSeed})
}

func newGen(opt Options, bw *bufio.Writer) *gen {
	seed := uint64(opt.Seed)
	g := &gen{
		opt: opt,
		nz:  opt.Country == "NZ",
		rng: rand.New(rand.NewPCG(seed, seed^0x5DEECE66DD1B54A3)),
		bw:  bw,
	}
	g.enc = json.NewEncoder(bw)
	g.enc.SetEscapeHTML(false)
	g.salt = g.rng.Uint64()
	if g.nz {
		g.pool = nzPool()
		g.lower = "nz"
	} else {
		g.pool = auPool()
		g.lower = "au"
	}
	return g
}
