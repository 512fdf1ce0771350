#!/usr/bin/env bash
# Load test: authenticated GET /api/v1/projects/{id} against a freshly started server on the
# embedded PostgreSQL, with wrk on loopback. Usage: scripts/bench-http.sh [seconds] [connections]
# The per-principal rate limit of the default category is raised for the run (one principal
# sends every request); everything else - authentication, rate-limit accounting, validation,
# request logging, the database query - runs as in production.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-20}
conns=${2:-32}
source scripts/bench-lib.sh
bench_init 18089
bench_start DP_RATE_LIMITS="default=100000000-M" DP_LOG_REQUESTS="${DP_LOG_REQUESTS:-true}"
bench_login
curl -sf "127.0.0.1:$port/api/v1/projects/$prj" -H "Authorization: Bearer $tok" >/dev/null
echo "GET /api/v1/projects/$prj, ${secs}s, $conns connections, 2 threads (request logging: ${DP_LOG_REQUESTS:-true})"
wrk -t2 -c"$conns" -d"${secs}s" --latency -H "Authorization: Bearer $tok" "http://127.0.0.1:$port/api/v1/projects/$prj"
echo "server errors logged: $(grep -c '"level":"ERROR"' "$tmp/server.log" || true)"
