package main_test

import (
	"os"
	"testing"
)

// slowSwitch names the environment variable that runs the slow scenarios: the tests that take half
// a minute to minutes each (chaos against a replicating cluster, restores at every moment of a
// window, the portal in a browser, a primary killed during a large export). go test ./... skips
// them, so a busy laptop passes the suite; .ci/run runs them by name with DIRSVC_SLOW_TESTS=1, so
// each still runs once in CI.
const slowSwitch = "DIRSVC_SLOW_TESTS"

// slowScenario skips the calling test unless DIRSVC_SLOW_TESTS=1.
func slowScenario(t *testing.T) {
	t.Helper()
	if os.Getenv(slowSwitch) != "1" {
		t.Skipf("a slow scenario: runs with %s=1 (as .ci/run does)", slowSwitch)
	}
}
