package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/hashicorp/go-retryablehttp"
)

// The retry schedule. A delivery is sent in rounds: the first at once, the next ones RoundWaits apart
// (5 minutes, 30 minutes, 2 hours, 5 hours, 10 hours, 10 hours: about 28 hours in all), each wait
// lengthened or shortened by up to a fifth at random so that receivers recovering from an outage are
// not hit by every sender at once. Within a round, a request that fails for a passing reason (no
// connection, a timeout, 429, 5xx) is tried again after QuickWaits (1 and 5 seconds, jittered alike),
// so a round is up to three requests. A receiver's Retry-After is honoured: a round waits at least as
// long as it asks (up to a day), and a request within a round is tried again only if it asks for at
// most QuickWaits' last wait. A 3xx is a failure (redirects are not followed); a 410 disables the
// endpoint. After the last round fails the delivery is dead and the endpoint's next message is sent.
// An endpoint whose deliveries have failed without a success for PauseAfter (5 days) is paused.
var (
	DefaultRoundWaits = []time.Duration{5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour}
	DefaultQuickWaits = []time.Duration{time.Second, 5 * time.Second}
)

const (
	// DefaultPauseAfter is how long an endpoint's deliveries may fail without a success before it is
	// paused.
	DefaultPauseAfter = 5 * 24 * time.Hour
	// DefaultTimeout bounds one request, from connecting to the end of the receiver's answer.
	DefaultTimeout = 15 * time.Second
	// maxRetryAfter bounds how long a receiver's Retry-After can put a round off.
	maxRetryAfter = 24 * time.Hour
	// maxAnswer is how much of a receiver's answer is read (and thrown away) so its connection can
	// be used again.
	maxAnswer = 64 << 10
)

// jitter returns d lengthened or shortened by up to a fifth, at random.
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return d - d/5 + time.Duration(rand.Int64N(int64(d/5)*2+1))
}

// outcome is how a round ended.
type outcome struct {
	tries      []dirsvc.Attempt
	ok         bool          // a 2xx answer
	gone       bool          // 410: the receiver wants no more
	retryAfter time.Duration // the last answer's Retry-After, if any
}

// message is what a round sends.
type message struct {
	url     string
	id      string   // the webhook-id
	secrets []string // current first; the previous one during a rotation
	body    []byte
}

// sender sends messages with go-retryablehttp, through a dialer that refuses addresses that are not
// public (see guard).
type sender struct {
	http       *http.Client
	quickWaits []time.Duration
	now        func() time.Time
}

// newSender returns a sender; roots are the authorities receivers' certificates must chain to (nil:
// the system's).
func newSender(g *guard, roots *x509.CertPool, timeout time.Duration, quickWaits []time.Duration, now func() time.Time) *sender {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second, Control: g.control}
	tr := &http.Transport{
		Proxy:                 nil, // never through a proxy: the check must see the receiver's address
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: timeout,
		TLSClientConfig:       &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots},
	}
	return &sender{
		http: &http.Client{
			Transport:     tr,
			Timeout:       timeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		quickWaits: quickWaits,
		now:        now,
	}
}

// round sends a message: one request, and up to len(quickWaits) more for passing failures.
func (s *sender) round(ctx context.Context, m message) outcome { return s.send(ctx, m, s.quickWaits) }

// once sends a message with one request.
func (s *sender) once(ctx context.Context, m message) outcome { return s.send(ctx, m, nil) }

// send sends a message: one request, and one more after each of quickWaits for passing failures.
// Every request is signed anew, with its own timestamp, under the same webhook-id.
func (s *sender) send(ctx context.Context, m message, quickWaits []time.Duration) outcome {
	var out outcome
	var started time.Time
	c := retryablehttp.NewClient()
	c.HTTPClient = s.http
	c.Logger = nil
	c.RetryMax = len(quickWaits)
	c.RequestLogHook = func(_ retryablehttp.Logger, req *http.Request, _ int) {
		started = s.now()
		if err := sign(req, m, started); err != nil {
			panic(err) // secrets are checked before a round; a bad one here is a bug
		}
	}
	c.CheckRetry = func(ctx context.Context, resp *http.Response, err error) (bool, error) {
		a := dirsvc.Attempt{At: started, DurationMs: s.now().Sub(started).Milliseconds()}
		out.retryAfter = 0
		switch {
		case err != nil:
			a.Error = describe(err)
		default:
			a.Status = resp.StatusCode
			out.retryAfter = retryAfter(resp)
			io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswer))
		}
		out.tries = append(out.tries, a)
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		switch {
		case err != nil:
			return !errors.Is(err, errNotPublic), nil
		case resp.StatusCode >= 200 && resp.StatusCode < 300:
			out.ok = true
			return false, nil
		case resp.StatusCode == http.StatusGone:
			out.gone = true
			return false, nil
		case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 && resp.StatusCode != http.StatusNotImplemented:
			return len(quickWaits) > 0 && out.retryAfter <= quickWaits[len(quickWaits)-1], nil
		}
		return false, nil // 3xx and other 4xx: the next round
	}
	c.Backoff = func(_, _ time.Duration, attempt int, resp *http.Response) time.Duration {
		w := jitter(quickWaits[min(attempt, len(quickWaits)-1)])
		if ra := retryAfter(resp); ra > w {
			w = ra
		}
		return w
	}
	c.ErrorHandler = func(resp *http.Response, err error, _ int) (*http.Response, error) {
		if resp != nil {
			resp.Body.Close()
		}
		return nil, err
	}
	req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodPost, m.url, m.body)
	if err != nil {
		out.tries = append(out.tries, dirsvc.Attempt{At: s.now(), Error: "the endpoint's URL is not valid"})
		return out
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "dirsvc-webhooks/1")
	if resp, err := c.Do(req); err == nil && resp != nil {
		resp.Body.Close()
	}
	return out
}

// sign sets the Standard Webhooks headers of one request.
func sign(req *http.Request, m message, at time.Time) error {
	ts := at.Unix()
	sig, err := signatures(m.secrets, m.id, ts, m.body)
	if err != nil {
		return err
	}
	req.Header.Set("webhook-id", m.id)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", sig)
	return nil
}

// retryAfter returns the wait a 429 or 503 answer asks for (seconds or an HTTP date), bounded; zero
// when it asks for none.
func retryAfter(resp *http.Response) time.Duration {
	if resp == nil || resp.Header.Get("Retry-After") == "" {
		return 0
	}
	// With no minimum and a first attempt, the default backoff is exactly the answer's Retry-After
	// (for 429 and 503), read in either of its forms.
	return min(retryablehttp.DefaultBackoff(0, maxRetryAfter, 0, resp), maxRetryAfter)
}

// describe says why a request got no answer, for the delivery log: the kind of failure, never the
// address or anything the receiver sent.
func describe(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, errNotPublic):
		return "refused: the endpoint's address is not a public internet address"
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return "timed out"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return "the host does not resolve"
	}
	var tlsErr *tls.CertificateVerificationError
	if errors.As(err, &tlsErr) {
		return "the TLS certificate is not valid"
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		return fmt.Sprintf("no connection (%s)", opErr.Op)
	}
	return "no answer"
}
