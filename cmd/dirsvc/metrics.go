package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/edge"
	"github.com/dirsvc/dirsvc/primary/export"
	"github.com/dirsvc/dirsvc/primary/webhook"
	"github.com/dirsvc/dirsvc/replicate"
)

// replicationMetrics exports a primary's replication state to Prometheus: each file's position in
// the replica folder and in object storage, how long each replica has lacked a committed change of
// it, the damaged files of its replica in the folder, and whether replication is healthy.
type replicationMetrics struct {
	rep    *replicate.Replicator
	maxLag time.Duration
}

var (
	metricReplicaPosition = prometheus.NewDesc("dirsvc_replica_position", "Position (Litestream transaction ID) a replica holds of a file of the primary's data folder.", []string{"file", "replica"}, nil)
	metricReplicaLag      = prometheus.NewDesc("dirsvc_replica_lag_seconds", "How long a replica has lacked a committed change of a file (0 when it holds every one).", []string{"file", "replica"}, nil)
	metricReplicaHealthy  = prometheus.NewDesc("dirsvc_replication_healthy", "1 while every replica holds every committed change or lags within the bound, and no damaged file of the replica folder lacks a snapshot past it; else 0.", nil, nil)
	metricReplicaDamaged  = prometheus.NewDesc("dirsvc_replica_damaged_files", "LTX files of a file's replica in the replica folder that failed verification and are still there.", []string{"file"}, nil)
)

// registerReplicationMetrics registers the metrics of rep with the default registry.
func registerReplicationMetrics(rep *replicate.Replicator, maxLag time.Duration) (unregister func(), err error) {
	c := replicationMetrics{rep, maxLag}
	if err := prometheus.Register(c); err != nil {
		return nil, err
	}
	return func() { prometheus.Unregister(c) }, nil
}

func (c replicationMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- metricReplicaPosition
	ch <- metricReplicaLag
	ch <- metricReplicaHealthy
	ch <- metricReplicaDamaged
}

func (c replicationMetrics) Collect(ch chan<- prometheus.Metric) {
	st := primaryStatus(c.rep, c.maxLag)
	for _, f := range st.Files {
		ch <- prometheus.MustNewConstMetric(metricReplicaPosition, prometheus.GaugeValue, float64(f.Position), f.Name, "folder")
		ch <- prometheus.MustNewConstMetric(metricReplicaLag, prometheus.GaugeValue, f.LagSeconds, f.Name, "folder")
		if f.StoredPosition != nil {
			ch <- prometheus.MustNewConstMetric(metricReplicaPosition, prometheus.GaugeValue, float64(*f.StoredPosition), f.Name, "object-storage")
			ch <- prometheus.MustNewConstMetric(metricReplicaLag, prometheus.GaugeValue, f.StorageLagSeconds, f.Name, "object-storage")
		}
	}
	healthy := 0.0
	if st.Replication.Healthy {
		healthy = 1
	}
	ch <- prometheus.MustNewConstMetric(metricReplicaHealthy, prometheus.GaugeValue, healthy)
	damaged := map[string]float64{}
	for _, d := range st.Replication.DamagedFiles {
		damaged[d.File]++
	}
	for _, f := range st.Files {
		ch <- prometheus.MustNewConstMetric(metricReplicaDamaged, prometheus.GaugeValue, damaged[f.Name], f.Name)
	}
}

// httpMetrics exports what a node answers to Prometheus (edge.Metrics): every request by the
// pattern of its route, its method and its status class, with its duration; and the requests shed
// for capacity and refused by a rate limit.
type httpMetrics struct {
	requests *prometheus.HistogramVec
	shed     *prometheus.CounterVec
	limited  *prometheus.CounterVec
}

// requestBuckets are the bounds of request durations, in seconds: from the millisecond of a record
// read answered from memory to the minutes of a large export file downloaded.
var requestBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

