#!/usr/bin/env bash
# Ingest benchmark: a generated CSV of N rows (default 1,000,000) and 10 mixed columns, from
# upload to `active`, against psql's \copy of the same file into the same typed table on the
# same embedded cluster. Usage: scripts/bench-ingest.sh [rows]
set -euo pipefail
cd "$(dirname "$0")/.."
rows=${1:-1000000}
source scripts/bench-lib.sh
bench_init 18090
bench_csv "$tmp/data.csv" "$rows"
size=$(stat -c %s "$tmp/data.csv")
bench_start DP_MAX_UPLOAD_BYTES=$((size + 1048576))
bench_login
echo "file: $rows rows, $size bytes"
t0=$(date +%s.%N)
fid=$(curl -sf "127.0.0.1:$port/api/v1/projects/$prj/datasets/upload" -H "Authorization: Bearer $tok" -F "file=@$tmp/data.csv" | j '["file_id"]')
t1=$(date +%s.%N)
ds=$(curl -sf -XPOST "127.0.0.1:$port/api/v1/projects/$prj/datasets" -H "Authorization: Bearer $tok" -H 'Content-Type: application/json' \
  -d "{\"name\":\"bench\",\"source\":{\"file_id\":\"$fid\"}}" | j '["id"]')
peak=0
while :; do
  st=$(curl -sf "127.0.0.1:$port/api/v1/projects/$prj/datasets/$ds" -H "Authorization: Bearer $tok" | grep -o '"status":"[a-z]*"' | cut -d'"' -f4)
  rss=$(awk '/VmRSS/{print $2}' /proc/$pid/status); [ "$rss" -gt "$peak" ] && peak=$rss
  [ "$st" != processing ] && break
  sleep 0.02
done
t2=$(date +%s.%N)
echo "upload: $(echo "$t1 - $t0" | bc) s; create to $st: $(echo "$t2 - $t1" | bc) s; total $(echo "$t2 - $t0" | bc) s; server peak RSS $((peak/1024)) MB"
curl -sf "127.0.0.1:$port/api/v1/projects/$prj/datasets/$ds" -H "Authorization: Bearer $tok" | j '["metadata"]' | sed 's/^/job phases (ms): /' 
bench_psql
psqlc -c "CREATE TABLE bench_copy (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, id_num integer NOT NULL, big bigint NOT NULL, amount numeric NOT NULL, flag boolean NOT NULL, day date NOT NULL, seen_at timestamptz NOT NULL, ref uuid NOT NULL, city text NOT NULL, note text NOT NULL, maybe integer, created_at timestamptz NOT NULL DEFAULT now(), updated_at timestamptz NOT NULL DEFAULT now(), deleted_at timestamptz, version integer NOT NULL DEFAULT 1)"
t3=$(date +%s.%N)
psqlc -c "\\copy bench_copy (id_num, big, amount, flag, day, seen_at, ref, city, note, maybe) FROM '$tmp/data.csv' csv header"
t4=$(date +%s.%N)
echo "psql \\copy into the same typed table: $(echo "$t4 - $t3" | bc) s"
