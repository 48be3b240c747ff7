package main_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/dirsvc/dirsvc/edge"
	"github.com/dirsvc/dirsvc/edge/edgetest"
)

// chromium returns the path of a Chromium (or Chrome) binary. Without one the test is skipped,
// except in CI (CI=true), where .ci/run installs it and its absence is a failure.
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium binary found: .ci/run installs it (apt-get install chromium)")
	}
	t.Skip("no chromium binary found (apt-get install chromium): the portal is not checked in a browser")
	return ""
}

// screenshotDir is where the test writes its screenshots for people to look at: $DIRSVC_SCREENSHOTS,
// else testdata/out (ignored by git).
func screenshotDir(t *testing.T) string {
	dir := os.Getenv("DIRSVC_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join("testdata", "out")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// pageProblems records, in the page itself, what a browser would show as errors in its console:
// uncaught errors, console.error calls and Content-Security-Policy violations (a style the policy
// does not allow, say). It runs before anything of the page.
const pageProblems = `window.__problems = [];
addEventListener('error', e => __problems.push('error: ' + e.message));
addEventListener('securitypolicyviolation', e => __problems.push('CSP violation: ' + e.violatedDirective + ' ' + e.blockedURI));
const __error = console.error;
console.error = (...a) => { __problems.push('console.error: ' + a.join(' ')); __error(...a); };`

// example is an example request as the portal shows it.
type example struct {
	URL   string `json:"url"`
	Token bool   `json:"token"`
	Text  string `json:"text"`
}

func TestPortalInABrowser(t *testing.T) {
	slowScenario(t)
	if testing.Short() {
		t.Skip("builds and runs the binary and a browser")
	}
	browserPath := chromium(t)
	shots := screenshotDir(t)
	bin := buildBinary(t)
	addr, _, _ := startServe(t, bin, filepath.Join(t.TempDir(), "data"))
	base := "http://" + addr

	alloc, cancel := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browserPath), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.UserDataDir(t.TempDir()))...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: pageProblems}); err != nil {
		t.Fatal(err)
	}
	// The browser's own messages (a resource that failed to load, a violation it reports itself).
	var (
		mu      sync.Mutex
		logged  []string
		logDone = make(chan struct{})
	)
	logCtx, stopLog := context.WithCancel(ctx)
	go func() {
		defer close(logDone)
		for ev, err := range chromedp.Events(logCtx, log.EntryAdded) {
			if err != nil {
				return
			}
			if ev.Entry != nil && ev.Entry.Level == log.EntryLevelError {
				mu.Lock()
				logged = append(logged, ev.Entry.Text+" "+ev.Entry.URL)
				mu.Unlock()
			}
		}
	}()
	noProblems := func(where string) {
		t.Helper()
		problems, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.__problems`))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Errorf("%s: %s", where, p)
		}
	}
	screenshot := func(name string, width int64) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, 900)); err != nil {
			t.Fatal(err)
		}
		// Nothing is wider than the window (no sideways scrolling on a phone).
		wide, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`document.documentElement.scrollWidth <= innerWidth ? [] :
			Array.from(document.querySelectorAll('body *'), e => [e, e.getBoundingClientRect().right])
				.filter(([e, right]) => right > innerWidth + 1 && !e.closest('.table-scroll, pre'))
				.slice(0, 5).map(([e, right]) => e.tagName + '.' + e.className + ' ' + Math.round(right) + 'px')`))
		if err != nil || len(wide) > 0 {
			t.Errorf("%s at %dpx: the page is wider than the window: %v (%v)", name, width, wide, err)
		}
		buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(85))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(shots, name+".jpeg"), buf, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	portal := base + edge.PortalPath("demo")
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(portal)); err != nil {
		t.Fatal(err)
	}
	if h1, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("h1"))); err != nil || !strings.Contains(h1, "Demo") {
		t.Fatalf("portal heading %q: %v", h1, err)
	}
	noProblems("portal")
	checkAccessible(t, ctx, "portal")
	screenshot("portal-desktop-1280", 1280)
	screenshot("portal-phone-390", 390)

	examples, err := chromedp.Run(ctx, chromedp.Evaluate[[]example](`Array.from(document.querySelectorAll('[data-example]'),
		e => ({url: e.dataset.example, token: e.dataset.token === 'true', text: e.textContent}))`))
	if err != nil {
		t.Fatal(err)
	}
	links, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('.op p a[href^="http"]'), a => a.href)`))
	if err != nil {
		t.Fatal(err)
	}
	if len(examples) < 20 {
		t.Fatalf("the portal shows %d example requests, want one for each read (at least 20)", len(examples))
	}

	// Sign up in the browser, as a person does: follow the link, fill the form in, send it.
	if _, err := chromedp.Run(ctx, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.CSS(`a.button[href$="/portal/sandbox"]`)))); err != nil {
		t.Fatal(err)
	}
	noProblems("sign-up form")
	checkAccessible(t, ctx, "sign-up form")
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("name"), "Referral Apps Ltd"),
		chromedp.SendKeys(chromedp.ID("email"), "dev@referral.example.org"),
		chromedp.SendKeys(chromedp.ID("purpose"), "A referral app that finds services for GPs.")); err != nil {
		t.Fatal(err)
	}
	screenshot("signup-phone-390", 390)
	if _, err := chromedp.Run(ctx, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.CSS(`button[type=submit]`)))); err != nil {
		t.Fatal(err)
	}
	noProblems("credentials page")
	id, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("client-id")))
	if err != nil {
		t.Fatal(err)
	}
	secret, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("client-secret")))
	if err != nil {
		t.Fatal(err)
	}
	screenshot("credentials-desktop-1280", 1280)

	// The credentials get a token at once; with it and without, every example request succeeds
	// against the running binary, and every answer is the one the OpenAPI document describes.
	client := &http.Client{Transport: edgetest.NewChecker(t).Transport(t, nil), Timeout: 30 * time.Second}
	token := sandboxToken(t, client, base, id, secret)
	anonymous, withToken := 0, 0
	for _, ex := range examples {
		if err := ex.matches(); err != nil {
			t.Errorf("%s: %v", ex.Text, err)
			continue
		}
		req, err := http.NewRequest("GET", ex.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		if ex.Token {
			req.Header.Set("Authorization", "Bearer "+token)
			withToken++
		} else {
			anonymous++
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %d", ex.Text, resp.StatusCode)
		}
	}
	if anonymous == 0 || withToken == 0 {
		t.Errorf("examples run: %d anonymous, %d with the sandbox token; want both kinds", anonymous, withToken)
	}
	for _, l := range links {
		resp, err := client.Get(l)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("the page opened from the portal, %s: %d", l, resp.StatusCode)
		}
	}

	// A round trip after the last page, then the browser's own error messages.
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`0`)); err != nil {
		t.Fatal(err)
	}
	stopLog()
	<-logDone
	mu.Lock()
	for _, l := range logged {
		t.Errorf("browser console: %s", l)
	}
	mu.Unlock()
	t.Logf("screenshots in %s; %d examples run (%d with a token)", shots, len(examples), withToken)
}

