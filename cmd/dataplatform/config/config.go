// Package config reads the service configuration from the environment (flags mirror it).
package config

import (
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"dataplatform/handlers/settings"
)

// Config is the whole runtime configuration: the Settings the service reads, and what only the
// binary uses (listeners, databases, logging). Field comments name the environment variable.
type Config struct {
	settings.Settings
	Addr        string // DP_ADDR
	DatabaseURL string // DATABASE_URL; empty: embedded cluster under DataDir/postgres
	LogLevel    string // DP_LOG_LEVEL
	PprofAddr   string // DP_PPROF_ADDR: Go's profiler on its own listener; empty: off
	MetricsAddr string // DP_METRICS_ADDR: /metrics on its own listener, no token; empty: off
	// ShutdownTimeout: DP_SHUTDOWN_TIMEOUT
	ShutdownTimeout time.Duration
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
}

// DefaultAdminEmail is the first owner's address without DP_ADMIN_EMAIL.
const DefaultAdminEmail = settings.DefaultAdminEmail

// Defaults returns the configuration with nothing set.
func Defaults() Config {
	return Config{
		Settings:        settings.Defaults(),
		Addr:            ":8080",
		LogLevel:        "info",
		ShutdownTimeout: 20 * time.Second,
		ReadMaxLag:      10 * time.Second,
	}
}

// Load reads the environment, then flags of fs (which mirror the variables) over it.
func Load(fs *flag.FlagSet, args []string) (Config, error) {
	c := Defaults()
	var r rawEnv
	if err := readEnv(&c, &r); err != nil {
		return c, err
	}
	if fs != nil {
		fs.StringVar(&c.Addr, "addr", c.Addr, "listen address (DP_ADDR)")
		fs.StringVar(&c.DatabaseURL, "database-url", c.DatabaseURL, "PostgreSQL URL; empty starts the embedded cluster (DATABASE_URL)")
		fs.StringVar(&c.DataDir, "data-dir", c.DataDir, "data directory (DP_DATA_DIR)")
		fs.StringVar(&c.BaseURL, "base-url", c.BaseURL, "public base URL (DP_BASE_URL)")
		fs.StringVar(&r.cors, "cors-origins", r.cors, "allowed CORS origins, comma separated (DP_CORS_ORIGINS)")
		fs.StringVar(&c.RedisURL, "redis-url", c.RedisURL, "Redis URL for shared rate limits (REDIS_URL)")
		fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "debug, info, warn or error (DP_LOG_LEVEL)")
		if err := fs.Parse(args); err != nil {
			return c, err
		}
	}

	c.CORSOrigins = append(c.CORSOrigins, list(r.cors)...)
	c.DatabaseReadURLs = append(c.DatabaseReadURLs, list(r.readURLs)...)
	if (c.DatabaseDirectURL != "" || len(c.DatabaseReadURLs) > 0) && c.DatabaseURL == "" {
		return c, fmt.Errorf("DATABASE_DIRECT_URL and DATABASE_READ_URL go with DATABASE_URL (the embedded cluster has neither pooler nor standbys)")
	}
	if err := c.parseSizes(&r); err != nil {
		return c, err
	}
	if err := c.parseCounts(&r); err != nil {
		return c, err
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
	var err error
	if c.DataDir, err = filepath.Abs(c.DataDir); err != nil {
		return c, err
	}
	return c, nil
}

// rawEnv holds the variables that are parsed once the flags are read, as they were given.
type rawEnv struct {
	cors, maxUpload, maxBody, resultBytes, accessTTL, refreshTTL, bcryptCost, logReq, shutdown, lease string
	readURLs, readLag, sessionAge, heartbeat, minRate, rateWindow                                     string
	hookTimeout, hookDisableAfter, hookDisableFailures, versionsKept, mcpWrites                       string
	queryConcurrency, queryWait, orgQueries, descCache                                                string
}

