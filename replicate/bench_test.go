package replicate_test

import (
	"context"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc/primary"
	"github.com/dirsvc/dirsvc/replicate"
)

// BenchmarkCommitToVisible measures how long a commit on the primary takes to be visible at an edge
// when nothing asks for it to be replicated at once (a write by another process, such as
// `dirsvc record update`): Litestream's default interval of this service, the stream's long poll and
// the follower, all in one process over loopback. From the commit to the first read of the edge's
// copy that shows it, read every millisecond; it reports the median and 99th percentile.
func BenchmarkCommitToVisible(b *testing.B) {
	ctx := context.Background()
	data, store := smallFolderTB(b)
	r, err := replicate.Open(ctx, data, replicate.Target{Dir: b.TempDir()}, smallFiles, replicate.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close(); r.Close(ctx) })
	stream, err := replicate.Stream(r, followToken, store.Platform)
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(stream)
	b.Cleanup(srv.Close)
	txid, err := r.SyncFile(ctx, "dirs/small/directory")
	if err != nil {
		b.Fatal(err)
	}
	e := startEdge(b, b.TempDir(), replicate.FollowConfig{Primary: srv.URL})
	e.waitServed(b, "small", txid)
	lags := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		want := "Lag " + strconv.Itoa(i)
		line := `{"kind":"service","publicId":"svc_counsel","organisation":"org_coast","location":"loc_coast","name":"` + want + `","type":"psychology"}`
		if _, err := primary.UpdateRecord(ctx, store, "small", []byte(line)); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		for publicName(b, e.store, "svc_counsel") != want {
			time.Sleep(time.Millisecond) // a reader polling the edge
		}
		lags = append(lags, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lags)
	b.ReportMetric(float64(lags[len(lags)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lags[len(lags)*99/100].Microseconds())/1000, "p99-ms")
}
