#!/usr/bin/env bash
# Builds the dashboard into dashboard/dist/ (index.html, app.js, app.css).
# Needs Node >= 20 and the npm registry (for `npm ci`); nothing else from the network.
set -euo pipefail
cd "$(dirname "$0")"
if [[ ! -d node_modules || package-lock.json -nt node_modules/.package-lock.json ]]; then
  npm ci --no-audit --no-fund
fi
node build.mjs
