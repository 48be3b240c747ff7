package dirsvc_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/dirsvc/dirsvc"

// importTable is the import table of ARCHITECTURE.md: which project packages each top-level package
// may import. A subpackage (edge/search, primary/demo) counts as its top-level package and may also
// import its parent; "." is the module root.
var importTable = map[string][]string{
	".":         {},
	"schema":    {},
	"dirdb":     {".", "schema", "internal"},
	"fhir":      {"."},
	"edge":      {".", "fhir"},
	"primary":   {".", "edge", "fhir"},
	"replicate": {".", "internal"},
	"cmd":       {"*"},
	"bench":     {}, // load tools: the standard library only
	"internal":  {}, // small helpers of several packages: the standard library only
}

// narrower lists subpackages held to less than their top-level package.
var narrower = map[string][]string{
	"primary/demo":     {"."},
	"replicate/s3test": {},
}

// moduleHomes names, for each third-party module, the one package that adapts it (a subpackage
// counts as its own home): the rest of the project sees the module through that package's types, so
// replacing or upgrading it touches one place. A module not listed may not be imported.
var moduleHomes = map[string]string{
	"modernc.org/sqlite":                    "dirdb",
	"github.com/benbjohnson/litestream":     "replicate",
	"github.com/superfly/ltx":               "replicate",
	"github.com/aws/":                       "replicate",
	"github.com/johannesboyne/gofakes3":     "replicate/s3test",
	"github.com/prometheus/":                "cmd/dirsvc",
	"github.com/nyaruka/phonenumbers":       "primary",
	"github.com/hashicorp/go-retryablehttp": "primary/webhook",
	"github.com/andybalholm/brotli":         "edge",
	"github.com/klauspost/compress":         "edge",
	"github.com/rickar/cal":                 "edge",
	"golang.org/x/image/":                   "cmd/dirsvc", // registers the WebP decoder that dirsvc.CheckImage finds through package image
	"github.com/pb33f/":                     "edge/edgetest",
	"golang.org/x/text/":                    "fhir",
	"github.com/go-json-experiment/json":    "fhir",
	// Only tests use it: they validate the HSDS export against the HSDS 3.0 schemas.
	"github.com/santhosh-tekuri/jsonschema/": "edge",
	// Only tests use it: they drive a headless Chromium through the developer portal.
	"github.com/chromedp/": "cmd/dirsvc",
}

// moreHomes are further packages that adapt a module of moduleHomes themselves, each for a client
// of its own: keep this short.
var moreHomes = map[string][]string{
	"github.com/hashicorp/go-retryablehttp": {"primary/federation"},                                       // mirrors' harvests of their upstreams
	"github.com/go-json-experiment/json":    {"primary/export", "dirdb", "primary/federation", "primary"}, // exports read the fields they write from the views' JSON; search documents are made from decoded views; mirrors read their upstreams' feeds; imports decode their lines
}

// moduleHome checks that a third-party import is in its module's home package (or one of
// moreHomes).
func moduleHome(pkg, imp string) string {
	if !strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") || strings.HasPrefix(imp, module) {
		return "" // the standard library, or the project
	}
	for m, home := range moduleHomes {
		if strings.HasPrefix(imp, m) {
			if pkg != home && !slices.Contains(moreHomes[m], pkg) {
				return "only " + home + " imports " + m + " (moduleHomes)"
			}
			return ""
		}
	}
	return "a module without a home package: add it to moduleHomes, with the one package that adapts it"
}

// forbiddenModules may not be imported by any package: the design card rules out cgo SQLite and
// LiteFS, and conventions rule out third-party routers and assertion libraries.
var forbiddenModules = []string{"github.com/mattn/go-sqlite3", "github.com/superfly/litefs",
	"github.com/go-chi/chi", "github.com/gorilla/mux", "github.com/gin-gonic/gin",
	"github.com/labstack/echo", "github.com/stretchr/testify"}

// TestImportTable enforces the import direction of ARCHITECTURE.md on every non-test Go file.
func TestImportTable(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && path != ".") {
			return filepath.SkipDir
		}
		// A directory with a go.mod of its own (bench/bleve) is another module, not part of this one.
		if d.IsDir() && path != "." {
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(filepath.Dir(path))
		for _, spec := range f.Imports {
			imp, _ := strconv.Unquote(spec.Path.Value)
			if msg := checkImport(pkg, imp); msg != "" {
				t.Errorf("%s imports %s: %s", path, imp, msg)
			}
			if msg := moduleHome(pkg, imp); msg != "" {
				t.Errorf("%s imports %s: %s", path, imp, msg)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range forbiddenModules {
		if strings.Contains(string(gomod), m) {
			t.Errorf("go.mod requires %s, which the design rules out", m)
		}
	}
}

func checkImport(pkg, imp string) string {
	for _, m := range forbiddenModules {
		if strings.HasPrefix(imp, m) {
			return "the design rules this module out"
		}
	}
	top := strings.SplitN(pkg, "/", 2)[0]
	if pkg == "." && strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") {
		return "the root package imports only the standard library"
	}
	target, ok := strings.CutPrefix(imp, module)
	if !ok {
		return ""
	}
	target = strings.TrimPrefix(target, "/")
	if target == "" {
		target = "."
	}
	if target == pkg || strings.HasPrefix(pkg, target+"/") && target != "." {
		return "" // a package may import its parent
	}
	allowed, ok := narrower[pkg]
	if !ok {
		allowed, ok = importTable[top]
	}
	if !ok {
		return "package " + pkg + " is not in the import table of ARCHITECTURE.md"
	}
	targetTop := strings.SplitN(target, "/", 2)[0]
	if targetTop == top {
		return "" // within one top-level package
	}
	if slices.Contains(allowed, "*") || slices.Contains(allowed, targetTop) {
		return ""
	}
	return "not allowed by the import table of ARCHITECTURE.md"
}

func TestCheckImportKnowsTheTable(t *testing.T) {
	for _, c := range []struct {
		pkg, imp string
		ok       bool
	}{
		{"edge", module, true},
		{"edge", module + "/dirdb", false},
		{"dirdb", module + "/schema", true},
		{"primary", module + "/dirdb", false},
		{"primary/demo", module + "/edge", false},
		{"primary/demo", module + "/primary", true},
		{"cmd/dirsvc", module + "/dirdb", true},
		{".", "github.com/nyaruka/phonenumbers", false},
		{"primary", "github.com/nyaruka/phonenumbers", true},
		{"dirdb", "github.com/mattn/go-sqlite3", false},
	} {
		if got := checkImport(c.pkg, c.imp) == ""; got != c.ok {
			t.Errorf("checkImport(%s, %s) allowed=%v, want %v", c.pkg, c.imp, got, c.ok)
		}
	}
}
