#!/usr/bin/env bash
# Bundles the web console's third-party code (CodeMirror 6 with its SQL language, pinned by
# scripts/tools/console/package-lock.json) with esbuild into templates/docs/thirdparty/codemirror.js,
# an ES module the binary embeds. The bundle's first line records the SHA-256 of the lock file and
# of the entry file; a Go test (templates/docs) fails when either changed without running this
# again, so a fresh clone needs only Go. Run it after changing a version and commit the result.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=scripts/tools/console
npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error >/dev/null
sum=$(cat "$dir/package-lock.json" "$dir/codemirror-entry.js" | sha256sum | cut -d' ' -f1)
out=templates/docs/thirdparty/codemirror.js
"$dir/node_modules/.bin/esbuild" "$dir/codemirror-entry.js" --bundle --format=esm --minify --legal-comments=none \
  --target=es2020 --banner:js="/* built by scripts/console-assets.sh from $dir sha256:$sum */" --outfile="$out" --log-level=warning
{
  for p in codemirror @codemirror/view @codemirror/state @codemirror/lang-sql @codemirror/theme-one-dark @lezer/common; do
    echo "== $p"
    cat "$dir/node_modules/$p/LICENSE"
  done
} > templates/docs/thirdparty/codemirror.LICENSE
