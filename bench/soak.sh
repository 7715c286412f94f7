#!/usr/bin/env bash
# bench/soak.sh [SECONDS] [AGENTS]: the full reliability soak (default 600 s,
# 50 agents): agents run short jobs back to back against one controller; fails on
# a leaked lease, a run that is not terminal and succeeded, or controller RSS
# growth over 20 % (last third of the 10 s samples vs the first third).
# Prints a FIGURES line (RELIABILITY.md). Binaries: BUILD_DIR (default build/).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-600}
agents=${2:-50}
build=${BUILD_DIR:-$repo/build}
exec python3 "$repo/tests/faults/faults_test.py" --build-dir "$build" \
  --soak-seconds="$secs" --soak-agents="$agents" soak