// readEnv reads the environment into c, and into r what is parsed later.
func readEnv(c *Config, r *rawEnv) error {
	env := func(name string, dst *string) {
		if v, ok := os.LookupEnv(name); ok {
			*dst = v
		}
	}
	env("DP_ADDR", &c.Addr)
	env("DATABASE_URL", &c.DatabaseURL)
	env("DATABASE_DIRECT_URL", &c.DatabaseDirectURL)
	env("DATABASE_READ_URL", &r.readURLs)
	env("DP_READ_MAX_LAG", &r.readLag)
	env("DP_DATA_DIR", &c.DataDir)
	env("DP_BASE_URL", &c.BaseURL)
	env("DP_STAGING_URL", &c.StagingURL)
	env("DP_ADMIN_EMAIL", &c.AdminEmail)
	env("DP_ADMIN_PASSWORD", &c.AdminPassword)
	env("DP_CORS_ORIGINS", &r.cors)
	env("DP_MAX_UPLOAD_BYTES", &r.maxUpload)
	env("DP_MAX_BODY_BYTES", &r.maxBody)
	env("DP_QUERY_RESULT_BYTES", &r.resultBytes)
	env("DP_DESCRIPTION_CACHE_BYTES", &r.descCache)
	env("DP_ACCESS_TOKEN_TTL", &r.accessTTL)
	env("DP_REFRESH_TOKEN_TTL", &r.refreshTTL)
	env("DP_SESSION_MAX_AGE", &r.sessionAge)
	env("DP_BCRYPT_COST", &r.bcryptCost)
	env("DP_OIDC_ISSUER", &c.OIDCIssuer)
	env("DP_OIDC_CLIENT_ID", &c.OIDCClientID)
	env("DP_OIDC_CLIENT_SECRET", &c.OIDCClientSecret)
	env("DP_OIDC_REDIRECT_URL", &c.OIDCRedirectURL)
	env("DP_SMTP_URL", &c.SMTPURL)
	env("DP_MAIL_FROM", &c.MailFrom)
	env("REDIS_URL", &c.RedisURL)
	env("DP_RATE_LIMITS", &c.RateLimits)
	env("DP_LOG_LEVEL", &c.LogLevel)
	env("DP_LOG_REQUESTS", &r.logReq)
	env("DP_PPROF_ADDR", &c.PprofAddr)
	env("DP_METRICS_ADDR", &c.MetricsAddr)
	env("DP_METRICS_TOKEN", &c.MetricsToken)
	var recConc string
	env("DP_RECORD_CONCURRENCY", &recConc)
	if recConc != "" {
		n, err := strconv.Atoi(recConc)
		if err != nil || n < 0 {
			return fmt.Errorf("DP_RECORD_CONCURRENCY: want a number of requests (0: no limit), got %q", recConc)
		}
		c.RecordConcurrency = n
	}
	env("DP_SHUTDOWN_TIMEOUT", &r.shutdown)
	env("DP_JOB_LEASE", &r.lease)
	env("DP_SECRET_KEY", &c.SecretKey)
	env("DP_LLM_BASE_URL", &c.LLMBaseURL)
	env("DP_LLM_API_KEY", &c.LLMAPIKey)
	env("DP_LLM_MODEL", &c.LLMModel)
	var networks, proxies, hooks string
	env("DP_CONNECTION_NETWORKS", &networks)
	var err error
	if c.ConnectionNetworks, err = networkList("DP_CONNECTION_NETWORKS", networks, true); err != nil {
		return err
	}
	env("DP_WEBHOOK_NETWORKS", &hooks)
	if c.WebhookNetworks, err = networkList("DP_WEBHOOK_NETWORKS", hooks, true); err != nil {
		return err
	}
	env("DP_TRUSTED_PROXIES", &proxies)
	if c.TrustedProxies, err = networkList("DP_TRUSTED_PROXIES", proxies, false); err != nil {
		return err
	}
	env("DP_UPLOAD_MIN_RATE", &r.minRate)
	env("DP_UPLOAD_RATE_WINDOW", &r.rateWindow)
	env("DP_STREAM_HEARTBEAT", &r.heartbeat)
	env("DP_WEBHOOK_TIMEOUT", &r.hookTimeout)
	env("DP_WEBHOOK_DISABLE_AFTER", &r.hookDisableAfter)
	env("DP_WEBHOOK_DISABLE_FAILURES", &r.hookDisableFailures)
	env("DP_DASHBOARD_VERSIONS_KEPT", &r.versionsKept)
	env("DP_QUERY_CONCURRENCY", &r.queryConcurrency)
	env("DP_QUERY_CONCURRENCY_PER_ORG", &r.orgQueries)
	env("DP_QUERY_QUEUE_WAIT", &r.queryWait)
	env("DP_MCP_WRITES", &r.mcpWrites)
	return nil
}

