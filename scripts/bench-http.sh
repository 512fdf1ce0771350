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
if ! command -v wrk >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null
  else
    echo "bench-http: needs wrk (apt-get install wrk)" >&2; exit 1
  fi
fi
bash scripts/ensure-postgres.sh
tmp=$(mktemp -d); chmod 755 "$tmp"
port=${BENCH_PORT:-18089}
go build -o "$tmp/dataplatform" ./cmd/dataplatform
DP_DATA_DIR="$tmp/data" DP_ADDR="127.0.0.1:$port" DP_ADMIN_EMAIL=bench@example.com DP_ADMIN_PASSWORD=bench-password \
  DP_RATE_LIMITS="default=100000000-M" DP_LOG_REQUESTS="${DP_LOG_REQUESTS:-true}" \
  "$tmp/dataplatform" serve > "$tmp/server.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 1 100); do curl -sf "127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.2; done
tok=$(curl -sf -XPOST "127.0.0.1:$port/api/v1/auth/login" -H 'Content-Type: application/json' \
  -d '{"email":"bench@example.com","password":"bench-password"}' | sed -E 's/.*"access_token":"([^"]+)".*/\1/')
org=$(curl -sf "127.0.0.1:$port/api/v1/organizations" -H "Authorization: Bearer $tok" | sed -E 's/.*"id":"(org_[a-z0-9]+)".*/\1/')
prj=$(curl -sf "127.0.0.1:$port/api/v1/organizations/$org/projects" -H "Authorization: Bearer $tok" | sed -E 's/.*"id":"(prj_[a-z0-9]+)".*/\1/')
curl -sf "127.0.0.1:$port/api/v1/projects/$prj" -H "Authorization: Bearer $tok" >/dev/null
echo "GET /api/v1/projects/$prj, ${secs}s, $conns connections, 2 threads (request logging: ${DP_LOG_REQUESTS:-true})"
wrk -t2 -c"$conns" -d"${secs}s" --latency -H "Authorization: Bearer $tok" "http://127.0.0.1:$port/api/v1/projects/$prj"
echo "server errors logged: $(grep -c '"level":"ERROR"' "$tmp/server.log" || true)"
