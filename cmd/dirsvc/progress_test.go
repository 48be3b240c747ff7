package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc/dirdb"
)

// recordsIn counts the records (organisations, locations, services, practitioners and roles) an
// import file holds, as an operator reading it would.
func recordsIn(t *testing.T, file string) int {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<22)
	for sc.Scan() {
		var line struct{ Kind string }
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		switch line.Kind {
		case "organisation", "location", "service", "practitioner", "role":
			n++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// stepLine matches the line an import logs at the end of a step, capturing the step and its records.
var stepLine = regexp.MustCompile(`msg="importing step done" file=(\S+) step=(\S+)(?: records=(\d+))? duration=\S+\n`)

// importSteps returns the steps an import's log says ended, in order, with their records ("" when a
// step counts none), each of them about file.
func importSteps(t *testing.T, log, file string) (steps []string, records map[string]string) {
	t.Helper()
	records = map[string]string{}
	for _, m := range stepLine.FindAllStringSubmatch(log, -1) {
		if m[1] != file {
			t.Errorf("a step line names file %s, want %s", m[1], file)
		}
		steps = append(steps, m[2])
		records[m[2]] = m[3]
	}
	return steps, records
}

// TestImportLogsEachStep: an import not on a terminal logs each step as it ends, with the records
// it read, checked and wrote, and draws no bar; importing the same file again goes through every
// record again (each unchanged) and has no files to sync.
func TestImportLogsEachStep(t *testing.T) {
	file := filepath.Join(t.TempDir(), "gen.ndjson")
	if _, log, err := runCLI(t, "gen", "--services", "40", "--slug", "gen", "--out", file); err != nil {
		t.Fatalf("gen: %v\n%s", err, log)
	}
	want := fmt.Sprint(recordsIn(t, file))
	data := t.TempDir()
	_, log, err := runCLI(t, "import", "--data", data, file)
	if err != nil {
		t.Fatalf("import: %v\n%s", err, log)
	}
	if strings.Contains(log, "\r") {
		t.Errorf("a bar was drawn on a log that is no terminal:\n%q", log)
	}
	steps, records := importSteps(t, log, file)
	if got, want := strings.Join(steps, " "), "parse check records narrowing feed search commit ops-commit sync"; got != want {
		t.Errorf("steps logged: %s, want %s\n%s", got, want, log)
	}
	for _, s := range []string{"parse", "check", "records"} {
		if records[s] != want {
			t.Errorf("step %s: records=%s, want %s (the file's records)", s, records[s], want)
		}
	}
	if !strings.Contains(log, "msg=imported directory=gen created="+want+" ") {
		t.Errorf("the import's summary does not follow the steps:\n%s", log)
	}

	_, log, err = runCLI(t, "import", "--data", data, file)
	if err != nil {
		t.Fatalf("import again: %v\n%s", err, log)
	}
	steps, records = importSteps(t, log, file)
	if got, want := strings.Join(steps, " "), "parse check records narrowing feed search commit ops-commit"; got != want {
		t.Errorf("steps logged again: %s, want %s\n%s", got, want, log)
	}
	if records["records"] != want || !strings.Contains(log, "unchanged="+want+" ") {
		t.Errorf("import again: records=%s, want %s, all unchanged\n%s", records["records"], want, log)
	}
}

// TestImportLogsTheBulkPathsSteps: a first import large enough for the bulk path (here a directory
// of some 6,000 records) logs the rebuild of its indexes as steps too.
func TestImportLogsTheBulkPathsSteps(t *testing.T) {
	if testing.Short() {
		t.Skip("imports a few thousand records")
	}
	file := filepath.Join(t.TempDir(), "bulk.ndjson")
	if _, log, err := runCLI(t, "gen", "--services", "2000", "--slug", "bulk", "--out", file); err != nil {
		t.Fatalf("gen: %v\n%s", err, log)
	}
	n := recordsIn(t, file)
	if n < 5000 {
		t.Fatalf("the file holds %d records: too few for the bulk path", n)
	}
	_, log, err := runCLI(t, "import", "--data", t.TempDir(), file)
	if err != nil {
		t.Fatalf("import: %v\n%s", err, log)
	}
	steps, records := importSteps(t, log, file)
	if got, want := strings.Join(steps, " "), "parse check records indexes narrowing feed search late-indexes commit ops-commit sync"; got != want {
		t.Errorf("steps logged: %s, want %s\n%s", got, want, log)
	}
	if records["records"] != fmt.Sprint(n) {
		t.Errorf("records written: %s, want %d", records["records"], n)
	}
}

// syncBuffer is a buffer that a logger and a test read and write at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestLongStepsAreLoggedWhileTheyRun: a step that runs longer than the interval is logged every
// interval with the records it has gone through so far, and once as it ends.
func TestLongStepsAreLoggedWhileTheyRun(t *testing.T) {
	var out syncBuffer
	m := &Main{Stderr: &out, Log: slog.New(slog.NewTextHandler(&out, nil))}
	start := time.Now()
	p := newLoadProgress(m.Log, "republishing", nil, 20*time.Millisecond, "directory", "demo")
	p.Step("records", 1000)
	p.Records(250)
	running := regexp.MustCompile(`msg=republishing directory=demo step=records records=250 of=1000 elapsed=\S+\n`)
	for deadline := time.Now().Add(10 * time.Second); !running.MatchString(out.String()); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no line while the step ran:\n%s", out.String())
		}
	}
	p.StepDone(1000)
	p.end()
	log := out.String()
	if !regexp.MustCompile(`msg="republishing step done" directory=demo step=records records=1000 duration=\S+\n$`).MatchString(log) {
		t.Errorf("the step's end is not the last line:\n%s", log)
	}
	if n := strings.Count(log, "\n"); n > int(time.Since(start)/(20*time.Millisecond))+2 {
		t.Errorf("%d lines: more than one an interval", n)
	}
}

