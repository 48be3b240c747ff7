// Command mirrorlag measures how long a change at an upstream directory takes to reach the readers
// of a directory that mirrors it: it changes the description of services at the upstream through
// its admin API, one at a time, and from the moment the upstream answers polls the mirror's read
// API every 10 ms until the change shows. It prints the median, 90th percentile and largest lag.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"
)

func main() {
	upstream := flag.String("upstream", "http://127.0.0.1:8091", "the upstream service")
	adminToken := flag.String("admin-token", "", "the upstream's admin token")
	dir := flag.String("dir", "demo", "the upstream directory")
	mirror := flag.String("mirror", "http://127.0.0.1:8092", "the mirroring service")
	mirrorDir := flag.String("mirror-dir", "agg", "the mirroring directory")
	token := flag.String("token", "", "an access token of a reader of the mirroring directory")
	file := flag.String("file", "", "the upstream's import file, for the records to change")
	n := flag.Int("n", 20, "changes to make")
	gap := flag.Duration("gap", 300*time.Millisecond, "wait between one change seen and the next made")
	flag.Parse()
	lines, err := services(*file, 20**n)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mirrorlag:", err)
		os.Exit(1)
	}
	read := func(id string) (int, []byte) {
		req, _ := http.NewRequest("GET", *mirror+"/v1/d/"+*mirrorDir+"/services/"+id+"?view=brief", nil)
		req.Header.Set("Authorization", "Bearer "+*token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	var lags []time.Duration
	for i, rec := range lines {
		if len(lags) == *n {
			break
		}
		id := rec["publicId"].(string)
		if status, _ := read(id); status != http.StatusOK {
			continue // hidden from the harvesting client at the upstream, or from the reader here
		}
		marker := fmt.Sprintf("lag probe %d %d", i, time.Now().UnixNano())
		rec["description"] = marker
		body, _ := json.Marshal(rec)
		req, _ := http.NewRequest("PUT", *upstream+"/admin/v1/d/"+*dir+"/records/"+id, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+*adminToken)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode/100 != 2 {
			fmt.Fprintf(os.Stderr, "mirrorlag: change %s: %v %v\n", id, err, resp)
			os.Exit(1)
		}
		resp.Body.Close()
		written := time.Now()
		for {
			if _, b := read(id); bytes.Contains(b, []byte(marker)) {
				break
			}
			if time.Since(written) > time.Minute {
				fmt.Fprintf(os.Stderr, "mirrorlag: %s not seen at the mirror within a minute\n", id)
				os.Exit(1)
			}
			time.Sleep(10 * time.Millisecond)
		}
		lags = append(lags, time.Since(written))
		time.Sleep(*gap)
	}
	if len(lags) < *n {
		fmt.Fprintf(os.Stderr, "mirrorlag: %d services to change found, not %d\n", len(lags), *n)
		os.Exit(1)
	}
	slices.Sort(lags)
	q := func(p float64) time.Duration { return lags[int(p*float64(len(lags)-1))] }
	fmt.Printf("changes %d: lag p50 %v, p90 %v, max %v\n", len(lags), q(0.5).Round(time.Millisecond),
		q(0.9).Round(time.Millisecond), lags[len(lags)-1].Round(time.Millisecond))
}

// services returns up to n live services of the import file, spread over it.
func services(file string, n int) ([]map[string]any, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 4<<20)
	for i := 0; sc.Scan() && len(out) < n; i++ {
		line := sc.Text()
		if i%97 != 0 || !strings.HasPrefix(line, `{"kind":"service"`) || strings.Contains(line, `"state":`) || strings.Contains(line, `"audiences"`) {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	return out, sc.Err()
}
