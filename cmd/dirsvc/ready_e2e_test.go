package main_test

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
)

// TestANodeIsReadyOnceSearchesAnswerAtTheirUsualCost starts `dirsvc serve` on a directory large
// enough that loading its search index takes a measurable time: its public health route answers
// 503 with ready false (and the full report names the directory warming) until it loads, then 200
// with ready true, and from then on the first search answers 200 about as fast as the later ones.
func TestANodeIsReadyOnceSearchesAnswerAtTheirUsualCost(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	data := t.TempDir()
	gen := filepath.Join(t.TempDir(), "large.ndjson")
	if out, err := exec.Command(bin, "gen", "--services", "8000", "--slug", "large", "--out", gen).CombinedOutput(); err != nil {
		t.Fatalf("gen: %v\n%s", err, out)
	}
	if out, err := exec.Command(bin, "import", "--data", data, gen).CombinedOutput(); err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	addr, _, log := startServe(t, bin, data)

	var warming []string // what the full report named while the node was not ready
	cold := 0
	deadline := time.Now().Add(2 * time.Minute)
	for {
		h := get(t, addr, "/healthz", nil)
		var st map[string]any
		if err := json.Unmarshal(h.body, &st); err != nil {
			t.Fatalf("healthz %d %s: %v", h.status, h.body, err)
		}
		if len(st) != 3 || st["role"] != dirsvc.RoleServe || st["healthy"] != true {
			t.Fatalf("the public health route says more or less than role, healthy and ready: %d %s", h.status, h.body)
		}
		if h.status == 200 && st["ready"] == true {
			break
		}
		if h.status != 503 || st["ready"] != false {
			t.Fatalf("health while loading: %d %s, want 503 with ready false", h.status, h.body)
		}
		if cold++; cold == 1 {
			full := health(t, addr)
			if full.Ready {
				t.Errorf("the full report says ready while the public route says not: %+v", full)
			}
			warming = full.Warming
		}
		if time.Now().After(deadline) {
			t.Fatalf("the node was not ready within 2 minutes:\n%s", log)
		}
		time.Sleep(10 * time.Millisecond) // another process's state: polled, with a deadline
	}
	if cold == 0 {
		t.Fatalf("the node said it was ready at once, before its search index loaded:\n%s", log)
	}
	// The directory is warming until the index loads; it may not have been opened yet at the
	// first look, when the report names none.
	if len(warming) > 0 && !slices.Equal(warming, []string{"large"}) {
		t.Errorf("the full report named %v warming, want [large]", warming)
	}

	// Each search asks for other words: none is answered from what an earlier one kept.
	search := func(words string) (int, time.Duration) {
		start := time.Now()
		a := get(t, addr, "/v1/d/large/search/services?q="+words+"&limit=20", nil)
		return a.status, time.Since(start)
	}
	status, first := search("health")
	var later []time.Duration
	for _, words := range []string{"clinic", "family", "support", "mental", "housing"} {
		s, took := search(words)
		if s != 200 {
			t.Fatalf("a later search: %d", s)
		}
		later = append(later, took)
	}
	slices.Sort(later)
	usual := later[len(later)/2]
	if status != 200 || first > 3*usual+250*time.Millisecond {
		t.Errorf("the first search once ready: %d in %s; later ones take %s", status, first, usual)
	}
	t.Logf("ready after %d answers of 503; the first search took %s, later ones %s", cold, first, usual)
	metrics := string(get(t, metricsAddr(t, addr), "/metrics", nil).body)
	if !strings.Contains(metrics, "\ndirsvc_ready 1\n") {
		t.Errorf("the metrics do not say the node is ready:\n%.2000s", metrics)
	}
}
