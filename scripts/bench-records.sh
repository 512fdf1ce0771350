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
command -v wrk >/dev/null || { [ "$(id -u)" = 0 ] && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; }
bash scripts/ensure-postgres.sh
tmp=$(mktemp -d); chmod 755 "$tmp"
port=${BENCH_PORT:-18092}
go build -o "$tmp/dataplatform" ./cmd/dataplatform
python3 - "$tmp/data.csv" "$rows" <<'PY'
import sys, random, uuid, datetime
path, n = sys.argv[1], int(sys.argv[2])
random.seed(1)
base = datetime.datetime(2020, 1, 1)
with open(path, "w") as f:
    f.write("id_num,big,amount,flag,day,seen_at,ref,city,note,maybe\n")
    for i in range(n):
        d = base + datetime.timedelta(seconds=random.randrange(0, 10**8))
        f.write(f"{i},{i*100000},{random.random()*1000:.2f},{'true' if i%2 else 'false'},{d.date()},{d.isoformat()}Z,"
                f"{uuid.UUID(int=random.getrandbits(128))},city{i%50},\"note, {i} with text\",{'' if i%7==0 else i%100}\n")
PY
size=$(stat -c %s "$tmp/data.csv")
DP_DATA_DIR="$tmp/d" DP_ADDR="127.0.0.1:$port" DP_ADMIN_EMAIL=bench@example.com DP_ADMIN_PASSWORD=bench-password \
  DP_MAX_UPLOAD_BYTES=$((size + 1048576)) DP_LOG_REQUESTS=false \
  DP_RATE_LIMITS="records_read=100000000-M,records_export=1000-M,default=100000-M" "$tmp/dataplatform" serve > "$tmp/server.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 1 100); do curl -sf "127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.2; done
j() { python3 -c "import json,sys; print(json.load(sys.stdin)$1)"; }
tok=$(curl -sf -XPOST "127.0.0.1:$port/api/v1/auth/login" -H 'Content-Type: application/json' -d '{"email":"bench@example.com","password":"bench-password"}' | j '["access_token"]')
org=$(curl -sf "127.0.0.1:$port/api/v1/organizations" -H "Authorization: Bearer $tok" | j '["organizations"][0]["id"]')
prj=$(curl -sf "127.0.0.1:$port/api/v1/organizations/$org/projects" -H "Authorization: Bearer $tok" | j '["projects"][0]["id"]')
fid=$(curl -sf "127.0.0.1:$port/api/v1/projects/$prj/datasets/upload" -H "Authorization: Bearer $tok" -F "file=@$tmp/data.csv" | j '["file_id"]')
ds=$(curl -sf -XPOST "127.0.0.1:$port/api/v1/projects/$prj/datasets" -H "Authorization: Bearer $tok" -H 'Content-Type: application/json' \
  -d "{\"name\":\"bench\",\"source\":{\"file_id\":\"$fid\"}}" | j '["id"]')
while [ "$(curl -sf "127.0.0.1:$port/api/v1/projects/$prj/datasets/$ds" -H "Authorization: Bearer $tok" | grep -o '"status":"[a-z]*"' | cut -d'"' -f4)" = processing ]; do sleep 0.2; done
pgport=$(grep -o '"port":[0-9]*' "$tmp/server.log" | head -1 | cut -d: -f2)
export PGPASSWORD=$(cat "$tmp/d/postgres.password")
psqlc() { psql -q -h 127.0.0.1 -p "$pgport" -U postgres -d postgres "$@"; }
table="\"$org\".\"$ds\""
cols="id, id_num, big, amount, flag, day, seen_at, ref, city, note, maybe, created_at, updated_at, version"
# Wait for the background work that follows the load (the search index).
while [ "$(psqlc -At -c "SELECT count(*) FROM platform.jobs WHERE status IN ('queued', 'running')")" != 0 ]; do sleep 0.5; done
echo "dataset $ds: $rows rows"

# Export.
peak=0
t0=$(date +%s.%N)
curl -sf "127.0.0.1:$port/api/v1/datasets/$ds/data/export?format=csv" -H "Authorization: Bearer $tok" -o "$tmp/export.csv" &
cpid=$!
while kill -0 $cpid 2>/dev/null; do rss=$(awk '/VmRSS/{print $2}' /proc/$pid/status); [ "$rss" -gt "$peak" ] && peak=$rss; sleep 0.05; done
wait $cpid
t1=$(date +%s.%N)
psqlc -c "COPY (SELECT $cols FROM $table WHERE deleted_at IS NULL ORDER BY id) TO STDOUT WITH (FORMAT csv, HEADER)" > "$tmp/copy.csv"
t2=$(date +%s.%N)
echo "export csv: $(echo "$t1 - $t0" | bc) s ($(stat -c %s "$tmp/export.csv") bytes), server peak RSS $((peak/1024)) MB; COPY TO STDOUT: $(echo "$t2 - $t1" | bc) s ($(stat -c %s "$tmp/copy.csv") bytes)"
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
pgbench -n -h 127.0.0.1 -p "$pgport" -U postgres -c 32 -j 2 -T "$secs" -f "$tmp/page.sql" postgres 2>/dev/null | grep -E "^tps|latency average"

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
