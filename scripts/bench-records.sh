#!/usr/bin/env bash
# Record API benchmarks on a 1,000,000-row dataset (the ingest benchmark's file), against
# PostgreSQL itself on the same machine:
#  - csv, ndjson and parquet exports of every row vs psql's COPY (SELECT ...) TO STDOUT of
#    the same rows and values (the service's expressions); the server's peak RSS during each.
#  - a filtered, sorted list page and a read by key under wrk vs pgbench running the same
#    SELECT prepared, as the service runs it, and vs scripts/readfloor, the least a Go server
#    on the same stack spends on it (32 connections, 3 turns each; BENCH_CONNS and BENCH_RUNS
#    change them; the server takes DP_* settings from the environment, e.g.
#    DP_RECORD_CONCURRENCY).
#  - a keyset (cursor) page near the end of the table vs the first page.
# Usage: scripts/bench-records.sh [rows] [seconds]; BENCH_EXPORT_ONLY=1 stops after the exports.
set -euo pipefail
cd "$(dirname "$0")/.."
rows=${1:-1000000}
secs=${2:-15}
conns=${BENCH_CONNS:-32}
runs=${BENCH_RUNS:-3}
source scripts/bench-lib.sh
bench_init 18092
bench_csv "$tmp/data.csv" "$rows"
size=$(stat -c %s "$tmp/data.csv")
bench_start DP_MAX_UPLOAD_BYTES=$((size + 1048576)) DP_RATE_LIMITS="records_read=100000000-M,records_export=1000-M,default=100000-M"
bench_login
bench_dataset "$tmp/data.csv" bench
table="\"$org\".\"$ds\""
cols="id, id_num, big, amount, flag, day, seen_at, ref, city, note, maybe, created_at, updated_at, version"
# The service's values (store/datasets/values.go): timestamps as RFC 3339 UTC text, csv
# booleans as true/false. utc REF is the timestamp expression; fmt QUALIFIER the record's
# fields as the service selects them.
utc() { echo "CASE WHEN isfinite($1) AND $1 >= '0001-01-01T00:00:00Z' THEN replace(($1 AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z' ELSE to_json($1 AT TIME ZONE 'UTC') #>> '{}' END"; }
fmt() { local r=${1:-}; echo "${r}id, ${r}id_num, ${r}big, ${r}amount, ${r}flag, ${r}day, $(utc "${r}seen_at") AS seen_at, ${r}ref, ${r}city, ${r}note, ${r}maybe, $(utc "${r}created_at") AS created_at, $(utc "${r}updated_at") AS updated_at, ${r}version"; }
csvcols="id, id_num, big, amount, CASE WHEN flag THEN 'true' WHEN NOT flag THEN 'false' END AS flag, day, $(utc seen_at) AS seen_at, ref, city, note, maybe, $(utc created_at) AS created_at, $(utc updated_at) AS updated_at, version"
echo "dataset $ds: $rows rows"

# Exports, each format against PostgreSQL writing the same rows itself, taking turns $runs
# times (other work on the machine moves both: the ratio is taken turn by turn), with the
# server's peak RSS during the export:
#  - csv: COPY (SELECT ...) TO STDOUT (FORMAT csv, HEADER) of the service's values; the files
#    must be byte-identical.
#  - ndjson: COPY of row_to_json of the record's fields, one per line (identical too for
#    this file, whose texts hold no backslash for COPY's text format to double).
#  - parquet: COPY (SELECT ...) TO STDOUT (FORMAT binary) of the typed columns the parquet
#    export reads: PostgreSQL's cheapest hand-over of the same typed values, with no text
#    formatting; what is left is the service's encoding of the file.
# The ratio is COPY's time over the export's: 1.0 is as fast as COPY.
jsoncols="id, id_num, big, amount, flag, day, $(utc seen_at) AS seen_at, ref, city, note, maybe, $(utc created_at) AS created_at, $(utc updated_at) AS updated_at, version"
bincols="id, id_num, big, amount::text, flag, day - DATE '1970-01-01', (extract(epoch FROM seen_at) * 1000000)::bigint, ref::text, city, note, maybe,"
bincols+=" (extract(epoch FROM created_at) * 1000000)::bigint, (extract(epoch FROM updated_at) * 1000000)::bigint, version"
declare -A ref=(
  [csv]="COPY (SELECT $csvcols FROM $table WHERE deleted_at IS NULL ORDER BY id) TO STDOUT WITH (FORMAT csv, HEADER)"
  [ndjson]="COPY (SELECT row_to_json(r) FROM (SELECT $jsoncols FROM $table WHERE deleted_at IS NULL ORDER BY id) r) TO STDOUT"
  [parquet]="COPY (SELECT $bincols FROM $table WHERE deleted_at IS NULL ORDER BY id) TO STDOUT WITH (FORMAT binary)"
)
now() { date +%s.%N; }
for format in csv ndjson parquet; do
  ratios=()
  for i in $(seq 1 "$runs"); do
    t0=$(now)
    bench_peak_rss curl -sf "127.0.0.1:$port/api/v1/datasets/$ds/data/export?format=$format" -H "Authorization: Bearer $tok" -o "$tmp/export.$format"
    t1=$(now)
    psqlc -c "${ref[$format]}" > "$tmp/copy.$format"
    t2=$(now)
    r=$(echo "scale=3; ($t2 - $t1) / ($t1 - $t0)" | bc)
    ratios+=("$r")
    echo "export $format run $i: $(echo "$t1 - $t0" | bc) s ($(stat -c %s "$tmp/export.$format") bytes), server peak RSS $peak MB;" \
      "COPY: $(echo "$t2 - $t1" | bc) s ($(stat -c %s "$tmp/copy.$format") bytes); COPY/export $r"
  done
  sorted=($(printf '%s\n' "${ratios[@]}" | sort -n))
  echo "export $format: COPY's time over the export's, median ${sorted[$(( ${#sorted[@]} / 2 ))]} (min ${sorted[0]}, max ${sorted[-1]}, $runs turns)"
  if [ "$format" != parquet ]; then
    if cmp -s "$tmp/export.$format" "$tmp/copy.$format"; then echo "export $format and COPY output are byte-identical"; else
      echo "export $format and COPY output differ:"; diff "$tmp/export.$format" "$tmp/copy.$format" | head -6; fi
  fi
  rm -f "$tmp/export.$format" "$tmp/copy.$format"
