#!/usr/bin/env bash
# Runs PacingRunTest.OffloadPacesAnAsyncEngine and PacingRunTest.RateIopsIsMet*
# ten times each with N busy loops (default 8) in this shell's session, and
# prints how many passed. The busy loops share the test process's session,
# so under autogroup the in-process runs get a small CPU share (what a test
# run beside a build in the same shell gets); `iofleet-agent run` puts its
# jobs in a session of their own and is not measured here.
# Usage: bench/pacing/under_load.sh [BUILD_DIR] [N]
set -euo pipefail
build=${1:-build}
n=${2:-8}
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
for _ in $(seq "$n"); do
  bash -c 'while :; do :; done' &
  pids+=($!)
done
sleep 2
pass=0
fail=0
for i in $(seq 10); do
  out=$("$build/tests/agent_run_test" \
    --gtest_filter='PacingRunTest.OffloadPacesAnAsyncEngine:PacingRunTest.RateIopsIsMet*' 2>&1 || true)
  p=$(grep -c '^\[       OK \]' <<<"$out" || true)
  f=$(grep -c '^\[  FAILED  \] PacingRunTest\.[A-Za-z]* (' <<<"$out" || true)
  pass=$((pass + p))
  fail=$((fail + f))
  echo "run $i: passed $p failed $f load $(cut -d' ' -f1 /proc/loadavg)"
done
echo "$pass passed, $fail failed (of 20 test runs) with $n busy loops"
