# Shared steps of the benchmark scripts (sourced): build and start the server on a fresh
# embedded cluster, sign in, upload a dataset, reach the cluster with psql and pgbench.

# bench_init PORT: wrk and PostgreSQL's binaries present, a scratch directory, the binary.
bench_init() {
  port=${BENCH_PORT:-$1}
  if ! command -v wrk >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null
    else
      echo "$0: needs wrk (apt-get install wrk)" >&2; exit 1
    fi
  fi
  bash scripts/ensure-postgres.sh
  tmp=$(mktemp -d); chmod 755 "$tmp"
  go build -o "$tmp/dataplatform" ./cmd/dataplatform
}

# bench_start [VAR=value...]: the server, with these settings, until it is ready.
bench_start() {
  env DP_DATA_DIR="$tmp/d" DP_ADDR="127.0.0.1:$port" DP_ADMIN_EMAIL=bench@example.com DP_ADMIN_PASSWORD=bench-password \
    DP_LOG_REQUESTS=false "$@" "$tmp/dataplatform" serve > "$tmp/server.log" 2>&1 &
  pid=$!
  trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$tmp"' EXIT
  for _ in $(seq 1 100); do curl -sf "127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.2; done
}

# bench_restart [VAR=value...]: stops the server and starts it again on the same data, with
# the variables given.
bench_restart() {
  kill "$pid"; wait "$pid" 2>/dev/null || true
  bench_start "$@"
}

j() { python3 -c "import json,sys; print(json.load(sys.stdin)$1)"; }
# jfield NAME: the first string field NAME in the JSON read (a few µs, where j starts a
# python; for scripts that make thousands of things whose answers put NAME first).
jfield() { grep -o "\"$1\":\"[^\"]*\"" | head -1 | cut -d'"' -f4; }

# bench_login: tok, org and prj of the first owner.
bench_login() {
  tok=$(curl -sf -XPOST "127.0.0.1:$port/api/v1/auth/login" -H 'Content-Type: application/json' \
    -d '{"email":"bench@example.com","password":"bench-password"}' | j '["access_token"]')
  org=$(curl -sf "127.0.0.1:$port/api/v1/organizations" -H "Authorization: Bearer $tok" | j '["organizations"][0]["id"]')
  prj=$(curl -sf "127.0.0.1:$port/api/v1/organizations/$org/projects" -H "Authorization: Bearer $tok" | j '["projects"][0]["id"]')
}

