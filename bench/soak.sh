#!/usr/bin/env bash
# bench/soak.sh [SECONDS] [AGENTS] [--soak-stall-at=S [--soak-stall-seconds=S]]:
# the full reliability soak (default 600 s,
# 50 agents): agents run short jobs back to back against one controller; fails on
# a leaked lease, a run that is not terminal and succeeded, a succeeded run
# without its result or with fewer stored records than its agent sent, or
# controller RSS growth over 40 % (last third of the 10 s samples vs the first
# third). Prints a FIGURES line (RELIABILITY.md): RSS samples, alerts raised on
# the identical jobs. Binaries: BUILD_DIR (default build/). Profile the
# controller with IOFLEET_SOAK_WRAP="heaptrack -o FILE" (bench/RESULTS.md).
# --soak-stall-at=S: every agent is stopped (SIGSTOP) S s into the soak for
# --soak-stall-seconds (default 3), then continued: a machine-wide I/O stall.
# IOFLEET_SOAK_CONTROLLER_ARGS: more controller flags (--malloc-arena-max=N);
# IOFLEET_SOAK_MALLOC_STATS=1: the controller's malloc in-use bytes per sample.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-600}
agents=${2:-50}
shift $(($# < 2 ? $# : 2))
build=${BUILD_DIR:-$repo/build}
exec python3 "$repo/tests/faults/faults_test.py" --build-dir "$build" \
  --soak-seconds="$secs" --soak-agents="$agents" "$@" soak
