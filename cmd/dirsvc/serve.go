package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/edge"
	"github.com/dirsvc/dirsvc/primary"
	"github.com/dirsvc/dirsvc/primary/demo"
)

func (m *Main) serve(ctx context.Context, args []string) error {
	fs := m.flags("serve")
	baseURL := fs.String("base-url", envOr("DIRSVC_BASE_URL", ""), "public address of the service, e.g. https://directory.example.org ($DIRSVC_BASE_URL)")
	ipHeader := fs.String("client-ip-header", envOr("DIRSVC_CLIENT_IP_HEADER", ""), "header in which a trusted proxy in front names the client's address, e.g. Fly-Client-IP ($DIRSVC_CLIENT_IP_HEADER); set it only behind such a proxy")
	perMinute := fs.Int("anonymous-per-minute", envInt("DIRSVC_ANONYMOUS_PER_MINUTE", edge.DefaultAnonymousLimits.PerMinute), "requests a minute per anonymous client address")
	perDay := fs.Int("anonymous-per-day", envInt("DIRSVC_ANONYMOUS_PER_DAY", edge.DefaultAnonymousLimits.PerDay), "requests a day per anonymous client address")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *perMinute < 1 || *perDay < 1 {
		return errors.New("--anonymous-per-minute and --anonymous-per-day must be at least 1")
	}
	// Bind first, so a bad address fails before any work; serve only once the data is ready.
	ln, err := net.Listen("tcp", m.Addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	defer ln.Close()
	store, err := dirdb.Open(ctx, m.Data)
	if err != nil {
		return err
	}
	defer store.Close()
	if err := m.loadDemoIfEmpty(ctx, store); err != nil {
		return err
	}
	key, err := primary.LoadServerKey(filepath.Join(m.Data, "server.key"), envOr("DIRSVC_SERVER_KEY", ""))
	if err != nil {
		return err
	}
	access, err := primary.NewAccess(ctx, store, key, nil)
	if err != nil {
		return err
	}
	access.Issuer = *baseURL
	handler := edge.New(edge.Config{Catalog: store, Logger: m.Log, BaseURL: *baseURL, ClientIPHeader: *ipHeader,
		AnonymousLimits: edge.Limits{PerMinute: *perMinute, PerDay: *perDay}, Keys: store})
	access.Mount(handler, m.Log)
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return ctx },
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
		slug, stats, err := primary.Import(ctx, store, &buf)
		if err != nil {
			return fmt.Errorf("load demo: %w", err)
		}
		m.Log.Info("loaded demo directory", "directory", slug, "records", stats.Created, "duration", time.Since(start))
	}
	return nil
}
