#!/usr/bin/env bash
# Makes sure PostgreSQL server binaries (initdb, postgres) exist for the embedded cluster.
# With DATABASE_URL set nothing is needed. As root on Debian, installs the `postgresql`
# package without letting it create and start a system cluster of its own.
set -euo pipefail
[ -n "${DATABASE_URL:-}" ] && exit 0
have() {
  command -v initdb >/dev/null 2>&1 && command -v postgres >/dev/null 2>&1 && return 0
  if command -v pg_config >/dev/null 2>&1 && [ -x "$(pg_config --bindir)/initdb" ]; then return 0; fi
  compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null && return 0
  return 1
}
have && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "ensure-postgres: installing Debian's postgresql package" >&2
  mkdir -p /etc/postgresql-common
  [ -f /etc/postgresql-common/createcluster.conf ] || echo 'create_main_cluster = false' > /etc/postgresql-common/createcluster.conf
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq --no-install-recommends postgresql >/dev/null
  have && exit 0
fi
echo "ensure-postgres: PostgreSQL server binaries not found; install Debian's 'postgresql' package (apt-get install postgresql) or set DATABASE_URL" >&2
exit 1
