#!/usr/bin/env bash
# User-space instructions per I/O of the worker loop (callgrind: stable counts,
# whatever the machine is doing). Counts only inside IoLoop::Run*, so start-up,
# file layout and reporting are excluded (inclusive cost of the engine's Drive()).
#   bench/engine/callgrind.sh [FILE] [extra fio args...]
set -euo pipefail
cd "$(dirname "$0")/../.."
file=${1:-/var/tmp/iofleet-bench/engine.dat}
shift || true
mkdir -p "$(dirname "$file")"
[ -f "$file" ] || fallocate -l 1G "$file"
out=$(mktemp)
ios=65536
# setsid: `iofleet-agent run` leads a session of its own, forking its work
# into a child unless it already leads one (docs/agent-cpu-share.md); under
# setsid nothing forks, so callgrind counts the process that does the I/O.
setsid -w valgrind --tool=callgrind --callgrind-out-file="$out" \
  build/bin/iofleet-agent run --name=cg --filename="$file" --size=256m --bs=4k --rw=randread \
  --direct=1 "$@" --output-format=json >/dev/null 2>"$out.err"
total=$(callgrind_annotate --inclusive=yes "$out" 2>/dev/null | awk '/::Drive\(/ && !done {print $1; done=1}' | tr -dc 0-9)
python3 -c "print('instructions per I/O in the loop: %.0f  (%s total / $ios I/Os)' % ($total/$ios, '$total'))"
rm -f "$out" "$out.err"
