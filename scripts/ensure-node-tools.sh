#!/usr/bin/env bash
# Installs the project's Node.js tools (scripts/tools/*/package-lock.json, exact versions) that the
# test suite runs: @redocly/cli and @stoplight/spectral-cli lint the descriptions, @stoplight/prism-cli
# checks calls through its validating proxy, the SDK and docs tools, and the official MCP client
# (@modelcontextprotocol/sdk, the MCP server's end-to-end test), and the web console's (esbuild and
# CodeMirror for scripts/console-assets.sh, axe-core for its browser test). Needs node (>= 20.19) and
# npm; as root on Debian, installs Debian's nodejs and npm when they are missing.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v npm >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "ensure-node-tools: the test suite runs the OpenAPI linters and the SDKs under Node.js; installing Debian's nodejs and npm with apt-get, as root" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null 2>&1 ||
      { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null; }
  else
    echo "ensure-node-tools: npm not found; install Node.js 20.19 or later" >&2
    exit 1
  fi
fi
for dir in scripts/tools/*/; do
  [ -f "$dir/package-lock.json" ] || continue
  # Installed already, after the lock file last changed.
  if [ "$dir/node_modules/.package-lock.json" -nt "$dir/package-lock.json" ]; then
    continue
  fi
  npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error >/dev/null
done
