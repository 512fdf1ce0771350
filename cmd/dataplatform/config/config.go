// Package config reads the service configuration from the environment (flags mirror it).
package config

import (
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Config is the whole runtime configuration. Field comments name the environment variable.
type Config struct {
	Addr           string // DP_ADDR
	DatabaseURL    string // DATABASE_URL; empty: embedded cluster under DataDir/postgres
	DataDir        string // DP_DATA_DIR
	BaseURL        string // DP_BASE_URL
	StagingURL     string // DP_STAGING_URL: the staging server of generated descriptions; default BaseURL
	AdminEmail     string // DP_ADMIN_EMAIL
	AdminPassword  string // DP_ADMIN_PASSWORD
	MaxUploadBytes int64  // DP_MAX_UPLOAD_BYTES
	// UploadMinRate is the slowest an upload's body may arrive, in bytes a second, over each
	// UploadRateWindow (which is also the longest it may stall): DP_UPLOAD_MIN_RATE, DP_UPLOAD_RATE_WINDOW.
	UploadMinRate    int64
	UploadRateWindow time.Duration
	MaxBodyBytes     int64         // DP_MAX_BODY_BYTES: JSON request bodies
	CORSOrigins      []string      // DP_CORS_ORIGINS
	AccessTokenTTL   time.Duration // DP_ACCESS_TOKEN_TTL
	RefreshTokenTTL  time.Duration // DP_REFRESH_TOKEN_TTL
	SessionMaxAge    time.Duration // DP_SESSION_MAX_AGE: a browser session's absolute lifetime
	BcryptCost       int           // DP_BCRYPT_COST
	OIDCIssuer       string        // DP_OIDC_ISSUER
	OIDCClientID     string        // DP_OIDC_CLIENT_ID
	OIDCClientSecret string        // DP_OIDC_CLIENT_SECRET
	OIDCRedirectURL  string        // DP_OIDC_REDIRECT_URL
	SMTPURL          string        // DP_SMTP_URL: smtp://user:pass@host:port for invitations and address verification; empty: no mail
	MailFrom         string        // DP_MAIL_FROM: the sender of that mail
	RedisURL         string        // REDIS_URL
	RateLimits       string        // DP_RATE_LIMITS: overrides, "category=N/period,..."
	LogLevel         string        // DP_LOG_LEVEL
	LogRequests      bool          // DP_LOG_REQUESTS
	PprofAddr        string        // DP_PPROF_ADDR: Go's profiler on its own listener; empty: off
	MetricsAddr      string        // DP_METRICS_ADDR: /metrics on its own listener, no token; empty: off
	MetricsToken     string        // DP_METRICS_TOKEN: bearer token for /metrics on the public listener; empty: not served there
	// RecordConcurrency: record API requests working on the database at once (others queue);
	// DP_RECORD_CONCURRENCY, default 4 per CPU, 0 = no limit.
	RecordConcurrency int
	// QueryResultBytes: the rows a query answers in one response, as JSON (more are cut, with
	// a warning), and the largest row user SQL may return anywhere; DP_QUERY_RESULT_BYTES,
	// default 10 MiB.
	QueryResultBytes int64
	// QueryConcurrency: user SQL (project queries, record SQL, dashboard tiles, views) running
	// at once on the database, whoever runs it and across replicas; DP_QUERY_CONCURRENCY,
	// default 2 per CPU (at least 4). A query past it waits up to QueryQueueWait
	// (DP_QUERY_QUEUE_WAIT, default 2s), then is refused with 503 and Retry-After.
	QueryConcurrency int
	QueryQueueWait   time.Duration
	ShutdownTimeout  time.Duration // DP_SHUTDOWN_TIMEOUT
	JobLease         time.Duration // DP_JOB_LEASE: how long a dead worker's job waits before another takes it
	StreamHeartbeat  time.Duration // DP_STREAM_HEARTBEAT: the comment line change streams send when quiet; default 15s
	SecretKey        string        // DP_SECRET_KEY: base64 AES-256 key for stored credentials; empty: DataDir/secret.key
	LLMBaseURL       string        // DP_LLM_BASE_URL: an OpenAI-compatible API for natural language; empty: the built-in engine only
	LLMAPIKey        string        // DP_LLM_API_KEY
	LLMModel         string        // DP_LLM_MODEL
	// DP_CONNECTION_NETWORKS: networks (CIDRs or addresses, "*" for any) beyond the public
	// internet that connected databases may be in
	ConnectionNetworks []netip.Prefix
	// DP_TRUSTED_PROXIES: the reverse proxies (CIDRs or addresses) whose X-Forwarded-For is
	// believed for the client's address (IP allowlists, rate limits, audit rows); empty: the
	// connection's address
	TrustedProxies []netip.Prefix
	// DP_WEBHOOK_NETWORKS: networks beyond the public internet that webhook endpoints may be
	// in (the policy of DP_CONNECTION_NETWORKS); plain http is allowed only to them
	WebhookNetworks []netip.Prefix
	// DP_WEBHOOK_TIMEOUT: one delivery attempt, connection to answer; default 10s
	WebhookTimeout time.Duration
	// DP_WEBHOOK_DISABLE_AFTER and DP_WEBHOOK_DISABLE_FAILURES: an endpoint whose deliveries
	// have failed this long (default 120h), or this many deliveries in a row given up (default
	// 100), is disabled
	WebhookDisableAfter    time.Duration
	WebhookDisableFailures int
	// DashboardVersionsKept: the unpinned versions a dashboard keeps (older ones are removed;
	// pinned ones never); DP_DASHBOARD_VERSIONS_KEPT, default 50.
	DashboardVersionsKept int
	// DatabaseDirectURL (DATABASE_DIRECT_URL) reaches PostgreSQL itself when DATABASE_URL goes
	// through a transaction pooler (PgBouncer pool_mode=transaction): LISTEN, migrations and
	// backups use it, and DATABASE_URL is used without session state. Empty: DATABASE_URL is
	// direct.
	DatabaseDirectURL string
	// DatabaseReadURLs (DATABASE_READ_URL, comma separated) are hot standbys that serve reads
	// which need not see their caller's latest write; ReadMaxLag (DP_READ_MAX_LAG, default
	// 10s) is the replay lag past which a standby is not used.
	DatabaseReadURLs []string
	ReadMaxLag       time.Duration
	// MCPWrites (DP_MCP_WRITES, default false) lets the MCP server (/api/v1/mcp) offer its
	// write tools at all; each API key must allow them too (its mcp_writes).
	MCPWrites bool
}

// DefaultAdminEmail is the first owner's address without DP_ADMIN_EMAIL: a reserved domain
// (RFC 2606) that every client's `format: email` check accepts, unlike admin@localhost.
const DefaultAdminEmail = "admin@example.com"

// Defaults returns the configuration with nothing set.
func Defaults() Config {
	return Config{
		Addr:              ":8080",
		DataDir:           "./data",
		BaseURL:           "http://localhost:8080",
		MaxUploadBytes:    1 << 30,
		UploadMinRate:     8 << 10,
		UploadRateWindow:  30 * time.Second,
		MaxBodyBytes:      1 << 20,
		AccessTokenTTL:    time.Hour,
		RefreshTokenTTL:   30 * 24 * time.Hour,
		SessionMaxAge:     14 * 24 * time.Hour,
		BcryptCost:        12,
		LogLevel:          "info",
		LogRequests:       true,
		RecordConcurrency: 4 * runtime.NumCPU(),
		QueryResultBytes:  10 << 20,
		QueryConcurrency:  max(4, 2*runtime.NumCPU()),
		QueryQueueWait:    2 * time.Second,
		ShutdownTimeout:   20 * time.Second,
		JobLease:          30 * time.Second,
		ReadMaxLag:        10 * time.Second,
		WebhookTimeout:    10 * time.Second,
		// Svix disables after five days of failures.
		WebhookDisableAfter:    5 * 24 * time.Hour,
		WebhookDisableFailures: 100,
		DashboardVersionsKept:  50,
	}
}

// Load reads the environment, then flags of fs (which mirror the variables) over it.
func Load(fs *flag.FlagSet, args []string) (Config, error) {
	c := Defaults()
	env := func(name string, dst *string) {
		if v, ok := os.LookupEnv(name); ok {
			*dst = v
		}
	}
	var cors, maxUpload, maxBody, resultBytes, accessTTL, refreshTTL, bcryptCost, logReq, shutdown, lease string
	env("DP_ADDR", &c.Addr)
	env("DATABASE_URL", &c.DatabaseURL)
	env("DATABASE_DIRECT_URL", &c.DatabaseDirectURL)
	var readURLs, readLag string
	env("DATABASE_READ_URL", &readURLs)
	env("DP_READ_MAX_LAG", &readLag)
	env("DP_DATA_DIR", &c.DataDir)
	env("DP_BASE_URL", &c.BaseURL)
	env("DP_STAGING_URL", &c.StagingURL)
	env("DP_ADMIN_EMAIL", &c.AdminEmail)
	env("DP_ADMIN_PASSWORD", &c.AdminPassword)
	env("DP_CORS_ORIGINS", &cors)
	env("DP_MAX_UPLOAD_BYTES", &maxUpload)
	env("DP_MAX_BODY_BYTES", &maxBody)
	env("DP_QUERY_RESULT_BYTES", &resultBytes)
	env("DP_ACCESS_TOKEN_TTL", &accessTTL)
	env("DP_REFRESH_TOKEN_TTL", &refreshTTL)
	var sessionAge string
	env("DP_SESSION_MAX_AGE", &sessionAge)
	env("DP_BCRYPT_COST", &bcryptCost)
	env("DP_OIDC_ISSUER", &c.OIDCIssuer)
	env("DP_OIDC_CLIENT_ID", &c.OIDCClientID)
	env("DP_OIDC_CLIENT_SECRET", &c.OIDCClientSecret)
	env("DP_OIDC_REDIRECT_URL", &c.OIDCRedirectURL)
	env("DP_SMTP_URL", &c.SMTPURL)
	env("DP_MAIL_FROM", &c.MailFrom)
	env("REDIS_URL", &c.RedisURL)
	env("DP_RATE_LIMITS", &c.RateLimits)
	env("DP_LOG_LEVEL", &c.LogLevel)
	env("DP_LOG_REQUESTS", &logReq)
	env("DP_PPROF_ADDR", &c.PprofAddr)
	env("DP_METRICS_ADDR", &c.MetricsAddr)
	env("DP_METRICS_TOKEN", &c.MetricsToken)
	var recConc string
	env("DP_RECORD_CONCURRENCY", &recConc)
	if recConc != "" {
		n, err := strconv.Atoi(recConc)
		if err != nil || n < 0 {
			return c, fmt.Errorf("DP_RECORD_CONCURRENCY: want a number of requests (0: no limit), got %q", recConc)
		}
		c.RecordConcurrency = n
	}
	env("DP_SHUTDOWN_TIMEOUT", &shutdown)
	env("DP_JOB_LEASE", &lease)
	env("DP_SECRET_KEY", &c.SecretKey)
	env("DP_LLM_BASE_URL", &c.LLMBaseURL)
	env("DP_LLM_API_KEY", &c.LLMAPIKey)
	env("DP_LLM_MODEL", &c.LLMModel)
	var heartbeat, networks string
	env("DP_CONNECTION_NETWORKS", &networks)
	var err error
	if c.ConnectionNetworks, err = networkList("DP_CONNECTION_NETWORKS", networks, true); err != nil {
		return c, err
	}
	var proxies, hooks string
	env("DP_WEBHOOK_NETWORKS", &hooks)
	if c.WebhookNetworks, err = networkList("DP_WEBHOOK_NETWORKS", hooks, true); err != nil {
		return c, err
	}
	env("DP_TRUSTED_PROXIES", &proxies)
	if c.TrustedProxies, err = networkList("DP_TRUSTED_PROXIES", proxies, false); err != nil {
		return c, err
	}
	var minRate, rateWindow string
	env("DP_UPLOAD_MIN_RATE", &minRate)
	env("DP_UPLOAD_RATE_WINDOW", &rateWindow)
	env("DP_STREAM_HEARTBEAT", &heartbeat)
	var hookTimeout, hookDisableAfter, hookDisableFailures string
	env("DP_WEBHOOK_TIMEOUT", &hookTimeout)
	env("DP_WEBHOOK_DISABLE_AFTER", &hookDisableAfter)
	env("DP_WEBHOOK_DISABLE_FAILURES", &hookDisableFailures)
	var versionsKept, mcpWrites string
	env("DP_DASHBOARD_VERSIONS_KEPT", &versionsKept)
	var queryConcurrency, queryWait string
	env("DP_QUERY_CONCURRENCY", &queryConcurrency)
	env("DP_QUERY_QUEUE_WAIT", &queryWait)
	env("DP_MCP_WRITES", &mcpWrites)

	if fs != nil {
		fs.StringVar(&c.Addr, "addr", c.Addr, "listen address (DP_ADDR)")
		fs.StringVar(&c.DatabaseURL, "database-url", c.DatabaseURL, "PostgreSQL URL; empty starts the embedded cluster (DATABASE_URL)")
		fs.StringVar(&c.DataDir, "data-dir", c.DataDir, "data directory (DP_DATA_DIR)")
		fs.StringVar(&c.BaseURL, "base-url", c.BaseURL, "public base URL (DP_BASE_URL)")
		fs.StringVar(&cors, "cors-origins", cors, "allowed CORS origins, comma separated (DP_CORS_ORIGINS)")
		fs.StringVar(&c.RedisURL, "redis-url", c.RedisURL, "Redis URL for shared rate limits (REDIS_URL)")
		fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "debug, info, warn or error (DP_LOG_LEVEL)")
		if err := fs.Parse(args); err != nil {
			return c, err
		}
	}

	for _, o := range strings.Split(cors, ",") {
		if o = strings.TrimSpace(o); o != "" {
			c.CORSOrigins = append(c.CORSOrigins, o)
		}
	}
	for _, u := range strings.Split(readURLs, ",") {
		if u = strings.TrimSpace(u); u != "" {
			c.DatabaseReadURLs = append(c.DatabaseReadURLs, u)
		}
	}
	if (c.DatabaseDirectURL != "" || len(c.DatabaseReadURLs) > 0) && c.DatabaseURL == "" {
		return c, fmt.Errorf("DATABASE_DIRECT_URL and DATABASE_READ_URL go with DATABASE_URL (the embedded cluster has neither pooler nor standbys)")
	}
	for _, n := range []struct {
		name, v string
		dst     *int64
		min     int64
	}{{"DP_MAX_UPLOAD_BYTES", maxUpload, &c.MaxUploadBytes, 1}, {"DP_MAX_BODY_BYTES", maxBody, &c.MaxBodyBytes, 1},
		{"DP_QUERY_RESULT_BYTES", resultBytes, &c.QueryResultBytes, 1024}, {"DP_UPLOAD_MIN_RATE", minRate, &c.UploadMinRate, 0}} {
		if n.v == "" {
			continue
		}
		if *n.dst, err = strconv.ParseInt(n.v, 10, 64); err != nil || *n.dst < n.min {
			return c, fmt.Errorf("%s: want a number of bytes, at least %d, got %q", n.name, n.min, n.v)
		}
	}
	for _, d := range []struct {
		name, v string
		dst     *time.Duration
	}{{"DP_ACCESS_TOKEN_TTL", accessTTL, &c.AccessTokenTTL}, {"DP_REFRESH_TOKEN_TTL", refreshTTL, &c.RefreshTokenTTL},
		{"DP_SESSION_MAX_AGE", sessionAge, &c.SessionMaxAge}, {"DP_SHUTDOWN_TIMEOUT", shutdown, &c.ShutdownTimeout}, {"DP_JOB_LEASE", lease, &c.JobLease},
		{"DP_UPLOAD_RATE_WINDOW", rateWindow, &c.UploadRateWindow}, {"DP_STREAM_HEARTBEAT", heartbeat, &c.StreamHeartbeat},
		{"DP_WEBHOOK_TIMEOUT", hookTimeout, &c.WebhookTimeout}, {"DP_WEBHOOK_DISABLE_AFTER", hookDisableAfter, &c.WebhookDisableAfter},
		{"DP_READ_MAX_LAG", readLag, &c.ReadMaxLag}, {"DP_QUERY_QUEUE_WAIT", queryWait, &c.QueryQueueWait}} {
		if d.v == "" {
			continue
		}
		if *d.dst, err = time.ParseDuration(d.v); err != nil || *d.dst <= 0 {
			return c, fmt.Errorf("%s: want a positive duration such as 1h or 720h, got %q", d.name, d.v)
		}
	}
	if bcryptCost != "" {
		if c.BcryptCost, err = strconv.Atoi(bcryptCost); err != nil || c.BcryptCost < 4 || c.BcryptCost > 31 {
			return c, fmt.Errorf("DP_BCRYPT_COST: want 4 to 31, got %q", bcryptCost)
		}
	}
	if queryConcurrency != "" {
		if c.QueryConcurrency, err = strconv.Atoi(queryConcurrency); err != nil || c.QueryConcurrency < 1 {
			return c, fmt.Errorf("DP_QUERY_CONCURRENCY: want a number of queries, at least 1, got %q", queryConcurrency)
		}
	}
	if versionsKept != "" {
		if c.DashboardVersionsKept, err = strconv.Atoi(versionsKept); err != nil || c.DashboardVersionsKept < 1 {
			return c, fmt.Errorf("DP_DASHBOARD_VERSIONS_KEPT: want a number of versions, at least 1, got %q", versionsKept)
		}
	}
	if hookDisableFailures != "" {
		if c.WebhookDisableFailures, err = strconv.Atoi(hookDisableFailures); err != nil || c.WebhookDisableFailures < 1 {
			return c, fmt.Errorf("DP_WEBHOOK_DISABLE_FAILURES: want a number of deliveries, at least 1, got %q", hookDisableFailures)
		}
	}
	if mcpWrites != "" {
		if c.MCPWrites, err = strconv.ParseBool(mcpWrites); err != nil {
			return c, fmt.Errorf("DP_MCP_WRITES: want true or false, got %q", mcpWrites)
		}
	}
	if logReq != "" {
		if c.LogRequests, err = strconv.ParseBool(logReq); err != nil {
			return c, fmt.Errorf("DP_LOG_REQUESTS: want true or false, got %q", logReq)
		}
	}
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	if c.StagingURL == "" {
		c.StagingURL = c.BaseURL
	}
	if c.LLMBaseURL != "" && c.LLMModel == "" {
		return c, fmt.Errorf("DP_LLM_BASE_URL is set: DP_LLM_MODEL is needed too")
	}
	if c.OIDCIssuer != "" && (c.OIDCClientID == "" || c.OIDCRedirectURL == "") {
		return c, fmt.Errorf("DP_OIDC_ISSUER is set: DP_OIDC_CLIENT_ID and DP_OIDC_REDIRECT_URL are needed too")
	}
	if c.DataDir, err = filepath.Abs(c.DataDir); err != nil {
		return c, err
	}
	return c, nil
}

// OIDCEnabled reports whether an external identity provider is configured.
func (c Config) OIDCEnabled() bool { return c.OIDCIssuer != "" }

// networkList reads a comma-separated list of networks (10.0.0.0/8) and addresses; "*" is
// every address where any is true.
func networkList(name, list string, any bool) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, n := range strings.Split(list, ",") {
		switch n = strings.TrimSpace(n); {
		case n == "":
		case n == "*" && any:
			out = append(out, netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0"))
		case strings.Contains(n, "/"):
			p, err := netip.ParsePrefix(n)
			if err != nil {
				return nil, fmt.Errorf("%s: %q is not a network such as 10.0.0.0/8: %v", name, n, err)
			}
			out = append(out, p.Masked())
		default:
			a, err := netip.ParseAddr(n)
			if err != nil {
				return nil, fmt.Errorf("%s: %q is neither an address nor a network: %v", name, n, err)
			}
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
		}
	}
	return out, nil
}
