package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/edge"
	"github.com/dirsvc/dirsvc/primary"
	"github.com/dirsvc/dirsvc/primary/demo"
	"github.com/dirsvc/dirsvc/primary/export"
	"github.com/dirsvc/dirsvc/primary/federation"
	"github.com/dirsvc/dirsvc/primary/seal"
	"github.com/dirsvc/dirsvc/primary/webhook"
	"github.com/dirsvc/dirsvc/replicate"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func (m *Main) serve(ctx context.Context, args []string) error { return m.run(ctx, "serve", args) }

// primaryMode runs the writer: it serves as serve does, and replicates every file of the data
// folder continuously to the replica target; on an empty data folder it first restores what the
// target holds (and loads no demo).
func (m *Main) primaryMode(ctx context.Context, args []string) error {
	return m.run(ctx, "primary", args)
}

// run serves the data folder; mode "primary" also replicates it.
func (m *Main) run(ctx context.Context, mode string, args []string) error {
	synopsis := "[--data DIR] [--addr HOST:PORT] [flags]\n\nServes the data folder (primary and edge in one process); loads the demo directories into an empty one."
	if mode == "primary" {
		synopsis = "--replica-dir DIR | --s3-bucket B --base-url URL [--replication-token T] [flags]\n\n" +
			"Serves the data folder and replicates every file of it continuously; an empty data folder is first restored."
	}
	fs := m.command(mode, synopsis)
	m.dataFlag(fs)
	m.addrFlag(fs)
	var (
		tf            *targetFlags
		repToken      *string
		interval      *time.Duration
		replicaWait   *time.Duration
		maxStorageLag *time.Duration
		verifyEvery   *time.Duration
	)
	if mode == "primary" {
		tf = addTargetFlags(fs)
		repToken = fs.String("replication-token", envOr("DIRSVC_REPLICATION_TOKEN", ""), "token edges present to follow this primary's replication stream of directory files, and from which the credential they vouch for client addresses with is derived; random, at least 16 characters, e.g. from openssl rand -base64 32 ($DIRSVC_REPLICATION_TOKEN); without it no stream is served")
		interval = fs.Duration("sync-interval", envDuration("DIRSVC_SYNC_INTERVAL", replicate.DefaultInterval), "how often each file is looked at for new commits to copy to the replica target, by this process or another ($DIRSVC_SYNC_INTERVAL)")
		replicaWait = fs.Duration("replica-wait", envDuration("DIRSVC_REPLICA_WAIT", 5*time.Second), "how long a write through the admin API waits for object storage to hold it; it answers 202 with Replication-Pending when the bucket does not confirm in time ($DIRSVC_REPLICA_WAIT)")
		maxStorageLag = fs.Duration("max-storage-lag", envDuration("DIRSVC_MAX_STORAGE_LAG", time.Minute), "replication is reported unhealthy on /healthz and in metrics once a replica has lacked a committed change for longer ($DIRSVC_MAX_STORAGE_LAG)")
		verifyEvery = fs.Duration("verify-interval", envDuration("DIRSVC_VERIFY_INTERVAL", replicate.DefaultVerifyEvery), "how often the replica folder's files are read back and verified, a bounded amount each time; a damaged one is reported on /healthz and in metrics, and a snapshot is written past it ($DIRSVC_VERIFY_INTERVAL)")
	}
	acceptNewKey := fs.Bool("accept-new-server-key", envBool("DIRSVC_ACCEPT_NEW_SERVER_KEY"), acceptNewKeyUsage)
	adminToken := fs.String("admin-token", envOr("DIRSVC_ADMIN_TOKEN", ""), "token of the admin API under "+primary.AdminPrefix+", random, at least 16 characters, e.g. from openssl rand -base64 32 ($DIRSVC_ADMIN_TOKEN); without it the admin API is off")
	mirrorInterval := fs.Duration("mirror-interval", envDuration("DIRSVC_MIRROR_INTERVAL", time.Second), "how often a mirror's upstream feed is read once the mirror has caught up ($DIRSVC_MIRROR_INTERVAL)")
	mirrorLoopback := fs.Bool("mirror-allow-loopback", envBool("DIRSVC_MIRROR_ALLOW_LOOPBACK"), "let mirrors' harvests reach loopback and private addresses: tests and local setups only ($DIRSVC_MIRROR_ALLOW_LOOPBACK)")
	webhookNetworks := fs.String("webhook-allow-networks", envOr("DIRSVC_WEBHOOK_ALLOW_NETWORKS", ""), "networks besides the public internet that webhook receivers may be registered in and delivered to, in CIDR notation, e.g. 10.20.0.0/16,fd00:1::/48; loopback only when named (127.0.0.0/8 for a receiver on this machine); cloud metadata addresses (169.254.169.254, fd00:ec2::254 and the like) stay refused even inside a network named; default none ($DIRSVC_WEBHOOK_ALLOW_NETWORKS)")
	hf := addHTTPFlags(fs)
	if _, err := parseArgs(fs, args, 0, 0); err != nil {
		return err
	}
	hookNetworks, err := webhook.ParseNetworks(*webhookNetworks)
	if err != nil {
		return usagef("--webhook-allow-networks: %v", err)
	}
	if *adminToken != "" {
		if err := checkSecretFlag("admin-token", *adminToken); err != nil {
			return err
		}
	}
	if repToken != nil && *repToken != "" {
		if err := checkSecretFlag("replication-token", *repToken); err != nil {
			return err
		}
	}
	memLimit, viewCache, err := memorySettings(m.Log, *hf.memoryLimit)
	if err != nil {
		return err
	}
	// Bind first, so a bad address fails before any work; serve only once the data is ready.
	ln, err := net.Listen("tcp", m.Addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	defer ln.Close()
	cfg, err := hf.config(m.Log, mode, ln.Addr())
	if err != nil {
		return err
	}
	cfg.PageCacheBytes = pageCacheBudget(memLimit)
	var target replicate.Target
	if tf != nil {
		if target, err = tf.target(); err != nil {
			return err
		}
		if err := m.restoreIfEmpty(ctx, target); err != nil {
			return err
		}
	}
	store, err := dirdb.Open(ctx, m.Data)
	if err != nil {
		return err
	}
	store.SetViewCacheBudget(viewCache)
	store.SetWarmSearch(true)
	// Counted from the start (a first start's demo load), served on the metrics address.
	var (
		web  *httpMetrics
		work *workMetrics
	)
	if *hf.metricsAddr != "" {
		web, work = newHTTPMetrics(), newWorkMetrics(m.Log)
		cfg.Metrics = web
		store.SetImportCounter(work.imports)
	}
	storeOpen := true
	closeStore := func() {
		if storeOpen {
			store.Close()
			storeOpen = false
		}
	}
	defer closeStore()
	if err := m.republishStale(ctx, store); err != nil {
		return err
	}
	var rep *replicate.Replicator
	if tf == nil {
		if err := m.loadDemoIfEmpty(ctx, store); err != nil {
			return err
		}
	} else {
		rep, err = m.replicateFolder(ctx, store, target, *interval, replicate.VerifyOptions{Every: *verifyEvery})
		if err != nil {
			return err
		}
		// The service's connections close before Litestream's (see replicate.Replicator). Object
		// storage gets shutdownStorageGrace to take what it lacks.
		defer func() {
			closeStore()
			cctx, cancel := context.WithTimeout(context.Background(), shutdownStorageGrace)
			defer cancel()
			if err := rep.Close(cctx); err != nil {
				m.Log.Error("stop replication: a replica lacks changes (the next start copies them)", "err", err)
			}
		}()
	}
	ready := newReadiness(store, m.Log, nil)
	defer ready.start(ctx)() // before the store closes
	key, err := m.serverKey(ctx, store, *acceptNewKey)
	if err != nil {
		return err
	}
	access, err := primary.NewAccess(ctx, store, key, nil)
	if err != nil {
		return err
	}
	access.Issuer = cfg.BaseURL
	access.SandboxDirectory = cfg.SandboxDirectory
	go m.retireKeys(ctx, access)
	cfg.Catalog, cfg.Keys = store, store
	cfg.Ready = ready.Ready
	replicationToken := ""
	if repToken != nil {
		replicationToken = *repToken
	}
	cfg.CursorSecret = cursorSecret(key, replicationToken)
	if rep != nil {
		cfg.Status = func(context.Context) dirsvc.NodeStatus { return primaryStatus(rep, *maxStorageLag) }
		cfg.EdgeToken = *repToken
	}
	cfg.StorageProbe = storageProbe(m.Data, replicaFolder(m.Data, target))
	handler := edge.New(cfg)
	forwarding := moderationConfig(store)
	forwarding.Log = m.Log
	if rep != nil {
		forwarding.Replicate = replicateFileOf(rep, m.Data, *replicaWait, dirsvc.OpsFile)
	}
	ps := &primary.Server{Edge: handler, Access: access, Log: m.Log, Federation: federation.New(forwarding),
		Portal: primary.NewPortal(access, handler, key, cfg.SignupLimits, nil)}
	ps.Portal.Log = m.Log
	if rep != nil {
		ps.Portal.Replicate = func(ctx context.Context) error {
			_, pending, err := replicateFiles(ctx, rep, m.Data, *replicaWait, dirsvc.PlatformFile)
			if err == nil && pending {
				err = dirsvc.ErrStorageUnconfirmed
			}
			return err
		}
	}
	if *adminToken != "" {
		ps.Admin = &primary.AdminAPI{Store: store, Token: *adminToken, Log: m.Log, Moderation: ps.Federation}
		if rep != nil {
			ps.Admin.Replicate = func(ctx context.Context, dir string) (primary.Replication, error) {
				return replicateWrite(ctx, rep, m.Data, dir, *replicaWait)
			}
		}
	}
	hooks := webhook.Config{Store: store, Clients: store, Feed: primary.WebhookFeed(handler, store.ChangeHead),
		Directories: store.Slugs, SealKey: primary.WebhookSealKey(key), Log: m.Log, AllowNetworks: hookNetworks}
	if len(hookNetworks) > 0 {
		m.Log.Info("webhooks may reach these networks besides the public internet", "networks", fmt.Sprint(hookNetworks))
	}
	if rep != nil {
		hooks.Replicate = replicateFileOf(rep, m.Data, *replicaWait, dirsvc.WebhooksFile)
	}
	if work != nil {
		hooks.Metrics = work
	}
	if ps.Webhooks, err = webhook.New(hooks); err != nil {
		return err
	}
	exports := export.Config{Data: m.Data, Catalog: store, LinkKey: primary.ExportLinkKey(key),
		BaseURL: cfg.BaseURL, Log: m.Log, Clients: store}
	if target.S3 != nil {
		blobs, err := target.Blobs(ctx, replicate.ExportsPrefix)
		if err != nil {
			return err
		}
		exports.Store = exportStore{blobs}
	}
	if work != nil {
		exports.Metrics = work
	}
	if ps.Exports, err = export.New(exports); err != nil {
		return err
	}
	if err := ps.Mount(); err != nil {
		return err
	}
	go ps.Webhooks.Run(ctx)
	// Exports hold a snapshot of a directory while they run: they end before the store closes.
	exportCtx, stopExports := context.WithCancel(ctx)
	exportsDone := make(chan struct{})
	go func() { ps.Exports.Run(exportCtx); close(exportsDone) }()
	defer func() { stopExports(); <-exportsDone }()
	go m.pruneChanges(ctx, store)
	mirrorSealer, err := seal.New(primary.MirrorSealKey(key))
	if err != nil {
		return err
	}
	mirrorCfg := federation.MirrorConfig{Store: store, Directories: store.Slugs, Sealer: mirrorSealer,
		Guard: webhook.NewGuard(*mirrorLoopback), Interval: *mirrorInterval, Log: m.Log}
	if work != nil {
		mirrorCfg.Wrote = work.mirrored
	}
	mirrors := federation.NewHarvester(mirrorCfg)
	mirrorCtx, stopMirrors := context.WithCancel(ctx)
	mirrorsDone := make(chan struct{})
	go func() { mirrors.Run(mirrorCtx); close(mirrorsDone) }()
	defer func() { stopMirrors(); <-mirrorsDone }() // harvests write to the store: they end before it closes
	if rep != nil && *repToken != "" {
		stream, err := replicate.Stream(rep, *repToken, func(ctx context.Context) (*dirsvc.Platform, error) {
			p, err := store.Platform(ctx)
			if p != nil {
				p.BaseURL = cfg.BaseURL
			}
			return p, err
		})
		if err != nil {
			return err
		}
		// The stream checks the token itself too; in front of it, failures are limited per address
		// and logged as the admin API's are.
		handler.Handle(replicate.StreamPrefix, handler.RequireBearer("replication", *repToken, streamUnauthorized, stream))
	}
	if rep != nil && *hf.metricsAddr != "" {
		unregister, err := registerReplicationMetrics(rep, *maxStorageLag)
		if err != nil {
			return err
		}
		defer unregister()
	}
	if work != nil {
		work.queue, work.running = ps.Webhooks.Queue, ps.Exports.Running
		unregister, err := registerMetrics(prometheus.DefaultRegisterer, web, work)
		if err != nil {
			return err
		}
		defer unregister()
	}
	unregisterReady, err := ready.register()
	if err != nil {
		return err
	}
	defer unregisterReady()
	stopMetrics, err := m.startMetrics(*hf.metricsAddr, handler.Report())
	if err != nil {
		return err
	}
	defer stopMetrics()
	return m.serveHTTP(ctx, ln, handler)
}

// pruneEvery is how often the primary prunes each directory's change log past its retention.
const pruneEvery = time.Hour

// pruneChanges removes, every pruneEvery, the events older than the retention (13 months) from every
// directory's change log, a bounded batch per write; a directory busy with a write (an import) is
// left for the next round rather than waited for.
func (m *Main) pruneChanges(ctx context.Context, store *dirdb.Store) {
	const batch = 10_000
	t := time.NewTicker(pruneEvery)
	defer t.Stop()
	for {
		slugs, err := store.Slugs(ctx)
		for _, slug := range slugs {
			d, err := store.Directory(ctx, slug)
			for n := batch; err == nil && n == batch; {
				n, err = d.PruneChanges(ctx, dirsvc.RetentionStart(time.Now()), batch)
			}
			if err != nil && !errors.Is(err, dirdb.ErrWriteBusy) && ctx.Err() == nil {
				m.Log.Error("prune the change log", "directory", slug, "err", err)
			}
		}
		if err != nil && ctx.Err() == nil {
			m.Log.Error("prune the change logs: list directories", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// cursorSecret returns the secret the keys of list cursors derive from, which every node of a
// deployment must share so that each accepts the cursors the others gave: the replication token,
// which the primary and each of its edges are given, when there is one; else the server key (a node
// no edge follows).
func cursorSecret(serverKey []byte, replicationToken string) []byte {
	if replicationToken != "" {
		return []byte(replicationToken)
	}
	return serverKey
}

// httpFlags are the flags of every mode that serves the API.
type httpFlags struct {
	baseURL, ipHeader, metricsAddr, memoryLimit, sandboxDir *string
	perMinute, perDay, listCost                             *int
}

func addHTTPFlags(fs *flag.FlagSet) *httpFlags {
	return &httpFlags{
		baseURL:     fs.String("base-url", envOr("DIRSVC_BASE_URL", ""), "public address of the service, e.g. https://directory.example.org ($DIRSVC_BASE_URL)"),
		ipHeader:    fs.String("client-ip-header", envOr("DIRSVC_CLIENT_IP_HEADER", ""), "header in which a trusted proxy in front names the client's address, e.g. Fly-Client-IP ($DIRSVC_CLIENT_IP_HEADER); set it only behind such a proxy"),
		perMinute:   fs.Int("anonymous-per-minute", envInt("DIRSVC_ANONYMOUS_PER_MINUTE", edge.DefaultAnonymousLimits.PerMinute), "requests a minute per anonymous client address"),
		perDay:      fs.Int("anonymous-per-day", envInt("DIRSVC_ANONYMOUS_PER_DAY", edge.DefaultAnonymousLimits.PerDay), "requests a day per anonymous client address"),
		listCost:    fs.Int("list-cost", envInt("DIRSVC_LIST_COST", 1), "requests of a caller's rate limit that a list or search counts as; 1 counts every request alike, as the specification's limits do ($DIRSVC_LIST_COST)"),
		memoryLimit: fs.String("memory-limit", envOr("DIRSVC_MEMORY_LIMIT", ""), "soft memory limit of the Go runtime, e.g. 1536MiB or 2GB ($DIRSVC_MEMORY_LIMIT); GOMEMLIMIT in the environment wins; default 80% of the cgroup's memory limit, else of physical memory. The view cache takes a quarter of it, at most 256 MiB"),
		sandboxDir:  fs.String("sandbox-directory", envOr("DIRSVC_SANDBOX_DIRECTORY", "demo"), "the demonstration directory: its developer portal issues sandbox credentials at sign-up, for it alone; none (or empty) offers no sign-up ($DIRSVC_SANDBOX_DIRECTORY)"),
		metricsAddr: fs.String("metrics-addr", envOr("DIRSVC_METRICS_ADDR", ""), "private address of Prometheus metrics (/metrics) and the full health report (/healthz), e.g. 127.0.0.1:9090 ($DIRSVC_METRICS_ADDR)"),
	}
}

// config returns the server configuration the flags give, for a node of mode listening on addr.
// The base URL is the service's public address: in links, in the developer information public caches
// keep, and as the issuer of access tokens, which every node checks. It comes only from configuration,
// never from a request's Host: primary and edge modes require it (the primary and its edges give the
// same), and serve mode, when it is not given, takes the address it listens on.
func (f *httpFlags) config(log *slog.Logger, mode string, addr net.Addr) (edge.Config, error) {
	if *f.listCost < 1 {
		return edge.Config{}, usagef("--list-cost must be at least 1")
	}
	if *f.perMinute < 1 || *f.perDay < 1 {
		return edge.Config{}, usagef("--anonymous-per-minute and --anonymous-per-day must be at least 1")
	}
	base := strings.TrimSuffix(*f.baseURL, "/")
	switch {
	case base != "":
		if err := checkBaseURL(base); err != nil {
			return edge.Config{}, usagef("--base-url: %v", err)
		}
	case mode == "serve":
		base = listenURL(addr)
		log.Info("no --base-url: links and token issuers use the address listened on; give the public address when the service is reached at another",
			"baseURL", base)
	default:
		return edge.Config{}, usagef("--base-url is required in %s mode: the public address of the service, e.g. https://directory.example.org, the same on the primary and every edge", mode)
	}
	sandbox := *f.sandboxDir
	if sandbox == "none" {
		sandbox = ""
	} else if sandbox != "" && !dirsvc.ValidSlug(sandbox) {
		return edge.Config{}, usagef("--sandbox-directory: %q is not a directory slug (none offers no sign-up)", sandbox)
	}
	return edge.Config{Logger: log, BaseURL: base, ClientIPHeader: *f.ipHeader,
		AnonymousLimits: edge.Limits{PerMinute: *f.perMinute, PerDay: *f.perDay}, ListCost: *f.listCost,
		SandboxDirectory: sandbox}, nil
}

// checkBaseURL reports what is wrong with a base URL: it must be an absolute http or https address
// with a host, and nothing a link could not be built on (credentials, a query, a fragment).
func checkBaseURL(base string) error {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return errors.New("want the public address of the service, e.g. https://directory.example.org")
	}
	return nil
}

// listenURL is the http address of a listener: localhost for a wildcard or loopback address.
func listenURL(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "http://" + addr.String()
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() || ip.IsLoopback() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// startMetrics serves, on their own (private) address when one is given, Prometheus metrics at
// /metrics (the requests answered, shed and limited; on serve and primary also the webhooks',
// exports', imports' and mirrors' work; the replication's: Litestream's per file on a primary, the
// follower's per directory on an edge; and the Go runtime's), the node's full health report at
// /healthz (the public /healthz says only whether the node is healthy), and Go's profiles at
// /debug/pprof/.
func (m *Main) startMetrics(addr string, report http.Handler) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen for metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.Handler())
	mux.Handle("GET /healthz", report)
	// Profiles of the running process, for an operator diagnosing load (private, as the rest).
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	m.Log.Info("metrics", "addr", ln.Addr().String())
	return func() { srv.Close() }, nil
}

// serveHTTP serves handler on ln until ctx ends, then shuts down gracefully.
//
// Every answer is bounded as a whole: its request read within 30 s, its answer written within 60 s.
// Streamed bodies are the exception (export and Bulk Data files through their signed links,
// forwarded by an edge too; sitemaps; feed pages): they take minutes over an ordinary link, so once
// their request is read the handler (edge.Server) replaces the whole-response bound with an idle one,
// cutting a client that takes nothing for edge.DefaultStreamIdle (30 s); a range request resumes a
// cut download. The replication stream keeps the whole-response bound, which its long poll
// (replicate.MaxStreamWait) stays within.
func (m *Main) serveHTTP(ctx context.Context, ln net.Listener, handler http.Handler) error {
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		// Edges wait up to replicate.MaxStreamWait for a change on the replication stream.
		WriteTimeout:   60 * time.Second,
		IdleTimeout:    120 * time.Second,
		MaxHeaderBytes: 64 << 10,
		BaseContext:    func(net.Listener) context.Context { return ctx },
	}
	m.Log.Info("listening", "addr", ln.Addr().String(), "data", m.Data)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	m.Log.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shut down: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	m.Log.Info("stopped")
	return nil
}

// republishStale publishes again every directory whose stored views an older version of the
// projection rules made (see dirsvc.ProjectionVersion), before anything is served or replicated: an
// upgrade that shows some audience less than before holds from the first answer, on every copy.
// Only the directories republished are opened, and each is closed again after.
func (m *Main) republishStale(ctx context.Context, store *dirdb.Store) error {
	slugs, err := store.Slugs(ctx)
	if err != nil {
		return err
	}
	for _, slug := range slugs {
		stale, err := store.StaleViews(ctx, slug)
		if err != nil {
			// Its reads answer 500 and say why; the other directories are served.
			m.Log.Error("a directory cannot be read", "directory", slug, "err", err)
			continue
		} else if !stale {
			continue
		}
		d, err := store.Directory(ctx, slug)
		if err != nil {
			m.Log.Error("a directory cannot be opened", "directory", slug, "err", err)
			continue
		}
		start := time.Now()
		pctx, prog := m.loading(ctx, "republishing under the current projection rules", false, "directory", slug)
		stats, err := d.Republish(pctx)
		prog.end()
		store.Release(slug)
		if errors.Is(err, dirsvc.ErrNotFound) {
			continue // never imported: no views to make
		} else if err != nil {
			return fmt.Errorf("republish %s under the current projection rules: %w", slug, err)
		}
		m.Log.Info("republished under the current projection rules", "directory", slug, "version", dirsvc.ProjectionVersion,
			"updated", stats.Updated, "unchanged", stats.Unchanged, "events", stats.Events, "duration", time.Since(start))
	}
	return nil
}

// loadDemoIfEmpty loads the demo directories into a data folder that holds none.
func (m *Main) loadDemoIfEmpty(ctx context.Context, store *dirdb.Store) error {
	slugs, err := store.Slugs(ctx)
	if err != nil || len(slugs) > 0 {
		return err
	}
	for _, gen := range []func(*bytes.Buffer) error{
		func(b *bytes.Buffer) error { return demo.Demo(b) },
		func(b *bytes.Buffer) error { return demo.DemoNZ(b) },
	} {
		var buf bytes.Buffer
		if err := gen(&buf); err != nil {
			return fmt.Errorf("generate demo: %w", err)
		}
		start := time.Now()
		pctx, prog := m.loading(ctx, "loading demo directory", false)
		slug, stats, err := primary.Import(pctx, store, &buf)
		prog.end()
		if err != nil {
			return fmt.Errorf("load demo: %w", err)
		}
		m.Log.Info("loaded demo directory", "directory", slug, "records", stats.Created, "duration", time.Since(start))
		m.Log.Debug("import steps", stepAttrs(slug, stats.Steps)...)
	}
	return nil
}

// restoreIfEmpty restores every file the target holds into a data folder that holds no platform
// file yet, all or nothing (see restoreFolder); a target that holds nothing leaves the folder empty.
// A restore that fails stops the start: serving a folder without its directories would replicate
// them as empty. Object storage, when configured, is the copy restored from unless the folder holds
// a later position (the replica folder usually sits on the lost volume).
func (m *Main) restoreIfEmpty(ctx context.Context, target replicate.Target) error {
	if _, err := os.Stat(dirsvc.FilePath(m.Data, dirsvc.PlatformFile)); err == nil {
		return nil
	}
	start := time.Now()
	m.Log.Info("restoring the empty data folder from the replica target")
	points, err := restoreFolder(ctx, m.Data, target, replicate.At{}, func(p replicate.Restored) {
		m.Log.Info("restored", "file", p.Name, "position", p.TXID, "as_of", p.Time, "elapsed", time.Since(start).Round(time.Millisecond))
	})
	if errors.Is(err, replicate.ErrNotReplicated) && len(points) == 0 {
		m.Log.Info("the replica target holds nothing yet: starting empty")
		return nil
	} else if err != nil {
		return fmt.Errorf("restore the empty data folder from the replica target (nothing was served; fix the target and start again): %w", err)
	}
	if _, err := replicate.NewLineage(m.Data); err != nil { // edges bootstrap afresh
		return err
	}
	m.Log.Info("restored the data folder from the replica target", "files", len(points), "duration", time.Since(start).Round(time.Millisecond))
	return nil
}

// replicateFolder starts replicating every file of the data folder, and every file created later
// (a directory imported by another process: its files reach the replica before the platform file
// that lists it, see replicate.Options.Files), and copies every file to the replica folder once
// before it returns: a node serves only a folder its replica holds. A copy that fails is logged and
// tried again by the Replicator (the health report says so); the node serves all the same.
func (m *Main) replicateFolder(ctx context.Context, store *dirdb.Store, target replicate.Target, interval time.Duration, verify replicate.VerifyOptions) (*replicate.Replicator, error) {
	names, err := filesOf(ctx, store, m.Data)
	if err != nil {
		return nil, err
	}
	rep, err := replicate.Open(ctx, m.Data, target, names, replicate.Options{Log: m.Log, Interval: interval, Verify: verify,
		Platform: edgePlatform(m.Data), Files: folderFiles(m.Data)})
	if err != nil {
		return nil, err
	}
	if err := rep.Sync(ctx); err != nil {
		m.Log.Error("copy the data folder to the replica folder before serving; trying again", "err", err)
	}
	m.Log.Info("replicating", "files", len(names))
	return rep, nil
}

// shutdownStorageGrace is how long a stopping primary lets object storage take what it lacks,
// after the HTTP server has drained (up to 10 s): a primary stops within 20 s of SIGTERM.
const shutdownStorageGrace = 5 * time.Second

// replicateWrite replicates a directory's latest write through the admin API: both of its files
// (the published directory file and the canonical records in ops), and the platform file that
// registers the directory (a restore needs it; a primary killed before its first sync of the
// platform left a replica that held the write but could not be restored), are synced to the
// replica folder at once, and object storage is given up to wait to hold them. It returns the
// directory's position, and "object-storage" as pending when the bucket did not confirm in time.
func replicateWrite(ctx context.Context, rep *replicate.Replicator, data, dir string, wait time.Duration) (primary.Replication, error) {
	var out primary.Replication
	positions, pending, err := replicateFiles(ctx, rep, data, wait,
		dirsvc.PlatformFile, dirsvc.FileName(dirsvc.DirectoryFile, dir), dirsvc.FileName(dirsvc.OpsFile, dir))
	if err != nil {
		return out, err
	}
	out.Position = positions[dirsvc.FileName(dirsvc.DirectoryFile, dir)]
	out.Lineage = rep.Lineage(dirsvc.FileName(dirsvc.DirectoryFile, dir))
	if pending {
		out.Pending = []string{"object-storage"}
	}
	return out, nil
}

// replicateFiles syncs the named files of the data folder (those that exist: a directory's ops and
// webhooks files appear with their first write) to the replica folder at once, and gives object
// storage up to wait to hold them; pending is true when it did not confirm in time.
func replicateFiles(ctx context.Context, rep *replicate.Replicator, data string, wait time.Duration, names ...string) (positions map[string]uint64, pending bool, err error) {
	positions = map[string]uint64{}
	for _, name := range names {
		if _, err := os.Stat(dirsvc.FilePath(data, name)); err != nil {
			continue
		}
		if _, err := rep.Add(ctx, name); err != nil { // created since the last look
			return nil, false, err
		}
		pos, err := rep.SyncFile(ctx, name)
		if err != nil {
			return nil, false, err
		}
		positions[name] = pos
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for name, pos := range positions {
		if !rep.Stored(wctx, name, pos) {
			return positions, true, nil
		}
	}
	return positions, false, nil
}

// primaryStatus reports a primary's files and their positions, whether its replicas hold every
// committed change, and the damaged files of its replica folder. A primary is healthy while it
// serves: it is the only writer, and a replica that is behind or damaged (said under replication)
// is no reason to stop its reads.
func primaryStatus(rep *replicate.Replicator, maxLag time.Duration) dirsvc.NodeStatus {
	st := dirsvc.NodeStatus{Role: dirsvc.RolePrimary, Healthy: true,
		Replication: &dirsvc.ReplicationStatus{Healthy: true, ObjectStorage: rep.HasBucket(), MaxLagSeconds: maxLag.Seconds()}}
	rs := st.Replication
	for _, f := range rep.Status() {
		fs := dirsvc.FileStatus{Name: f.Name, Position: f.Position, LagSeconds: f.FolderLag.Seconds()}
		rs.FolderLagSeconds = max(rs.FolderLagSeconds, f.FolderLag.Seconds())
		rs.FolderFailing = rs.FolderFailing || f.FolderErr != nil
		if b := f.Bucket; b != nil {
			pos := b.Position
			fs.StoredPosition, fs.StorageLagSeconds = &pos, b.Lag.Seconds()
			rs.StorageLagSeconds = max(rs.StorageLagSeconds, b.Lag.Seconds())
			rs.StorageFailing = rs.StorageFailing || b.Err != nil
		}
		st.Files = append(st.Files, fs)
	}
	rs.Healthy = rs.FolderLagSeconds <= maxLag.Seconds() && rs.StorageLagSeconds <= maxLag.Seconds()
	for _, d := range rep.Damaged() {
		rs.DamagedFiles = append(rs.DamagedFiles, dirsvc.DamagedReplicaFile{File: d.Name, LTX: d.LTX, SnapshotPast: d.SnapshotPast})
		rs.Healthy = rs.Healthy && d.SnapshotPast != 0
	}
	return st
}

// checkSecretFlag refuses a weak token given to the flag name, saying how to make a good one.
func checkSecretFlag(name, v string) error {
	if err := dirsvc.CheckSecret(v); err != nil {
		return usagef("--%s: the token is weak: %v; %s", name, err, dirsvc.GenerateSecretHint)
	}
	return nil
}

// streamUnauthorized answers a request to the replication stream without the right token as the
// stream itself does.
func streamUnauthorized(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	http.Error(w, "the replication token is missing or wrong", http.StatusUnauthorized)
}

// exportStore keeps exports' files in the bucket the primary replicates to.
type exportStore struct{ *replicate.Blobs }

func (s exportStore) Open(ctx context.Context, name string) (export.Blob, error) {
	b, err := s.Blobs.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// replicateFileOf returns what makes an acknowledged change of a directory's file (file: one of
// dirsvc.DirectoryFiles) durable in every replica before it is answered: an error when object
// storage does not confirm it within wait.
func replicateFileOf(rep *replicate.Replicator, data string, wait time.Duration, file string) func(context.Context, string) error {
	return func(ctx context.Context, dir string) error {
		_, pending, err := replicateFiles(ctx, rep, data, wait, dirsvc.FileName(file, dir))
		if err == nil && pending {
			err = dirsvc.ErrStorageUnconfirmed
		}
		return err
	}
}
