package main_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc/edge/edgetest"
)

// TestNearestLocalityAtTheEdge runs a primary and an edge as processes logging at debug level,
// their most talkative: the edge answers the nearest-locality read itself (a POST, yet a read), the
// primary never sees it, and neither process logs a digit of the positions sent, good or bad.
func TestNearestLocalityAtTheEdge(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	t.Setenv("DIRSVC_LOG_LEVEL", "debug")
	c := startCluster(t)
	checked := &http.Client{Transport: edgetest.NewChecker(t).Transport(t, nil), Timeout: 30 * time.Second}
	post := func(body string) (int, []byte) {
		t.Helper()
		resp, err := checked.Post("http://"+c.edge+"/v1/d/small/localities/nearest", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b json.RawMessage
		json.NewDecoder(resp.Body).Decode(&b)
		if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
			t.Errorf("%s: Cache-Control %q", body, cc)
		}
		return resp.StatusCode, b
	}
	status, body := post(`{"latitude":-33.881537,"longitude":151.196612}`)
	var place struct{ Name, Postcode string }
	if json.Unmarshal(body, &place); status != 200 || place.Name != "Ultimo" || place.Postcode != "2007" {
		t.Errorf("at the edge: %d %s", status, body)
	}
	for _, b := range []string{
		`{"latitude":95.123456,"longitude":151.196612}`,
		`{"latitude":"-33.881537","longitude":151.196612}`,
		`{"latitude":-33.881537,"longitude":151.196612,"accuracy":12.345678}`,
		`{"latitude":-41.290123,"longitude":174.780123}`, // a place of another country: 404
	} {
		if status, body := post(b); status != 400 && status != 404 {
			t.Errorf("%s: %d %s", b, status, body)
		}
	}
	// The request lines are written once the answers are sent: wait for the last one.
	c.waitFor(t, "the edge logs the five requests", func() bool {
		return strings.Count(c.edgeLog.String(), "/localities/nearest") >= 5
	})
	if strings.Contains(c.primaryLog.String(), "/localities/nearest") {
		t.Errorf("the edge forwarded the read to the primary:\n%s", c.primaryLog)
	}
	for name, log := range map[string]string{"edge": c.edgeLog.String(), "primary": c.primaryLog.String()} {
		for _, v := range []string{"33.881537", "151.196612", "95.123456", "12.345678", "41.290123", "174.780123", "33.88", "151.19"} {
			if strings.Contains(log, v) {
				t.Errorf("the %s's log holds %s of a position:\n%s", name, v, log)
			}
		}
	}
}
