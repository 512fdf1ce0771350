#!/usr/bin/env bash
# Makes sure PostgreSQL server binaries (initdb, postgres) exist for the embedded cluster,
# and, best effort, the mysql_fdw extension that MySQL/MariaDB-connected datasets read
# through (postgres_fdw ships with the server). With DATABASE_URL set nothing is needed. As
# root on Debian, installs the packages without letting them create and start a system
# cluster of their own.
set -euo pipefail
[ -n "${DATABASE_URL:-}" ] && exit 0
have() {
  command -v initdb >/dev/null 2>&1 && command -v postgres >/dev/null 2>&1 && return 0
  if command -v pg_config >/dev/null 2>&1 && [ -x "$(pg_config --bindir)/initdb" ]; then return 0; fi
  compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null && return 0
  return 1
}
can_apt() { [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; }
apt_install() {
  mkdir -p /etc/postgresql-common
  [ -f /etc/postgresql-common/createcluster.conf ] || echo 'create_main_cluster = false' > /etc/postgresql-common/createcluster.conf
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends "$@" >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq --no-install-recommends "$@" >/dev/null; }
}
if ! have; then
  if can_apt; then
    echo "ensure-postgres: dataplatform runs its own PostgreSQL cluster under ./data/postgres (unless DATABASE_URL is set)" >&2
    echo "ensure-postgres: and needs PostgreSQL's server programs (initdb, postgres) for it. Installing Debian's" >&2
    echo "ensure-postgres: 'postgresql' package now with apt-get, as root, without creating a system cluster." >&2
    echo "ensure-postgres: (to avoid this, install PostgreSQL yourself or set DATABASE_URL)" >&2
    apt_install postgresql
  fi
  if ! have; then
    echo "ensure-postgres: PostgreSQL's server programs (initdb, postgres) are needed for the embedded database and were not found." >&2
    echo "ensure-postgres: run as root:  apt-get install postgresql   (or point DATABASE_URL at a PostgreSQL you have)" >&2
    exit 1
  fi
fi
# mysql_fdw for the newest installed server version, when Debian packages it.
ver=$(ls /usr/lib/postgresql 2>/dev/null | sort -n | tail -1)
if [ -n "$ver" ] && [ ! -f "/usr/share/postgresql/$ver/extension/mysql_fdw.control" ] && can_apt; then
  echo "ensure-postgres: installing Debian's postgresql-$ver-mysql-fdw with apt-get: the extension through which datasets connected to MySQL/MariaDB are read" >&2
  apt_install "postgresql-$ver-mysql-fdw" || echo "ensure-postgres: mysql_fdw not installed; MySQL-connected datasets will answer 501" >&2
fi
exit 0
