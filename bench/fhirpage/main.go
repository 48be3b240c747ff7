// Command fhirpage is the paging benchmark of the FHIR server: it follows the next links of a
// search from its first page to its end, over one keep-alive connection, and reports the resources
// and pages per second, and each page's latency at the 50th, 95th and 99th percentiles. It checks
// that no resource appears twice.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"
)

func main() {
	base := flag.String("base", "http://127.0.0.1:8090", "the server's address")
	path := flag.String("path", "/v1/d/demo/fhir/HealthcareService?_count=100", "the first page")
	public := flag.String("public-base", "http://localhost:8090", "the base URL the server writes links with")
	flag.Parse()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	seen := map[string]bool{}
	var lat []time.Duration
	start := time.Now()
	next := *base + *path
	for next != "" {
		t0 := time.Now()
		resp, err := client.Get(next)
		if err != nil {
			log.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			log.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
		if resp.StatusCode != 200 {
			log.Fatalf("%s: %d %s", next, resp.StatusCode, body)
		}
		var b struct {
			Link []struct {
				Relation string `json:"relation"`
				URL      string `json:"url"`
			} `json:"link"`
			Entry []struct {
				FullURL string `json:"fullUrl"`
				Search  struct {
					Mode string `json:"mode"`
				} `json:"search"`
			} `json:"entry"`
		}
		if err := json.Unmarshal(body, &b); err != nil {
			log.Fatal(err)
		}
		for _, e := range b.Entry {
			if e.Search.Mode != "match" {
				continue
			}
			if seen[e.FullURL] {
				log.Fatalf("%s twice", e.FullURL)
			}
			seen[e.FullURL] = true
		}
		next = ""
		for _, l := range b.Link {
			if l.Relation == "next" {
				next = *base + strings.TrimPrefix(l.URL, *public)
			}
		}
	}
	d := time.Since(start)
	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[int(p*float64(len(lat)-1))] }
	fmt.Fprintf(os.Stdout, "%d resources in %d pages in %.2fs: %.0f resources/s; page latency p50 %v p95 %v p99 %v\n",
		len(seen), len(lat), d.Seconds(), float64(len(seen))/d.Seconds(), pct(0.5).Round(time.Microsecond),
		pct(0.95).Round(time.Microsecond), pct(0.99).Round(time.Microsecond))
}
