#!/usr/bin/env bash
# Project query benchmarks on a fresh server:
#  - POST /queries/execute of a small query (a filtered count over a 10,000-row dataset),
#    one connection at a time under wrk, against pgbench running the same SQL over one
#    connection: the median of each and what the service adds.
#  - POST /queries/stream of 1,000,000 rows: time, bytes, and the server's peak RSS.
# Usage: scripts/bench-queries.sh [seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
source scripts/bench-lib.sh
bench_init 18093
bench_start DP_RATE_LIMITS="queries=100000000-M,default=100000000-M"
bench_login
python3 - "$tmp/customers.csv" <<'PY'
import sys, random
random.seed(2)
with open(sys.argv[1], "w") as f:
    f.write("customer_no,name,city,credit\n")
    for i in range(10000):
        f.write(f"{i},name{i},city{i%40},{random.random()*1000:.2f}\n")
PY
bench_dataset "$tmp/customers.csv" customers
sql="SELECT count(*) FROM customers WHERE city = 'city7' AND credit > 500"
body="{\"type\":\"sql\",\"query\":\"$sql\"}"
resp=$(curl -sf -XPOST "127.0.0.1:$port/api/v1/projects/$prj/queries/execute" -H "Authorization: Bearer $tok" -H 'Content-Type: application/json' -d "$body")
generated=$(echo "$resp" | j '["generated_sql"]')
echo "query: $sql -> $(echo "$resp" | j '["results"]["rows"]')"
cat > "$tmp/post.lua" <<LUA
wrk.method = "POST"
wrk.body = [[$body]]
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer $tok"
LUA
wrk -t1 -c1 -d3s -s "$tmp/post.lua" "http://127.0.0.1:$port/api/v1/projects/$prj/queries/execute" >/dev/null
echo "POST /queries/execute, ${secs}s, 1 connection:"
wrk -t1 -c1 -d"${secs}s" --latency -s "$tmp/post.lua" "http://127.0.0.1:$port/api/v1/projects/$prj/queries/execute" | grep -E "Requests/sec| 50%| 99%|Non-2xx"
echo "$generated;" > "$tmp/q.sql"
(cd "$tmp" && pgbench -n -h 127.0.0.1 -p "$pgport" -U postgres -c 1 -T "$secs" -f q.sql --log --log-prefix=pgb postgres 2>/dev/null | grep -E "^tps|latency average")
echo "pgbench, the same SQL, ${secs}s, 1 client: median $(bench_median "$tmp"/pgb.*) ms"

echo "POST /queries/stream of 1,000,000 rows (SELECT g, md5(g::text), now() FROM generate_series(1, 1000000) g):"
t0=$(date +%s.%N)
bench_peak_rss curl -sf -XPOST "127.0.0.1:$port/api/v1/projects/$prj/queries/stream" -H "Authorization: Bearer $tok" -H 'Content-Type: application/json' \
  -d '{"type":"sql","query":"SELECT g, md5(g::text), now() FROM generate_series(1, 1000000) g"}' -o "$tmp/stream.txt"
t1=$(date +%s.%N)
echo "  $(echo "$t1 - $t0" | bc) s, $(stat -c %s "$tmp/stream.txt") bytes, $(grep -c '^event: row' "$tmp/stream.txt") row events, $(tail -c 200 "$tmp/stream.txt" | grep -o '"row_count":[0-9]*'); server peak RSS $peak MB"
