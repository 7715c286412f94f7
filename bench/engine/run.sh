#!/usr/bin/env bash
# Engine benchmarks: iofleet-agent vs fio (and t/io_uring) on this machine.
#
#   bench/engine/run.sh [-n RUNS] [-t TIO_BINARY] [-d DIR]
#
# Needs: build/bin/iofleet-agent, fio, ../shared/bench/vs-fio (or VS_FIO=path),
# optionally a t/io_uring binary built from fio's public source outside the repo
# (-t). Files: DIR/engine.dat (1 GiB, fallocate: unwritten extents, O_DIRECT reads
# never touch the disk -> engine-bound) and DIR/device.dat (1 GiB written in full
# -> device-bound). Prints one line per case; paste the block into bench/RESULTS.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=5
tio=""
dir=/var/tmp/iofleet-bench
while getopts "n:t:d:" o; do
  case $o in
    n) runs=$OPTARG;; t) tio=$OPTARG;; d) dir=$OPTARG;;
    *) echo "usage: $0 [-n RUNS] [-t T_IO_URING] [-d DIR]" >&2; exit 2;;
  esac
done
vsfio=${VS_FIO:-../shared/bench/vs-fio}
mkdir -p "$dir"
eng=$dir/engine.dat
dev=$dir/device.dat
[ -f "$eng" ] || fallocate -l 1G "$eng"
if [ ! -f "$dev" ]; then
  dd if=/dev/urandom of="$dev" bs=1M count=1024 oflag=direct status=none
fi
common=(--name=b --rw=randread --bs=4k --direct=1 --time_based --runtime=3)

case_line() {  # label, then vs-fio args
  local label=$1; shift
  local out
  out=$("$vsfio" -n "$runs" -- "$@" 2>&1)
  local ratio fio ours
  fio=$(echo "$out" | awk '/^fio /{print $4}')
  ours=$(echo "$out" | awk '/^ours /{print $4}')
  ratio=$(echo "$out" | awk '/^ratio/{print $NF}')
  printf '| %-44s | %10s | %10s | %6s |\n' "$label" "$fio" "$ours" "$ratio"
}

echo "date: $(date -u +%Y-%m-%dT%H:%MZ)  host: $(uname -n)  kernel: $(uname -r)  cpus: $(nproc)"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "runs per side: $runs (alternating fio / iofleet), 3 s each"
echo
echo "| case | fio IOPS | iofleet IOPS | ratio |"
echo "|---|---|---|---|"
for engine in io_uring libaio psync; do
  for qd in 1 32; do
    case_line "engine-bound $engine QD$qd" "${common[@]}" --filename="$eng" --ioengine=$engine --iodepth=$qd
  done
done
case_line "engine-bound io_uring QD32 fixedbufs batch 8" "${common[@]}" --filename="$eng" \
  --ioengine=io_uring --iodepth=32 --fixedbufs=1 --registerfiles=1 \
  --iodepth_batch_submit=8 --iodepth_batch_complete_min=8
# libaio reaping from the mapped ring (both tools: userspace_reap needs complete_min=0).
for qd in 1 32; do
  case_line "engine-bound libaio QD$qd userspace_reap" "${common[@]}" --filename="$eng" \
    --ioengine=libaio --iodepth=$qd --iodepth_batch_complete_min=0 --userspace_reap=1
done
for qd in 1 32; do
  case_line "device-bound io_uring QD$qd" "${common[@]}" --filename="$dev" --ioengine=io_uring --iodepth=$qd
done
if [ -n "$tio" ]; then
  echo
  echo "t/io_uring -d32 -s8 -c8 -p0 -B1 -F1 (median of its 1 s IOPS lines) vs iofleet with"
  echo "--iodepth=32 --fixedbufs=1 --registerfiles=1 --iodepth_batch_submit=8"
  echo "--iodepth_batch_complete_min=8 (latency tracking on), alternating, 3 s each:"
  ratios=()
  for i in $(seq "$runs"); do
    t=$("$tio" -d32 -s8 -c8 -p0 -B1 -F1 -r3 "$eng" 2>&1 | python3 -c '
import re,statistics,sys
v=[float(m.group(1))*(1e6 if m.group(2)=="M" else 1e3) for m in re.finditer(r"^IOPS=([0-9.]+)([MK])",sys.stdin.read(),re.M)]
print("%.0f" % statistics.median(v))')
    o=$(build/bin/iofleet-agent run "${common[@]}" --filename="$eng" --ioengine=io_uring --iodepth=32 \
        --fixedbufs=1 --registerfiles=1 --iodepth_batch_submit=8 --iodepth_batch_complete_min=8 \
        --output-format=json | python3 -c 'import json,sys; print("%.0f" % json.load(sys.stdin)["jobs"][0]["read"]["iops"])')
    r=$(python3 -c "print('%.3f' % ($o/$t))")
    ratios+=("$r")
    echo "  t/io_uring $t   iofleet $o   ratio $r"
  done
  python3 -c "import statistics,sys; print('  median ratio iofleet/t_io_uring: %.3f' % statistics.median(map(float,sys.argv[1:])))" "${ratios[@]}"
fi
