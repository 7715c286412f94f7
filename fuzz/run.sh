#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan, every library
# instrumented) in a separate build directory and runs each for SECONDS
# (default 30) on its corpus. Exits non-zero on any crash, leak, timeout or
# sanitizer report; the reproducer lands in $build/fuzz/artifacts/.
#
#   fuzz/run.sh [SECONDS]
#   env: IOFLEET_FUZZ_BUILD_DIR (default <repo>/build-fuzz), IOFLEET_FUZZ_JOBS
#        (build parallelism, default 1), IOFLEET_FUZZ_TARGETS (default: all three),
#        IOFLEET_FUZZ_BUILD_ONLY=1 (build, do not fuzz)
#
# New inputs found go to $build/fuzz/corpus/<target>/ (not the repo); copy the
# interesting ones to fuzz/corpus/<target>/ by hand (`<fuzzer> -merge=1 dst src`).
set -euo pipefail
secs=${1:-30}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${IOFLEET_FUZZ_BUILD_DIR:-$root/build-fuzz}
jobs=${IOFLEET_FUZZ_JOBS:-1}
targets=${IOFLEET_FUZZ_TARGETS:-jobspec_text_fuzz job_json_fuzz proto_fuzz}
CC=${CC_FUZZ:-clang}
CXX=${CXX_FUZZ:-clang++}
# 77: skipped (ctest SKIP_RETURN_CODE) when there is no clang to build with.
command -v "$CXX" >/dev/null || { echo "fuzz: $CXX not found (scripts/deps.sh installs clang)" >&2; exit 77; }

mkdir -p "$build"
launcher=()
if command -v ccache >/dev/null; then  # as scripts/build.sh: cache hits across clones
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
san="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined"
san="$san -fno-omit-frame-pointer -gline-tables-only"
cmake -S "$root" -B "$build" -DIOFLEET_FUZZ=ON -DIOFLEET_BUILD_TESTS=OFF \
  -DCMAKE_C_COMPILER="$CC" -DCMAKE_CXX_COMPILER="$CXX" -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_C_FLAGS_DEBUG="-O1" -DCMAKE_CXX_FLAGS_DEBUG="-O1" \
  -DCMAKE_C_FLAGS="$san" -DCMAKE_CXX_FLAGS="$san" "${launcher[@]}" >"$build/fuzz-cmake.log" 2>&1 ||
  { cat "$build/fuzz-cmake.log" >&2; exit 1; }
# shellcheck disable=SC2086
cmake --build "$build" -j"$jobs" --target $targets proto_seed >"$build/fuzz-build.log" 2>&1 ||
  { tail -50 "$build/fuzz-build.log" >&2; exit 1; }

# IOFLEET_FUZZ_BUILD_ONLY=1: build and stop (scripts/test.sh builds here with
# every core before ctest, so fuzz.all only fuzzes).
[ "${IOFLEET_FUZZ_BUILD_ONLY:-0}" = 1 ] && exit 0

out=$build/fuzz
mkdir -p "$out/artifacts"
# Fresh serialized protos from the current .proto files, next to the committed ones.
mkdir -p "$out/corpus/proto_fuzz"
"$out/proto_seed" "$out/corpus/proto_fuzz" >/dev/null

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
for t in $targets; do
  work=$out/corpus/$t
  mkdir -p "$work"
  dict=()
  [ -f "$root/fuzz/$t.dict" ] && dict=(-dict="$root/fuzz/$t.dict")
  log=$out/$t.log
  echo "fuzz: $t for ${secs}s (corpus $root/fuzz/corpus/$t)"
  if "$out/$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=4096 -max_len=65536 \
       -print_final_stats=1 -artifact_prefix="$out/artifacts/$t-" "${dict[@]}" \
       "$work" "$root/fuzz/corpus/$t" >"$log" 2>&1; then
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)
    units=$(find "$work" "$root/fuzz/corpus/$t" -type f | wc -l)
    echo "fuzz: $t ok: ${execs:-?} execs, $cov, corpus $units files"
  else
    status=1
    echo "fuzz: $t FAILED (log: $log)" >&2
    grep -E 'ERROR|SUMMARY|runtime error|==[0-9]+==|Test unit written' "$log" | head -20 >&2 || true
  fi
done
exit $status
