package config

import (
	"fmt"
	"strings"
)

// Variable documents one environment variable that Load reads.
type Variable struct {
	Name    string // as Load reads it
	Default string // what applies when it is unset
	Meaning string // Markdown, one paragraph
}

// Variables is the configuration reference: every variable Load reads, in the order a reader
// meets them. `dataplatform config` prints it; TestReferenceCoversLoad keeps it and Load in
// step, so a variable added to Load without a line here fails the tests.
var Variables = []Variable{
	{"DP_ADDR", "`:8080`", "Listen address (flag `-addr`)."},
	{"DP_DATA_DIR", "`./data`", "The embedded database (`postgres/`, its log `postgres.log`, its superuser password `postgres.password`), uploaded files (`uploads/<organization>/<file id>`) and export files. Replicas must share it (flag `-data-dir`)."},
	{"DP_BASE_URL", "`http://localhost:8080`", "The public address: token issuer, invitation links, `documentation_url` of errors, the production server of generated descriptions; https makes the session cookie `Secure` (flag `-base-url`)."},
	{"DP_STAGING_URL", "`DP_BASE_URL`", "The staging server listed in generated descriptions."},
	{"DP_ADMIN_EMAIL", "`admin@example.com`", "The first owner, created with an organization and a project when no user exists."},
	{"DP_ADMIN_PASSWORD", "random, printed once in the log", "The first owner's password; a weak one (the rule of every new password) stops that first start."},
	{"DATABASE_URL", "unset", "PostgreSQL URL; unset: the embedded cluster under `$DP_DATA_DIR/postgres`. The user needs CREATEROLE for the query endpoints (per-organization query roles) and superuser for connected databases (postgres_fdw, mysql_fdw) and for the revocations that fence user SQL in; without them those answer 501 `NOT_SUPPORTED`, or the server warns at start (flag `-database-url`)."},
	{"DATABASE_DIRECT_URL", "unset", "A URL that reaches PostgreSQL itself, for when `DATABASE_URL` goes through a transaction pooler (PgBouncer `pool_mode = transaction`). Setting it says that `DATABASE_URL` is such a pooler: the server then keeps no session state there (no named prepared statements) and uses this URL for what needs a session of its own: LISTEN (job wake-ups, change streams, the record API's lookup cache, webhooks), the migrations' lock, `backup` and `restore`. See \"Connection poolers\" below."},
	{"DATABASE_READ_URL", "unset", "Hot standbys (streaming replicas), comma separated, that serve reads: record lists, single records, aggregates, exports, `/data/query`, project queries and dashboards' tile queries. Writes, jobs and the control plane stay on the primary. A caller reads its own writes; a standby that is down or lags is skipped. See \"Read replicas\" below."},
	{"DP_READ_MAX_LAG", "`10s`", "A standby further behind the primary than this is not read from until it catches up (measured every 500 ms)."},
	{"REDIS_URL", "unset", "Shared rate-limit counts for several replicas and, with `DATABASE_READ_URL`, callers' write positions (read-your-writes across replicas); unset: in memory. While Redis cannot be reached each process counts in its own memory and sends callers' reads to the primary, trying Redis again 5 s later; each call waits at most 250 ms (flag `-redis-url`)."},
	{"DP_SECRET_KEY", "a key file", "Base64 of 32 bytes (`openssl rand -base64 32`): the AES-256-GCM key that seals stored credentials (connected databases' passwords, webhook secrets, two-factor secrets) and signs export links. Unset: generated once into `$DP_DATA_DIR/secret.key` (mode 0600). Replicas must share one key; a backup archive holds it."},
	{"DP_ACCESS_TOKEN_TTL", "`1h`", "Access token lifetime (a Go duration)."},
	{"DP_REFRESH_TOKEN_TTL", "`720h`", "Refresh token lifetime (30 days)."},
	{"DP_SESSION_MAX_AGE", "`336h`", "A browser session's absolute lifetime (14 days); its idle timeout is the organization's `session_timeout_minutes`."},
	{"DP_BCRYPT_COST", "`12`", "Password hashing cost, 4 to 31."},
	{"DP_OIDC_ISSUER", "unset", "An external OpenID Connect provider; needs `DP_OIDC_CLIENT_ID` and `DP_OIDC_REDIRECT_URL`."},
	{"DP_OIDC_CLIENT_ID", "unset", "The client id at that provider."},
	{"DP_OIDC_CLIENT_SECRET", "unset", "The client secret at that provider."},
	{"DP_OIDC_REDIRECT_URL", "unset", "The callback address registered with that provider."},
	{"DP_SMTP_URL", "unset", "Mail server for invitations and address verification: `smtp://user:password@host:587` (STARTTLS when offered; a password only over TLS or to localhost) or `smtps://user:password@host:465`. Unset: invitations answer their link to the inviter, and addresses cannot be verified by mail."},
	{"DP_MAIL_FROM", "`dataplatform@localhost`", "The sender address of that mail."},
	{"DP_MAX_BODY_BYTES", "`1048576`", "JSON request body limit."},
	{"DP_MAX_UPLOAD_BYTES", "`1073741824`", "Upload limit."},
	{"DP_UPLOAD_MIN_RATE", "`8192`", "The slowest an upload may arrive, in bytes a second, over each `DP_UPLOAD_RATE_WINDOW`; slower: 408 `UPLOAD_TOO_SLOW`. 0: no minimum."},
	{"DP_UPLOAD_RATE_WINDOW", "`30s`", "The window of that rate, and the longest an upload may stall."},
	{"DP_CORS_ORIGINS", "empty", "Allowed origins, comma separated; empty: no CORS headers at all (flag `-cors-origins`)."},
	{"DP_TRUSTED_PROXIES", "empty", "Reverse proxies (CIDRs or addresses, comma separated) whose `X-Forwarded-For` names the client: the last address in it that is not one of them. Empty: the connection's address, and `X-Forwarded-For` is ignored. The client address is what IP allowlists, rate limits of public endpoints and audit rows use."},
	{"DP_RATE_LIMITS", "empty", "Overrides of the rate limits, e.g. `default=5000-M,auth=60-M,records_export=30-M` (limit-S/M/H/D). The categories and their defaults are in `handlers/server/ratelimit/ratelimit.go` and in the API description."},
	{"DP_LOG_LEVEL", "`info`", "debug, info, warn or error (JSON logs on stdout; flag `-log-level`)."},
	{"DP_LOG_REQUESTS", "`true`", "One log line per request."},
	{"DP_METRICS_ADDR", "empty", "An address (`10.0.0.5:9090`) on which `/metrics` is served without a token, apart from the API, for a scraper on a private network. Empty: off."},
	{"DP_METRICS_TOKEN", "empty", "A bearer token with which `/metrics` is read on the API's own listener. Empty: `/metrics` answers 404 there."},
	{"DP_PPROF_ADDR", "empty", "An address (`127.0.0.1:6060`) on which Go's profiler (`/debug/pprof/...`) is served without authentication: keep it on localhost. Empty: off."},
	{"DP_RECORD_CONCURRENCY", "4 per CPU", "Record API requests working on the database at once per server (all but exports, change streams and `/data/query`, whose SQL takes its user's query slots instead); the others wait in arrival order. 0: no limit."},
	{"DP_QUERY_RESULT_BYTES", "`10485760`", "The rows one query response holds, as JSON (at least 1024): larger answers stop there with `truncated` and a warning. Also the largest row user SQL may return anywhere (streams and exports included)."},
	{"DP_DESCRIPTION_CACHE_BYTES", "`536870912`", "The memory (estimated, at least 1 MiB) the parsed descriptions of datasets may take; a typical 10-column dataset's takes about 300 KB, so the default keeps about 1,600. A request to a dataset whose description is not kept renders it again (a few milliseconds of CPU): raise it when more datasets than that are busy at once."},
	{"DP_QUERY_CONCURRENCY", "twice the CPUs, at least 4", "User SQL running at once on the database, whoever runs it and across replicas (queries, record SQL, dashboard tiles, views); more waits its turn."},
	{"DP_QUERY_CONCURRENCY_PER_ORG", "a quarter of `DP_QUERY_CONCURRENCY`, at least 1", "The part of `DP_QUERY_CONCURRENCY` one organization's SQL may hold at once, so that one tenant's heavy queries leave the database's other cores to the rest; more waits its turn, then is 429 with `Retry-After`. A query runs on one core (no parallel workers), so the counts are cores."},
	{"DP_QUERY_QUEUE_WAIT", "`2s`", "How long user SQL past `DP_QUERY_CONCURRENCY` or `DP_QUERY_CONCURRENCY_PER_ORG` waits before 503 (the database's share) or 429 (the organization's) with `Retry-After`. It waits in the server, in turn, holding no database connection; past other replicas' queries it waits in the database."},
	{"DP_SHUTDOWN_TIMEOUT", "`20s`", "Grace for in-flight requests on SIGTERM."},
	{"DP_JOB_LEASE", "`30s`", "A background job's lease (and a webhook sender's): a job whose server died is taken over this long after its last heartbeat."},
	{"DP_STREAM_HEARTBEAT", "`15s`", "The heartbeat of quiet change streams (SSE comment line, WebSocket ping)."},
	{"DP_LLM_BASE_URL", "unset", "An OpenAI-compatible chat completions API (`$DP_LLM_BASE_URL/chat/completions`, bearer key) that writes the SQL of plain-language questions and drafts dashboards (`use_ai`); unset: the built-in engine and the deterministic generator alone. What the model writes passes the same checks, or the built-in one answers with a warning. Needs `DP_LLM_MODEL`."},
	{"DP_LLM_API_KEY", "unset", "The bearer key of that API."},
	{"DP_LLM_MODEL", "unset", "The model to ask."},
	{"DP_DASHBOARD_VERSIONS_KEPT", "`50`", "The unpinned versions a dashboard keeps; older ones are removed as new ones are recorded (pinned versions never)."},
	{"DP_CONNECTION_NETWORKS", "empty", "Networks beyond the public internet that connected databases may be in: CIDRs or addresses, comma separated (`10.0.0.0/8,127.0.0.1`), or `*` for any. Empty: public addresses only; loopback, private, link-local (cloud metadata), CGNAT and other special addresses are refused, checked on the address actually dialled."},
	{"DP_WEBHOOK_NETWORKS", "empty", "Networks beyond the public internet that webhook endpoints may be in, as `DP_CONNECTION_NETWORKS` is for databases; plain `http://` endpoints are allowed only inside them."},
	{"DP_WEBHOOK_TIMEOUT", "`10s`", "One webhook delivery attempt, from connecting to the answer; no answer in time is retried."},
	{"DP_WEBHOOK_DISABLE_AFTER", "`120h`", "An endpoint whose deliveries have failed this long is disabled."},
	{"DP_WEBHOOK_DISABLE_FAILURES", "`100`", "An endpoint that has given up this many deliveries in a row is disabled."},
	{"DP_MCP_WRITES", "`false`", "Lets the MCP server (`/api/v1/mcp`) offer its write tools, to API keys made with `mcp_writes` (and signed-in users) whose permissions allow the write."},
}

