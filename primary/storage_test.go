package primary_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/edge"
	"github.com/dirsvc/dirsvc/edge/edgetest"
	"github.com/dirsvc/dirsvc/primary"
	"github.com/dirsvc/dirsvc/primary/webhook"
)

// sqliteFull returns the error SQLite gives a write to a file that has no room left: a real one,
// from a database capped at a few pages (PRAGMA max_page_count), as a full disk gives it.
func sqliteFull(t *testing.T) error {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "full.db")+"?_pragma=max_page_count(4)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE TABLE t (b BLOB)"); err != nil {
		t.Fatal(err)
	}
	for range 100 {
		if _, err := db.Exec("INSERT INTO t VALUES (?)", make([]byte, 4096)); err != nil {
			return err
		}
	}
	t.Fatal("SQLite took 100 pages in a file capped at 4")
	return nil
}

// fullAdminToken is the admin token of the service whose disks fill.
const fullAdminToken = "Hq4vT9mZ2xKp7wLr"

// adminTransport sends the admin token with every request.
type adminTransport struct {
	token string
	base  http.RoundTripper
}

func (a adminTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+a.token)
	return a.base.RoundTrip(r)
}

// enospc is what the operating system answers a write to a full disk.
func enospc(path string) error { return &os.PathError{Op: "write", Path: path, Err: syscall.ENOSPC} }

// fullStore is the primary's store with a disk that can fill: while full, a write of a record
// fails as SQLite fails it on a full disk.
type fullStore struct {
	*dirdb.Store
	full  *atomic.Bool
	cause error
}

func (s fullStore) Writer(ctx context.Context, slug string) (dirsvc.DirectoryWriter, error) {
	w, err := s.Store.Writer(ctx, slug)
	return fullWriter{w, s}, err
}

type fullWriter struct {
	dirsvc.DirectoryWriter
	s fullStore
}

func (w fullWriter) Update(ctx context.Context, rec dirsvc.Record) (dirsvc.ImportStats, error) {
	if w.s.full.Load() {
		return dirsvc.ImportStats{}, fmt.Errorf("update %s: %w", rec.Base().PublicID, w.s.cause)
	}
	return w.DirectoryWriter.Update(ctx, rec)
}

