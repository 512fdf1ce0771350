#!/usr/bin/env bash
# Copies the HTML pages' front-end files from the npm packages pinned in
# scripts/tools/docs/package-lock.json (swagger-ui-dist, redoc 2: Redoc 3 wants Node 22 and reports
# telemetry; Apache ECharts for the dashboard page) into templates/docs/thirdparty/, which the binary embeds. Run it after changing a version
# and commit the result.
set -euo pipefail
cd "$(dirname "$0")/.."
npm ci --prefix scripts/tools/docs --no-audit --no-fund --ignore-scripts --loglevel=error >/dev/null
src=scripts/tools/docs/node_modules
cp "$src/swagger-ui-dist/swagger-ui-bundle.js" "$src/swagger-ui-dist/swagger-ui.css" templates/docs/thirdparty/
cp "$src/swagger-ui-dist/LICENSE" templates/docs/thirdparty/swagger-ui.LICENSE
# Redoc's sidebar link to Redocly shows a logo from cdn.redoc.ly: the pages load nothing from
# other hosts, so the copy shows the same mark inline.
logo='data:image/svg+xml;base64,PHN2ZyB4bWxucz0naHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmcnIHZpZXdCb3g9JzAgMCAxNiAxNic+PGNpcmNsZSBjeD0nOCcgY3k9JzgnIHI9JzcnIGZpbGw9JyNkYzI2MjYnLz48L3N2Zz4='
sed "s|https://cdn.redoc.ly/redoc/logo-mini.svg|$logo|" "$src/redoc/bundles/redoc.standalone.js" > templates/docs/thirdparty/redoc.standalone.js
cp "$src/redoc/LICENSE" templates/docs/thirdparty/redoc.LICENSE
cp "$src/echarts/dist/echarts.min.js" templates/docs/thirdparty/echarts.min.js
cp "$src/echarts/LICENSE" templates/docs/thirdparty/echarts.LICENSE
