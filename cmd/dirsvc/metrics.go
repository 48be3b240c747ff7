package main

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

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
