// Command dataplatform is the service binary.
//
//	dataplatform serve     run the HTTP server (embedded PostgreSQL unless DATABASE_URL is set)
//	dataplatform migrate   apply database migrations and exit
//	dataplatform keys rotate   start signing access tokens with a new key
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"dataplatform/cmd/dataplatform/config"
	"dataplatform/handlers"
	"dataplatform/handlers/auth"
	"dataplatform/handlers/server"
	"dataplatform/store"
	"dataplatform/store/pgembed"
)

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	cmd, args := os.Args[1], os.Args[2:]
	if cmd == "keys" && len(args) > 0 && args[0] == "rotate" {
		cmd, args = "keys rotate", args[1:]
	}
	var err error
	switch cmd {
	case "serve":
		err = serve(args)
	case "migrate":
		err = withDatabase(cmd, args, func(ctx context.Context, cfg config.Config, st *store.Store, log *slog.Logger) error {
			log.Info("migrations applied")
			return nil
		})
	case "keys rotate":
		err = withDatabase(cmd, args, func(ctx context.Context, cfg config.Config, st *store.Store, log *slog.Logger) error {
			ks, err := auth.NewKeyStore(ctx, st, time.Now, cfg.AccessTokenTTL+auth.ClockSkew)
			if err != nil {
				return err
			}
			kid, err := ks.Rotate(ctx)
			if err == nil {
				log.Info("new signing key; the previous one keeps verifying until its tokens expire", "kid", kid)
			}
			return err
		})
	case "-h", "--help", "help":
		usage()
		return
	default:
		usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "dataplatform:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, `usage: dataplatform <command> [flags]

commands:
  serve         run the HTTP server (embedded PostgreSQL unless DATABASE_URL is set)
  migrate       apply database migrations and exit
  keys rotate   sign new access tokens with a fresh key (the old one verifies until its tokens expire)

Configuration comes from the environment (see README); run 'dataplatform serve -h' for the flags.`)
}

func logger(level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: l}))
}

// withDatabase loads the configuration, starts the embedded cluster when needed, connects,
// migrates and runs fn; the cluster is stopped afterwards.
func withDatabase(name string, args []string, fn func(ctx context.Context, cfg config.Config, st *store.Store, log *slog.Logger) error) error {
	fs := flag.NewFlagSet(name, flag.ExitOnError)
	cfg, err := config.Load(fs, args)
	if err != nil {
		return err
	}
	log := logger(cfg.LogLevel)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	st, _, cleanup, err := openDatabase(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer cleanup()
	return fn(ctx, cfg, st, log)
}

func openDatabase(ctx context.Context, cfg config.Config, log *slog.Logger) (*store.Store, string, func(), error) {
	start := time.Now()
	url, cleanup := cfg.DatabaseURL, func() {}
	if url == "" {
		if err := os.MkdirAll(cfg.DataDir, 0o711); err != nil {
			return nil, "", nil, err
		}
		c, err := pgembed.Start(ctx, filepath.Join(cfg.DataDir, "postgres"), filepath.Join(cfg.DataDir, "postgres.password"), pgembed.Options{Logger: log})
		if err != nil {
			return nil, "", nil, err
		}
		log.Info("embedded PostgreSQL started", "dir", c.Dir, "port", c.Port, "ms", time.Since(start).Milliseconds())
		url, cleanup = c.URL("postgres"), func() {
			if err := c.Stop(); err == nil {
				log.Info("embedded PostgreSQL stopped")
			}
		}
	}
	st, err := store.Open(ctx, url)
	if err != nil {
		cleanup()
		return nil, "", nil, err
	}
	if err := store.Migrate(ctx, st.DB.DB); err != nil {
		st.Close()
		cleanup()
		return nil, "", nil, fmt.Errorf("migrate: %w", err)
	}
	if gaps, err := store.SandboxGaps(ctx, st.DB); err != nil || len(gaps) > 0 {
		log.Warn("the database user may not revoke these from PUBLIC (it is not superuser): user SQL relies on the query guard for them",
			"still_granted", gaps, "error", err)
	}
	return st, url, func() { st.Close(); cleanup() }, nil
}

func serve(args []string) error {
	started := time.Now()
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	cfg, err := config.Load(fs, args)
	if err != nil {
		return err
	}
	log := logger(cfg.LogLevel)
	slog.SetDefault(log)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	st, url, cleanup, err := openDatabase(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer cleanup()
	srv, err := server.New(ctx, server.Deps{Config: cfg, Store: st, DatabaseURL: url, Logger: log})
	if err != nil {
		return err
	}
	defer srv.Close()
	if err := srv.H.Bootstrap(ctx); err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	go srv.Maintain(ctx, 10*time.Minute)
	srv.Listen(ctx)
	srv.Jobs.Start(context.WithoutCancel(ctx))
	defer srv.Jobs.Stop() // after the HTTP server: running jobs go back to the queue
	srv.Webhooks.Start(context.WithoutCancel(ctx))
	defer srv.Webhooks.Stop()
	if cfg.PprofAddr != "" {
		go servePprof(cfg.PprofAddr, log)
	}
	if cfg.MetricsAddr != "" {
		go serveMetrics(cfg.MetricsAddr, log)
	}
	hs := srv.HTTPServer()
	errc := make(chan error, 1)
	go func() { errc <- hs.ListenAndServe() }()
	log.Info("listening", "addr", cfg.Addr, "base_url", cfg.BaseURL, "startup_ms", time.Since(started).Milliseconds(),
		"database", map[bool]string{true: "embedded", false: "external"}[cfg.DatabaseURL == ""])
	select {
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		if strings.Contains(err.Error(), "address already in use") {
			return fmt.Errorf("%w (set DP_ADDR to another address)", err)
		}
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	return hs.Shutdown(sctx)
}

// serveMetrics serves /metrics on a listener of its own, without a token: an address the
// scraper reaches and the public does not.
func serveMetrics(addr string, log *slog.Logger) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", handlers.MetricsHandler)
	log.Info("metrics listening", "addr", addr)
	if err := http.ListenAndServe(addr, mux); err != nil {
		log.Error("metrics", "error", err)
	}
}

// servePprof serves Go's profiler (CPU, heap, goroutines, traces) on a listener of its own,
// never on the API's: it is for operators measuring the server, with no authentication.
func servePprof(addr string, log *slog.Logger) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	log.Info("profiler listening", "addr", addr)
	if err := http.ListenAndServe(addr, mux); err != nil {
		log.Error("profiler", "error", err)
	}
}