// TestAFullStorageAnswers507UntilItTakesWritesAgain fills, in turn, the disk of a directory's file
// and that of the replica folder: each write is answered 507 with a problem code and Retry-After
// (never 202, never a bare 500), and the node is unhealthy until its storage takes a write again.
func TestAFullStorageAnswers507UntilItTakesWritesAgain(t *testing.T) {
	ctx := context.Background()
	store, key, access := smallPrimary(t, nil)

	var dataFull, replicaFull atomic.Bool // the disks of the data folder and of the replica folder
	replicate := func(context.Context, string) error {
		if replicaFull.Load() {
			return fmt.Errorf("sync dirs/small/directory: %w", enospc("replica/dirs/small/directory/ltx/0/0000000000000009-0000000000000009.ltx.tmp"))
		}
		return nil
	}
	var probes atomic.Int32
	var log bytes.Buffer
	srv := edge.New(edge.Config{Catalog: store, Keys: store, Logger: slog.New(slog.NewTextHandler(&log, nil)),
		AnonymousLimits: edge.Limits{PerMinute: 1 << 20, PerDay: 1 << 20},
		StorageProbe: func(context.Context) error {
			probes.Add(1)
			if dataFull.Load() || replicaFull.Load() {
				return enospc(".storage-probe")
			}
			return nil
		}})
	recv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(recv.Close)
	roots := x509.NewCertPool()
	roots.AddCert(recv.Certificate())
	discard := slog.New(slog.NewTextHandler(io.Discard, nil))
	hooks, err := webhook.New(webhook.Config{Store: store, Clients: store, Feed: primary.WebhookFeed(srv, store.ChangeHead),
		Directories: store.Slugs, SealKey: primary.WebhookSealKey(key), Log: discard, AllowNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, RootCAs: roots,
		Replicate: replicate})
	if err != nil {
		t.Fatal(err)
	}
	ps := &primary.Server{Edge: srv, Access: access, Webhooks: hooks, Log: discard,
		Admin: &primary.AdminAPI{Store: fullStore{store, &dataFull, sqliteFull(t)}, Token: fullAdminToken, Log: discard,
			Replicate: func(ctx context.Context, dir string) (primary.Replication, error) {
				return primary.Replication{Position: 9}, replicate(ctx, dir)
			}}}
	if err := ps.Mount(); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	checked := edgetest.NewChecker(t).Transport(t, http.DefaultTransport)
	admin := &http.Client{Transport: adminTransport{fullAdminToken, checked}}
	c, secret, err := access.CreateClient(ctx, primary.NewClient{Name: "aggregate", Directory: "small", Grants: []dirsvc.Grant{{
		Directory: "small", Tier: dirsvc.Partner, Limit: dirsvc.DefaultPartnerLimit,
		Scopes: dirsvc.NormalScopes([]string{dirsvc.ScopeWebhooksManage, dirsvc.ScopeFeedRead}),
	}}})
	if err != nil {
		t.Fatal(err)
	}
	cc := &clientcredentials.Config{ClientID: c.ID, ClientSecret: secret, TokenURL: ts.URL + edge.TokenPath, AuthStyle: oauth2.AuthStyleInHeader}
	partner := cc.Client(context.WithValue(ctx, oauth2.HTTPClient, &http.Client{Transport: checked}))

	send := func(c *http.Client, method, path, body string) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	health := func() int {
		t.Helper()
		resp, b := send(http.DefaultClient, "GET", "/healthz", "")
		if resp.StatusCode == http.StatusServiceUnavailable {
			var st dirsvc.NodeStatus
			if json.Unmarshal(b, &st) != nil || st.Healthy {
				t.Errorf("health 503 with %s", b)
			}
		}
		return resp.StatusCode
	}
	record := func(name string) string {
		return `{"kind":"service","publicId":"svc_counsel","organisation":"org_coast","location":"loc_coast","name":"` + name + `","type":"psychology"}`
	}
	publicName := func() string {
		t.Helper()
		resp, b := send(http.DefaultClient, "GET", "/v1/d/small/services/svc_counsel", "")
		var v struct{ Name string }
		if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &v) != nil {
			t.Fatalf("read the service: %d %s", resp.StatusCode, b)
		}
		return v.Name
	}

	for _, tc := range []struct {
		name   string
		full   *atomic.Bool
		client *http.Client
		method string
		path   string
		body   string
		made   bool // the change is made on the primary, though no replica holds it
	}{
		{"a record written while the directory's disk is full", &dataFull, admin, "PUT", "/admin/v1/d/small/records/svc_counsel", record("Never Stored"), false},
		{"a record written while the replica's disk is full", &replicaFull, admin, "PUT", "/admin/v1/d/small/records/svc_counsel", record("Made, Not Replicated"), true},
		{"a webhook endpoint made while the replica's disk is full", &replicaFull, partner, "POST", "/v1/d/small/webhooks", `{"url":"` + recv.URL + `/hooks"}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log.Reset()
			before := publicName()
			tc.full.Store(true)
			t.Cleanup(func() { tc.full.Store(false) }) // whatever this case finds, the next starts with space
			resp, b := send(tc.client, tc.method, tc.path, tc.body)
			var p edge.Problem
			if resp.StatusCode != http.StatusInsufficientStorage || resp.Header.Get("Content-Type") != "application/problem+json" ||
				json.Unmarshal(b, &p) != nil || p.Code != dirsvc.EInsufficientStorage || p.Status != http.StatusInsufficientStorage {
				t.Fatalf("%s %s on a full disk: %d %s %s", tc.method, tc.path, resp.StatusCode, resp.Header.Get("Content-Type"), b)
			}
			if resp.Header.Get("Retry-After") == "" || resp.Header.Get(primary.PendingHeader) != "" || resp.Header.Get(edge.PositionHeader) != "" {
				t.Errorf("headers: %v", resp.Header)
			}
			if made := strings.Contains(p.Detail, "The change was made"); made != tc.made {
				t.Errorf("the answer says the change was made: %v, want %v: %q", made, tc.made, p.Detail)
			}
			if strings.Contains(string(b), "ltx") || strings.Contains(string(b), "SQL") {
				t.Errorf("the answer shows the cause: %s", b)
			}
			if !strings.Contains(log.String(), "the storage refused a write") {
				t.Errorf("the refusal is not logged:\n%s", &log)
			}
			if !tc.made && publicName() != before {
				t.Errorf("a refused write changed the record")
			}
			if got := health(); got != http.StatusServiceUnavailable {
				t.Errorf("health while the disk is full: %d, want 503", got)
			}
			// Space is back: a health check's probe finds it (a probe runs at most once a
			// second), and writes succeed.
			tc.full.Store(false)
			for deadline := time.Now().Add(10 * time.Second); health() != http.StatusOK; {
				if time.Now().After(deadline) {
					t.Fatal("the node is unhealthy 10s after there is space again")
				}
				time.Sleep(50 * time.Millisecond) // the probe's own pace, polled with a deadline
			}
			if resp, b := send(admin, "PUT", "/admin/v1/d/small/records/svc_counsel", record("Stored Again")); resp.StatusCode != http.StatusOK {
				t.Errorf("a write once there is space: %d %s", resp.StatusCode, b)
			}
			if got := publicName(); got != "Stored Again" {
				t.Errorf("the service is named %q", got)
			}
		})
	}
	if probes.Load() == 0 {
		t.Error("the storage was never probed")
	}
}

// TestInsufficientStorageIsTold: the errors a full disk gives, from the operating system or from
// SQLite, however wrapped, are told apart from other failures.
func TestInsufficientStorageIsTold(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"no space left, from the operating system", fmt.Errorf("sync: %w", enospc("f")), true},
		{"a disk quota reached", &os.PathError{Op: "write", Path: "f", Err: syscall.EDQUOT}, true},
		{"SQLite's database or disk is full", fmt.Errorf("update: %w", sqliteFull(t)), true},
		{"the answer to a change no replica holds", dirsvc.NotReplicated(enospc("f")), true},
		{"another failure of a write", &os.PathError{Op: "write", Path: "f", Err: syscall.EIO}, false},
		{"a domain error", dirsvc.ErrNotFound, false},
		{"no error", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := dirsvc.InsufficientStorage(tc.err); got != tc.want {
				t.Errorf("InsufficientStorage(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
	if e := dirsvc.NotReplicated(errors.New("the replica folder is gone")); e.Code != dirsvc.EUnavailable {
		t.Errorf("a change no replica holds for another cause: %s, want %s", e.Code, dirsvc.EUnavailable)
	}
}