// list is the non-empty items of a comma separated list, trimmed.
func list(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// parseSizes parses the byte sizes and durations given.
func (c *Config) parseSizes(r *rawEnv) error {
	var err error
	for _, n := range []struct {
		name, v string
		dst     *int64
		min     int64
	}{{"DP_MAX_UPLOAD_BYTES", r.maxUpload, &c.MaxUploadBytes, 1}, {"DP_MAX_BODY_BYTES", r.maxBody, &c.MaxBodyBytes, 1},
		{"DP_QUERY_RESULT_BYTES", r.resultBytes, &c.QueryResultBytes, 1024}, {"DP_UPLOAD_MIN_RATE", r.minRate, &c.UploadMinRate, 0},
		{"DP_DESCRIPTION_CACHE_BYTES", r.descCache, &c.DescriptionCacheBytes, 1 << 20}} {
		if n.v == "" {
			continue
		}
		if *n.dst, err = strconv.ParseInt(n.v, 10, 64); err != nil || *n.dst < n.min {
			return fmt.Errorf("%s: want a number of bytes, at least %d, got %q", n.name, n.min, n.v)
		}
	}
	for _, d := range []struct {
		name, v string
		dst     *time.Duration
	}{{"DP_ACCESS_TOKEN_TTL", r.accessTTL, &c.AccessTokenTTL}, {"DP_REFRESH_TOKEN_TTL", r.refreshTTL, &c.RefreshTokenTTL},
		{"DP_SESSION_MAX_AGE", r.sessionAge, &c.SessionMaxAge}, {"DP_SHUTDOWN_TIMEOUT", r.shutdown, &c.ShutdownTimeout}, {"DP_JOB_LEASE", r.lease, &c.JobLease},
		{"DP_UPLOAD_RATE_WINDOW", r.rateWindow, &c.UploadRateWindow}, {"DP_STREAM_HEARTBEAT", r.heartbeat, &c.StreamHeartbeat},
		{"DP_WEBHOOK_TIMEOUT", r.hookTimeout, &c.WebhookTimeout}, {"DP_WEBHOOK_DISABLE_AFTER", r.hookDisableAfter, &c.WebhookDisableAfter},
		{"DP_READ_MAX_LAG", r.readLag, &c.ReadMaxLag}, {"DP_QUERY_QUEUE_WAIT", r.queryWait, &c.QueryQueueWait}} {
		if d.v == "" {
			continue
		}
		if *d.dst, err = time.ParseDuration(d.v); err != nil || *d.dst <= 0 {
			return fmt.Errorf("%s: want a positive duration such as 1h or 720h, got %q", d.name, d.v)
		}
	}
	return nil
}

// parseCounts parses the numbers and switches given.
func (c *Config) parseCounts(r *rawEnv) error {
	var err error
	if r.bcryptCost != "" {
		if c.BcryptCost, err = strconv.Atoi(r.bcryptCost); err != nil || c.BcryptCost < 4 || c.BcryptCost > 31 {
			return fmt.Errorf("DP_BCRYPT_COST: want 4 to 31, got %q", r.bcryptCost)
		}
	}
	if r.queryConcurrency != "" {
		if c.QueryConcurrency, err = strconv.Atoi(r.queryConcurrency); err != nil || c.QueryConcurrency < 1 {
			return fmt.Errorf("DP_QUERY_CONCURRENCY: want a number of queries, at least 1, got %q", r.queryConcurrency)
		}
	}
	if r.orgQueries != "" {
		if c.QueryConcurrencyPerOrg, err = strconv.Atoi(r.orgQueries); err != nil || c.QueryConcurrencyPerOrg < 1 {
			return fmt.Errorf("DP_QUERY_CONCURRENCY_PER_ORG: want a number of queries, at least 1, got %q", r.orgQueries)
		}
	}
	if r.versionsKept != "" {
		if c.DashboardVersionsKept, err = strconv.Atoi(r.versionsKept); err != nil || c.DashboardVersionsKept < 1 {
			return fmt.Errorf("DP_DASHBOARD_VERSIONS_KEPT: want a number of versions, at least 1, got %q", r.versionsKept)
		}
	}
	if r.hookDisableFailures != "" {
		if c.WebhookDisableFailures, err = strconv.Atoi(r.hookDisableFailures); err != nil || c.WebhookDisableFailures < 1 {
			return fmt.Errorf("DP_WEBHOOK_DISABLE_FAILURES: want a number of deliveries, at least 1, got %q", r.hookDisableFailures)
		}
	}
	if r.mcpWrites != "" {
		if c.MCPWrites, err = strconv.ParseBool(r.mcpWrites); err != nil {
			return fmt.Errorf("DP_MCP_WRITES: want true or false, got %q", r.mcpWrites)
		}
	}
	if r.logReq != "" {
		if c.LogRequests, err = strconv.ParseBool(r.logReq); err != nil {
			return fmt.Errorf("DP_LOG_REQUESTS: want true or false, got %q", r.logReq)
		}
	}
	return nil
}

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
