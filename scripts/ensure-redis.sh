#!/usr/bin/env bash
# Makes sure redis-server exists for the tests that run replicas on a shared Redis (rate
# limits across processes, and what happens when Redis goes away). The service itself needs
# Redis only with REDIS_URL set. As root on Debian, installs the package without starting a
# system server.
set -euo pipefail
command -v redis-server >/dev/null 2>&1 && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "ensure-redis: the tests start their own redis-server (rate limits shared by replicas);" >&2
  echo "ensure-redis: installing Debian's 'redis-server' package now with apt-get, as root, without starting it." >&2
  export DEBIAN_FRONTEND=noninteractive
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
  trap 'rm -f /usr/sbin/policy-rc.d' EXIT
  apt-get install -y -qq --no-install-recommends redis-server >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq --no-install-recommends redis-server >/dev/null; }
fi
if ! command -v redis-server >/dev/null 2>&1; then
  echo "ensure-redis: redis-server is needed by the replica tests and was not found; run as root: apt-get install redis-server" >&2
  exit 1
fi
