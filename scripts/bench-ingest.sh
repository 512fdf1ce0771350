#!/usr/bin/env bash
# Ingest benchmark: a generated CSV of N rows (default 1,000,000) and 10 mixed columns, from
# upload to `active`, against psql's \copy of the same file into the same typed table on the
# same embedded cluster. Usage: scripts/bench-ingest.sh [rows]
set -euo pipefail
cd "$(dirname "$0")/.."
rows=${1:-1000000}
bash scripts/ensure-postgres.sh
tmp=$(mktemp -d); chmod 755 "$tmp"
port=${BENCH_PORT:-18090}
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
  DP_MAX_UPLOAD_BYTES=$((size + 1048576)) DP_LOG_REQUESTS=false "$tmp/dataplatform" serve > "$tmp/server.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 1 100); do curl -sf "127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.2; done
j() { python3 -c "import json,sys; print(json.load(sys.stdin)$1)"; }
tok=$(curl -sf -XPOST "127.0.0.1:$port/api/v1/auth/login" -H 'Content-Type: application/json' -d '{"email":"bench@example.com","password":"bench-password"}' | j '["access_token"]')
org=$(curl -sf "127.0.0.1:$port/api/v1/organizations" -H "Authorization: Bearer $tok" | j '["organizations"][0]["id"]')
prj=$(curl -sf "127.0.0.1:$port/api/v1/organizations/$org/projects" -H "Authorization: Bearer $tok" | j '["projects"][0]["id"]')
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
pgport=$(grep -o '"port":[0-9]*' "$tmp/server.log" | head -1 | cut -d: -f2)
export PGPASSWORD=$(cat "$tmp/d/postgres.password")
psql -q -h 127.0.0.1 -p "$pgport" -U postgres -d postgres -c "CREATE TABLE bench_copy (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, id_num integer NOT NULL, big bigint NOT NULL, amount numeric NOT NULL, flag boolean NOT NULL, day date NOT NULL, seen_at timestamptz NOT NULL, ref uuid NOT NULL, city text NOT NULL, note text NOT NULL, maybe integer, created_at timestamptz NOT NULL DEFAULT now(), updated_at timestamptz NOT NULL DEFAULT now(), deleted_at timestamptz, version integer NOT NULL DEFAULT 1)"
t3=$(date +%s.%N)
psql -q -h 127.0.0.1 -p "$pgport" -U postgres -d postgres -c "\\copy bench_copy (id_num, big, amount, flag, day, seen_at, ref, city, note, maybe) FROM '$tmp/data.csv' csv header"
t4=$(date +%s.%N)
echo "psql \\copy into the same typed table: $(echo "$t4 - $t3" | bc) s"
