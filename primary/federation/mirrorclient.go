package federation

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/primary/seal"
	"github.com/dirsvc/dirsvc/primary/webhook"
	"github.com/hashicorp/go-retryablehttp"
)

// upstreamClient speaks to mirrors' upstreams: client-credentials tokens, kept until shortly before
// they expire, and requests through go-retryablehttp on a transport whose every connection passes the
// primary's outbound guard (no loopback, private or link-local address unless allowed).
type upstreamClient struct {
	guard  *webhook.Guard
	sealer *seal.Sealer // opens mirrors' client secrets
	http   *retryablehttp.Client
	mu     sync.Mutex
	toks   map[string]cachedToken // by upstream, directory and client
}

type cachedToken struct {
	token   string
	expires time.Time
}

// maxUpstreamAnswer bounds what is read of one upstream answer: a feed page of 500 records.
const maxUpstreamAnswer = 64 << 20

func newUpstreamClient(g *webhook.Guard, s *seal.Sealer, timeout time.Duration, retries int) *upstreamClient {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second, Control: g.Control}
	tr := &http.Transport{
		Proxy:                 nil, // never through a proxy: the guard must see the upstream's address
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: timeout,
	}
	c := retryablehttp.NewClient()
	c.HTTPClient = &http.Client{Transport: tr, Timeout: timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	c.Logger = nil
	c.RetryMax = retries
	c.RetryWaitMin, c.RetryWaitMax = 200*time.Millisecond, 5*time.Second
	// Passing failures (connection errors, 429, 5xx) are tried again; every answer else is the caller's.
	c.CheckRetry = retryablehttp.DefaultRetryPolicy
	c.ErrorHandler = retryablehttp.PassthroughErrorHandler
	return &upstreamClient{guard: g, sealer: s, http: c, toks: map[string]cachedToken{}}
}

// CheckUpstream checks a mirror's upstream base URL: absolute, https (http only where private
// addresses are allowed, for tests and local setups), no credentials, query or fragment, and a host
// that is a public internet address or name. It returns the URL without a trailing slash.
func CheckUpstream(ctx context.Context, g *webhook.Guard, raw string) (string, error) {
	bad := func(format string, args ...any) (string, error) {
		return "", dirsvc.InvalidParam("upstream", format, args...)
	}
	if len(raw) > 2000 {
		return bad("at most 2000 characters")
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "":
		return bad("%q is not an absolute URL", raw)
	case u.Scheme != "https" && !(u.Scheme == "http" && g.AllowsPrivate()):
		return bad("the upstream must use https")
	case u.User != nil || u.RawQuery != "" || u.Fragment != "":
		return bad("the URL may hold no credentials, query or fragment")
	}
	if msg := g.CheckHost(ctx, u.Hostname()); msg != "" {
		return bad("%s", msg)
	}
	return strings.TrimSuffix(u.String(), "/"), nil
}

// upstreamError is an answer of the upstream other than the one wanted: its status and what its
// problem body says (the upstream's words, for the operator).
type upstreamError struct {
	Status int
	Detail string
}

func (e *upstreamError) Error() string {
	if e.Detail != "" {
		return fmt.Sprintf("the upstream answered %d: %s", e.Status, e.Detail)
	}
	return fmt.Sprintf("the upstream answered %d", e.Status)
}

// statusOf returns the upstream status an error carries, or 0.
func statusOf(err error) int {
	var ue *upstreamError
	if errors.As(err, &ue) {
		return ue.Status
	}
	return 0
}

// answerError reads a refusal's body (problem+json or an OAuth error) into an upstreamError.
func answerError(resp *http.Response) error {
	var p struct {
		Title, Detail, Code string
		Error               string `json:"error"`
		Description         string `json:"error_description"`
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	json.Unmarshal(b, &p)
	detail := p.Detail
	for _, s := range []string{p.Title, p.Description, p.Error} {
		if detail == "" {
			detail = s
		}
	}
	if p.Code != "" {
		detail = p.Code + ": " + detail
	}
	if len(detail) > 300 {
		detail = detail[:300]
	}
	return &upstreamError{Status: resp.StatusCode, Detail: strings.ToValidUTF8(detail, "")}
}

// token returns an access token of the mirror's client for its upstream directory, asking the
// upstream's token endpoint (client credentials, HTTP Basic) when none is kept.
func (c *upstreamClient) token(ctx context.Context, m *dirsvc.Mirror) (string, error) {
	key := m.Upstream + " " + m.UpstreamDir + " " + m.ClientID
	c.mu.Lock()
	t, ok := c.toks[key]
	c.mu.Unlock()
	if ok && time.Now().Before(t.expires) {
		return t.token, nil
	}
	secret, err := clientSecret(c.sealer, m)
	if err != nil {
		return "", fmt.Errorf("mirror %s: %w", m.Name, err)
	}
	form := url.Values{"grant_type": {"client_credentials"}, "directory": {m.UpstreamDir}}
	req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodPost, m.Upstream+"/oauth/token", strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(m.ClientID), url.QueryEscape(secret))
	resp, err := c.http.Do(req)
	if err != nil {
		return "", fmt.Errorf("ask the upstream for a token: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("ask the upstream for a token: %w", answerError(resp))
	}
	var tr struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int    `json:"expires_in"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&tr); err != nil || tr.AccessToken == "" {
		return "", fmt.Errorf("ask the upstream for a token: the answer holds no access token")
	}
	life := time.Duration(tr.ExpiresIn) * time.Second
	c.mu.Lock()
	c.toks[key] = cachedToken{tr.AccessToken, time.Now().Add(life - min(life/2, 30*time.Second))}
	c.mu.Unlock()
	return tr.AccessToken, nil
}

// forget drops the mirror's kept token (the upstream refused it).
func (c *upstreamClient) forget(m *dirsvc.Mirror) {
	c.mu.Lock()
	delete(c.toks, m.Upstream+" "+m.UpstreamDir+" "+m.ClientID)
	c.mu.Unlock()
}

// do sends an authorised request to the mirror's upstream directory (path after /v1/d/{dir}) and
// returns the answer when its status is one of want; any other answer is an upstreamError. A 401 is
// answered once with a new token.
func (c *upstreamClient) do(ctx context.Context, m *dirsvc.Mirror, method, path string, body []byte, want ...int) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		tok, err := c.token(ctx, m)
		if err != nil {
			return nil, err
		}
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(body)
		}
		req, err := retryablehttp.NewRequestWithContext(ctx, method, m.Upstream+"/v1/d/"+url.PathEscape(m.UpstreamDir)+path, rd)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Accept", "application/json")
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := c.http.Do(req)
		if err != nil {
			return nil, err
		}
		for _, s := range want {
			if resp.StatusCode == s {
				resp.Body = struct {
					io.Reader
					io.Closer
				}{io.LimitReader(resp.Body, maxUpstreamAnswer), resp.Body}
				return resp, nil
			}
		}
		err = answerError(resp)
		resp.Body.Close()
		if resp.StatusCode == http.StatusUnauthorized && attempt == 0 {
			c.forget(m)
			continue
		}
		return nil, err
	}
}
