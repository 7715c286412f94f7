#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh
# The fuzz targets' clang build, with every core, before the tests: inside ctest
# (fuzz.all) it ran on one core while the serial tests waited for it. A failure
# here is reported by fuzz.all, so the other tests still run.
if command -v clang++ >/dev/null; then
  IOFLEET_FUZZ_JOBS="$(nproc 2>/dev/null || echo 2)" IOFLEET_FUZZ_BUILD_ONLY=1 fuzz/run.sh ||
    echo "test.sh: the fuzz build failed; ctest's fuzz.all will say why" >&2
fi
cd build
ctest --output-on-failure -j"$(nproc 2>/dev/null || echo 2)" --timeout 600
