#!/usr/bin/env bash
# How the record API's cost grows with the table: on a dataset of ROWS rows (bench_csv's
# columns), the median and p90 of 11 sequential requests (curl's time_total, after two
# warm-up requests) of each of:
#  - the first list page (default sort) and the first page sorted by id;
#  - the filtered, sorted page of bench-records.sh (city = city7, amount >= 500, sort -amount);
#  - a keyset (cursor) page near the end of the table: sort id, and sort -amount (two keys,
#    amount then id; the cursor comes from a page filtered to the smallest amounts);
#  - sorted by city (50 values, each shared by a fiftieth of the rows), each way: the first
#    page, and a cursor page amid the rows of one city;
#  - offset pages: page 10,000 (limit 20) and a page 90% of the way into the table;
#  - the list with count=exact (limit 1) next to the default (estimated) count;
#  - GET .../data/aggregate: count and sum(amount) grouped by city (50 values), and by id
#    (a group per row; the first 100);
#  - GET one record by key, near the start and near the end of the table.
# Run it at two sizes and compare: scripts/bench-rows.sh 1000000; scripts/bench-rows.sh 10000000.
# Usage: scripts/bench-rows.sh [rows]; BENCH_CSV=FILE uploads FILE (made by bench_csv with
# ROWS rows) instead of generating it; BENCH_DEEP=0 skips the 90% page (seconds per request at
# 10M rows); BENCH_HOLD=SECONDS keeps the server up that long at the end, to look into it.
set -euo pipefail
cd "$(dirname "$0")/.."
rows=${1:-1000000}
source scripts/bench-lib.sh
bench_init 18093
csv=${BENCH_CSV:-$tmp/data.csv}
[ -n "${BENCH_CSV:-}" ] || bench_csv "$csv" "$rows"
size=$(stat -c %s "$csv")
bench_start DP_MAX_UPLOAD_BYTES=$((size + 1048576)) DP_RATE_LIMITS="records_read=100000000-M,records_query=100000000-M,default=100000-M"
bench_login
t0=$(date +%s)
bench_dataset "$csv" bench
echo "dataset $ds: $rows rows, $size bytes of csv, loaded (and its follow-up jobs done) in $(( $(date +%s) - t0 )) s"
table="\"$org\".\"$ds\""
psqlc -At -c "SELECT 'table ' || pg_size_pretty(pg_table_size('$table'::regclass)) || ', indexes ' || pg_size_pretty(pg_indexes_size('$table'::regclass)) || ', reltuples ' || reltuples::bigint FROM pg_class WHERE oid = '$table'::regclass"
psqlc -At -c "SELECT indexdef FROM pg_indexes WHERE schemaname = '$org' AND tablename = '$ds'"

base="127.0.0.1:$port/api/v1/datasets/$ds/data"
auth="Authorization: Bearer $tok"
# timed LABEL URL: status and size of one answer, then median and p90 (the 10th of 11) of 11
# sequential requests after two warm-up requests, in ms.
timed() {
  local label=$1 url=$2 ts=() s
  s=$(curl -s -o /dev/null -w '%{http_code} %{size_download}' "$url" -H "$auth")
  curl -s -o /dev/null "$url" -H "$auth"
  for _ in $(seq 1 11); do ts+=("$(curl -s -o /dev/null -w '%{time_total}' "$url" -H "$auth")"); done
  printf '%s\n' "${ts[@]}" | sort -n | awk -v l="$label" -v s="$s" '{a[NR]=$1*1000} END {printf "%-34s median %9.2f ms  p90 %9.2f ms  (min %.2f, max %.2f; status, bytes: %s)\n", l, a[6], a[10], a[1], a[11], s}'
}
pagination() { curl -s "$1" -H "$auth" | python3 -c "import json,sys; d=json.load(sys.stdin); p=d.get('pagination', d); print({k: p.get(k) for k in ('page','limit','total','pages','total_estimated','has_next')}, 'rows', len(d.get('data', [])), 'sort', d.get('meta', {}).get('sort'), d.get('error', ''))"; }

