#!/usr/bin/env bash
# Many datasets in one organization: datasets are created through the API as a user would
# (upload a 3-row CSV, create the dataset from it; BENCH_PAR at once, default 4) in stages up
# to the counts given, and at each stage:
#  - creation rate of the stage (datasets a second, until their load jobs are done);
#  - the project's dataset list: first page and a name search (GET /projects/{id}/datasets,
#    ?search=), 21 requests each, median and max of curl's total time;
#  - record API of every dataset touched once (GET /datasets/{id}/data?limit=1): median and
#    p90 of those first GETs, and the server's RSS before and after (the description cache);
#  - catalog size: sum of pg_total_relation_size over schema platform, pg_class rows, the
#    database's size.
# At the end the server is restarted on the same data: time to /readyz, then the first and a
# second GET of a dataset's records (cold and warm).
# Usage: scripts/bench-datasets.sh [stage counts, comma separated: 250,1000,2500,10000]
set -euo pipefail
cd "$(dirname "$0")/.."
stages=${1:-250,1000,2500,10000}
par=${BENCH_PAR:-4}
source scripts/bench-lib.sh
bench_init 18096
limits="uploads=100000000-H,datasets=100000000-H,default=100000000-M,records_read=100000000-M"
bench_start DP_RATE_LIMITS="$limits"
bench_login
bench_psql
printf 'item_id,name,amount\n1,a,1.5\n2,b,2.5\n3,c,3.5\n' > "$tmp/small.csv"
auth=(-H "Authorization: Bearer $tok")
create() { # create NAME: upload and create, no wait
  local fid
  fid=$(curl -sf "127.0.0.1:$port/api/v1/projects/$prj/datasets/upload" -H "Authorization: Bearer $tok" -F "file=@$tmp/small.csv" | jfield file_id)
  curl -sf -XPOST "127.0.0.1:$port/api/v1/projects/$prj/datasets" -H "Authorization: Bearer $tok" -H 'Content-Type: application/json' \
    -d "{\"name\":\"$1\",\"source\":{\"file_id\":\"$fid\"}}" -o /dev/null || echo "create $1 failed" >&2
}
export -f create jfield; export port prj tmp tok
times() { # times N URL: curl's total time, N requests; prints "median max" in ms
  for _ in $(seq 1 "$1"); do curl -s -o /dev/null -w '%{time_total}\n' "${auth[@]}" "$2"; done |
    sort -n | awk '{a[NR]=$1*1000} END {printf "median %.1f ms, max %.1f ms", a[int((NR+1)/2)], a[NR]}'
}
rss() { echo $(( $(awk '/VmRSS/{print $2}' /proc/$pid/status) / 1024 )); }
catalog() {
  psqlc -At -F' ' -c "SELECT pg_size_pretty(sum(pg_total_relation_size(c.oid))) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'platform' AND c.relkind IN ('r','m')" \
    -c "SELECT count(*) FROM pg_class" -c "SELECT pg_size_pretty(pg_database_size(current_database()))" | tr '\n' ' '
}
have=0
IFS=, read -ra ss <<< "$stages"
for s in "${ss[@]}"; do
  t0=$(date +%s.%N)
  seq $((have + 1)) "$s" | xargs -P "$par" -I{} bash -c 'create bench_ds_{}'
  while [ "$(psqlc -At -c "SELECT count(*) FROM platform.jobs WHERE status IN ('queued', 'running')")" != 0 ]; do sleep 0.5; done
  t1=$(date +%s.%N)
  echo "== $s datasets: created $((s - have)) in $(echo "$t1 - $t0" | bc) s ($(echo "($s - $have) / ($t1 - $t0)" | bc -l | cut -c1-5)/s)"
  have=$s
  echo "  list first page: $(times 21 "127.0.0.1:$port/api/v1/projects/$prj/datasets")"
  echo "  list search, no match: $(times 21 "127.0.0.1:$port/api/v1/projects/$prj/datasets?search=bench_ds_$((s / 2))x")"
  echo "  list search (many matches, bench_ds_1): $(times 21 "127.0.0.1:$port/api/v1/projects/$prj/datasets?search=bench_ds_1")"
  echo "  catalog: platform tables, pg_class rows, database: $(catalog)"
  psqlc -At -c "SELECT id FROM platform.datasets WHERE deleted_at IS NULL" > "$tmp/ids" 2>/dev/null || psqlc -At -c "SELECT id FROM platform.datasets" > "$tmp/ids"
  r0=$(rss)
  while read -r id; do curl -s -o /dev/null -w '%{time_total}\n' "${auth[@]}" "127.0.0.1:$port/api/v1/datasets/$id/data?limit=1"; done < "$tmp/ids" |
    sort -n | awk -v n="$s" '{a[NR]=$1*1000} END {printf "  first record GET of each of %d datasets: median %.1f ms, p90 %.1f ms, max %.1f ms\n", NR, a[int((NR+1)/2)], a[int(NR*0.9)], a[NR]}'
  echo "  server RSS: $r0 MB before touching every dataset's record API, $(rss) MB after"
done
# Restart on the same data: start time, then a cold dataset's first GET.
kill "$pid"; wait "$pid" 2>/dev/null || true
t0=$(date +%s.%N)
env DP_DATA_DIR="$tmp/d" DP_ADDR="127.0.0.1:$port" DP_LOG_REQUESTS=false DP_RATE_LIMITS="$limits" "$tmp/dataplatform" serve > "$tmp/server2.log" 2>&1 &
pid=$!
until curl -sf "127.0.0.1:$port/readyz" >/dev/null; do sleep 0.05; done
t1=$(date +%s.%N)
echo "restart with $have datasets: ready in $(echo "$t1 - $t0" | bc) s, RSS $(rss) MB"
id=$(sed -n "$(( (have + 1) / 2 ))p" "$tmp/ids")
echo "  cold dataset, first GET: $(curl -s -o /dev/null -w '%{time_total}' "${auth[@]}" "127.0.0.1:$port/api/v1/datasets/$id/data?limit=1") s; second: $(curl -s -o /dev/null -w '%{time_total}' "${auth[@]}" "127.0.0.1:$port/api/v1/datasets/$id/data?limit=1") s"
echo "  list first page after restart: $(times 5 "127.0.0.1:$port/api/v1/projects/$prj/datasets")"
