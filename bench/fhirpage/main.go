// Command fhirpage is the paging benchmark of the FHIR server: it follows the next links of a
// search from its first page to its end, over one keep-alive connection, and reports the resources
// and pages per second, and each page's latency at the 50th, 95th and 99th percentiles. It checks
// that no resource appears twice.
//
// Like a client that processes pages as they come, it reads each page's links (which a searchset
// Bundle of this server gives before its entries), asks for the next page, and reads the entries of
// the page it has meanwhile, on another goroutine; --serial reads each page whole before asking for
// the next.
package main

import (
	"bytes"
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
	serial := flag.Bool("serial", false, "read each page whole before asking for the next")
	flag.Parse()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	seen := map[string]bool{}
	pages := make(chan []byte, 4)
	checked := make(chan struct{})
	go func() {
		defer close(checked)
		for body := range pages {
			checkEntries(body, seen)
		}
	}()
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
		var links []link
		if *serial {
			links = checkEntries(body, seen)
		} else {
			if links = leadingLinks(body); links == nil {
				links = allLinks(body)
			}
			pages <- body
		}
		next = ""
		for _, l := range links {
			if l.Relation == "next" {
				next = *base + strings.TrimPrefix(l.URL, *public)
			}
		}
	}
	close(pages)
	<-checked
	d := time.Since(start)
	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[int(p*float64(len(lat)-1))] }
	fmt.Fprintf(os.Stdout, "%d resources in %d pages in %.2fs: %.0f resources/s; page latency p50 %v p95 %v p99 %v\n",
		len(seen), len(lat), d.Seconds(), float64(len(seen))/d.Seconds(), pct(0.5).Round(time.Microsecond),
		pct(0.95).Round(time.Microsecond), pct(0.99).Round(time.Microsecond))
}

type link struct {
	Relation string `json:"relation"`
	URL      string `json:"url"`
}

// checkEntries checks that a page is JSON, records its matches in seen (ending the run on one seen
// before) and returns its links. It finds the entries' fullUrl and search mode in the page's bytes
// rather than decoding its resources into Go values, which took the client more CPU than the
// server spent making the page: on a machine shared with the server, the figure measured the
// client. In JSON, "fullUrl":" can only be a member name and its value (a quote inside a string is
// escaped), and a resource of this server has no member fullUrl or search: each entry's fullUrl is
// followed by its search mode before the next entry's.
func checkEntries(body []byte, seen map[string]bool) []link {
	if !json.Valid(body) {
		log.Fatalf("a page is not JSON: %.200s", body)
	}
	const fullURL, mode = `"fullUrl":"`, `"search":{"mode":"`
	for rest := body; ; {
		i := bytes.Index(rest, []byte(fullURL))
		if i < 0 {
			break
		}
		rest = rest[i+len(fullURL):]
		end := bytes.IndexByte(rest, '"')
		url := string(rest[:end])
		rest = rest[end:]
		j := bytes.Index(rest, []byte(mode))
		if j < 0 {
			log.Fatalf("the entry of %s has no search mode", url)
		}
		rest = rest[j+len(mode):]
		if !bytes.HasPrefix(rest, []byte(`match"`)) {
			continue
		}
		if seen[url] {
			log.Fatalf("%s twice", url)
		}
		seen[url] = true
	}
	if links := leadingLinks(body); links != nil {
		return links
	}
	return allLinks(body)
}

// allLinks returns the links of a Bundle wherever they are.
func allLinks(body []byte) []link {
	var b struct {
		Link []link `json:"link"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		log.Fatal(err)
	}
	return b.Link
}

// leadingLinks returns the links of a Bundle when they come before its entries (an empty, non-nil
// slice for a Bundle without links or entries), else nil.
func leadingLinks(body []byte) []link {
	d := json.NewDecoder(bytes.NewReader(body))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return nil
		}
		switch t {
		case "entry":
			return nil
		case "link":
			var links []link
			if err := d.Decode(&links); err != nil {
				return nil
			}
			if links == nil {
				links = []link{}
			}
			return links
		}
		var skip json.RawMessage
		if err := d.Decode(&skip); err != nil {
			return nil
		}
	}
	return []link{}
}