q="filter%5Bcity%5D=city7&filter%5Bamount%5D%5Bgte%5D=500&sort=-amount&limit=20"
cur=$(python3 -c "import base64,json; print(base64.urlsafe_b64encode(json.dumps({'d':'$ds','s':'id','v':[$rows-30]}).encode()).decode().rstrip('='))")
cur2=$(curl -s "$base?sort=-amount&limit=1&filter%5Bamount%5D%5Blte%5D=2" -H "$auth" | python3 -c "import json,sys; print(json.load(sys.stdin)['pagination']['next_cursor'])")
cur3=$(curl -s "$base?sort=city&limit=1&filter%5Bcity%5D=city25&filter%5Bid%5D%5Bgte%5D=$((rows / 2))" -H "$auth" | python3 -c "import json,sys; print(json.load(sys.stdin)['pagination']['next_cursor'])")
cur4=$(curl -s "$base?sort=-city&limit=1&filter%5Bcity%5D=city25&filter%5Bid%5D%5Blte%5D=$((rows / 2))" -H "$auth" | python3 -c "import json,sys; print(json.load(sys.stdin)['pagination']['next_cursor'])")
deep=$((rows * 9 / 10 / 20))
agg="group_by=city&agg=count,sum(amount)"
aggid="group_by=id&agg=count,sum(amount)&limit=100"
echo "answers:"
echo "  first page:        $(pagination "$base")"
echo "  filtered page:     $(pagination "$base?$q")"
echo "  cursor page:       $(pagination "$base?sort=id&limit=20&cursor=$cur")"
echo "  cursor page -amount: $(pagination "$base?sort=-amount&limit=20&cursor=$cur2")"
echo "  cursor page city:  $(pagination "$base?sort=city&limit=20&cursor=$cur3")"
echo "  cursor page -city: $(pagination "$base?sort=-city&limit=20&cursor=$cur4")"
echo "  page 10000:        $(pagination "$base?page=10000&limit=20")"
echo "  page $deep:       $(pagination "$base?page=$deep&limit=20")"
echo "  count=exact:       $(pagination "$base?count=exact&limit=1")"
echo "  aggregate:         $(curl -s "$base/aggregate?$agg" -H "$auth" | head -c 300)"
echo "  headers of the first page: $(curl -s -D - -o /dev/null "$base" -H "$auth" | grep -iE '^(x-|content-length)' | tr -d '\r' | tr '\n' ' ')"
echo "timings ($rows rows):"
timed "first page (default sort)" "$base"
timed "first page (sort id)" "$base?sort=id&limit=20"
timed "filtered + sorted page" "$base?$q"
timed "cursor page near the end (sort id)" "$base?sort=id&limit=20&cursor=$cur"
timed "cursor page near the end (-amount)" "$base?sort=-amount&limit=20&cursor=$cur2"
timed "first page (sort city)" "$base?sort=city&limit=20"
timed "cursor page amid city25 (sort city)" "$base?sort=city&limit=20&cursor=$cur3"
timed "first page (sort -city)" "$base?sort=-city&limit=20"
timed "cursor page amid city25 (sort -city)" "$base?sort=-city&limit=20&cursor=$cur4"
timed "page 10000 (limit 20)" "$base?page=10000&limit=20"
[ "${BENCH_DEEP:-1}" = 0 ] || timed "page $deep (90%, limit 20)" "$base?page=$deep&limit=20"
timed "count=exact (limit 1)" "$base?count=exact&limit=1"
timed "count default (limit 1)" "$base?limit=1"
timed "aggregate count,sum by city" "$base/aggregate?$agg"
timed "aggregate count,sum by id (100)" "$base/aggregate?$aggid"
timed "GET record 123456" "$base/123456"
timed "GET record $((rows - 100))" "$base/$((rows - 100))"
[ -z "${BENCH_HOLD:-}" ] || { echo "holding: $tmp, psql port $pgport"; sleep "$BENCH_HOLD" || true; }
