package main

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/edge"
	"github.com/dirsvc/dirsvc/replicate"
)

// edgeMode runs a read edge: it keeps a copy of every directory of the primary, follows it, serves
// every read route from the copies and forwards everything else to the primary.
func (m *Main) edgeMode(ctx context.Context, args []string) error {
	fs := m.command("edge", "--primary URL --replication-token T --base-url URL [flags]")
	m.dataFlag(fs)
	m.addrFlag(fs)
	primaryURL := fs.String("primary", envOr("DIRSVC_PRIMARY", ""), "address of the primary, e.g. http://primary.internal:8080 ($DIRSVC_PRIMARY)")
	token := fs.String("replication-token", envOr("DIRSVC_REPLICATION_TOKEN", ""), "the primary's replication token ($DIRSVC_REPLICATION_TOKEN)")
	maxLag := fs.Duration("max-lag", envDuration("DIRSVC_MAX_LAG", 30*time.Second), "lag past which the health route answers 503 ($DIRSVC_MAX_LAG)")
	readWait := fs.Duration("read-wait", envDuration("DIRSVC_READ_WAIT", edge.DefaultReadWait), "how long a read that asks for a newer position than the copy has waits for it before it goes to the primary ($DIRSVC_READ_WAIT)")
	flyRegion := fs.String("fly-primary-region", envOr("DIRSVC_FLY_PRIMARY_REGION", ""), "on Fly.io, the primary's region: requests for the primary are answered with fly-replay instead of proxied ($DIRSVC_FLY_PRIMARY_REGION)")
	tf := addS3Flags(fs)
	hf := addHTTPFlags(fs)
	if _, err := parseArgs(fs, args, 0, 0); err != nil {
		return err
	}
	u, err := url.Parse(*primaryURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usagef("--primary: want the primary's address, e.g. http://primary.internal:8080")
	}
	if *token == "" {
		return usagef("--replication-token: want the primary's replication token")
	}
	if err := checkSecretFlag("replication-token", *token); err != nil {
		return err
	}
	if *maxLag <= 0 || *readWait <= 0 {
		return usagef("--max-lag and --read-wait must be positive")
	}
	memLimit, viewCache, err := memorySettings(m.Log, *hf.memoryLimit)
	if err != nil {
		return err
	}
	var storage *replicate.S3
	if *tf.bucket != "" {
		t, err := tf.target()
		if err != nil {
			return err
		}
		storage = t.S3
	}
	ln, err := net.Listen("tcp", m.Addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	defer ln.Close()
	cfg, err := hf.config(m.Log, "edge", ln.Addr())
	if err != nil {
		return err
	}
	cfg.PageCacheBytes = pageCacheBudget(memLimit)
	if err := os.MkdirAll(m.Data, 0o700); err != nil {
		return err
	}
	store, err := dirdb.OpenReplica(ctx, m.Data)
	if err != nil {
		return err
	}
	defer store.Close()
	store.SetViewCacheBudget(viewCache)
	store.SetWarmSearch(true)
	follower, err := replicate.NewFollower(replicate.FollowConfig{Data: m.Data, Primary: u.String(), Token: *token, BaseURL: cfg.BaseURL,
		Host: store, Storage: storage, MaxLag: *maxLag, Log: m.Log})
	if err != nil {
		return err
	}
	followCtx, stopFollowing := context.WithCancel(ctx)
	followed := make(chan struct{})
	go func() { defer close(followed); follower.Run(followCtx) }()
	defer func() { stopFollowing(); <-followed }() // before the store closes
	// Ready once the first copies are in and warm: a fresh edge lists no directory before.
	ready := newReadiness(store, m.Log, func() bool { return follower.Status().Healthy })
	defer ready.start(followCtx)() // before the store closes

	cfg.Catalog, cfg.Keys = store, store
	cfg.Ready = ready.Ready
	cfg.CursorSecret = cursorSecret(nil, *token) // as the primary's: its cursors are taken here
	cfg.Status = func(context.Context) dirsvc.NodeStatus { return follower.Status() }
	cfg.Forwarding = &edge.Forwarding{Primary: u, FlyPrimaryRegion: *flyRegion, EdgeToken: *token,
		Positions: follower, ReadWait: *readWait}
	// An edge answers requests and follows the primary: it exports what those do, nothing of the
	// primary's work.
	var web *httpMetrics
	if *hf.metricsAddr != "" {
		web = newHTTPMetrics()
		cfg.Metrics = web
	}
	handler := edge.New(cfg)
	collector := followerMetrics{follower}
	if err := prometheus.Register(collector); err != nil {
		return err
	}
	defer prometheus.Unregister(collector)
	if web != nil {
		unregister, err := registerMetrics(prometheus.DefaultRegisterer, web)
		if err != nil {
			return err
		}
		defer unregister()
	}
	unregisterReady, err := ready.register()
	if err != nil {
		return err
	}
	defer unregisterReady()
	stopMetrics, err := m.startMetrics(*hf.metricsAddr, handler.Report())
	if err != nil {
		return err
	}
	defer stopMetrics()
	return m.serveHTTP(ctx, ln, handler)
}

// followerMetrics exports an edge's replication state to Prometheus: each directory's position and
// lag, its LTX files that failed verification and the heals they took, and whether the edge is
// healthy.
type followerMetrics struct{ f *replicate.Follower }

var (
	metricPosition = prometheus.NewDesc("dirsvc_edge_position", "Position (Litestream transaction ID) of the edge's copy of a directory.", []string{"file"}, nil)
	metricLag      = prometheus.NewDesc("dirsvc_edge_lag_seconds", "How long the edge's copy of a directory has been behind the primary, or out of touch with it.", []string{"file"}, nil)
	metricHealthy  = prometheus.NewDesc("dirsvc_edge_healthy", "1 while every copy is within the lag bound, else 0.", nil, nil)
	// A copy heals by itself from LTX files that fail verification; these say it had to.
	metricFailedVerifications = prometheus.NewDesc("dirsvc_edge_failed_verifications_total", "LTX files of a directory fetched from the primary (or the bucket) that failed verification.", []string{"file"}, nil)
	metricHeals               = prometheus.NewDesc("dirsvc_edge_heals_total", "Times the edge's copy of a directory was bootstrapped afresh past LTX files that failed verification.", []string{"file"}, nil)
)

func (c followerMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- metricPosition
	ch <- metricLag
	ch <- metricHealthy
	ch <- metricFailedVerifications
	ch <- metricHeals
}

func (c followerMetrics) Collect(ch chan<- prometheus.Metric) {
	st := c.f.Status()
	for _, f := range st.Files {
		ch <- prometheus.MustNewConstMetric(metricPosition, prometheus.GaugeValue, float64(f.Position), f.Name)
		ch <- prometheus.MustNewConstMetric(metricLag, prometheus.GaugeValue, f.LagSeconds, f.Name)
		ch <- prometheus.MustNewConstMetric(metricFailedVerifications, prometheus.CounterValue, float64(f.FailedVerifications), f.Name)
		ch <- prometheus.MustNewConstMetric(metricHeals, prometheus.CounterValue, float64(f.Heals), f.Name)
	}
	healthy := 0.0
	if st.Healthy {
		healthy = 1
	}
	ch <- prometheus.MustNewConstMetric(metricHealthy, prometheus.GaugeValue, healthy)
}
