#!/usr/bin/env bash
# Tenant isolation: T organizations (default 1000), each with a project and a 1,000-row
# dataset, all created through the API by one user (BENCH_PAR at once, default 4); then
# scripts/tenantload sends record GETs spread over every tenant's dataset (C connections,
# SECONDS each phase), alone and while the first tenant runs H heavy SQL queries at once
# (POST /queries/execute), and reports per phase the p50/p99 over all tenants and the
# median and worst per-tenant p99. DP_QUERY_CONCURRENCY and DP_RECORD_CONCURRENCY pass
# through from the environment (run it with different values to compare), as does BENCH_SQL
# (the heavy query), and BENCH_RATE: GETs a second sent on schedule (open loop, latency from
# when each was due) instead of by the connections in turn, to see isolation below
# saturation (a closed loop at saturation shows any CPU the heavy tenant takes as latency of
# all); with it, pgbench then measures the same for PostgreSQL alone (see below). BENCH_THEN="VAR=value ..." runs the load again after restarting the server
# with those variables (DP_DESCRIPTION_CACHE_BYTES=1073741824, say), on the same tenants.
# Usage: scripts/bench-tenants.sh [tenants: 1000] [seconds: 20] [connections: 32] [heavy: 8]
set -euo pipefail
cd "$(dirname "$0")/.."
tenants=${1:-1000}
secs=${2:-20}
conns=${3:-32}
heavy=${4:-8}
par=${BENCH_PAR:-4}
source scripts/bench-lib.sh
bench_init 18094
go build -o "$tmp/tenantload" ./scripts/tenantload
limits="org_write=100000000-H,uploads=100000000-H,datasets=100000000-H,default=100000000-M,records_read=100000000-M,queries=100000000-M"
bench_start DP_RATE_LIMITS="$limits"
bench_login
bench_psql
bench_csv "$tmp/t.csv" 1000
export port tok tmp
tenant() { # tenant N: an organization, its project, a dataset; prints "dataset project"
  local o p f d
  o=$(curl -sf -XPOST "127.0.0.1:$port/api/v1/organizations" -H "Authorization: Bearer $tok" -H 'Content-Type: application/json' -d "{\"name\":\"tenant $1\"}" | jfield id)
  p=$(curl -sf -XPOST "127.0.0.1:$port/api/v1/organizations/$o/projects" -H "Authorization: Bearer $tok" -H 'Content-Type: application/json' -d '{"name":"main"}' | jfield id)
  f=$(curl -sf "127.0.0.1:$port/api/v1/projects/$p/datasets/upload" -H "Authorization: Bearer $tok" -F "file=@$tmp/t.csv" | jfield file_id)
  d=$(curl -sf -XPOST "127.0.0.1:$port/api/v1/projects/$p/datasets" -H "Authorization: Bearer $tok" -H 'Content-Type: application/json' -d "{\"name\":\"t$1\",\"source\":{\"file_id\":\"$f\"}}" | jfield id)
  echo "$d $p"
}
export -f tenant jfield
t0=$(date +%s.%N)
seq 1 "$tenants" | xargs -P "$par" -I{} bash -c 'tenant {}' > "$tmp/tenants.txt"
while [ "$(psqlc -At -c "SELECT count(*) FROM platform.jobs WHERE status IN ('queued', 'running')")" != 0 ]; do sleep 0.5; done
echo "$(wc -l < "$tmp/tenants.txt") tenants made in $(echo "$(date +%s.%N) - $t0" | bc) s; server RSS $(( $(awk '/VmRSS/{print $2}' /proc/$pid/status) / 1024 )) MB"
# The token was issued before the organizations existed: a fresh one carries them all.
bench_login
"$tmp/tenantload" -base "http://127.0.0.1:$port" -token "$tok" -tenants "$tmp/tenants.txt" -c "$conns" -duration "${secs}s" -heavy "$heavy" \
  ${BENCH_SQL:+-sql "$BENCH_SQL"} ${BENCH_RATE:+-rate "$BENCH_RATE"}
echo "server RSS $(( $(awk '/VmRSS/{print $2}' /proc/$pid/status) / 1024 )) MB"
if [ -n "${BENCH_RATE:-}" ]; then
  # PostgreSQL's own isolation on this machine, the reference for the phases above: pgbench
  # sends the same rate of first pages (the default order, 20 rows) spread over the first
  # 50 tenants' tables, alone and while psql runs the heavy query in a loop, one at a time
  # (one organization's share), with parallel workers off as user SQL has them. Latency
  # counts from when each transaction was due (-R).
  n=0
  for d in $(head -50 "$tmp/tenants.txt" | cut -d' ' -f1); do
    t=$(psqlc -At -c "SELECT format('%I.%I', n.nspname, c.relname) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relname = '$d'")
    n=$((n + 1))
    echo "SELECT to_json(r) FROM (SELECT * FROM $t WHERE deleted_at IS NULL ORDER BY created_at DESC, id LIMIT 21) r;" > "$tmp/page$n.sql"
  done
  heavysql=${BENCH_SQL:-SELECT sum(length(md5(g::text))) FROM generate_series(1, 3000000) g}
  pgrate() { # pgrate LABEL: pgbench at BENCH_RATE for secs, its p50 and p99
    rm -f "$tmp"/pgr.*
    (cd "$tmp" && pgbench -n -M prepared -h 127.0.0.1 -p "$pgport" -U postgres -c "$conns" -j 2 -R "$BENCH_RATE" -T "$secs" \
      $(for i in $(seq 1 "$n"); do echo "-f page$i.sql"; done) --log --log-prefix=pgr postgres > /dev/null 2>&1)
    echo "== pgbench, $BENCH_RATE pages a second over $n tables, $1: p50 $(bench_percentile 50 "$tmp"/pgr.*) ms, p99 $(bench_percentile 99 "$tmp"/pgr.*) ms"
  }
  pgrate alone
  (while :; do PGAPPNAME=heavy PGOPTIONS="-c max_parallel_workers_per_gather=0" psqlc -c "$heavysql" > /dev/null; done) &
  hpid=$!
  sleep 2
  pgrate "while psql runs the heavy query"
  kill "$hpid"; wait "$hpid" 2>/dev/null || true
  psqlc -c "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'heavy'" > /dev/null
fi
if [ -n "${BENCH_THEN:-}" ]; then
  echo "again, after a restart with $BENCH_THEN"
  # shellcheck disable=SC2086
  bench_restart DP_RATE_LIMITS="$limits" $BENCH_THEN
  bench_login
  "$tmp/tenantload" -base "http://127.0.0.1:$port" -token "$tok" -tenants "$tmp/tenants.txt" -c "$conns" -duration "${secs}s" -heavy "$heavy" \
    ${BENCH_SQL:+-sql "$BENCH_SQL"} ${BENCH_RATE:+-rate "$BENCH_RATE"}
echo "server RSS $(( $(awk '/VmRSS/{print $2}' /proc/$pid/status) / 1024 )) MB"
fi
