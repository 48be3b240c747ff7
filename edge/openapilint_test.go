package edge_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// redocly returns the command of Redocly's CLI as testdata/lint pins it (package-lock.json). Without
// it (or without Node.js) the test is skipped, except in CI (CI=true), where .ci/run installs it
// (npm ci --prefix edge/testdata/lint) and its absence is a failure.
func redocly(t *testing.T) string {
	bin, err := filepath.Abs(filepath.Join("testdata", "lint", "node_modules", ".bin", "redocly"))
	if err != nil {
		t.Fatal(err)
	}
	_, statErr := os.Stat(bin)
	_, nodeErr := exec.LookPath("node")
	if statErr == nil && nodeErr == nil {
		return bin
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("Redocly's CLI or Node.js is missing (%v, %v): .ci/run installs them (npm ci --prefix edge/testdata/lint)", statErr, nodeErr)
	}
	t.Skip("Redocly's CLI is not installed (npm ci --prefix edge/testdata/lint): the OpenAPI document is not linted")
	return ""
}

// TestOpenAPIDocumentLintsClean runs Redocly's CLI on edge/openapi.json with its recommended rules:
// no error and no warning (public operations say security: [], the licence is set, every operation
// has a 4xx answer, ...). A rule that does not fit the service is turned off in a redocly.yaml beside
// the document, with the reason, never by editing the answer here.
func TestOpenAPIDocumentLintsClean(t *testing.T) {
	bin := redocly(t)
	cmd := exec.Command(bin, "lint", "--extends", "recommended", "--format", "json", "openapi.json")
	cmd.Env = append(os.Environ(), "REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true", "NO_COLOR=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var report struct {
		Totals struct {
			Errors, Warnings int
		}
		Problems []struct {
			RuleID   string `json:"ruleId"`
			Severity string
			Message  string
			Location []struct {
				Pointer string
			}
		}
	}
	if err := json.Unmarshal(stdout.Bytes(), &report); err != nil {
		t.Fatalf("redocly lint: %v; no report (%v)\n%s\n%s", runErr, err, stdout.Bytes(), stderr.Bytes())
	}
	for _, p := range report.Problems {
		where := ""
		if len(p.Location) > 0 {
			where = p.Location[0].Pointer
		}
		t.Errorf("%s %s at %s: %s", p.Severity, p.RuleID, where, p.Message)
	}
	if report.Totals.Errors != 0 || report.Totals.Warnings != 0 || runErr != nil {
		t.Errorf("redocly lint: %d errors, %d warnings (%v)\n%s", report.Totals.Errors, report.Totals.Warnings, runErr, stderr.Bytes())
	}
}
