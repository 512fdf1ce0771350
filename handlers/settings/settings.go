// Package settings holds the configuration values the HTTP service reads: the handlers and the
// server are given a Settings; the binary's configuration (cmd/dataplatform/config) embeds it,
// reads it from the environment and documents it.
package settings

import (
	"net/netip"
	"runtime"
	"time"
)

// Settings are the values the service reads. Field comments name the environment variable.
type Settings struct {
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
	LogRequests      bool          // DP_LOG_REQUESTS
	MetricsToken     string        // DP_METRICS_TOKEN: bearer token for /metrics on the public listener; empty: not served there
	// RecordConcurrency: record API requests working on the database at once (others queue);
	// DP_RECORD_CONCURRENCY, default 4 per CPU, 0 = no limit.
	RecordConcurrency int
	// QueryResultBytes: the rows a query answers in one response, as JSON (more are cut, with
	// a warning), and the largest row user SQL may return anywhere; DP_QUERY_RESULT_BYTES,
	// default 10 MiB.
	QueryResultBytes int64
	// DescriptionCacheBytes: the memory the datasets' parsed descriptions may take (estimated);
	// DP_DESCRIPTION_CACHE_BYTES, default 512 MiB, about 1,600 typical datasets. A request
	// to a dataset whose description is not kept renders it (a few milliseconds of CPU).
	DescriptionCacheBytes int64
	// QueryConcurrency: user SQL (project queries, record SQL, dashboard tiles, views) running
	// at once on the database, whoever runs it and across replicas; DP_QUERY_CONCURRENCY,
	// default 2 per CPU (at least 4). A query past it waits up to QueryQueueWait
	// (DP_QUERY_QUEUE_WAIT, default 2s), then is refused with 503 and Retry-After.
	QueryConcurrency int
	QueryQueueWait   time.Duration
	// QueryConcurrencyPerOrg: the part of QueryConcurrency one organization's SQL may hold at
	// once (DP_QUERY_CONCURRENCY_PER_ORG; 0: a quarter of it, at least 1), so that one
	// tenant's heavy SQL leaves the database's other cores to the rest. A query past it waits
	// QueryQueueWait too, then is refused with 429 and Retry-After.
	QueryConcurrencyPerOrg int
	JobLease               time.Duration // DP_JOB_LEASE: how long a dead worker's job waits before another takes it
	StreamHeartbeat        time.Duration // DP_STREAM_HEARTBEAT: the comment line change streams send when quiet; default 15s
	SecretKey              string        // DP_SECRET_KEY: base64 AES-256 key for stored credentials; empty: DataDir/secret.key
	LLMBaseURL             string        // DP_LLM_BASE_URL: an OpenAI-compatible API for natural language; empty: the built-in engine only
	LLMAPIKey              string        // DP_LLM_API_KEY
	LLMModel               string        // DP_LLM_MODEL
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
	// MCPWrites (DP_MCP_WRITES, default false) lets the MCP server (/api/v1/mcp) offer its
	// write tools at all; each API key must allow them too (its mcp_writes).
	MCPWrites bool
}

// DefaultAdminEmail is the first owner's address without DP_ADMIN_EMAIL: a reserved domain
// (RFC 2606) that every client's `format: email` check accepts, unlike admin@localhost.
const DefaultAdminEmail = "admin@example.com"

// Defaults returns the settings with nothing set.
func Defaults() Settings {
	return Settings{
		DataDir:               "./data",
		BaseURL:               "http://localhost:8080",
		MaxUploadBytes:        1 << 30,
		UploadMinRate:         8 << 10,
		UploadRateWindow:      30 * time.Second,
		MaxBodyBytes:          1 << 20,
		AccessTokenTTL:        time.Hour,
		RefreshTokenTTL:       30 * 24 * time.Hour,
		SessionMaxAge:         14 * 24 * time.Hour,
		BcryptCost:            12,
		LogRequests:           true,
		RecordConcurrency:     4 * runtime.NumCPU(),
		QueryResultBytes:      10 << 20,
		DescriptionCacheBytes: 512 << 20,
		QueryConcurrency:      max(4, 2*runtime.NumCPU()),
		QueryQueueWait:        2 * time.Second,
		JobLease:              30 * time.Second,
		WebhookTimeout:        10 * time.Second,
		// Svix disables after five days of failures.
		WebhookDisableAfter:    5 * 24 * time.Hour,
		WebhookDisableFailures: 100,
		DashboardVersionsKept:  50,
	}
}

// OrgQueryShare is QueryConcurrencyPerOrg, its default worked out.
func (s Settings) OrgQueryShare() int {
	if s.QueryConcurrencyPerOrg > 0 {
		return min(s.QueryConcurrencyPerOrg, s.QueryConcurrency)
	}
	return max(1, s.QueryConcurrency/4)
}

// OIDCEnabled reports whether an external identity provider is configured.
func (s Settings) OIDCEnabled() bool { return s.OIDCIssuer != "" }