done
[ -n "${BENCH_EXPORT_ONLY:-}" ] && exit 0 # the exports alone

# The list page and the read by key, taking turns $runs times each (other work on the machine
# moves all; each ratio is taken turn by turn, with the median and spread), with the CPU time
# of a request in the server process and in PostgreSQL (which side more replicas relieve):
#  - the service under wrk;
#  - pgbench running the SELECT the service sends, prepared once per connection (-M prepared)
#    as the service prepares it: its values written in ("pgbench"), and bound as parameters
#    as the service binds them ("pgbench, bound"; PostgreSQL plans a statement with parameters
#    again at each execution when it expects that to pay, as for a filtered, sorted page);
#  - scripts/readfloor under wrk: the least a Go server on the service's stack (net/http,
#    lib/pq) spends on the same bound statement, with no authentication, validation or
#    shaping ("floor"): service/floor is the service's own cost, floor/pgbench the stack's.
q="filter%5Bcity%5D=city7&filter%5Bamount%5D%5Bgte%5D=500&sort=-amount&limit=20"
cat > "$tmp/page.sql" <<SQL
SELECT to_json(x), json_build_array(r."amount", r."id") FROM (SELECT $cols, json_strip_nulls(json_build_object('self', '/api/v1/datasets/$ds/data/' || "id")) AS _links
  FROM $table WHERE deleted_at IS NULL AND "amount" >= '500'::numeric AND "city" = 'city7'::text ORDER BY "amount" DESC NULLS FIRST, "id" DESC NULLS FIRST LIMIT 21 OFFSET 0) r,
  LATERAL (SELECT $(fmt r.), r._links) x;
SQL
echo "SELECT to_json(r) FROM (SELECT $(fmt) FROM $table WHERE id = 123456 AND deleted_at IS NULL) r;" > "$tmp/one.sql"
# The bound forms: pgbench's variables (-D), readfloor's parameters.
for f in page one; do
  sed -e "s/'500'::numeric/:amt::numeric/; s/'city7'::text/:city::text/; s/LIMIT 21 OFFSET 0/LIMIT :lim OFFSET :off/; s/id = 123456/id = :id/" \
    "$tmp/$f.sql" > "$tmp/$f.bound"
