#!/usr/bin/env bash
# Builds the dashboard and runs its browser tests in headless Chromium:
#   test/ui.test.mjs  against a fake REST API (always runs);
#   test/e2e.test.mjs against build/bin/iofleet-controller + iofleet-agent (skips
#                     with a message when they are not built or do not serve /).
# Screenshots land in build/dashboard-screenshots/ (IOFLEET_SCREENSHOT_DIR overrides);
# the run fails when a page's screenshot was not saved (testlib/screenshots.mjs).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
export CHROMIUM_PATH="${CHROMIUM_PATH:-/usr/bin/chromium}"
if [[ ! -x "$CHROMIUM_PATH" ]]; then
  if command -v apt-get >/dev/null && [[ "$(id -u)" == 0 ]]; then
    echo "installing chromium (apt)..."
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
  else
    echo "chromium not found at $CHROMIUM_PATH; install it (apt-get install chromium) or set CHROMIUM_PATH" >&2
    exit 1
  fi
fi
"$here/build.sh"
cd "$here/.."
# The screenshots of this run only: empty the folder, run, then check that every
# page's file was saved (testlib/screenshots.mjs).
shots="${IOFLEET_SCREENSHOT_DIR:-$here/../build/dashboard-screenshots}"
rm -f "$shots"/*.png
node --test --test-concurrency=1 dashboard/test/
exec node dashboard/testlib/screenshots.mjs