// Notes follow the table in the reference: how the database settings work together.
const Notes = `## The embedded database

Without DATABASE_URL the server looks for PostgreSQL's initdb and postgres in PATH,
` + "`pg_config --bindir`" + ` and /usr/lib/postgresql/*/bin (newest first), initialises the cluster on
first start (password authentication, UTF-8), starts it as a child process on a free loopback
port with no Unix socket, and stops it on exit. As root it runs the cluster as the postgres
user, so $DP_DATA_DIR's parents must be traversable by that user. If the server dies, the
postmaster is told by the kernel and shuts down cleanly; a postmaster left alive, or a stale
postmaster.pid, is dealt with on the next start.

## Connection poolers (PgBouncer)

Point DATABASE_URL at PgBouncer in transaction pooling mode and DATABASE_DIRECT_URL at
PostgreSQL (the same database and user); set ` + "`ignore_startup_parameters = extra_float_digits`" + `.
Every setting the server makes is transaction-local, advisory locks are transaction locks
(the migrations' session lock is taken on the direct URL), parameters go in one round trip,
and LISTEN uses the direct URL. Without DATABASE_DIRECT_URL on a pooler, LISTEN would seem to
work and hear nothing.

## Read replicas (DATABASE_READ_URL)

Reads that may be a moment behind other callers' writes go to a standby (round robin).
After a caller's write the server keeps the primary's WAL position for that caller (in
memory and, with REDIS_URL, in Redis, so another server sees it); a standby serves that
caller only once it has replayed that far. A standby that does not answer, was promoted, or
lags past DP_READ_MAX_LAG is skipped; a read that fails on a standby as only a standby's can
runs again on the primary before anything was answered. Long reads on a standby can be
cancelled by PostgreSQL when replay needs their rows: set ` + "`hot_standby_feedback = on`" + ` on the
standbys or raise ` + "`max_standby_streaming_delay`" + `. In code, store.Store.Reader(ctx) is the
database for such a read and store.Store.OnReader(ctx, fn) runs one there with the fallback.

## Memory (GOGC, GOMEMLIMIT)

Go's runtime reads these itself. When GOGC is unset the server sets it after each garbage
collection so that the heap may grow by 128 MB before the next (between Go's default of 100%
of the live heap and 400%): a server whose live heap is tens of MB then collects a few times
less often under load, and one with a large live heap (many datasets' descriptions) keeps
Go's default rather than holding that much memory again. When GOMEMLIMIT is unset and the process has a cgroup v2 memory
limit (` + "`/sys/fs/cgroup/memory.max`" + `, as in a container with a memory limit), the soft limit
is 90% of it, so the collector works harder near the limit instead of the process being
killed. Set either variable to decide for yourself.
`

// Markdown renders the reference: a table of every variable, then the notes.
func Markdown() string {
	var b strings.Builder
	b.WriteString("# Configuration\n\nEnvironment variables of `dataplatform serve` (the flags named mirror them; `backup` and `restore` read the same).\n\n")
	b.WriteString("| name | default | meaning |\n|---|---|---|\n")
	for _, v := range Variables {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", v.Name, v.Default, strings.ReplaceAll(v.Meaning, "|", `\|`))
	}
	b.WriteString("\n")
	b.WriteString(Notes)
	return b.String()
}
