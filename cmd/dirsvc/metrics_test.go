package main

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/edge"
	"github.com/dirsvc/dirsvc/primary/export"
	"github.com/dirsvc/dirsvc/primary/webhook"
)

// TestCollectorsLintClean runs Prometheus' naming lint over each of the node's collectors, with a
// sample of every series each one exports, as testutil.CollectAndLint does (collected through a
// pedantic registry, which also checks each metric against its description); that package's other
// helpers would bring a module the project does not otherwise need.
func TestCollectorsLintClean(t *testing.T) {
	web := newHTTPMetrics()
	web.Request("GET /v1/d/{dir}/services/{publicId}", "GET", "2xx", 3*time.Millisecond)
	web.Request(edge.RouteUnmatched, "other", "4xx", time.Millisecond)
	web.Shed(edge.ShedReads)
	web.Limited(edge.LimitAnonymous)

	work := newWorkMetrics(slog.New(slog.DiscardHandler))
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	work.now = func() time.Time { return now }
	work.queue = func(context.Context) (webhook.Queue, error) {
		return webhook.Queue{Waiting: 3, Oldest: now.Add(-90 * time.Second)}, nil
	}
	work.running = func() int { return 1 }
	work.Round(webhook.OutcomeDelivered)
	work.Stopped(dirsvc.WebhookPaused)
	work.Finished(dirsvc.ExportSucceeded, 2*time.Second, 4096)
	work.Finished(export.StateCancelled, time.Second, 0)
	work.imports(dirsvc.ImportStats{Created: 5, Updated: 2, Removed: 1})
	work.mirrored(dirsvc.MirrorStats{Written: 7, Refused: 1})

	store, err := dirdb.Open(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ready := newReadiness(store, slog.New(slog.DiscardHandler), nil)

	for _, tc := range []struct {
		name     string
		c        prometheus.Collector
		families int
		values   map[string]float64
	}{
		{"requests, shed and limited", web, 3, map[string]float64{"dirsvc_http_request_duration_seconds": 2,
			"dirsvc_http_requests_shed_total": 1, "dirsvc_http_requests_rate_limited_total": 1}},
		{"webhooks, exports, imports and mirrors", work, 11, map[string]float64{"dirsvc_webhook_delivery_rounds_total": 1,
			"dirsvc_webhook_endpoints_stopped_total": 1, "dirsvc_exports_finished_total": 2, "dirsvc_export_duration_seconds": 2,
			"dirsvc_export_written_bytes_total": 4096, "dirsvc_import_records_written_total": 8,
			"dirsvc_mirror_records_written_total": 7, "dirsvc_mirror_records_refused_total": 1,
			"dirsvc_webhook_deliveries_waiting": 3, "dirsvc_webhook_oldest_waiting_age_seconds": 90, "dirsvc_exports_running": 1}},
		{"readiness", ready, 1, map[string]float64{"dirsvc_ready": 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewPedanticRegistry()
			if err := reg.Register(tc.c); err != nil {
				t.Fatal(err)
			}
			mfs, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			if len(mfs) != tc.families {
				t.Errorf("%d families collected, want %d", len(mfs), tc.families)
			}
			problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range problems {
				t.Errorf("%s: %s", p.Metric, p.Text)
			}
			for name, want := range tc.values {
				if got := valueOf(t, mfs, name); got != want {
					t.Errorf("%s = %v, want %v", name, got, want)
				}
			}
		})
	}
}

// valueOf returns the sum of the values of a family's series: a counter's or a gauge's value, a
// histogram's count.
func valueOf(t *testing.T, mfs []*dto.MetricFamily, name string) float64 {
	t.Helper()
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		v := 0.0
		for _, m := range mf.GetMetric() {
			v += m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
		}
		return v
	}
	t.Fatalf("no family %s", name)
	return 0
}

// BenchmarkHTTPMetricsRequest measures what counting a request into its Prometheus series costs,
// beside the server's own share (edge's BenchmarkRequestCounting).
func BenchmarkHTTPMetricsRequest(b *testing.B) {
	web := newHTTPMetrics()
	b.ReportAllocs()
	for b.Loop() {
		web.Request("GET /v1/d/{dir}/services/{publicId}", "GET", "2xx", 3*time.Millisecond)
	}
}
