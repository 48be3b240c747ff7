package edge_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/edge"
)

// BenchmarkFeedHarvest reads the whole change feed of the directory demo in the data folder named
// by DIRSVC_FEED_DATA (a copy of bench/out/data-100000: opening it migrates it), pages of 500, as a
// partner client, through the handler without a network, and reports items per second without
// expand and with expand=entity, the two interleaved (targets 200,000 and 50,000). bench/feed.sh
// measures the same over loopback with the real binary.
func BenchmarkFeedHarvest(b *testing.B) {
	root := os.Getenv("DIRSVC_FEED_DATA")
	if root == "" {
		b.Skip("DIRSVC_FEED_DATA names no data folder")
	}
	store, err := dirdb.Open(context.Background(), root)
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	h := edge.New(edge.Config{Catalog: store, Logger: discardLogger(), Keys: testKeys,
		AnonymousLimits: edge.Limits{PerMinute: 1 << 30, PerDay: 1 << 30}})
	tok := token(b, grant{dir: "demo", tier: dirsvc.Partner, scopes: "feed:read practitioners:read",
		expires: time.Now().Add(dirsvc.TokenLifetime)})
	harvest := func(expand bool) (int, time.Duration) {
		start, items, since := time.Now(), 0, ""
		for {
			q := url.Values{"limit": {"500"}}
			if expand {
				q.Set("expand", "entity")
			}
			if since != "" {
				q.Set("since", since)
			}
			req := httptest.NewRequest("GET", "/v1/d/demo/changes?"+q.Encode(), nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != http.StatusOK {
				b.Fatalf("%d %s", w.Code, w.Body)
			}
			// The page's end is read as JSON, its items counted (as bench/feedharvest does).
			body := w.Body.Bytes()
			i := bytes.LastIndex(body, []byte(`],"nextCursor":`))
			var p struct {
				NextCursor string `json:"nextCursor"`
				HasMore    bool   `json:"hasMore"`
			}
			if i < 0 {
				b.Fatalf("no nextCursor in %.200s", body)
			}
			if err := json.Unmarshal(append([]byte{'{'}, body[i+2:]...), &p); err != nil {
				b.Fatal(err)
			}
			items, since = items+bytes.Count(body[:i], []byte(`,"eventType":"`)), p.NextCursor
			if !p.HasMore {
				return items, time.Since(start)
			}
		}
	}
	harvest(false) // warm the file cache
	var plain, expanded float64
	for range b.N {
		n, d := harvest(false)
		plain += float64(n) / d.Seconds()
		n, d = harvest(true)
		expanded += float64(n) / d.Seconds()
	}
	b.ReportMetric(plain/float64(b.N), "items/s")
	b.ReportMetric(expanded/float64(b.N), "expanded-items/s")
}
