// Command dataplatform is the service binary.
//
//	dataplatform serve     run the HTTP server (embedded PostgreSQL unless DATABASE_URL is set)
//	dataplatform migrate   apply database migrations and exit
//	dataplatform keys rotate   start signing access tokens with a new key
//	dataplatform backup    write one archive of the database, files and secret key
//	dataplatform restore   bring an archive into an empty data directory or database
//	dataplatform config    print the configuration reference (every environment variable) as Markdown
package main

import (
	"cmp"
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
	"dataplatform/handlers/mcp"
	"dataplatform/handlers/records"
	"dataplatform/handlers/server"
	"dataplatform/store"
	"dataplatform/store/backup"
	"dataplatform/store/pgembed"
	"dataplatform/store/secrets"
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
	case "backup":
		err = backupCmd(args)
	case "restore":
		err = restoreCmd(args)
	case "config":
		fmt.Print(config.Markdown())
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
  backup        write one archive (database, uploads, exports, secret key) while the server runs: -o file
  restore       bring an archive into an empty data directory or empty database: -i file
  config        print the configuration reference: every environment variable, its default and meaning

Configuration comes from the environment ('dataplatform config' lists it); run 'dataplatform serve -h' for the flags.`)
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

// openDatabase starts the embedded cluster when there is no DATABASE_URL, opens the pool and
// migrates; it returns the URL that reaches PostgreSQL directly (for LISTEN).
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
	// Through a transaction pooler: no session state on DATABASE_URL; LISTEN and the
	// migrations' session lock need a connection of their own, DATABASE_DIRECT_URL.
	direct := url
	if cfg.DatabaseDirectURL != "" {
		st.Pooled, direct = true, cfg.DatabaseDirectURL
	}
	if err := migrate(ctx, st, direct, url); err != nil {
		_ = st.Close()
		cleanup()
		return nil, "", nil, fmt.Errorf("migrate: %w", err)
	}
	if len(cfg.DatabaseReadURLs) > 0 {
		if err := st.AddStandbys(ctx, cfg.DatabaseReadURLs, cfg.ReadMaxLag, cfg.RedisURL, log); err != nil {
			_ = st.Close()
			cleanup()
			return nil, "", nil, fmt.Errorf("DATABASE_READ_URL: %w", err)
		}
	}
	if gaps, err := store.SandboxGaps(ctx, st.DB); err != nil || len(gaps) > 0 {
		log.Warn("the database user may not revoke these from PUBLIC (it is not superuser): user SQL relies on the query guard for them",
			"still_granted", gaps, "error", err)
	}
	return st, direct, func() { _ = st.Close(); cleanup() }, nil
}

// migrate applies the migrations over direct, the pool's own URL or another.
func migrate(ctx context.Context, st *store.Store, direct, url string) error {
	if direct == url {
		return store.Migrate(ctx, st.DB.DB)
	}
	db, err := store.Open(ctx, direct)
	if err != nil {
		return err
	}
	defer func() { _ = db.Close() }()
	return store.Migrate(ctx, db.DB.DB)
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
	tuneGC(os.Getenv, cgroupMemoryMax(), log)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	st, url, cleanup, err := openDatabase(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer cleanup()
	srv, err := server.New(ctx, server.Deps{Config: cfg.Settings, Store: st, DatabaseURL: url, Logger: log, Records: records.Routes, Agents: mcp.Agents})
	if err != nil {
		return err
	}
	defer func() { _ = srv.Close() }()
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
	hs.Addr = cfg.Addr
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

// embeddedDir and passwordFile are where the embedded cluster lives in a data directory.
func embeddedDir(cfg config.Config) (string, string) {
	return filepath.Join(cfg.DataDir, "postgres"), filepath.Join(cfg.DataDir, "postgres.password")
}

// backupCmd writes an archive of the installation. With the embedded database it reads the
// cluster the running server started (or starts it for the while, when no server runs).
func backupCmd(args []string) error {
	fs := flag.NewFlagSet("backup", flag.ExitOnError)
	out := fs.String("o", "", "the archive to write (default dataplatform-backup-<time>.tar.gz)")
	cfg, err := config.Load(fs, args)
	if err != nil {
		return err
	}
	if *out == "" {
		*out = "dataplatform-backup-" + time.Now().UTC().Format("20060102T150405Z") + ".tar.gz"
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	url := cmp.Or(cfg.DatabaseDirectURL, cfg.DatabaseURL) // pg_dump holds one snapshot: not through a transaction pooler
	if url == "" {
		dir, pw := embeddedDir(cfg)
		var ok bool
		if url, ok = pgembed.Running(dir, pw, "postgres"); !ok {
			c, err := pgembed.Start(ctx, dir, pw, pgembed.Options{})
			if err != nil {
				return err
			}
			defer func() { _ = c.Stop() }()
			url = c.URL("postgres")
		}
	}
	key := []byte(cfg.SecretKey)
	if cfg.SecretKey == "" {
		if key, err = os.ReadFile(filepath.Join(cfg.DataDir, secrets.KeyFile)); errors.Is(err, os.ErrNotExist) {
			key = nil
		} else if err != nil {
			return err
		}
	}
	tmp := *out + ".partial"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	m, err := backup.Write(ctx, url, cfg.DataDir, key, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, *out); err != nil {
		return err
	}
	fmt.Printf("wrote %s: the database at migration %d, %d files (%d bytes)\n", *out, m.Migration, m.Files, m.Bytes)
	if m.SecretKey {
		fmt.Println("WARNING: the archive holds the secret key that decrypts every stored credential: keep it as secret as the key")
	}
	return nil
}

// restoreCmd brings an archive into an empty installation: DATABASE_URL's empty database, or
// a new embedded cluster in an empty data directory; then applies any newer migrations.
func restoreCmd(args []string) error {
	fs := flag.NewFlagSet("restore", flag.ExitOnError)
	in := fs.String("i", "", "the archive to restore (required)")
	cfg, err := config.Load(fs, args)
	if err != nil {
		return err
	}
	if *in == "" {
		return errors.New("restore: -i <archive> is required")
	}
	f, err := os.Open(*in)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	url := cmp.Or(cfg.DatabaseDirectURL, cfg.DatabaseURL)
	if url == "" {
		dir, pw := embeddedDir(cfg)
		if _, err := os.Stat(filepath.Join(dir, "PG_VERSION")); err == nil {
			return fmt.Errorf("%s already holds a database: restore into an empty data directory (or an empty DATABASE_URL)", dir)
		}
		c, err := pgembed.Start(ctx, dir, pw, pgembed.Options{})
		if err != nil {
			return err
		}
		defer func() { _ = c.Stop() }()
		url = c.URL("postgres")
	}
	var envKey []byte
	if cfg.SecretKey != "" {
		envKey = []byte(cfg.SecretKey)
	}
	m, err := backup.Restore(ctx, f, url, cfg.DataDir, envKey)
	if err != nil {
		return err
	}
	st, err := store.Open(ctx, url)
	if err != nil {
		return err
	}
	defer func() { _ = st.Close() }()
	if err := store.Migrate(ctx, st.DB.DB); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	fmt.Printf("restored the backup of %s (migration %d, %d files) into %s\n", m.CreatedAt.Format(time.RFC3339), m.Migration, m.Files, cfg.DataDir)
	return nil
}
