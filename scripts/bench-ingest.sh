#!/usr/bin/env bash
# Ingest benchmark: a generated CSV of N rows (default 1,000,000) and 10 mixed columns, from
# upload to `active`, against psql's \copy of the same file into the same typed table on the
# same embedded cluster; then imports into the dataset (keyed by id_num), each from the
# import request to `active` again, against the ingest's time: replace and upsert of the same
# file (every row unchanged), and of a file with the same keys and other values (every row
# updated). Usage: scripts/bench-ingest.sh [rows]; BENCH_INGEST_ONLY=1 stops after the ingest
# and its \copy (scripts/bench-ingest.sh 7500000: a file of about 1 GB, for the peak RSS).
set -euo pipefail
cd "$(dirname "$0")/.."
rows=${1:-1000000}
source scripts/bench-lib.sh
bench_init 18090
bench_csv "$tmp/data.csv" "$rows"
bench_csv "$tmp/changed.csv" "$rows" 2
size=$(stat -c %s "$tmp/data.csv"); size2=$(stat -c %s "$tmp/changed.csv"); [ "$size2" -gt "$size" ] && size=$size2
bench_start DP_MAX_UPLOAD_BYTES=$((size + 1048576))
bench_login
echo "file: $rows rows, $size bytes"
# wait_active ID: polls the dataset until it leaves processing; sets st, and peak to the
# server's peak RSS in MB meanwhile (from the moment it is called).
wait_active() {
  bench_peak_begin
  while :; do
    st=$(curl -sf "127.0.0.1:$port/api/v1/projects/$prj/datasets/$1" -H "Authorization: Bearer $tok" | grep -o '"status":"[a-z]*"' | cut -d'"' -f4)
    bench_peak_tick
    [ "$st" != processing ] && break
    sleep 0.02
  done
  bench_peak_end
}
t0=$(date +%s.%N)
fid=$(curl -sf "127.0.0.1:$port/api/v1/projects/$prj/datasets/upload" -H "Authorization: Bearer $tok" -F "file=@$tmp/data.csv" | j '["file_id"]')
t1=$(date +%s.%N)
ds=$(curl -sf -XPOST "127.0.0.1:$port/api/v1/projects/$prj/datasets" -H "Authorization: Bearer $tok" -H 'Content-Type: application/json' \
  -d "{\"name\":\"bench\",\"primary_key\":\"id_num\",\"source\":{\"file_id\":\"$fid\"}}" | j '["id"]')
wait_active "$ds"
t2=$(date +%s.%N)
echo "upload: $(echo "$t1 - $t0" | bc) s; create to $st: $(echo "$t2 - $t1" | bc) s; total $(echo "$t2 - $t0" | bc) s; server peak RSS $peak MB"
curl -sf "127.0.0.1:$port/api/v1/projects/$prj/datasets/$ds" -H "Authorization: Bearer $tok" | j '["metadata"]' | sed 's/^/job phases (ms): /' 
# The load's own steps (infer, copy, key, trigger, analyze, finish, commit), from its log line.
{ grep '"dataset loaded"' "$tmp/server.log" || true; } | tail -1 | grep -o '"[a-z]*_ms":[0-9]*' | tr -d '"' | tr '\n' ' ' | sed 's/^/load steps (ms): /'; echo
bench_psql
# The work that follows the load (the search index's builds) is done before \copy starts:
# it would slow \copy down, not the ingest.
settle() { while [ "$(psqlc -At -c "SELECT count(*) FROM platform.jobs WHERE status IN ('queued', 'running')")" != 0 ]; do sleep 0.2; done; }
settle
psqlc -c "CREATE TABLE bench_copy (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, id_num integer NOT NULL, big bigint NOT NULL, amount numeric NOT NULL, flag boolean NOT NULL, day date NOT NULL, seen_at timestamptz NOT NULL, ref uuid NOT NULL, city text NOT NULL, note text NOT NULL, maybe integer, created_at timestamptz NOT NULL DEFAULT now(), updated_at timestamptz NOT NULL DEFAULT now(), deleted_at timestamptz, version integer NOT NULL DEFAULT 1)"
t3=$(date +%s.%N)
psqlc -c "\\copy bench_copy (id_num, big, amount, flag, day, seen_at, ref, city, note, maybe) FROM '$tmp/data.csv' csv header"
t4=$(date +%s.%N)
echo "psql \\copy into the same typed table: $(echo "$t4 - $t3" | bc) s; create to active over \\copy: $(echo "scale=2; ($t2 - $t1) / ($t4 - $t3)" | bc)x"
[ -n "${BENCH_INGEST_ONLY:-}" ] && exit 0 # the ingest alone (a large file: scripts/bench-ingest.sh 7500000 is about 1 GB)

# Imports into the dataset, once the work that follows each (index builds) is done; then the
# same ingest again, since other work on the machine moves both: each import is set against the
# ingest before it and the one after.
ingest=$(echo "$t2 - $t1" | bc)
results=()
bench_import() { # MODE FILE LABEL
  settle
  local fid job t5 t6
  fid=$(curl -sf "127.0.0.1:$port/api/v1/projects/$prj/datasets/upload" -H "Authorization: Bearer $tok" -F "file=@$2" | j '["file_id"]')
  t5=$(date +%s.%N)
  job=$(curl -sf -XPOST "127.0.0.1:$port/api/v1/projects/$prj/datasets/$ds/import" -H "Authorization: Bearer $tok" -H 'Content-Type: application/json' \
    -d "{\"mode\":\"$1\",\"file_id\":\"$fid\"}" | j '["job_id"]')
  wait_active "$ds"
  t6=$(date +%s.%N)
  results+=("$3|$(echo "$t6 - $t5" | bc)")
  echo "$3: import to $st: $(echo "$t6 - $t5" | bc) s; server peak RSS $peak MB;" \
    "$(curl -sf "127.0.0.1:$port/api/v1/jobs/$job" -H "Authorization: Bearer $tok" | j '["progress"]["message"]')"
  { grep '"import merged"' "$tmp/server.log" || true; } | tail -1 | grep -o '"[a-z]*_ms":[0-9]*' | tr -d '"' | tr '\n' ' ' | sed 's/^/  phases (ms): /'; echo
}
bench_import replace "$tmp/data.csv" "replace, same file"
bench_import upsert "$tmp/changed.csv" "upsert, every row changed"
bench_import replace "$tmp/data.csv" "replace, every row changed"
bench_import upsert "$tmp/data.csv" "upsert, same file"
settle
fid=$(curl -sf "127.0.0.1:$port/api/v1/projects/$prj/datasets/upload" -H "Authorization: Bearer $tok" -F "file=@$tmp/data.csv" | j '["file_id"]')
t7=$(date +%s.%N)
ds2=$(curl -sf -XPOST "127.0.0.1:$port/api/v1/projects/$prj/datasets" -H "Authorization: Bearer $tok" -H 'Content-Type: application/json' \
  -d "{\"name\":\"bench again\",\"primary_key\":\"id_num\",\"source\":{\"file_id\":\"$fid\"}}" | j '["id"]')
wait_active "$ds2"
again=$(echo "$(date +%s.%N) - $t7" | bc)
echo "the same ingest again: $again s"
for r in "${results[@]}"; do
  echo "${r%%|*}: $(echo "scale=2; ${r##*|} / $ingest" | bc)x the first ingest, $(echo "scale=2; ${r##*|} / $again" | bc)x the second"
done
