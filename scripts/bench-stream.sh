#!/usr/bin/env bash
# Change-stream fan-out: one server (embedded PostgreSQL) holding N Server-Sent Events
# subscribers on one dataset while records are written through the record API at RATE a
# second for SECONDS; for each N, the delivery latency (write started → event received, and
# write committed, i.e. its response received → event received: p50, p90, p99, p99.9, max
# over every event of every subscriber), the POST latency (client's and the server's own
# histogram), whether every subscriber got every event, the server's RSS (before, connected,
# peak), and how often the database scanned platform.record_changes (pg_stat_user_tables'
# seq_scan + idx_scan). The load client is scripts/streamload (Go).
# Usage: scripts/bench-stream.sh [subscriber counts, comma separated: 1000,10000] [seconds: 30] [rate: 100]
# The open-file limit is raised to the hard limit for the server and the client (N + a few
# hundred descriptors each); BENCH_TRANSPORT=websocket subscribes over /data/ws instead;
# BENCH_PORT changes the port; DP_* settings pass through.
set -euo pipefail
cd "$(dirname "$0")/.."
counts=${1:-1000,10000}
secs=${2:-30}
rate=${3:-100}
transport=${BENCH_TRANSPORT:-sse}
ulimit -n "$(ulimit -Hn)"
source scripts/bench-lib.sh
bench_init 18095
go build -o "$tmp/streamload" ./scripts/streamload
mport=$((port + 1))
bench_start DP_RATE_LIMITS="records_read=100000000-M,records_write=100000000-M,default=100000000-M" DP_METRICS_ADDR="127.0.0.1:$mport"
bench_login
printf 'seq_no,t_ns\n-1,1700000000000000000\n' > "$tmp/s.csv"
bench_dataset "$tmp/s.csv" stream
echo "dataset $ds; open-file limit $(ulimit -n); server pid $pid"
scans() { psqlc -At -c "SELECT coalesce(seq_scan,0) + coalesce(idx_scan,0) FROM pg_stat_user_tables WHERE schemaname = 'platform' AND relname = 'record_changes'"; }
IFS=, read -ra ns <<< "$counts"
for n in "${ns[@]}"; do
  echo "== $n $transport subscribers, $rate records/s for ${secs}s"
  before=$(scans)
  "$tmp/streamload" -transport "$transport" -base "http://127.0.0.1:$port" -token "$tok" -dataset "$ds" -n "$n" -rate "$rate" -duration "${secs}s" -pid "$pid" -metrics "127.0.0.1:$mport"
  sleep 1 # pg_stat counters are flushed at intervals
  echo "change-log scans during the run: $(( $(scans) - before ))"
  sleep 3 # the closed streams end on the server
done
