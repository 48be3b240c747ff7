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
	lines, err := services(*file, *n)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mirrorlag:", err)
		os.Exit(1)
	}
	var lags []time.Duration
	for i, rec := range lines {
		id := rec["publicId"].(string)
		marker := fmt.Sprintf("lag probe %d %d", i, time.Now().UnixNano())
		rec["description"] = marker
		body, _ := json.Marshal(rec)
		req, _ := http.NewRequest("PUT", *upstream+"/admin/v1/d/"+*dir+"/records/"+id, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+*adminToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode/100 != 2 {
			fmt.Fprintf(os.Stderr, "mirrorlag: change %s: %v %v\n", id, err, resp)
			os.Exit(1)
		}
		resp.Body.Close()
		written := time.Now()
		for {
			req, _ := http.NewRequest("GET", *mirror+"/v1/d/"+*mirrorDir+"/services/"+id+"?view=brief", nil)
			req.Header.Set("Authorization", "Bearer "+*token)
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if bytes.Contains(b, []byte(marker)) {
					break
				}
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
	slices.Sort(lags)
	q := func(p float64) time.Duration { return lags[int(p*float64(len(lags)-1))] }
	fmt.Printf("changes %d: lag p50 %v, p90 %v, max %v\n", len(lags), q(0.5).Round(time.Millisecond),
		q(0.9).Round(time.Millisecond), lags[len(lags)-1].Round(time.Millisecond))
}

// services returns n live services every audience sees, from the import file, spread over it.
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
	if len(out) < n {
		return nil, fmt.Errorf("the file has %d services to change, not %d", len(out), n)
	}
	return out, sc.Err()
}
