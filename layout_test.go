package dirsvc_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
)

// TestLayoutNamesEveryFileOnce: each file of the data folder has one name, which parses back to it,
// and a path under the folder; names of no file are refused.
func TestLayoutNamesEveryFileOnce(t *testing.T) {
	for _, c := range []struct {
		f    string
		slug string
		name string
		path string
	}{
		{dirsvc.PlatformFile, "", "platform", "platform.db"},
		{dirsvc.DirectoryFile, "demo", "dirs/demo/directory", "dirs/demo/directory.db"},
		{dirsvc.OpsFile, "demo", "dirs/demo/ops", "dirs/demo/ops.db"},
		{dirsvc.WebhooksFile, "demo", "dirs/demo/webhooks", "dirs/demo/webhooks.db"},
	} {
		name := dirsvc.FileName(c.f, c.slug)
		if name != c.name {
			t.Errorf("FileName(%s, %q) = %q, want %q", c.f, c.slug, name, c.name)
		}
		if f, slug, ok := dirsvc.ParseFileName(name); !ok || f != c.f || slug != c.slug {
			t.Errorf("ParseFileName(%q) = %s %q %t", name, f, slug, ok)
		}
		if got, want := dirsvc.FilePath("/data", name), filepath.Join("/data", filepath.FromSlash(c.path)); got != want {
			t.Errorf("FilePath of %s %q = %q, want %q", c.f, c.slug, got, want)
		}
	}
	for _, bad := range []string{"", "platform.db", "dirs/demo", "dirs//directory", "dirs/../directory", "dirs/demo/other", "x/demo/ops", "dirs/demo/ops/x"} {
		if _, _, ok := dirsvc.ParseFileName(bad); ok {
			t.Errorf("ParseFileName(%q) accepted", bad)
		}
	}
}

// TestTodayIsTheDirectorysDate: the day appointments are current against is the directory's; the
// stored leadership keeps every appointment current in some time zone.
func TestTodayIsTheDirectorysDate(t *testing.T) {
	now := time.Date(2026, 11, 4, 14, 0, 0, 0, time.UTC)
	for zone, want := range map[string]string{"Australia/Sydney": "2026-11-05", "Pacific/Honolulu": "2026-11-04", "": "2026-11-04", "Nowhere/Unknown": "2026-11-04"} {
		if got := dirsvc.Today(now, zone); got != want {
			t.Errorf("Today in %q = %s, want %s", zone, got, want)
		}
	}
	if got := dirsvc.EarliestToday(time.Date(2026, 11, 5, 3, 0, 0, 0, time.UTC)); got != "2026-11-04" {
		t.Errorf("EarliestToday = %s, want 2026-11-04", got)
	}
	l := dirsvc.Leader{EndDate: "2026-11-04"}
	if !l.Current("2026-11-04") || l.Current("2026-11-05") || !(&dirsvc.Leader{}).Current("2099-01-01") {
		t.Error("an appointment is current up to and on its end date, and always without one")
	}
	if v := (dirsvc.LeaderView{EndDate: "2026-11-04"}); !v.Current("2026-11-04") || v.Current("2026-11-05") {
		t.Error("a leader's view follows the same rule")
	}
}
