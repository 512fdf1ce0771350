#!/usr/bin/env bash
# Record API benchmarks on a 1,000,000-row dataset (the ingest benchmark's file), against
# PostgreSQL itself on the same machine:
#  - CSV export of every row vs psql's COPY (SELECT ...) TO STDOUT of the same rows; the
#    server's peak RSS during the export.
#  - a filtered, sorted list page under wrk (32 connections) vs pgbench running the same SELECT.
#  - a keyset (cursor) page near the end of the table vs the first page.
# Usage: scripts/bench-records.sh [rows] [seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
rows=${1:-1000000}
secs=${2:-15}
source scripts/bench-lib.sh
bench_init 18092
bench_csv "$tmp/data.csv" "$rows"
size=$(stat -c %s "$tmp/data.csv")
bench_start DP_MAX_UPLOAD_BYTES=$((size + 1048576)) DP_RATE_LIMITS="records_read=100000000-M,records_export=1000-M,default=100000-M"
bench_login
bench_dataset "$tmp/data.csv" bench
table="\"$org\".\"$ds\""
cols="id, id_num, big, amount, flag, day, seen_at, ref, city, note, maybe, created_at, updated_at, version"
echo "dataset $ds: $rows rows"

# Export.
t0=$(date +%s.%N)
curl -sf "127.0.0.1:$port/api/v1/datasets/$ds/data/export?format=csv" -H "Authorization: Bearer $tok" -o "$tmp/export.csv" &
cpid=$!
peak=$(bench_rss_while $cpid)
wait $cpid
t1=$(date +%s.%N)
psqlc -c "COPY (SELECT $cols FROM $table WHERE deleted_at IS NULL ORDER BY id) TO STDOUT WITH (FORMAT csv, HEADER)" > "$tmp/copy.csv"
t2=$(date +%s.%N)
echo "export csv: $(echo "$t1 - $t0" | bc) s ($(stat -c %s "$tmp/export.csv") bytes), server peak RSS $peak MB; COPY TO STDOUT: $(echo "$t2 - $t1" | bc) s ($(stat -c %s "$tmp/copy.csv") bytes)"
if cmp -s "$tmp/export.csv" "$tmp/copy.csv"; then echo "export and COPY output are byte-identical"; else
  echo "export and COPY output differ:"; diff "$tmp/export.csv" "$tmp/copy.csv" | head -6; fi

# A filtered, sorted page.
q="filter%5Bcity%5D=city7&filter%5Bamount%5D%5Bgte%5D=500&sort=-amount&limit=20"
curl -sf "127.0.0.1:$port/api/v1/datasets/$ds/data?$q" -H "Authorization: Bearer $tok" >/dev/null
# Warm up first (32 pooled database connections, prepared statements): steady state is measured.
wrk -t2 -c32 -d3s -H "Authorization: Bearer $tok" "http://127.0.0.1:$port/api/v1/datasets/$ds/data?$q" >/dev/null
echo "list page (city = city7, amount >= 500, sort -amount, 20 rows), ${secs}s, 32 connections:"
wrk -t2 -c32 -d"${secs}s" --timeout 20s --latency -H "Authorization: Bearer $tok" "http://127.0.0.1:$port/api/v1/datasets/$ds/data?$q" | grep -E "Requests/sec|99%|50%|Non-2xx"
cat > "$tmp/page.sql" <<SQL
SELECT to_jsonb(r) - 'x', json_build_array(amount, id) FROM (SELECT $cols FROM $table WHERE deleted_at IS NULL AND city = 'city7'::text AND amount >= '500'::numeric ORDER BY amount DESC NULLS FIRST, id ASC NULLS LAST LIMIT 21 OFFSET 0) r;
SQL
echo "pgbench, the same SELECT, ${secs}s, 32 clients:"
(cd "$tmp" && pgbench -n -h 127.0.0.1 -p "$pgport" -U postgres -c 32 -j 2 -T "$secs" -f page.sql --log --log-prefix=pgpage postgres 2>/dev/null | grep -E "^tps|latency average")
echo "  pgbench latency: p50 $(bench_percentile 50 "$tmp"/pgpage.*) ms, p99 $(bench_percentile 99 "$tmp"/pgpage.*) ms"

# One record by id.
wrk -t2 -c32 -d3s -H "Authorization: Bearer $tok" "http://127.0.0.1:$port/api/v1/datasets/$ds/data/123456" >/dev/null
echo "GET one record, ${secs}s, 32 connections:"
wrk -t2 -c32 -d"${secs}s" --timeout 20s --latency -H "Authorization: Bearer $tok" "http://127.0.0.1:$port/api/v1/datasets/$ds/data/123456" | grep -E "Requests/sec|99%|50%|Non-2xx"
echo "SELECT ... WHERE id = 123456 under pgbench, ${secs}s, 32 clients:"
echo "SELECT to_json(r) FROM (SELECT $cols FROM $table WHERE id = 123456 AND deleted_at IS NULL) r;" > "$tmp/one.sql"
pgbench -n -h 127.0.0.1 -p "$pgport" -U postgres -c 32 -j 2 -T "$secs" -f "$tmp/one.sql" postgres 2>/dev/null | grep -E "^tps|latency average"

# Cursor near the end vs the first page (sort by id).
first=$(curl -s -o /dev/null -w '%{time_total}' "127.0.0.1:$port/api/v1/datasets/$ds/data?sort=id&limit=20" -H "Authorization: Bearer $tok")
cur=$(python3 -c "import base64,json; print(base64.urlsafe_b64encode(json.dumps({'d':'$ds','s':'id','v':[$rows-30]}).encode()).decode().rstrip('='))")
for i in 1 2 3; do
  f=$(curl -s -o /dev/null -w '%{time_total}' "127.0.0.1:$port/api/v1/datasets/$ds/data?sort=id&limit=20" -H "Authorization: Bearer $tok")
  l=$(curl -s -o /dev/null -w '%{time_total}' "127.0.0.1:$port/api/v1/datasets/$ds/data?sort=id&limit=20&cursor=$cur" -H "Authorization: Bearer $tok")
  echo "first page ${f}s, cursor page near the end ${l}s"
done
