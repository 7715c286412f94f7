#!/usr/bin/env bash
# The seed workloads on their real shapes, iofleet vs fio 3.33, in the test-bed
# guest (tests/vm/run.sh): six emulated NVMe namespaces and four null_blk
# devices. Prints Markdown tables (bench/RESULTS.md, "Seeds in the QEMU guest").
#   bench/vm/seeds.sh [BUILD_DIR]      env: REPS (2), RUNTIME (4 s), SEEDS
#                                      (six,scaling,latency), CPUS (2)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=$(cd "${1:-build}" && pwd)
exec tests/vm/run.sh --nvme 6 --cpus "${CPUS:-2}" --mem 2048 --timeout 3000 \
  --null-blk-args "nr_devices=4 queue_mode=2 irqmode=0 gb=1 bs=512 submit_queues=2" \
  --env "REPS=${REPS:-2}" --env "RUNTIME=${RUNTIME:-4}" --env "SEEDS=${SEEDS:-six,scaling,latency}" \
  -- python3 bench/vm/seeds_guest.py "$build"
