#!/usr/bin/env bash
# Makes sure Debian's chromium is installed: the test suite opens the documentation pages in
# it (headless) to check that they render their operations. As root on Debian it installs the
# package when missing.
set -euo pipefail
command -v chromium >/dev/null 2>&1 && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "ensure-chromium: the test suite renders every documentation page in a headless browser; installing Debian's chromium package with apt-get, as root" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends chromium >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium >/dev/null; }
  exit 0
fi
echo "ensure-chromium: chromium not found; install Debian's chromium package (apt-get install chromium)" >&2
exit 1