done
floorsql() { sed -e 's/:amt/$1/; s/:city/$2/; s/:lim/$3/; s/:off/$4/; s/:id/$1/; s/;$//' "$1"; }
go build -o "$tmp/readfloor" ./scripts/readfloor
fport=$((port + 5))
pgurl="postgres://postgres:$PGPASSWORD@127.0.0.1:$pgport/postgres?sslmode=disable"
# load LABEL URL [AUTH]: wrk on URL for $secs; prints its figures and sets rps.
load() {
  local out n s0 d0 s1 d1 p=$pid
  [ -n "${3:-}" ] && p=$3
  read -r s0 d0 <<< "$(bench_cpu "$p")"
  out=$(wrk -t2 -c"$conns" -d"${secs}s" --timeout 20s --latency -H "Authorization: Bearer $tok" "$2")
  read -r s1 d1 <<< "$(bench_cpu "$p")"
  rps=$(echo "$out" | awk '/Requests\/sec/{print $2}')
  n=$(echo "$out" | awk '/requests in/{print $1}')
  echo "  $1: $(echo "$out" | grep -E "Requests/sec|50%|99%|Non-2xx" | tr -s ' ' | tr '\n' ' ')" \
    "CPU per request: server $(( (s1 - s0) * 10000 / n )) µs, database $(( (d1 - d0) * 10000 / n )) µs"
}
# pgb LABEL FILE [-D...]: pgbench on FILE for $secs; prints its figures and sets tps.
pgb() {
  local label=$1 file=$2 s0 d0 s1 d1; shift 2
  rm -f "$tmp"/pgb.*
  read -r s0 d0 <<< "$(bench_cpu)"
  tps=$(cd "$tmp" && pgbench -n -M prepared -h 127.0.0.1 -p "$pgport" -U postgres -c "$conns" -j 2 -T "$secs" "$@" -f "$file" --log --log-prefix=pgb postgres 2>/dev/null | grep -E "^tps" | cut -d' ' -f3)
  read -r s1 d1 <<< "$(bench_cpu)"
  echo "  $label: tps $tps, p50 $(bench_percentile 50 "$tmp"/pgb.*) ms, p99 $(bench_percentile 99 "$tmp"/pgb.*) ms," \
    "database CPU per transaction $(( (d1 - d0) * 10000 / $(cat "$tmp"/pgb.* | wc -l) )) µs"
}
# spread NAME VALUES...: the median, min and max of the per-turn ratios.
spread() {
  local name=$1; shift
  local sorted=($(printf '%s\n' "$@" | sort -n))
  echo "  $name: median ${sorted[$(( ${#sorted[@]} / 2 ))]} (min ${sorted[0]}, max ${sorted[-1]}, $runs turns)"
}
# versus LABEL URL NAME FLOORARGS [-array]: $runs turns of the four on statement NAME.
versus() {
  local label=$1 url=$2 name=$3 fargs=$4 farray=${5:-} fpid svc=() bound=() floor=() own=() r_svc r_floor
  "$tmp/readfloor" -addr "127.0.0.1:$fport" -db "$pgurl" -sql "$(floorsql "$tmp/$name.bound")" -args "$fargs" $farray &
  fpid=$!
  for _ in $(seq 1 50); do curl -sf "127.0.0.1:$fport/" >/dev/null && break; sleep 0.1; done
  curl -sf "$url" -H "Authorization: Bearer $tok" >/dev/null
  # Warm up first (pooled database connections, cached lookups): steady state is measured.
  wrk -t2 -c"$conns" -d3s -H "Authorization: Bearer $tok" "$url" >/dev/null
  wrk -t2 -c"$conns" -d3s "http://127.0.0.1:$fport/" >/dev/null
  echo "$label, ${secs}s each, $conns connections:"
  local dvars=(-D amt=500 -D city=city7 -D lim=21 -D off=0 -D id=123456)
  for i in $(seq 1 "$runs"); do
    echo " turn $i"
    load service "$url"; r_svc=$rps
    load floor "http://127.0.0.1:$fport/" "$fpid"; r_floor=$rps
    pgb pgbench "$tmp/$name.sql"
    svc+=("$(echo "scale=3; $r_svc / $tps" | bc)"); floor+=("$(echo "scale=3; $r_floor / $tps" | bc)")
    own+=("$(echo "scale=3; $r_svc / $r_floor" | bc)")
    pgb "pgbench, bound" "$tmp/$name.bound" "${dvars[@]}"
    bound+=("$(echo "scale=3; $r_svc / $tps" | bc)")
  done
  kill "$fpid"
  echo "$label, ratios:"
  spread "service/pgbench" "${svc[@]}"
  spread "service/(pgbench, bound)" "${bound[@]}"
  spread "floor/pgbench" "${floor[@]}"
  spread "service/floor" "${own[@]}"
}
versus "list page (city = city7, amount >= 500, sort -amount, 20 rows)" "http://127.0.0.1:$port/api/v1/datasets/$ds/data?$q" page "500,city7,21,0" -array
versus "GET one record by key" "http://127.0.0.1:$port/api/v1/datasets/$ds/data/123456" one 123456

# Cursor near the end vs the first page (sort by id).
cur=$(python3 -c "import base64,json; print(base64.urlsafe_b64encode(json.dumps({'d':'$ds','s':'id','v':[$rows-30]}).encode()).decode().rstrip('='))")
fs=(); ls=()
for i in $(seq 1 11); do
  fs+=("$(curl -s -o /dev/null -w '%{time_total}' "127.0.0.1:$port/api/v1/datasets/$ds/data?sort=id&limit=20" -H "Authorization: Bearer $tok")")
  ls+=("$(curl -s -o /dev/null -w '%{time_total}' "127.0.0.1:$port/api/v1/datasets/$ds/data?sort=id&limit=20&cursor=$cur" -H "Authorization: Bearer $tok")")
done
med() { printf '%s\n' "$@" | sort -n | sed -n 6p; }
echo "first page (sort id, 20 rows) median of 11: $(med "${fs[@]}")s; cursor page near the end: $(med "${ls[@]}")s"
