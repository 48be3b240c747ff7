// Command feedharvest is the client of the change-feed benchmark (bench/feed.sh): it reads a
// directory's whole change feed from its oldest event, page after page (each page asks for the
// cursor the last one gave), as a harvester does, and reports items per second and page latencies.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"slices"
	"time"
)

func main() {
	base := flag.String("base", "http://127.0.0.1:8090", "the server")
	dir := flag.String("dir", "demo", "directory slug")
	token := flag.String("token", "", "bearer token (empty: anonymous)")
	limit := flag.Int("limit", 500, "page size")
	expand := flag.Bool("expand", false, "ask for expand=entity")
	flag.Parse()

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true}}
	var (
		items, pages, size int
		lat                []time.Duration
		since              string
	)
	start := time.Now()
	for {
		q := url.Values{"limit": {fmt.Sprint(*limit)}}
		if *expand {
			q.Set("expand", "entity")
		}
		if since != "" {
			q.Set("since", since)
		}
		req, err := http.NewRequest("GET", *base+"/v1/d/"+*dir+"/changes?"+q.Encode(), nil)
		if err != nil {
			log.Fatal(err)
		}
		if *token != "" {
			req.Header.Set("Authorization", "Bearer "+*token)
		}
		t0 := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			log.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
		if resp.StatusCode != http.StatusOK {
			log.Fatalf("page %d: %d %s", pages, resp.StatusCode, body)
		}
		// The page's end is read as JSON; its items are counted by their eventType (a harvester
		// would store the entities as they are, not decode them).
		i := bytes.LastIndex(body, []byte(`],"nextCursor":`))
		var tail struct {
			NextCursor string `json:"nextCursor"`
			HasMore    bool   `json:"hasMore"`
		}
		if i < 0 {
			log.Fatalf("page %d: no nextCursor in %.200s", pages, body)
		}
		if err := json.Unmarshal(append([]byte{'{'}, body[i+2:]...), &tail); err != nil {
			log.Fatalf("page %d: %v", pages, err)
		}
		items, pages, size = items+bytes.Count(body[:i], []byte(`,"eventType":"`)), pages+1, size+len(body)
		since = tail.NextCursor
		if !tail.HasMore {
			break
		}
	}
	el := time.Since(start)
	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[int(p*float64(len(lat)-1))].Round(10 * time.Microsecond) }
	fmt.Printf("%d items in %d pages (%.0f MB) in %.2f s: %.0f items/s; page p50 %v p95 %v max %v\n",
		items, pages, float64(size)/1e6, el.Seconds(), float64(items)/el.Seconds(), pct(0.5), pct(0.95), lat[len(lat)-1])
}