// TestImportBarOnATerminal: on a terminal the step under way is a bar redrawn in place (of the
// records, or of the file's bytes while it is parsed), rubbed out before each step's line is logged.
func TestImportBarOnATerminal(t *testing.T) {
	var out syncBuffer
	m := &Main{Stderr: &out, Log: slog.New(slog.NewTextHandler(&out, nil))}
	p := newLoadProgress(m.Log, "importing", &out, time.Hour, "file", "x.ndjson") // as on a terminal
	p.reading(func() (int64, int64) { return 500, 1000 })
	p.Step("parse", 0)
	p.Records(120)
	p.mu.Lock()
	p.redraw()
	p.mu.Unlock()
	p.StepDone(240)
	p.Step("records", 240)
	p.Records(60)
	p.mu.Lock()
	p.redraw()
	p.mu.Unlock()
	p.end()
	log := out.String()
	for _, want := range []string{
		"\rparse        [###############...............]  50% 120 records ",
		"\rrecords      [#######.......................]  25% 60/240 records ",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("no bar %q in\n%q", want, log)
		}
	}
	// The bar is rubbed out before the step's line, which starts a line of its own.
	if !regexp.MustCompile(`\r +\rtime=\S+ level=INFO msg="importing step done" file=x.ndjson step=parse records=240 `).MatchString(log) {
		t.Errorf("the step's line does not replace the bar:\n%q", log)
	}
	if !strings.HasSuffix(log, "\r") || strings.Contains(log, "step=records records=") {
		t.Errorf("a step cut short is not rubbed out, or is logged as done:\n%q", log)
	}
}

func TestBar(t *testing.T) {
	for _, c := range []struct {
		n, all int64
		took   time.Duration
		want   string
	}{
		{0, 0, 0, "[..............................]   0% 0/0 records 0/s "},
		{1500, 3000, time.Second, "[###############...............]  50% 1500/3000 records 1500/s "},
		{3500, 3000, 2 * time.Second, "[##############################] 100% 3500/3000 records 1750/s "},
	} {
		if got := bar(c.n, c.all, c.took); got != c.want {
			t.Errorf("bar(%d, %d, %s) = %q, want %q", c.n, c.all, c.took, got, c.want)
		}
	}
}

// TestFirstStartLogsTheDemoLoad: a first start loads the demo directories step by step, in lines.
func TestFirstStartLogsTheDemoLoad(t *testing.T) {
	var out syncBuffer
	m := &Main{Stderr: &out, Log: slog.New(slog.NewTextHandler(&out, nil))}
	ctx := context.Background()
	store, err := dirdb.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := m.loadDemoIfEmpty(ctx, store); err != nil {
		t.Fatal(err)
	}
	log := out.String()
	loaded := regexp.MustCompile(`msg="loaded demo directory" directory=\S+ records=(\d+) `).FindAllStringSubmatch(log, -1)
	written := regexp.MustCompile(`msg="loading demo directory step done" step=records records=(\d+) `).FindAllStringSubmatch(log, -1)
	if len(loaded) != 2 || len(written) != 2 {
		t.Fatalf("%d directories loaded, %d record steps logged, want 2 of each:\n%s", len(loaded), len(written), log)
	}
	for i := range loaded {
		if loaded[i][1] != written[i][1] {
			t.Errorf("demo %d: %s records created, the step says %s written", i, loaded[i][1], written[i][1])
		}
	}
	if strings.Contains(log, "\r") {
		t.Errorf("a bar was drawn at start:\n%q", log)
	}
}
