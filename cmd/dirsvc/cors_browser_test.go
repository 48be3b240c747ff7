package main_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// corsApp is a browser app of another origin: a page whose script calls the service at API (given in
// the page's address) and reports, for each call, what the script could read of the answer, or the
// error fetch rejected with when the browser refused to hand the answer over.
const corsApp = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>A referral app</title></head>
<body><p>A referral app on another origin.</p>
<script>
const api = new URLSearchParams(location.search).get('api');
async function call(path, init) {
  try {
    const r = await fetch(api + path, Object.assign({cache: 'no-store'}, init));
    const text = await r.text();
    let body = null;
    try { body = JSON.parse(text); } catch (e) {}
    const h = n => r.headers.get(n);
    return {fetched: true, status: r.status, etag: h('ETag'), link: h('Link'), audience: h('X-DIR-Audience'),
      rateLimitPolicy: h('RateLimit-Policy'), rateLimit: h('RateLimit'), retryAfter: h('Retry-After'),
      type: body && (body.resourceType || body.type || ''), entries: body && body.entry ? body.entry.length : 0,
      results: body && Array.isArray(body.results) ? body.results.length : 0};
  } catch (e) {
    return {fetched: false, error: e.name + ': ' + e.message};
  }
}
</script></body></html>`

// scriptSaw is what the app's script could read of an answer.
type scriptSaw struct {
	Fetched         bool   `json:"fetched"`
	Error           string `json:"error"`
	Status          int    `json:"status"`
	ETag            string `json:"etag"`
	Link            string `json:"link"`
	Audience        string `json:"audience"`
	RateLimitPolicy string `json:"rateLimitPolicy"`
	RateLimit       string `json:"rateLimit"`
	Type            string `json:"type"`
	Entries         int    `json:"entries"`
	Results         int    `json:"results"`
}

// TestCORSInABrowser loads a page from another origin in a headless Chromium and lets its script
// call the running binary as a browser app does: a search without credentials, a FHIR search and a
// feed page with a partner's token (which Go gets from the token endpoint: a secret never goes to
// the browser), reading the headers a client reads, and a conditional request. The admin API and
// the token endpoint are refused: the browser rejects the script's fetch.
func TestCORSInABrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary and a browser")
	}
	browserPath := chromium(t)
	bin := buildBinary(t)
	data := filepath.Join(t.TempDir(), "data")
	addr, _, _ := startMode(t, bin, "serve", "--data", data, "--admin-token", testAdminToken)
	base := "http://" + addr

	// The app's own origin: the same host, another port.
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(corsApp))
	}))
	t.Cleanup(app.Close)

	id, secret := createClient(t, bin, data, "--name", "Referral App", "--partner", "--directory", "demo",
		"--tier", "partner", "--scopes", "graph:read search:read feed:read")
	cc := clientcredentials.Config{ClientID: id, ClientSecret: secret, TokenURL: base + "/oauth/token",
		EndpointParams: url.Values{"directory": {"demo"}}, AuthStyle: oauth2.AuthStyleInHeader}
	tok, err := cc.Token(context.Background())
	if err != nil {
		t.Fatal(err)
	}

	alloc, cancel := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browserPath), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.UserDataDir(t.TempDir()))...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(app.URL+"/?api="+url.QueryEscape(base))); err != nil {
		t.Fatal(err)
	}
	js := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	call := func(path string, init map[string]any) scriptSaw {
		t.Helper()
		if init == nil {
			init = map[string]any{}
		}
		s, err := chromedp.Run(ctx, chromedp.Evaluate[scriptSaw]("call("+js(path)+", "+js(init)+")", chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return s
	}
	bearer := map[string]any{"headers": map[string]string{"Authorization": "Bearer " + tok.AccessToken}}

	// A search without credentials: the results, and the headers a client reads.
	search := call("/v1/d/demo/search/services?q=health", nil)
	if !search.Fetched || search.Status != 200 || search.Results == 0 || search.ETag == "" ||
		search.Audience != "public" || search.RateLimitPolicy == "" {
		t.Fatalf("a search from another origin: the script saw %+v", search)
	}
	// The same search, conditional: If-None-Match is a header the browser asks leave to send
	// (a preflight), and the script sees the 304.
	again := call("/v1/d/demo/search/services?q=health", map[string]any{"headers": map[string]string{"If-None-Match": search.ETag}})
	if !again.Fetched || again.Status != http.StatusNotModified {
		t.Errorf("a conditional search from another origin: the script saw %+v", again)
	}

	// A FHIR search page with the partner's token (a preflight for Authorization first).
	fhir := call("/v1/d/demo/fhir/HealthcareService?_count=2", bearer)
	if !fhir.Fetched || fhir.Status != 200 || fhir.Type != "Bundle" || fhir.Entries == 0 ||
		fhir.Audience != "partner" || fhir.RateLimit == "" {
		t.Fatalf("a FHIR search with a token from another origin: the script saw %+v", fhir)
	}
	// A feed page with more after it names the next in Link.
	feed := call("/v1/d/demo/changes?limit=1", bearer)
	if !feed.Fetched || feed.Status != 200 || !strings.Contains(feed.Link, `rel="next"`) || feed.Audience != "partner" {
		t.Fatalf("a feed page with a token from another origin: the script saw %+v", feed)
	}
	// A refusal is readable too: a script learns its token is wrong.
	if bad := call("/v1/d/demo/services", map[string]any{"headers": map[string]string{"Authorization": "Bearer not-a-token"}}); !bad.Fetched || bad.Status != http.StatusUnauthorized {
		t.Errorf("a wrong token from another origin: the script saw %+v", bad)
	}

	// The admin API and the token endpoint refuse another origin: fetch rejects, with the token and
	// without it (a request the browser sends without a preflight, whose answer it withholds).
	for _, c := range []struct {
		name, path string
		init       map[string]any
	}{
		{"the admin API with its token", "/admin/v1/d/demo/moderation", map[string]any{"headers": map[string]string{"Authorization": "Bearer " + testAdminToken}}},
		{"the admin API without a token", "/admin/v1/d/demo/moderation", nil},
		{"the token endpoint", "/oauth/token", map[string]any{"method": "POST",
			"body":    "grant_type=client_credentials&directory=demo&client_id=" + url.QueryEscape(id) + "&client_secret=" + url.QueryEscape(secret),
			"headers": map[string]string{"Content-Type": "application/x-www-form-urlencoded"}}},
	} {
		if s := call(c.path, c.init); s.Fetched || !strings.HasPrefix(s.Error, "TypeError") {
			t.Errorf("%s from another origin: the script saw %+v, want fetch to reject", c.name, s)
		}
	}
	// The admin API does answer its token, from its own origin (not a browser script's).
	req, _ := http.NewRequest("GET", base+"/admin/v1/d/demo/moderation", nil)
	req.Header.Set("Authorization", "Bearer "+testAdminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("the admin API outside a browser: %d, Access-Control-Allow-Origin %q", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}
}