func newHTTPMetrics() *httpMetrics {
	m := &httpMetrics{
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "dirsvc_http_request_duration_seconds",
			Help:    "Requests answered, and how long each took, by the pattern of the route that served it (unmatched: none; forwarded: sent to the primary), method and status class (none: the client went away before any answer).",
			Buckets: requestBuckets}, []string{"route", "method", "status"}),
		shed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dirsvc_http_requests_shed_total",
			Help: "Requests answered 503 for lack of capacity, by reason: reads, pages or expensive (that bound of requests in flight stayed full), budget (a list or search ran out of its time)."},
			[]string{"reason"}),
		limited: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dirsvc_http_requests_rate_limited_total",
			Help: "Requests answered 429 by a rate limit: anonymous (per client address), client (a partner client's grant), token_failures (too many wrong admin or replication tokens from the address)."},
			[]string{"limit"}),
	}
	// Every reason and limit is exported from the start, at zero: a rate over a series that appears
	// only with its first count misses that count.
	for _, r := range []string{edge.ShedReads, edge.ShedPages, edge.ShedExpensive, edge.ShedBudget} {
		m.shed.WithLabelValues(r)
	}
	for _, l := range []string{edge.LimitAnonymous, edge.LimitClient, edge.LimitTokenFailures} {
		m.limited.WithLabelValues(l)
	}
	return m
}

func (m *httpMetrics) Request(route, method, status string, took time.Duration) {
	m.requests.WithLabelValues(route, method, status).Observe(took.Seconds())
}
func (m *httpMetrics) Shed(reason string)   { m.shed.WithLabelValues(reason).Inc() }
func (m *httpMetrics) Limited(limit string) { m.limited.WithLabelValues(limit).Inc() }

func (m *httpMetrics) Describe(ch chan<- *prometheus.Desc) {
	m.requests.Describe(ch)
	m.shed.Describe(ch)
	m.limited.Describe(ch)
}

func (m *httpMetrics) Collect(ch chan<- prometheus.Metric) {
	m.requests.Collect(ch)
	m.shed.Collect(ch)
	m.limited.Collect(ch)
}

// workMetrics exports what a serving node (serve or primary, not an edge) does beside answering
// requests: webhook messages sent (webhook.Metrics) and waiting, exports run (export.Metrics), and
// the records imports and mirrors' harvests write.
type workMetrics struct {
	rounds        *prometheus.CounterVec
	stopped       *prometheus.CounterVec
	exports       *prometheus.CounterVec
	exportTime    *prometheus.HistogramVec
	exportBytes   prometheus.Counter
	imported      *prometheus.CounterVec
	mirrorWritten prometheus.Counter
	mirrorRefused prometheus.Counter

	// queue reads what waits to be sent (at each scrape); running counts the exports running.
	queue   func(context.Context) (webhook.Queue, error)
	running func() int
	now     func() time.Time
	log     *slog.Logger
}

// exportBuckets are the bounds of export durations, in seconds: from a small directory's second to
// the hour of a national one in every format.
var exportBuckets = []float64{0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600}

var (
	metricWebhookWaiting = prometheus.NewDesc("dirsvc_webhook_deliveries_waiting", "Webhook messages to active endpoints neither delivered nor given up: each waits for its round (or its next round after a failure).", nil, nil)
	metricWebhookOldest  = prometheus.NewDesc("dirsvc_webhook_oldest_waiting_age_seconds", "Age of the oldest webhook message waiting (0 when none waits).", nil, nil)
	metricExportsRunning = prometheus.NewDesc("dirsvc_exports_running", "Exports running on the node.", nil, nil)
)

