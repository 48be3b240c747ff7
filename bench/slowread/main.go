//go:build unix

// Command slowread is the load of the slow download benchmark (bench/slowdownload.sh): it reads one
// link with many clients at once, each paced to a rate as a slow link delivers, through a small
// receive buffer (an ordinary link's, rather than the megabytes loopback grows to, so that the server
// sends at the reader's pace), for a duration or to the end of the body. It reports the bytes per
// second each reader held (mean and lowest) and all together, the bytes read, and how many readers
// the server cut (their body ended short, before the duration).
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"sync"
	"syscall"
	"time"
)

// reader is what one reader read.
type reader struct {
	bytes int64
	took  time.Duration
	cut   error // what ended the body short, if anything did
	whole bool  // read to its end
}

func main() {
	link := flag.String("url", "", "the link to read")
	readers := flag.Int("readers", 16, "readers at once")
	rate := flag.Int64("rate", 300<<10, "bytes a second each reader reads")
	dur := flag.Duration("for", 90*time.Second, "how long each reader reads (at most)")
	rcvbuf := flag.Int("rcvbuf", 64<<10, "each connection's receive buffer in bytes")
	flag.Parse()
	if *link == "" || *readers < 1 || *rate < 1 {
		flag.Usage()
		os.Exit(2)
	}
	client := &http.Client{Transport: &http.Transport{
		DisableCompression: true,
		MaxConnsPerHost:    0,
		DialContext: (&net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
			var err error
			c.Control(func(fd uintptr) { err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, *rcvbuf) })
			return err
		}}).DialContext,
	}}
	results := make([]reader, *readers)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range results {
		wg.Go(func() { results[i] = read(client, *link, *rate, *dur) })
	}
	wg.Wait()
	wall := time.Since(start)
	var total int64
	var sum, lowest float64
	held, whole, cut := 0, 0, 0
	for i, r := range results {
		bps := float64(r.bytes) / r.took.Seconds()
		sum += bps
		if i == 0 || bps < lowest {
			lowest = bps
		}
		total += r.bytes
		switch {
		case r.cut != nil:
			cut++
			log.Printf("reader %d cut after %d bytes in %v: %v", i, r.bytes, r.took.Round(time.Millisecond), r.cut)
		case r.whole:
			whole++
		default:
			held++
		}
	}
	fmt.Printf("readers %d rate %d for %v: mean %.0f B/s, lowest %.0f B/s, %.0f B/s in all; %d held to the end, %d whole, %d cut\n",
		*readers, *rate, *dur, sum/float64(len(results)), lowest, float64(total)/wall.Seconds(), held, whole, cut)
	fmt.Printf("bytes %d\n", total)
}

// read reads link at rate bytes a second until d has passed or the body ends.
func read(c *http.Client, link string, rate int64, d time.Duration) reader {
	start := time.Now()
	resp, err := c.Get(link)
	if err != nil {
		return reader{took: time.Since(start), cut: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return reader{took: time.Since(start), cut: fmt.Errorf("status %d", resp.StatusCode)}
	}
	var r reader
	buf := make([]byte, 16<<10)
	for time.Since(start) < d {
		n, err := resp.Body.Read(buf)
		r.bytes += int64(n)
		if err == io.EOF {
			r.whole = resp.ContentLength < 0 || r.bytes == resp.ContentLength // a chunked body ends whole
			if !r.whole {
				r.cut = io.ErrUnexpectedEOF
			}
			break
		} else if err != nil {
			r.cut = err
			break
		}
		// The link delivers rate bytes a second: the next read waits for its bytes to arrive.
		time.Sleep(time.Until(start.Add(time.Duration(r.bytes) * time.Second / time.Duration(rate))))
	}
	r.took = time.Since(start)
	return r
}