var exampleRE = regexp.MustCompile(`^curl (-H "Authorization: Bearer \$TOKEN" )?'([^']+)'$`)

// matches checks that the command line shown is a request of the example's address, with the token
// when it needs one: what a reader copies is what the test runs.
func (ex example) matches() error {
	m := exampleRE.FindStringSubmatch(ex.Text)
	switch {
	case m == nil:
		return errorString("not a curl command line of one quoted address")
	case m[2] != ex.URL:
		return errorString("the command line's address is not the example's " + ex.URL)
	case (m[1] != "") != ex.Token:
		return errorString("the command line and the example differ on the token")
	}
	return nil
}

type errorString string

func (e errorString) Error() string { return string(e) }

// sandboxToken gets a token of the demonstration directory with sandbox credentials.
func sandboxToken(t *testing.T, client *http.Client, base, id, secret string) string {
	t.Helper()
	resp, err := client.PostForm(base+edge.TokenPath, url.Values{"grant_type": {"client_credentials"},
		"client_id": {id}, "client_secret": {secret}, "directory": {"demo"}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tr struct {
		AccessToken string `json:"access_token"`
		Sandbox     bool   `json:"sandbox"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tr); err != nil || resp.StatusCode != 200 || !tr.Sandbox {
		t.Fatalf("token with the credentials from the sign-up page: %d %v", resp.StatusCode, err)
	}
	return tr.AccessToken
}

// checkAccessible checks what a keyboard and a screen reader need of a page: one h1 and headings
// that do not skip a level, the landmarks, a label for every field, and a focus that shows.
func checkAccessible(t *testing.T, ctx context.Context, where string) {
	t.Helper()
	problems, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`(() => {
		const out = [];
		if (document.querySelectorAll('h1').length !== 1) out.push('want one h1');
		let last = 1;
		for (const h of document.querySelectorAll('h1, h2, h3, h4, h5, h6')) {
			const level = +h.tagName[1];
			if (level > last + 1) out.push('heading ' + h.tagName + ' "' + h.textContent.trim() + '" skips a level');
			last = level;
		}
		if (!document.querySelector('main')) out.push('no main landmark');
		if (!document.documentElement.lang) out.push('no lang');
		for (const f of document.querySelectorAll('input:not([type=hidden]), textarea, select')) {
			if (!f.labels || f.labels.length === 0) out.push('field ' + f.name + ' has no label');
		}
		return out;
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", where, p)
	}
	// The first Tab reaches the skip link, and its focus shows.
	if err := chromedp.Do(ctx, chromedp.KeyEvent("\t")); err != nil {
		t.Fatal(err)
	}
	focus, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[document.activeElement.className,
		getComputedStyle(document.activeElement).outlineStyle, String(document.activeElement.getBoundingClientRect().left >= 0)]`))
	if err != nil {
		t.Fatal(err)
	}
	if len(focus) != 3 || focus[0] != "skip" || focus[1] == "none" || focus[2] != "true" {
		t.Errorf("%s: the first Tab focuses %v, want the skip link, visible with an outline", where, focus)
	}
}