func newWorkMetrics(log *slog.Logger) *workMetrics {
	m := &workMetrics{
		rounds: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dirsvc_webhook_delivery_rounds_total",
			Help: "Rounds of webhook messages sent (a request, with its quick retries), by outcome: delivered; failed (the message waits for its next round); dead (given up: its retry schedule spent, or a ping failed); gone (the receiver answered 410 and its endpoint was disabled)."},
			[]string{"outcome"}),
		stopped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dirsvc_webhook_endpoints_stopped_total",
			Help: "Webhook endpoints the service stopped, by the state it put them in: paused (failing for days, or the client lost the access webhooks need), disabled (410 Gone, or behind the change feed's retention)."},
			[]string{"state"}),
		exports: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dirsvc_exports_finished_total",
			Help: "Exports that ended, by state: succeeded, failed, cancelled (by their client while they ran)."},
			[]string{"state"}),
		exportTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "dirsvc_export_duration_seconds",
			Help: "How long exports that ended ran, by state.", Buckets: exportBuckets}, []string{"state"}),
		exportBytes: prometheus.NewCounter(prometheus.CounterOpts{Name: "dirsvc_export_written_bytes_total",
			Help: "Size of the files of the exports that succeeded."}),
		imported: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dirsvc_import_records_written_total",
			Help: "Records imports made by this process wrote (the demo directories loaded at a first start; dirsvc import runs as a process of its own and logs its counts), by change: created, updated, removed."},
			[]string{"change"}),
		mirrorWritten: prometheus.NewCounter(prometheus.CounterOpts{Name: "dirsvc_mirror_records_written_total",
			Help: "Records (and tombstones) mirrors' harvests wrote."}),
		mirrorRefused: prometheus.NewCounter(prometheus.CounterOpts{Name: "dirsvc_mirror_records_refused_total",
			Help: "Records mirrors' harvests left alone: the directory holds a record of the same ID of its own or of another mirror, or one the record refers to is missing."}),
		now: time.Now,
		log: log,
	}
	for _, o := range []string{webhook.OutcomeDelivered, webhook.OutcomeFailed, webhook.OutcomeDead, webhook.OutcomeGone} {
		m.rounds.WithLabelValues(o)
	}
	for _, s := range []string{dirsvc.WebhookPaused, dirsvc.WebhookDisabled} {
		m.stopped.WithLabelValues(s)
	}
	for _, s := range []string{dirsvc.ExportSucceeded, dirsvc.ExportFailed, export.StateCancelled} {
		m.exports.WithLabelValues(s)
	}
	for _, c := range []string{"created", "updated", "removed"} {
		m.imported.WithLabelValues(c)
	}
	return m
}

func (m *workMetrics) Round(outcome string) { m.rounds.WithLabelValues(outcome).Inc() }
func (m *workMetrics) Stopped(state string) { m.stopped.WithLabelValues(state).Inc() }

func (m *workMetrics) Finished(state string, took time.Duration, written int64) {
	m.exports.WithLabelValues(state).Inc()
	m.exportTime.WithLabelValues(state).Observe(took.Seconds())
	m.exportBytes.Add(float64(written))
}

// imports counts the records an import wrote (dirdb.Store.SetImportCounter).
func (m *workMetrics) imports(st dirsvc.ImportStats) {
	m.imported.WithLabelValues("created").Add(float64(st.Created))
	m.imported.WithLabelValues("updated").Add(float64(st.Updated))
	m.imported.WithLabelValues("removed").Add(float64(st.Removed))
}

// mirrored counts what a batch of a harvest wrote (federation.MirrorConfig.Wrote).
func (m *workMetrics) mirrored(ms dirsvc.MirrorStats) {
	m.mirrorWritten.Add(float64(ms.Written))
	m.mirrorRefused.Add(float64(ms.Refused))
}

func (m *workMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.collectors() {
		c.Describe(ch)
	}
	ch <- metricWebhookWaiting
	ch <- metricWebhookOldest
	ch <- metricExportsRunning
}

// queueTimeout bounds the read of the webhook queue at a scrape.
const queueTimeout = 5 * time.Second

func (m *workMetrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.collectors() {
		c.Collect(ch)
	}
	if m.queue != nil {
		ctx, cancel := context.WithTimeout(context.Background(), queueTimeout)
		q, err := m.queue(ctx)
		cancel()
		if err != nil {
			// The scrape goes on without them: a gap in the series says the read failed.
			m.log.Error("metrics: read the webhook queue", "err", err)
		} else {
			age := 0.0
			if !q.Oldest.IsZero() {
				age = max(m.now().Sub(q.Oldest).Seconds(), 0)
			}
			ch <- prometheus.MustNewConstMetric(metricWebhookWaiting, prometheus.GaugeValue, float64(q.Waiting))
			ch <- prometheus.MustNewConstMetric(metricWebhookOldest, prometheus.GaugeValue, age)
		}
	}
	if m.running != nil {
		ch <- prometheus.MustNewConstMetric(metricExportsRunning, prometheus.GaugeValue, float64(m.running()))
	}
}

func (m *workMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.rounds, m.stopped, m.exports, m.exportTime, m.exportBytes, m.imported, m.mirrorWritten, m.mirrorRefused}
}

// registerMetrics registers collectors with reg, all or none, until unregister is called.
func registerMetrics(reg prometheus.Registerer, cs ...prometheus.Collector) (unregister func(), err error) {
	for i, c := range cs {
		if err := reg.Register(c); err != nil {
			for _, done := range cs[:i] {
				reg.Unregister(done)
			}
			return nil, err
		}
	}
	return func() {
		for _, c := range cs {
			reg.Unregister(c)
		}
	}, nil
}
