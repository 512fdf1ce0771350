#!/usr/bin/env bash
# Makes sure pgbouncer exists for the test that runs the server through PgBouncer in
# transaction pooling mode (DATABASE_URL on the pooler, DATABASE_DIRECT_URL beside it). The
# service itself never needs it. As root on Debian, installs the package without starting a
# system pgbouncer.
set -euo pipefail
command -v pgbouncer >/dev/null 2>&1 && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "ensure-pgbouncer: the tests start their own pgbouncer (the server through transaction pooling);" >&2
  echo "ensure-pgbouncer: installing Debian's 'pgbouncer' package now with apt-get, as root, without starting it." >&2
  export DEBIAN_FRONTEND=noninteractive
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
  trap 'rm -f /usr/sbin/policy-rc.d' EXIT
  apt-get install -y -qq --no-install-recommends pgbouncer >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq --no-install-recommends pgbouncer >/dev/null; }
fi
if ! command -v pgbouncer >/dev/null 2>&1; then
  echo "ensure-pgbouncer: pgbouncer is needed by the pooling test and was not found; run as root: apt-get install pgbouncer" >&2
  exit 1
fi