# bench_dataset FILE NAME: uploads FILE as dataset NAME and waits until it and the work that
# follows its load are done; sets ds.
bench_dataset() {
  local fid
  fid=$(curl -sf "127.0.0.1:$port/api/v1/projects/$prj/datasets/upload" -H "Authorization: Bearer $tok" -F "file=@$1" | j '["file_id"]')
  ds=$(curl -sf -XPOST "127.0.0.1:$port/api/v1/projects/$prj/datasets" -H "Authorization: Bearer $tok" -H 'Content-Type: application/json' \
    -d "{\"name\":\"$2\",\"source\":{\"file_id\":\"$fid\"}}" | j '["id"]')
  while [ "$(curl -sf "127.0.0.1:$port/api/v1/projects/$prj/datasets/$ds" -H "Authorization: Bearer $tok" | grep -o '"status":"[a-z]*"' | cut -d'"' -f4)" = processing ]; do sleep 0.2; done
  bench_psql
  while [ "$(psqlc -At -c "SELECT count(*) FROM platform.jobs WHERE status IN ('queued', 'running')")" != 0 ]; do sleep 0.5; done
}

# bench_psql: pgport and PGPASSWORD of the server's embedded cluster; psqlc runs psql there.
bench_psql() {
  pgport=$(grep -o '"port":[0-9]*' "$tmp/server.log" | head -1 | cut -d: -f2)
  export PGPASSWORD=$(cat "$tmp/d/postgres.password")
}
psqlc() { psql -q -h 127.0.0.1 -p "$pgport" -U postgres -d postgres "$@"; }

# The server's peak RSS in MB over a step: bench_peak_begin starts it, bench_peak_tick is
# called while the step runs, bench_peak_end sets peak. The peak is the kernel's own (VmHWM,
# reset through clear_refs); where that cannot be reset, each tick samples VmRSS instead.
# Sampling starts a process each time, and on two cores that load slows the server it
# measures (an export by a fifth, with twice the server's CPU), so it is the fallback only.
bench_peak_begin() {
  peak=0 peak_sampled=
  echo 5 2>/dev/null > /proc/$pid/clear_refs || peak_sampled=1
}
bench_peak_tick() {
  [ -n "$peak_sampled" ] || return 0
  local rss; rss=$(awk '/VmRSS/{print $2}' /proc/$pid/status); [ "$rss" -gt "$peak" ] && peak=$rss; return 0
}
bench_peak_end() {
  if [ -n "$peak_sampled" ]; then peak=$((peak / 1024)); else peak=$(( $(awk '/VmHWM/{print $2}' /proc/$pid/status) / 1024 )); fi
}

# bench_peak_rss COMMAND...: runs COMMAND and sets peak to the server's peak RSS in MB while
# it ran.
bench_peak_rss() {
  bench_peak_begin
  if [ -z "$peak_sampled" ]; then
    "$@"
  else
    "$@" &
    local cpid=$!
    while kill -0 $cpid 2>/dev/null; do bench_peak_tick; sleep 0.05; done
    wait $cpid
  fi
  bench_peak_end
}

# bench_percentile P FILE...: the P-th percentile of pgbench's per-transaction logs (latency
# in µs, 3rd field), in ms.
bench_percentile() {
  local p=$1; shift
  awk '{print $3}' "$@" | sort -n | awk -v p="$p" '{a[NR]=$1} END {i=int(NR*p/100+0.5); if (i<1) i=1; printf "%.3f", a[i]/1000}'
}
bench_median() { bench_percentile 50 "$@"; }

# bench_csv FILE ROWS [SEED]: the benchmark file: ROWS rows of 10 mixed columns (integer,
# bigint, numeric, boolean, date, timestamp, uuid, two texts, an integer with gaps). id_num
# is the row number whatever the seed (default 1); another seed changes the random values
# (amount, day, seen_at, ref) of every row.
bench_csv() {
  python3 - "$1" "$2" "${3:-1}" <<'PY'
import sys, random, uuid, datetime
path, n = sys.argv[1], int(sys.argv[2])
random.seed(int(sys.argv[3]))
base = datetime.datetime(2020, 1, 1)
with open(path, "w") as f:
    f.write("id_num,big,amount,flag,day,seen_at,ref,city,note,maybe\n")
    for i in range(n):
        d = base + datetime.timedelta(seconds=random.randrange(0, 10**8))
        f.write(f"{i},{i*100000},{random.random()*1000:.2f},{'true' if i%2 else 'false'},{d.date()},{d.isoformat()}Z,"
                f"{uuid.UUID(int=random.getrandbits(128))},city{i%50},\"note, {i} with text\",{'' if i%7==0 else i%100}\n")
PY
}

# bench_cpu [PID]: CPU time so far, in ticks (1/100 s), of the server process (or PID) and of the embedded
# cluster's processes (its postmaster and every backend, living or ended: a process's
# cutime counts its ended children), as "server database".
bench_cpu() {
  local pm
  pm=$(head -1 "$tmp/d/postgres/postmaster.pid")
  for f in /proc/[0-9]*/stat; do cat "$f" 2>/dev/null; echo; done | awk -v srv="${1:-$pid}" -v pm="$pm" '
    # /proc/PID/stat: the command may hold spaces; the fields after its ")" are counted.
    NF == 0 { next }
    { p = $1; sub(/^.*\) /, ""); ppid = $2; t = $12 + $13 }
    p == srv { s += t }
    p == pm { d += t + $14 + $15; next }
    ppid == pm { d += t }
    END { print s + 0, d + 0 }'
}
